/**
 * npm run bench:abuse — replays the inputs that once crashed, hung or stalled the server (issue 10)
 * against a running `plinth start`, and prints for each: the answer, how long it took, the peak RSS
 * of the server with its render processes while it ran, and the latency of a bystander site served
 * meanwhile.
 *
 * BENCH_IDLE=1 adds the slow case: a render, then 65 s idle (past the old render pool's 60 s idle
 * timeout, which used to abort the process), a second render and SIGTERM, three times over.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { runBenchmark } from './main.js'

const PORT = 18590
const ADMIN = 'wb_' + 'b'.repeat(43)
const ENTRY = fileURLToPath(new URL('../bin/plinth.js', import.meta.url))
const FIXTURE = new URL('../test/fixtures/throw-on-sigusr2.js', import.meta.url).href
const ORIGIN = `http://127.0.0.1:${PORT}`

interface Server {
  child: ChildProcess
  dir: string
  exited: Promise<{ code: number | null; signal: string | null }>
}

async function start(nodeArgs: string[] = [], dir = mkdtempSync(join(tmpdir(), 'plinth-bench-abuse-'))): Promise<Server> {
  const child = spawn(process.execPath, ['--no-node-snapshot', ...nodeArgs, ENTRY, 'start'], {
    env: { PATH: process.env.PATH, PORT: String(PORT), PLINTH_DATA_DIR: dir, PLINTH_ADMIN_KEY: ADMIN },
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  let stderr = ''
  child.stderr!.on('data', (c: Buffer) => (stderr += c))
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  )
  void exited.then((e) => {
    if (/Assertion|abort/i.test(stderr)) console.error(`server stderr (exit ${e.code} ${e.signal}):\n${stderr}`)
  })
  for (let i = 0; ; i++) {
    try {
      await fetch(ORIGIN + '/')
      break
    } catch {
      if (i > 100) throw new Error(`plinth did not start: ${stderr}`)
      await new Promise((r) => setTimeout(r, 100))
    }
  }
  return { child, dir, exited }
}

async function call(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(ORIGIN + path, {
    method,
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const text = await res.text()
  try {
    return { status: res.status, body: JSON.parse(text) }
  } catch {
    return { status: res.status, body: text }
  }
}

/** RSS in MB of a process and its descendants (the render processes). */
function treeRss(pid: number): number {
  let kb = 0
  const children = new Map<number, number[]>()
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)])
    } catch {
      // gone
    }
  }
  const visit = (p: number) => {
    try {
      kb += Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${p}/status`, 'utf8'))?.[1] ?? 0)
    } catch {
      return
    }
    for (const c of children.get(p) ?? []) visit(c)
  }
  visit(pid)
  return kb / 1024
}

/** Raw bytes to the server; what came back (first line) and when the connection closed. */
function raw(bytes: string | Buffer, waitMs = 15_000): Promise<string> {
  return new Promise((resolve) => {
    const started = Date.now()
    const socket = connect(PORT, '127.0.0.1')
    let answer = ''
    const done = (how: string) => {
      socket.destroy()
      resolve(`${answer.split('\r\n')[0] || '(no answer)'}; ${how} after ${Date.now() - started} ms`)
    }
    const timer = setTimeout(() => done('still open'), waitMs)
    socket.on('data', (c) => (answer += c.toString('latin1')))
    socket.on('close', () => {
      clearTimeout(timer)
      done('closed')
    })
    socket.on('error', () => undefined)
    socket.write(bytes)
  })
}

const page = (body: string) => `import { definePage } from '@platform'\nexport default definePage({ route: '/', render: () => ${body} })\n`
const recursiveTypes = (count: number) =>
  `import { definePage } from '@platform'\n${Array.from({ length: count }, (_, i) => `type R${i}<T, N extends unknown[] = []> = N['length'] extends 999 ? T : R${i}<{ v: T }, [...N, 0]>\nexport type X${i} = R${i}<string>`).join('\n')}\nexport default definePage({ route: '/', render: () => <p>x</p> })\n`

async function frameworkSite(name: string, content?: string): Promise<{ id: string; put(content: string, page?: string): Promise<any> }> {
  const w = (await call('POST', '/v1/websites', { name })).body
  const lease = (await call('POST', `/v1/websites/${w.id}/source/lease`)).body.leaseToken
  const put = async (text: string, pageName = 'home') =>
    (await call('PUT', `/v1/websites/${w.id}/source/file`, { leaseToken: lease, file: { type: 'page', name: pageName }, content: text }))
      .body
  if (content !== undefined) await put(content)
  return { id: w.id, put }
}

async function main(): Promise<void> {
  const rows: string[] = []
  const server = await start()
  const pid = server.child.pid!
  try {
    // The bystander: a published static site, fetched in a loop while each case runs.
    const bystander = (await call('POST', '/v1/websites', { name: 'bystander', kind: 'static', subdomain: 'bystander' })).body
    await call('POST', `/v1/websites/${bystander.id}/deploy/json`, { files: [{ path: 'index.html', content: '<h1>still here</h1>' }] })
    await call('POST', `/v1/websites/${bystander.id}/publish`)

    const measure = async (name: string, run: () => Promise<string>) => {
      let peak = treeRss(pid)
      let running = true
      const latencies: number[] = []
      const sampler = setInterval(() => (peak = Math.max(peak, treeRss(pid))), 100)
      const prober = (async () => {
        while (running) {
          const t0 = performance.now()
          try {
            const res = await fetch(ORIGIN + '/', { headers: { host: 'bystander.localhost' } })
            await res.arrayBuffer()
            latencies.push(performance.now() - t0)
          } catch {
            latencies.push(Number.POSITIVE_INFINITY)
          }
          await new Promise((r) => setTimeout(r, 20))
        }
      })()
      const t0 = performance.now()
      let answer: string
      try {
        answer = await run()
      } catch (error) {
        answer = `threw: ${(error as Error).message}`
      }
      const ms = performance.now() - t0
      running = false
      await prober
      clearInterval(sampler)
      const sorted = latencies.sort((a, b) => a - b)
      const p99 = sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.99))] ?? 0
      const alive = server.child.exitCode === null && server.child.signalCode === null
      rows.push(
        `| ${name} | ${answer.replace(/\|/g, '\\|').slice(0, 160)} | ${ms.toFixed(0)} | ${peak.toFixed(0)} | ${p99.toFixed(1)} (${sorted.length}) | ${alive ? 'yes' : 'NO'} |`,
      )
      console.error(`done: ${name}`)
    }

    const staticSite = (await call('POST', '/v1/websites', { name: 'static', kind: 'static' })).body
    await measure('truncated multipart deploy', async () => {
      const res = await fetch(`${ORIGIN}/v1/websites/${staticSite.id}/deploy`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'multipart/form-data; boundary=X' },
        body: '--X\r\nContent-Disposition: form-data; name="files"; filename="a.html"\r\n\r\nhello',
      })
      return `${res.status} ${((await res.json()) as any).message}`
    })
    await measure('invalid UTF-8 in a JSON deploy', async () => {
      const res = await fetch(`${ORIGIN}/v1/websites/${staticSite.id}/deploy/json`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
        body: Buffer.concat([Buffer.from('{"files": [{"path": "a.html", "content": "caf'), Buffer.from([0xe9]), Buffer.from('"}]}')]),
      })
      return `${res.status} ${((await res.json()) as any).message}`
    })
    await measure('wrong method on an API path', async () => {
      const res = await fetch(`${ORIGIN}/v1/websites`, { method: 'PUT', headers: { authorization: `Bearer ${ADMIN}` } })
      return `${res.status} Allow: ${res.headers.get('allow')}`
    })

    const deep = await frameworkSite('deep', page('<p>ok</p>'))
    await measure('3,000 nested brackets: check', async () => {
      await deep.put(`${page('<p>ok</p>')}const x = ${'['.repeat(3000)}${']'.repeat(3000)}\n`, 'deep')
      const res = await call('POST', `/v1/websites/${deep.id}/head/check`)
      return `${res.status} ${res.body.diagnostics?.[0]?.message ?? JSON.stringify(res.body)}`
    })
    await measure('60,000-term sum: check', async () => {
      await deep.put(`${page('<p>ok</p>')}const a = 1\nconst x = ${Array.from({ length: 60_000 }, () => 'a').join(' + ')}\n`, 'deep')
      const res = await call('POST', `/v1/websites/${deep.id}/head/check`)
      return `${res.status} ${res.body.diagnostics?.[0]?.message ?? JSON.stringify(res.body)}`
    })
    await measure('3 KB page that formats to MBs: write', async () => {
      const res = await deep.put(`export default () => <>${'<div>'.repeat(1000)}x${'</div>'.repeat(1000)}</>\n`, 'nested')
      return `v${res.version} formatError: ${res.formatError?.message}`
    })

    for (const count of [30, 120]) {
      const types = await frameworkSite(`types ${count}`, page('<p>ok</p>'))
      await measure(`recursive type aliases x${count}: check`, async () => {
        await types.put(recursiveTypes(count))
        const res = await call('POST', `/v1/websites/${types.id}/head/check`)
        return `${res.status} ${res.body.diagnostics?.map((d: any) => d.message).join('; ') || JSON.stringify(res.body).slice(0, 200)}`
      })
    }

    const waits = await frameworkSite('waits', page('<p>ok</p>'))
    await measure('a page that waits in Atomics.wait: check', async () => {
      await waits.put(page('{ Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0); return null }'))
      const res = await call('POST', `/v1/websites/${waits.id}/head/check`)
      return `${res.status} ${res.body.renderFailures?.[0]?.message}`
    })

    const chain = await frameworkSite('chain', page('<p>ok</p>'))
    await measure('a page whose promise chain never ends: check, then its build', async () => {
      const written = await chain.put(page('{ const loop = (): Promise<void> => Promise.resolve().then(loop); loop(); return <p>x</p> }'))
      const check = await call('POST', `/v1/websites/${chain.id}/head/check`)
      let status: any
      do {
        await new Promise((r) => setTimeout(r, 250))
        status = (await call('GET', `/v1/websites/${chain.id}/deployments/status?version=${written.version}`)).body
      } while (status.status === 'building')
      return `check: ${check.body.renderFailures?.[0]?.message}; build: ${status.diagnostics?.[0]?.message}`
    })

    // Five sites whose pages loop, checked at once, and a good site checked right after them.
    const bad = await Promise.all([1, 2, 3, 4, 5].map((i) => frameworkSite(`loop ${i}`, page('<p>ok</p>'))))
    const good = await frameworkSite('good', page('<p>ok</p>'))
    for (const site of [...bad, good]) await call('POST', `/v1/websites/${site.id}/head/check`)
    for (const site of bad) await site.put(page('{ for (;;) {} }'))
    await measure("a good site's check while five looping sites check", async () => {
      const checks = bad.map((site) => call('POST', `/v1/websites/${site.id}/head/check`))
      await new Promise((r) => setTimeout(r, 100))
      const t0 = performance.now()
      const res = await call('POST', `/v1/websites/${good.id}/head/check`)
      const waited = performance.now() - t0
      await Promise.all(checks)
      return `${res.status} ok=${res.body.ok} after ${waited.toFixed(0)} ms (the five looping checks ended meanwhile)`
    })

    // The protocol edge, straight on the socket.
    await measure('HTTP/1.0 request with Host', () => raw('GET / HTTP/1.0\r\nHost: bystander.localhost\r\n\r\n'))
    await measure('HTTP/1.0 request without Host', () => raw('GET / HTTP/1.0\r\n\r\n'))
    await measure('HTTP/1.1 request without Host', () => raw('GET / HTTP/1.1\r\n\r\n'))
    await measure('garbage request line', () => raw('HELLO THERE\r\n\r\n'))
    await measure('request line of 128 KB', () => raw(`GET /${'a'.repeat(128 * 1024)} HTTP/1.1\r\nHost: bystander.localhost\r\n\r\n`))
    await measure('headers of 64 KiB', () => raw(`GET / HTTP/1.1\r\nHost: bystander.localhost\r\nX-Big: ${'b'.repeat(64 * 1024)}\r\n\r\n`))
    await measure('an idle connection', () => raw('', 20_000))
    await measure('half a request line, then nothing', () => raw('GET / HT', 20_000))
    await measure('a body that stops halfway', () =>
      raw(
        `POST /v1/websites HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${ADMIN}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"name":`,
        20_000,
      ),
    )
    await measure('a 10 MB body to a 1 MiB operation (Node fetch)', async () => {
      try {
        const res = await fetch(`${ORIGIN}/v1/websites`, {
          method: 'POST',
          headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
          body: Buffer.alloc(10 << 20, 32),
        })
        return `${res.status} ${((await res.json()) as any).message}`
      } catch (error) {
        return `client error: ${(error as Error).message} ${String((error as { cause?: unknown }).cause ?? '')}`
      }
    })

    // An uncaught exception with writes in flight, on a server of its own.
    server.child.kill('SIGTERM')
    await server.exited
    const fatal = await start(['--import', FIXTURE])
    const site = (await call('POST', '/v1/websites', { name: 'busy', kind: 'static' })).body
    let stop = false
    const writers = Array.from({ length: 8 }, async () => {
      while (!stop) await call('PATCH', `/v1/websites/${site.id}`, { description: String(Math.random()) }).catch(() => (stop = true))
    })
    await new Promise((r) => setTimeout(r, 300))
    const t0 = performance.now()
    fatal.child.kill('SIGUSR2')
    const exit = await Promise.race([fatal.exited, new Promise((r) => setTimeout(() => r('still running after 10 s'), 10_000))])
    stop = true
    await Promise.all(writers)
    rows.push(
      `| uncaught exception with 8 writers in flight | exit ${JSON.stringify(exit)} | ${(performance.now() - t0).toFixed(0)} | | | exited |`,
    )
    if (fatal.child.exitCode === null) fatal.child.kill('SIGKILL')
    rmSync(fatal.dir, { recursive: true, force: true })

    if (process.env.BENCH_IDLE === '1') {
      for (let round = 1; round <= 3; round++) {
        const idle = await start()
        const site = await frameworkSite('idle', page('<p>idle</p>'))
        await call('POST', `/v1/websites/${site.id}/head/check`)
        await new Promise((r) => setTimeout(r, 65_000))
        const alive = idle.child.exitCode === null && idle.child.signalCode === null
        const again = alive ? (await call('POST', `/v1/websites/${site.id}/head/check`)).body.ok : false
        idle.child.kill('SIGTERM')
        const end = await idle.exited
        rows.push(
          `| render, 65 s idle, render, SIGTERM (round ${round}) | alive after idle: ${alive}, second check ok: ${again}, exit ${JSON.stringify(end)} | | | | ${end.code === 0 ? 'clean exit' : 'NO'} |`,
        )
        rmSync(idle.dir, { recursive: true, force: true })
      }
    }
  } finally {
    if (server.child.exitCode === null) server.child.kill('SIGKILL')
    rmSync(server.dir, { recursive: true, force: true })
  }
  console.log('\n| case | answer | ms | peak RSS MB (server + renderers) | bystander p99 ms (requests) | server alive |')
  console.log('|---|---|---|---|---|---|')
  for (const row of rows) console.log(row)
}

runBenchmark(main)
