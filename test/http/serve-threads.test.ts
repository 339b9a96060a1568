import assert from 'node:assert/strict'
import { connect } from 'node:net'
import { test, type TestContext } from 'node:test'
import { createWebsite, startServer, tempDir, type TestServer } from '../helpers/server.js'
import { freePort, freshRequest, type RawResponse } from '../helpers/http.js'
import { launchPlinth, spawnPlinth } from '../helpers/process.js'
import { waitUntil } from '../helpers/wait.js'

/**
 * PLINTH_SERVE_THREADS=2: a serving thread listens on the port beside the main thread, and the
 * kernel gives each new connection to one of them. Every request here goes on a connection of its
 * own, so a run of them reaches both threads (the metrics say how many each answered).
 */
const ROUNDS = 24
const CHROME = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36'

/** One request on a connection of its own: a run of them reaches both threads. */
function fresh(s: TestServer, host: string, path = '/', headers: Record<string, string> = {}, method = 'GET', body?: string) {
  return freshRequest(s.plinth.port, host, path, headers, method, body)
}

/** What `ROUNDS` requests on their own connections answered: each distinct status and body once. */
async function everyConnection(s: TestServer, host: string, path = '/', headers: Record<string, string> = {}): Promise<string[]> {
  const seen = new Set<string>()
  for (let i = 0; i < ROUNDS; i++) {
    const res = await fresh(s, host, path, headers)
    seen.add(`${res.status} ${res.body.toString().slice(0, 40)}`)
  }
  return [...seen]
}

/** The text of GET /metrics. */
async function scrape(origin: string, key: string): Promise<string> {
  return (await fetch(`${origin}/metrics`, { headers: { authorization: `Bearer ${key}` } })).text()
}

/** A per-thread series of a scrape, by thread number (0: the main thread). */
function perThread(text: string, name: string): Record<string, number> {
  const out: Record<string, number> = {}
  for (const [, thread, n] of text.matchAll(new RegExp(`^${name}\\{thread="(\\d+)"\\} (\\d+)$`, 'gm'))) out[thread!] = Number(n)
  return out
}

async function threadResponses(s: TestServer): Promise<Record<string, number>> {
  return perThread(await scrape(s.origin, s.adminKey), 'plinth_serve_thread_responses_total')
}

async function deploy(s: TestServer, id: string, html: string): Promise<void> {
  const res = await s.api('POST', `/v1/websites/${id}/deploy/json`, { body: { files: [{ path: 'index.html', content: html }] } })
  assert.equal(res.status, 201, JSON.stringify(res.body))
}

/** An API call on a connection of its own (the API answers on every thread: a serving thread hands it on). */
function apiOnFreshConnection(s: TestServer, method: string, path: string, body?: unknown): Promise<RawResponse> {
  const headers: Record<string, string> = { authorization: `Bearer ${s.adminKey}` }
  if (body !== undefined) headers['content-type'] = 'application/json'
  return fresh(s, '127.0.0.1', path, headers, method, body === undefined ? undefined : JSON.stringify(body))
}

test('two serving threads: both answer a site, and publish, rollback, a password and unpublish are on both before the API answers', async (t) => {
  const s = await startServer(t, { PLINTH_SERVE_THREADS: '2' })
  const site = await createWebsite(s, { name: 'Threads', kind: 'static', subdomain: 'threads' })
  await deploy(s, site.id, '<h1>one</h1>')
  assert.equal((await s.api('POST', `/v1/websites/${site.id}/publish`)).status, 200)
  assert.deepEqual(await everyConnection(s, 'threads.localhost'), ['200 <h1>one</h1>'])
  const answered = await threadResponses(s)
  assert.ok(answered['0']! > 0 && answered['1']! > 0, `both threads answer: ${JSON.stringify(answered)}`)

  // A new version: the first requests after the API's answer, on every thread, serve it.
  await deploy(s, site.id, '<h1>two</h1>')
  assert.deepEqual(await everyConnection(s, 'threads.localhost'), ['200 <h1>one</h1>'], 'the draft is not live')
  assert.deepEqual(await everyConnection(s, 'draft--threads.localhost'), ['200 <h1>two</h1>'])
  assert.equal((await s.api('POST', `/v1/websites/${site.id}/publish`)).status, 200)
  assert.deepEqual(await everyConnection(s, 'threads.localhost'), ['200 <h1>two</h1>'])
  assert.equal((await s.api('POST', `/v1/websites/${site.id}/rollback`, { body: { version: 2 } })).status, 200)
  assert.deepEqual(await everyConnection(s, 'threads.localhost'), ['200 <h1>one</h1>'])

  // A password: every thread asks for it (the main thread holds passwords; a thread hands such a site on).
  assert.equal((await s.api('PUT', `/v1/websites/${site.id}/password`, { body: { password: 'open sesame' } })).status, 200)
  const locked = await everyConnection(s, 'threads.localhost')
  assert.equal(locked.length, 1)
  assert.match(locked[0]!, /^401 /)
  assert.equal((await s.api('PUT', `/v1/websites/${site.id}/password`, { body: { password: null } })).status, 200)
  assert.deepEqual(await everyConnection(s, 'threads.localhost'), ['200 <h1>one</h1>'])

  assert.equal((await s.api('POST', `/v1/websites/${site.id}/unpublish`)).status, 200)
  const gone = await everyConnection(s, 'threads.localhost')
  assert.equal(gone.length, 1)
  assert.match(gone[0]!, /^404 /)
})

