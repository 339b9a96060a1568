/**
 * npm run bench:backup — backups at the scale of a hosting service (issue 38). A data directory of
 * BENCH_SITES websites (default 10,000, each published with a few pages), BENCH_LARGE large files in
 * the blob directory (default 96 of 8 MiB), and a year of daily analytics for BENCH_ANALYTICS_SITES
 * sites (default 2,000), written straight into the store (the startup benchmark's way). Then, in one
 * run: `plinth backup` of the stopped directory against `cp -a` of it; a mixed API load and site
 * load, without and during a backup of the running server; a second backup after 1% of the content
 * changed; and a restore to serving. Prints the ratios the issue asks for.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { gzipSync } from 'node:zlib'
import autocannon from 'autocannon'
import { ensureInstallation } from '../actors/installation.js'
import { firstVersion, makeVersion } from '../actors/website/versions.js'
import { systemClock } from '../core/clock.js'
import { sha256 } from '../core/content.js'
import { newId } from '../core/ids.js'
import { newSecret, SECRET_FILE_NAME, writeSecretFile } from '../core/installation-secret.js'
import type { WebsiteRecord } from '../core/schemas/records.js'
import { Store } from '../core/store/store.js'
import { rawRequest } from '../test/helpers/http.js'
import { archiveFigures } from './archive.js'
import { callApi, spawnServer, percentile, runBenchmark } from './main.js'

const SITES = Number(process.env.BENCH_SITES ?? 10_000)
const LARGE = Number(process.env.BENCH_LARGE ?? 96)
const LARGE_BYTES = 8 << 20
const ANALYTICS_SITES = Number(process.env.BENCH_ANALYTICS_SITES ?? 2_000)
const LOAD_SECONDS = Number(process.env.BENCH_LOAD_SECONDS ?? 8)
const PORT = 18592
const ADMIN = 'wb_' + 'b'.repeat(43)
const ENTRY = fileURLToPath(new URL('../bin/plinth.js', import.meta.url))
const ORIGIN = `http://127.0.0.1:${PORT}`

async function seed(dir: string): Promise<{ orgId: string; ids: string[] }> {
  const store = new Store(dir)
  await store.ensureBlobReferences()
  // A server's first start makes the installation's secret; a backup is signed with it.
  writeSecretFile(join(dir, SECRET_FILE_NAME), newSecret())
  const { orgId } = await ensureInstallation(store, systemClock, ADMIN)
  const actor = { kind: 'api_key' as const, id: 'key_bench', name: 'bench seeding' }
  const now = Date.now()
  const ids: string[] = []
  const filler = 'A page of a small business site, as thousands are. '.repeat(60)
  for (let start = 0; start < SITES; start += 1000) {
    await store.commit(() => {
      for (let i = start; i < Math.min(SITES, start + 1000); i++) {
        const label = `site${i}`
        const record: WebsiteRecord = {
          v: 1,
          id: newId('ws'),
          orgId,
          seq: i + 1,
          name: label,
          kind: 'static',
          slug: label,
          subdomain: label,
          description: null,
          headVersion: 2,
          publishedVersion: 2,
          createdAt: now,
          updatedAt: now,
          deletedAt: null,
          suspendedAt: null,
          suspendedReason: null,
        }
        ids.push(record.id)
        const manifest: Record<string, { hash: string; size: number; contentType: string }> = {}
        for (const path of ['index.html', 'about.html', 'contact.html']) {
          const bytes = Buffer.from(`<!doctype html><title>${label} ${path}</title><h1>${label}</h1><p>${filler}</p>`)
          const hash = sha256(bytes)
          store.putContent(hash, bytes, { gzip: gzipSync(bytes), br: null })
          manifest[path] = { hash, size: bytes.length, contentType: 'text/html; charset=utf-8' }
        }
        store.websites.put(record.id, record)
        store.putVersion([record.id, 1], firstVersion(record.id, actor, now))
        store.putVersion([record.id, 2], makeVersion(record.id, 2, manifest, 'deploy', null, actor, now))
        store.websitesByOrg.put([orgId, 'live', record.seq], record.id)
        store.slugs.put([orgId, record.slug], record.id)
        store.labels.put(label, record.id)
      }
    })
  }
  // Large files the organization holds in the blob directory (ticket deploys' images and video).
  for (let i = 0; i < LARGE; i++) {
    const path = store.files.uploadPath(`bench-${i}`)
    const bytes = randomBytes(LARGE_BYTES)
    writeFileSync(path, bytes)
    const hash = sha256(bytes)
    await store.files.place(path, hash)
    await store.commit(() => {
      store.orgBlobs.put([orgId, hash], `${bytes.length} ${now} ${hash}`)
      store.fileRefs.add(hash, 1)
    })
  }
  // A year of the beacon's daily rollups: the total, pages and countries.
  const today = Math.floor(now / 86_400_000)
  for (let start = 0; start < ANALYTICS_SITES; start += 100) {
    await store.commit(() => {
      for (let s = start; s < Math.min(ANALYTICS_SITES, start + 100); s++)
        for (let day = today - 365; day < today; day++) {
          void store.analyticsDaily.db.put([ids[s]!, '', day, ''], 100 + (day % 17))
          void store.analyticsDaily.db.put([ids[s]!, 'path', day, '/'], 60 + (day % 7))
          void store.analyticsDaily.db.put([ids[s]!, 'country', day, 'DE'], 30 + (day % 5))
        }
    })
  }
  await store.close()
  return { orgId, ids }
}

const du = (path: string) => Number(execFileSync('du', ['-sb', path]).toString().split('\t')[0])
const mib = (bytes: number) => `${(bytes / (1 << 20)).toFixed(0)} MiB`

function cli(args: string[], dataDir: string): { ms: number; out: string } {
  const started = performance.now()
  const out = execFileSync(process.execPath, ['--no-node-snapshot', ENTRY, ...args], {
    env: { PATH: process.env.PATH, PLINTH_DATA_DIR: dataDir },
  }).toString()
  return { ms: performance.now() - started, out }
}

function cliAsync(args: string[], dataDir: string): Promise<{ ms: number; out: string }> {
  const started = performance.now()
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--no-node-snapshot', ENTRY, ...args], {
      env: { PATH: process.env.PATH, PLINTH_DATA_DIR: dataDir },
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    let out = ''
    child.stdout!.on('data', (chunk: Buffer) => (out += chunk))
    child.on('exit', (code) =>
      code === 0 ? resolve({ ms: performance.now() - started, out }) : reject(new Error(`${args[0]} exited ${code}`)),
    )
  })
}

/** Servers this run started: stopped if it fails part way, so none outlives it. */
const children = new Set<ChildProcess>()
process.on('exit', () => {
  for (const child of children) child.kill('SIGKILL')
})

