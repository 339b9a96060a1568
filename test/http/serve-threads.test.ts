import assert from 'node:assert/strict'
import { connect } from 'node:net'
import { test } from 'node:test'
import { createWebsite, startServer, type TestServer } from '../helpers/server.js'
import { freshRequest, type RawResponse } from '../helpers/http.js'

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

async function threadResponses(s: TestServer): Promise<Record<string, number>> {
  const text = await (await fetch(`${s.origin}/metrics`, { headers: { authorization: `Bearer ${s.adminKey}` } })).text()
  const out: Record<string, number> = {}
  for (const [, thread, n] of text.matchAll(/^plinth_serve_thread_responses_total\{thread="(\d+)"\} (\d+)$/gm)) out[thread!] = Number(n)
  return out
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