test('two serving threads: the API and request bodies go through either thread; page views on both are counted', async (t) => {
  const s = await startServer(t, { PLINTH_SERVE_THREADS: '2' })
  // The beacon counts in real minutes on the threads: the test's clock is set to now.
  s.clock.set(Date.now())
  const site = await createWebsite(s, { name: 'Counted', kind: 'static', subdomain: 'counted' })
  // Bodies through either thread: each deploy is a JSON body on a connection of its own.
  const big = 'x'.repeat(300_000)
  for (let i = 0; i < 6; i++) {
    const res = await apiOnFreshConnection(s, 'POST', `/v1/websites/${site.id}/deploy/json`, {
      files: [
        { path: 'index.html', content: `<h1>page ${i}</h1>` },
        { path: 'big.txt', content: big },
      ],
    })
    assert.equal(res.status, 201, res.body.toString())
  }
  for (let i = 0; i < 6; i++) {
    const res = await apiOnFreshConnection(s, 'GET', `/v1/websites/${site.id}`)
    assert.equal(res.status, 200)
    assert.equal(JSON.parse(res.body.toString()).id, site.id)
  }
  assert.equal((await apiOnFreshConnection(s, 'POST', `/v1/websites/${site.id}/publish`)).status, 200)
  assert.equal((await fresh(s, 'counted.localhost', '/big.txt')).body.length, 300_000)

  for (let i = 0; i < ROUNDS; i++) assert.equal((await fresh(s, 'counted.localhost', '/', { 'user-agent': CHROME })).status, 200)
  // Not counted on either thread: a bot and a HEAD.
  await fresh(s, 'counted.localhost', '/', { 'user-agent': 'Googlebot/2.1 (+http://www.google.com/bot.html)' })
  await fresh(s, 'counted.localhost', '/', { 'user-agent': CHROME }, 'HEAD')
  const report = await s.api('GET', `/v1/websites/${site.id}/analytics?period=24h`)
  assert.equal(report.status, 200, JSON.stringify(report.body))
  assert.equal(report.body.totals.pageviews, ROUNDS)
  assert.deepEqual(report.body.pages, [{ name: '/', pageviews: ROUNDS }])
  const answered = await threadResponses(s)
  assert.ok(answered['1']! > 0, `the serving thread answered some: ${JSON.stringify(answered)}`)
})

test('two serving threads: a body sent with a GET in chunks stays that request’s; the next request on the loopback connection is never glued to it', async (t) => {
  const s = await startServer(t, { PLINTH_SERVE_THREADS: '2' })
  const site = await createWebsite(s, { name: 'Framed', kind: 'static', subdomain: 'framed' })
  // The chunk holds the start of another request: unframed on the shared connection, the main thread
  // would read it as one, and the next handed-on request as its remaining header lines.
  const smuggled = `GET /v1/websites/nope HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: `
  const raw = (): Promise<string> =>
    new Promise((resolve, reject) => {
      const socket = connect(s.plinth.port, '127.0.0.1')
      let text = ''
      socket.on('data', (c) => (text += c.toString()))
      socket.on('close', () => resolve(text))
      socket.on('error', reject)
      socket.write(
        `GET /v1/websites/${site.id} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${s.adminKey}\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n` +
          `${smuggled.length.toString(16)}\r\n${smuggled}\r\n0\r\n\r\n`,
      )
    })
  for (let i = 0; i < ROUNDS; i++) {
    const answer = await raw()
    assert.match(answer, /^HTTP\/1\.1 200 /, answer.slice(0, 200))
    const next = await apiOnFreshConnection(s, 'GET', `/v1/websites/${site.id}`)
    assert.equal(next.status, 200, next.body.toString())
    assert.equal(JSON.parse(next.body.toString()).id, site.id)
  }
})