async function startServer(dataDir: string): Promise<{ child: ChildProcess; ms: number }> {
  const started = performance.now()
  const child = await spawnServer(PORT, dataDir)
  children.add(child)
  child.on('exit', () => children.delete(child))
  return { child, ms: performance.now() - started }
}

async function stopServer(child: ChildProcess): Promise<void> {
  child.kill('SIGTERM')
  await new Promise((resolve) => child.on('exit', resolve))
}

function call(key: string, method: string, path: string, body?: unknown): Promise<any> {
  return callApi(ORIGIN, key, method, path, body)
}

/**
 * A mixed API load at a steady pace (reads of a website and of the list, and a deploy every fortieth
 * call, within the expensive class's 30 a minute per key), spread over keys so no rate limit is met, for `seconds` or until `until` settles; latencies in ms.
 */
async function apiLoad(keys: string[], ids: string[], seconds: number, until?: Promise<unknown>): Promise<number[]> {
  const latencies: number[] = []
  let done = false
  const deadline = Date.now() + seconds * 1000
  void until?.then(() => (done = true))
  let n = 0
  const worker = async (w: number) => {
    while (!done && (until !== undefined || Date.now() < deadline)) {
      const key = keys[(n + w) % keys.length]!
      const id = ids[(n * 7 + w) % 500]!
      const kind = n++ % 40
      const started = performance.now()
      if (kind === 0)
        await call(key, 'POST', `/v1/websites/${id}/deploy/json`, { files: [{ path: 'news.html', content: `news ${n} ${Date.now()}` }] })
      else if (kind < 12) await call(key, 'GET', '/v1/websites?limit=20')
      else await call(key, 'GET', `/v1/websites/${id}`)
      latencies.push(performance.now() - started)
      // About 100 calls a second in all: a busy control plane, well inside the rate limits of 10 keys.
      await new Promise((r) => setTimeout(r, 40))
    }
  }
  await Promise.all([0, 1, 2, 3].map(worker))
  return latencies
}

/** Site requests from autocannon (keep-alive, 16 connections) for `seconds`; p50, p99 in ms. */
async function siteLoad(seconds: number): Promise<{ p50: number; p99: number; rps: number }> {
  const result = await autocannon({
    url: `${ORIGIN}/`,
    connections: 16,
    duration: seconds,
    requests: Array.from({ length: 50 }, (_, i) => ({ method: 'GET' as const, path: '/', headers: { host: `site${i * 7}.localhost` } })),
  })
  return { p50: result.latency.p50, p99: result.latency.p99, rps: result.requests.average }
}

