// What bench:serve's runs share: pages, processes' CPU, wrk and its Lua scripts, medians.
import { execFileSync, spawn } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

export function need(command: string, install: string): void {
  try {
    execFileSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' })
  } catch {
    console.error(`bench:serve needs ${command}: ${install}`)
    process.exit(1)
  }
}

export function page(bytes: number, seed: string): string {
  const head = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${seed}</title></head><body>`
  const tail = '</body></html>'
  let body = ''
  let i = 0
  while (head.length + body.length + tail.length < bytes)
    body += `<p>${seed} paragraph ${i++}: the quick brown fox jumps over the lazy dog.</p>\n`
  return (head + body).slice(0, bytes - tail.length) + tail
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

export function cpuTicks(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return Number(fields[11]) + Number(fields[12]) // utime + stime, in clock ticks
}

export function childPids(pid: number): number[] {
  try {
    return execFileSync('pgrep', ['-P', String(pid)], { encoding: 'utf8' })
      .trim()
      .split('\n')
      .filter(Boolean)
      .map(Number)
  } catch {
    return []
  }
}

export async function waitForPort(port: number): Promise<void> {
  for (let i = 0; i < 100; i++) {
    try {
      await fetch(`http://127.0.0.1:${port}/`)
      return
    } catch {
      await sleep(100)
    }
  }
  throw new Error(`nothing listens on ${port}`)
}

export interface Target {
  host: string
  path: string
  headers: Record<string, string>
}

export function luaScript(dir: string, name: string, targets: Target[]): string {
  const entries = targets
    .map(
      (t) =>
        `{ path = ${JSON.stringify(t.path)}, headers = { ${Object.entries({ Host: t.host, ...t.headers })
          .map(([k, v]) => `[${JSON.stringify(k)}] = ${JSON.stringify(v)}`)
          .join(', ')} } }`,
    )
    .join(',\n  ')
  const file = join(dir, `${name}.lua`)
  writeFileSync(
    file,
    `local targets = {\n  ${entries}\n}\nlocal i = 0\nrequest = function()\n  i = i % #targets + 1\n  local t = targets[i]\n  return wrk.format("GET", t.path, t.headers)\nend\n`,
  )
  return file
}

export interface Run {
  rps: number
  p50ms: number
  p99ms: number
  /** Server CPU, percent of one core. */
  cpu: number
  /** Server CPU time per request, microseconds. */
  cpuUs: number
  /** Requests answered. */
  requests: number
}

export function toMs(text: string): number {
  const match = /([\d.]+)(us|ms|s)/.exec(text)!
  const value = Number(match[1])
  return match[2] === 'us' ? value / 1000 : match[2] === 's' ? value * 1000 : value
}

/** Where wrk runs and how hard it pushes: core 1 alone, one thread and 50 connections, unless told. */
export interface WrkLoad {
  /** taskset's CPU list, or null for any core. */
  cpus: string | null
  threads: number
  connections: number
}

const ONE_CORE: WrkLoad = { cpus: '1', threads: 1, connections: 50 }

export async function wrk(port: number, script: string, seconds: number, pids: number[], load: WrkLoad = ONE_CORE): Promise<Run> {
  const before = pids.reduce((sum, pid) => sum + cpuTicks(pid), 0)
  const started = Date.now()
  const out = await new Promise<string>((resolve, reject) => {
    const args = [`-t${load.threads}`, `-c${load.connections}`, `-d${seconds}s`, '--latency', '-s', script, `http://127.0.0.1:${port}/`]
    const child = load.cpus === null ? spawn('wrk', args) : spawn('taskset', ['-c', load.cpus, 'wrk', ...args])
    let text = ''
    child.stdout.on('data', (c) => (text += c))
    child.on('exit', (code) => (code === 0 ? resolve(text) : reject(new Error(`wrk exited ${code}: ${text}`))))
  })
  const elapsed = (Date.now() - started) / 1000
  const after = pids.reduce((sum, pid) => sum + cpuTicks(pid), 0)
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)![1])
  const requests = Number(/(\d+) requests in/.exec(out)![1])
  const non2xx = /Non-2xx or 3xx responses: (\d+)/.exec(out)
  if (non2xx) throw new Error(`wrk saw ${non2xx[1]} error responses:\n${out}`)
  const cpuSeconds = (after - before) / 100 // clock ticks
  return {
    rps,
    p50ms: toMs(/\s50%\s+(\S+)/.exec(out)![1]),
    p99ms: toMs(/\s99%\s+(\S+)/.exec(out)![1]),
    cpu: (cpuSeconds / elapsed) * 100,
    cpuUs: (cpuSeconds / requests) * 1e6,
    requests,
  }
}

export function median(xs: number[]): number {
  const sorted = [...xs].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

/**
 * A distribution-free 95% confidence interval for the median of paired ratios: the order
 * statistics k and n-k+1, with k the largest index whose binomial tail stays within 2.5% (the
 * sign test's interval). null below 6 pairs, where no such interval exists.
 */
export function medianInterval(xs: number[]): [number, number] | null {
  const n = xs.length
  const sorted = [...xs].sort((a, b) => a - b)
  let tail = 0
  let k = 0
  let choose = 1 // C(n, i)
  for (let i = 0; i < n; i++) {
    const next = tail + choose / 2 ** n // P(X <= i)
    if (next > 0.025) break
    tail = next
    k = i + 1
    choose = (choose * (n - i)) / (i + 1)
  }
  return k === 0 ? null : [sorted[k - 1], sorted[n - k]]
}

/** A call of a benchmark server's API with its admin key (JSON in and out; a failure throws with the answer). */
export function apiOf(port: number, key: string): (method: string, path: string, body?: unknown) => Promise<any> {
  return async (method, path, body) => {
    let res: Response
    for (;;) {
      res = await fetch(`http://127.0.0.1:${port}${path}`, {
        method,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', host: 'localhost' },
        body: body === undefined ? undefined : JSON.stringify(body),
      })
      // A rate limit met by a setup loop (deploys and publishes): waited out.
      if (res.status !== 429) break
      await sleep(Number(res.headers.get('retry-after') ?? 1) * 1000)
    }
    const json = await res.json()
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`)
    return json
  }
}