/** Starts of the server the next test makes, in two lanes at once (a start is about 2 s of loading modules, on one core). */
const STARTS = 4
const LANES = 2
/** Fresh connections opened all at once as soon as a start answered. */
const CONNECTIONS = 200
const KEY = 'wb_' + 't'.repeat(40)

interface Start {
  line: string
  answered: Record<string, number>
  listening: Record<string, number>
}

/** A data directory with a published site at spread.localhost, served from the first request of every later start. */
async function seededDataDir(t: TestContext): Promise<string> {
  const dir = tempDir(t)
  const seed = await spawnPlinth(t, { PLINTH_DATA_DIR: dir, PLINTH_ADMIN_KEY: KEY, PLINTH_SERVE_THREADS: '2' })
  const api = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`http://127.0.0.1:${seed.port}${path}`, {
      method,
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    })
    assert.ok(res.ok, `${method} ${path}: ${res.status}`)
    return (await res.json()) as { id: string }
  }
  const site = await api('POST', '/v1/websites', { name: 'Spread', kind: 'static', subdomain: 'spread' })
  await api('POST', `/v1/websites/${site.id}/deploy/json`, { files: [{ path: 'index.html', content: 'spread' }] })
  await api('POST', `/v1/websites/${site.id}/publish`)
  seed.child.kill('SIGKILL')
  await seed.exited
  return dir
}

/**
 * One start on a port picked just before, taken as ready as soon as the site answers on a fresh
 * connection (as a supervisor's check or a load balancer sees it, before the start-up line), then
 * CONNECTIONS fresh connections opened at once.
 */
async function startAndSpread(t: TestContext, dir: string): Promise<Start> {
  const port = await freePort()
  const plinth = launchPlinth(t, { PLINTH_DATA_DIR: dir, PLINTH_SERVE_THREADS: '2', PORT: String(port) })
  const site = () => freshRequest(port, 'spread.localhost', '/')
  await waitUntil(
    () =>
      site().then(
        (res) => res.status === 200,
        () => false,
      ),
    'the site to answer',
    30_000,
  )
  const answers = await Promise.all(Array.from({ length: CONNECTIONS }, site))
  assert.deepEqual(new Set(answers.map((res) => res.status)), new Set([200]))
  const line = await waitUntil(() => /^Plinth listening on .*$/m.exec(plinth.stdout())?.[0], 'the start-up line')
  const metrics = await scrape(`http://127.0.0.1:${port}`, KEY)
  const answered = perThread(metrics, 'plinth_serve_thread_responses_total')
  const listening = perThread(metrics, 'plinth_serve_thread_listening')
  plinth.child.kill('SIGKILL')
  await plinth.exited
  return { line, answered, listening }
}

test('started again and again, every serving thread answers a share of the connections opened as soon as the server answers', async (t) => {
  const lane = async (starts: number): Promise<Start[]> => {
    const dir = await seededDataDir(t)
    const seen: Start[] = []
    for (let i = 0; i < starts; i++) seen.push(await startAndSpread(t, dir))
    return seen
  }
  const starts = (await Promise.all(Array.from({ length: LANES }, () => lane(STARTS / LANES)))).flat()
  const report = starts.map(({ answered }, i) => `start ${i + 1}: ${JSON.stringify(answered)}`).join('\n')
  const short = starts.filter(({ answered }) => !(answered['0']! >= CONNECTIONS / 10 && answered['1']! >= CONNECTIONS / 10))
  assert.equal(short.length, 0, `a thread answered under a tenth of the connections in ${short.length} of ${STARTS} starts:\n${report}`)
  for (const { line, listening } of starts) {
    assert.match(line, /^Plinth listening on 127\.0\.0\.1:\d+ \(2 of 2 threads listening, PLINTH_SERVE_THREADS\)$/)
    assert.deepEqual(listening, { '0': 1, '1': 1 })
  }
})