async function main(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), 'plinth-bench-backup-'))
  const data = join(work, 'data')
  try {
    const seeding = performance.now()
    const { ids } = await seed(data)
    const seeded = performance.now() - seeding
    const size = du(data)

    // 1. Throughput: the stopped directory, cp -a against plinth backup (both read it warm, after a first pass).
    execFileSync('cp', ['-a', data, join(work, 'warm')])
    rmSync(join(work, 'warm'), { recursive: true, force: true })
    const cpStarted = performance.now()
    execFileSync('cp', ['-a', data, join(work, 'copy')])
    const cpMs = performance.now() - cpStarted
    // cp returns with its bytes in the page cache; a backup returns with them on disk (fsynced): both ways.
    execFileSync('sync')
    const cpSyncMs = performance.now() - cpStarted
    rmSync(join(work, 'copy'), { recursive: true, force: true })
    execFileSync('sync')
    const offline = cli(['backup', join(work, 'offline')], data)
    const offlineBytes = du(join(work, 'offline'))

    // 2. Load without and during a backup of the running server.
    const server = await startServer(data)
    const keys: string[] = []
    for (let i = 0; i < 10; i++)
      keys.push((await call(ADMIN, 'POST', '/v1/api-keys', { name: `load ${i}`, access: { kind: 'organization', role: 'admin' } })).secret)
    await siteLoad(2)
    const [baseApi, baseSites] = await Promise.all([apiLoad(keys, ids, LOAD_SECONDS), siteLoad(LOAD_SECONDS)])
    const root = join(work, 'online')
    const backingUp = cliAsync(['backup', root], data)
    const [duringApi, duringSites, first] = await Promise.all([
      apiLoad(keys, ids, LOAD_SECONDS, backingUp),
      siteLoad(LOAD_SECONDS),
      backingUp,
    ])
    const firstManifest = manifestOf(first.out, root)

    // 3. 1% of the content changes: 1% of the sites redeployed, 1% of the large files' bytes new.
    for (let i = 0; i < SITES / 100; i++)
      await call(keys[i % keys.length]!, 'POST', `/v1/websites/${ids[(Math.floor(SITES / 2) + i) % SITES]}/deploy/json`, {
        files: [{ path: 'index.html', content: `<h1>changed ${i}</h1>` }],
      })
    const changedBlobs = Math.max(1, Math.round(LARGE / 100))
    for (let i = 0; i < changedBlobs; i++) await largeFile(keys[0]!, ids[0]!, randomBytes(LARGE_BYTES))
    const second = await cliAsync(['backup', root], data)
    const secondManifest = manifestOf(second.out, root)
    await stopServer(server.child)

    // 4. Restore to serving.
    const restored = join(work, 'restored')
    const restoreStarted = performance.now()
    cli(['restore', root, '--secret', join(data, SECRET_FILE_NAME)], restored)
    const copy = await startServer(restored)
    const answer = await rawRequest(PORT, 'site5.localhost', '/')
    const restoreToServing = performance.now() - restoreStarted
    await stopServer(copy.child)
    if (answer.status !== 200) throw new Error(`the restored server answered ${answer.status}`)

    // 5. The continuous archive: the same API load with it on, then 1% of the websites redeployed, each waited into the archive.
    const archive = await archiveFigures(
      work,
      data,
      PORT,
      ADMIN,
      keys,
      ids,
      (seconds = LOAD_SECONDS) => apiLoad(keys, ids, seconds),
      (child) => {
        children.add(child)
        child.on('exit', () => children.delete(child))
      },
    )

    const p99 = (xs: number[]) => percentile(xs, 99)
    const rows: [string, string][] = [
      [
        'data directory',
        `${mib(size)}: ${SITES.toLocaleString('en')} websites, ${LARGE} large files of ${mib(LARGE_BYTES)}, a year of daily analytics for ${ANALYTICS_SITES.toLocaleString('en')} sites (seeded in ${(seeded / 1000).toFixed(0)} s)`,
      ],
      ['cp -a of the stopped directory', `${(cpMs / 1000).toFixed(2)} s (${mib(size / (cpMs / 1000))}/s)`],
      [
        'plinth backup of the stopped directory',
        `${(offline.ms / 1000).toFixed(2)} s (${mib(offlineBytes / (offline.ms / 1000))}/s; ${mib(offlineBytes)} written, the database compacted)`,
      ],
      [
        'cp -a, then sync (on disk, as a backup is when it returns)',
        `${(cpSyncMs / 1000).toFixed(2)} s (${mib(size / (cpSyncMs / 1000))}/s)`,
      ],
      [
        'backup throughput / cp -a throughput, and / cp -a + sync (issue: >= 0.8)',
        `${(offlineBytes / offline.ms / (size / cpMs)).toFixed(2)}, ${(offlineBytes / offline.ms / (size / cpSyncMs)).toFixed(2)}`,
      ],
      [
        'API p99, mixed load without / during a backup of the running server',
        `${p99(baseApi).toFixed(1)} / ${p99(duringApi).toFixed(1)} ms (${baseApi.length} / ${duringApi.length} calls); ratio ${(p99(duringApi) / p99(baseApi)).toFixed(2)} (issue: <= 2)`,
      ],
      [
        'site p99 without / during (16 keep-alive connections)',
        `${baseSites.p99} / ${duringSites.p99} ms (${baseSites.rps.toFixed(0)} / ${duringSites.rps.toFixed(0)} requests/s)`,
      ],
      ['backup of the running server', `${(first.ms / 1000).toFixed(2)} s, ${mib(firstManifest.totals.copiedBytes)} copied`],
      [
        'second backup after 1% changed: bytes copied, and against the first',
        `${mib(secondManifest.totals.copiedBytes)} (database ${mib(secondManifest.database.size)}, ${secondManifest.totals.newBlobs} new blobs); ${((100 * secondManifest.totals.copiedBytes) / firstManifest.totals.copiedBytes).toFixed(1)}% (issue: <= 5%)`,
      ],
      [
        'continuous archive: bytes appended while 1% of the websites were redeployed, against the data directory',
        `${(archive.bytes / 1024).toFixed(0)} KiB for ${archive.changed} deploys; ${((100 * archive.bytes) / archive.dataBytes).toFixed(2)}% of ${mib(archive.dataBytes)} (issue: <= 5%)`,
      ],
      [
        "continuous archive: from a write's answer to archived (fsynced), p50 / p99",
        `${archive.lagP50.toFixed(0)} / ${archive.lagP99.toFixed(0)} ms (issue: p99 < 2 s)`,
      ],
      [
        'API p99, mixed load on a server started afresh without / with the archive on',
        `${p99(archive.without).toFixed(1)} / ${p99(archive.api).toFixed(1)} ms (${archive.without.length} / ${archive.api.length} calls); ratio ${(p99(archive.api) / p99(archive.without)).toFixed(2)} (issue: <= 1.2)`,
      ],
      [
        'restore to serving (plinth restore, start, first site answered)',
        `${(restoreToServing / 1000).toFixed(2)} s (start ${(copy.ms / 1000).toFixed(2)} s)`,
      ],
    ]
    console.log('\n| measure | result |\n|---|---|')
    for (const [k, v] of rows) console.log(`| ${k} | ${v} |`)
  } finally {
    if (process.env.BENCH_KEEP === undefined) rmSync(work, { recursive: true, force: true })
    else console.log(`kept: ${work}`)
  }
}

