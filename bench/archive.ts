// bench:backup's figures of the continuous archive (PLINTH_BACKUP_ARCHIVE), on the data directory the rest of it seeded.
import { execFileSync, type ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { listBackups } from '../core/backup/root.js'
import { callApi, percentile, spawnServer } from './main.js'

const du = (path: string) => Number(execFileSync('du', ['-sb', path]).toString().split('\t')[0])

export interface ArchiveFigures {
  /** Bytes the archive (segments and blob copies) grew by while 1% of the websites were redeployed, and the data directory's size. */
  bytes: number
  dataBytes: number
  changed: number
  /** From a write's answer until /metrics says nothing is behind (ms): each write's, p50 and p99. */
  lagP50: number
  lagP99: number
  /** The mixed API load's latencies on a server started afresh without the archive, and with it (ms). */
  without: number[]
  api: number[]
}

/**
 * Starts the server on `data` without the archive and runs `apiLoad`, then with PLINTH_BACKUP_ARCHIVE
 * (once its base is taken) and runs it again; then redeploys 1% of the websites one by one, each time waiting until
 * /metrics says the archive holds it: the archive's growth against the data directory, and the lag.
 */
export async function archiveFigures(
  work: string,
  data: string,
  port: number,
  admin: string,
  /** Keys to spread the deploys over (each has its own rate limit). */
  keys: readonly string[],
  ids: readonly string[],
  /** The mixed API load for `seconds` (the run's own length without). */
  apiLoad: (seconds?: number) => Promise<number[]>,
  started: (child: ChildProcess) => void,
): Promise<ArchiveFigures> {
  const root = join(work, 'archive-root')
  const origin = `http://127.0.0.1:${port}`
  // The API load on a server started afresh without the archive, then with it (each warmed the same way first).
  const loaded = async (env: Record<string, string>, ready: () => Promise<void>) => {
    const child = await spawnServer(port, data, env)
    started(child)
    await ready()
    await apiLoad(2)
    return { child, api: await apiLoad() }
  }
  const plain = await loaded({}, async () => undefined)
  plain.child.kill('SIGTERM')
  await new Promise((resolve) => plain.child.on('exit', resolve))
  const { child, api } = await loaded({ PLINTH_BACKUP_ARCHIVE: root }, async () => {
    for (const deadline = Date.now() + 600_000; !listBackups(root).some((b) => b.complete);) {
      if (Date.now() > deadline) throw new Error("the archive's base backup did not finish in 10 minutes")
      await new Promise((resolve) => setTimeout(resolve, 200))
    }
  })
  try {
    const behind = async () => {
      const text = await (await fetch(`${origin}/metrics`, { headers: { authorization: `Bearer ${admin}` } })).text()
      return Number(/^plinth_backup_archive_behind_entries (\d+)$/m.exec(text)?.[1] ?? NaN)
    }
    while ((await behind()) !== 0) await new Promise((resolve) => setTimeout(resolve, 20))
    const dataBytes = du(data)
    const before = du(join(root, 'archive')) + du(join(root, 'blobs'))
    const changed = Math.max(1, Math.round(ids.length / 100))
    const lags: number[] = []
    for (let i = 0; i < changed; i++) {
      // A key at its limit for deploys (30 a minute) is waited out.
      for (;;) {
        const sent = await callApi(
          origin,
          keys[i % keys.length]!,
          'POST',
          `/v1/websites/${ids[(Math.floor(ids.length / 3) + i) % ids.length]}/deploy/json`,
          {
            files: [{ path: 'index.html', content: `<h1>archived ${i}</h1>` }],
          },
        ).then(
          () => true,
          (error: Error) => {
            if (!/: 429 /.test(error.message)) throw error
            return false
          },
        )
        if (sent) break
        await new Promise((resolve) => setTimeout(resolve, 1000))
      }
      const answered = performance.now()
      while ((await behind()) !== 0) await new Promise((resolve) => setTimeout(resolve, 10))
      lags.push(performance.now() - answered)
    }
    const bytes = du(join(root, 'archive')) + du(join(root, 'blobs')) - before
    return { bytes, dataBytes, changed, lagP50: percentile(lags, 50), lagP99: percentile(lags, 99), without: plain.api, api }
  } finally {
    child.kill('SIGTERM')
    await new Promise((resolve) => child.on('exit', resolve))
  }
}
