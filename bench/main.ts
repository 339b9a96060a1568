import { spawn, type ChildProcess } from 'node:child_process'
import { appendFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const ENTRY = fileURLToPath(new URL('../bin/plinth.js', import.meta.url))

/** Runs a benchmark's main function and exits: 0 when it printed its numbers, 1 with the error otherwise. */
export function runBenchmark(main: () => Promise<void>): void {
  main().then(
    () => process.exit(0),
    (error: unknown) => {
      console.error(error)
      process.exit(1)
    },
  )
}

/** The p-th percentile (nearest rank) of samples. */
export function percentile(xs: number[], p: number): number {
  const sorted = [...xs].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]
}

/**
 * Starts `plinth start` on `port` with `dataDir` and resolves once it listens (BENCH_NODE_FLAGS go to
 * Node; the server's output to BENCH_SERVER_LOG when set).
 */
export async function spawnServer(port: number, dataDir: string, env: Record<string, string> = {}): Promise<ChildProcess> {
  const flags = (process.env.BENCH_NODE_FLAGS ?? '').split(' ').filter(Boolean)
  const child = spawn(process.execPath, ['--no-node-snapshot', ...flags, ENTRY, 'start'], {
    env: { PATH: process.env.PATH, PORT: String(port), HOST: '127.0.0.1', PLINTH_DATA_DIR: dataDir, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  await new Promise<void>((resolve, reject) => {
    let out = ''
    child.stdout!.on('data', (chunk: Buffer) => {
      if (process.env.BENCH_SERVER_LOG !== undefined) appendFileSync(process.env.BENCH_SERVER_LOG, chunk)
      out += chunk
      if (out.includes('Plinth listening')) resolve()
    })
    child.on('exit', (code) => reject(new Error(`plinth exited with ${code}`)))
  })
  return child
}

/** One API call with a key; the parsed JSON answer, or an error naming the status. */
export async function callApi(origin: string, key: string, method: string, path: string, body?: unknown): Promise<any> {
  const res = await fetch(origin + path, {
    method,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const text = await res.text()
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`)
  return JSON.parse(text)
}