/** The manifest of the backup a `plinth backup` run printed. */
function manifestOf(out: string, root: string): { totals: { copiedBytes: number; newBlobs: number }; database: { size: number } } {
  const id = /Backup (\d{8}T\d{6}Z(?:-\d+)?) /.exec(out)?.[1]
  if (id === undefined) throw new Error(`no backup in: ${out}`)
  return JSON.parse(readFileSync(join(root, id, 'manifest.json'), 'utf8'))
}

/** A new large file of a site, through a ticket deploy's uploads (the bytes land in the blob directory). */
async function largeFile(key: string, websiteId: string, bytes: Buffer): Promise<void> {
  const { ticket } = await call(key, 'POST', `/v1/websites/${websiteId}/deploy/tickets`)
  const hash = sha256(bytes)
  const uploads = await fetch(`${ORIGIN}/public/v1/deploys/uploads`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ticket}`, 'content-type': 'application/json' },
    body: JSON.stringify({ files: [{ path: `/media/${hash.slice(0, 8)}.bin`, size: bytes.length, sha256: hash }] }),
  })
  const answer = (await uploads.json()) as any
  const target = answer.files[0].upload
  const put = await fetch(target.url.replace(/^http:\/\/[^/]+/, ORIGIN), { method: 'PUT', headers: target.headers, body: bytes })
  if (!put.ok) throw new Error(`large file PUT: ${put.status} ${await put.text()}`)
}

runBenchmark(main)
