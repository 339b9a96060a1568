import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Agent, request } from 'node:http'
import { connect } from 'node:net'
import { test } from 'node:test'
import { ERROR_KINDS, ERROR_REASONS, ERROR_STATUS } from '../../core/errors.js'
import { SPEC_PATH } from '../helpers/spec.js'
import { createWebsite, startServer } from '../helpers/server.js'

test('every error kind has its status, and the README error table lists them all', () => {
  const readme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8')
  const expected = {
    validation: 400,
    unauthorized: 401,
    payment_required: 402,
    forbidden: 403,
    not_found: 404,
    method_not_allowed: 405,
    request_timeout: 408,
    conflict: 409,
    gone: 410,
    payload_too_large: 413,
    unprocessable: 422,
    rate_limited: 429,
    upstream: 502,
    unavailable: 503,
    internal: 500,
  }
  assert.deepEqual(ERROR_STATUS, expected)
  for (const [kind, status] of Object.entries(ERROR_STATUS)) {
    assert.match(readme, new RegExp(`\\|\\s*\`${kind}\`\\s*\\|\\s*${status}\\s*\\|`), `README error table lacks ${kind} ${status}`)
  }
})

/** Every TypeScript source file of the server (not tests, not benchmarks). */
function serverSources(): { file: string; text: string }[] {
  const root = fileURLToPath(new URL('../../../', import.meta.url))
  const out: { file: string; text: string }[] = []
  const walk = (dir: string) => {
    for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
      const path = join(dir, entry.name)
      if (entry.isDirectory()) walk(path)
      else if (entry.name.endsWith('.ts')) out.push({ file: path, text: readFileSync(join(root, path), 'utf8') })
    }
  }
  for (const dir of ['core', 'actors', 'render', 'http', 'plinth', 'bin']) walk(dir)
  return out
}

test('the error registry: the spec’s ten kinds map exactly, every kind the code produces is registered, every addition says why and the reference documents all', async (t) => {
  // Spec (Errors): "| validation | 400 |" … "| internal | 500 |"; its cases also answer 410
  // (`edit_window_closed`) and 503 (`invite_only`) without naming a kind.
  const spec = readFileSync(SPEC_PATH, 'utf8')
  const table = spec.slice(spec.indexOf('## Errors'), spec.indexOf('Cases and `details`'))
  const specKinds = [...table.matchAll(/^\| (\w+) \| (\d{3})/gm)].map((m) => [m[1], Number(m[2])] as const)
  assert.equal(specKinds.length, 10, 'the spec names ten kinds')
  for (const [kind, status] of specKinds)
    assert.equal((ERROR_KINDS as Record<string, { status: number }>)[kind]?.status, status, `${kind} is ${status} as the spec says`)
  // Every addition says why it exists.
  for (const [kind, entry] of Object.entries(ERROR_KINDS) as [string, { why?: string }][]) {
    if (!specKinds.some(([k]) => k === kind))
      assert.ok(entry.why !== undefined && entry.why.length > 20, `${kind} is not one of the spec's kinds: its registry entry says why`)
  }
  // Every kind a source file can produce (an ApiError, or an error body built by hand) is in the registry,
  // and every registered kind is produced somewhere (internal: by anything unexpected).
  const produced = new Set<string>(['internal'])
  for (const { file, text } of serverSources()) {
    for (const match of text.matchAll(/new ApiError\(([^,]+),/g)) {
      for (const literal of match[1].matchAll(/'(\w+)'/g)) {
        assert.ok(literal[1] in ERROR_KINDS, `${file} produces the unregistered kind ${literal[1]}`)
        produced.add(literal[1])
      }
    }
    for (const match of text.matchAll(/\{ kind: '(\w+)', message:/g)) {
      assert.ok(match[1] in ERROR_KINDS, `${file} answers the unregistered kind ${match[1]}`)
      produced.add(match[1])
    }
  }
  assert.ok(produced.size > 10, 'the scan found the kinds the code produces')
  for (const kind of Object.keys(ERROR_KINDS)) assert.ok(produced.has(kind), `${kind} is registered but nothing produces it`)
  // The reference (GET /docs/api) documents each kind with its status, and each addition's why.
  const s = await startServer(t)
  const reference = await (await fetch(`${s.origin}/docs/api`, { headers: { accept: 'text/markdown' } })).text()
  for (const [kind, entry] of Object.entries(ERROR_KINDS) as [string, { status: number; why?: string }][]) {
    assert.match(reference, new RegExp(`\`${kind}\` \\| ${entry.status} \\|`), `the reference lacks ${kind}`)
    if (entry.why !== undefined) assert.ok(reference.includes(entry.why), `the reference says why ${kind} exists`)
  }
  for (const reason of ERROR_REASONS) assert.ok(reference.includes(`| \`${reason}\` |`), `the reference lacks the reason ${reason}`)
})

test('an unknown route is a 404 in the error shape; a known path with another method is a 405 with Allow', async (t) => {
  const s = await startServer(t)
  const res = await s.api('GET', '/v1/nothing-here')
  assert.equal(res.status, 404)
  assert.equal(res.body.kind, 'not_found')
  assert.match(res.body.message, /openapi\.json/)
  const wrongMethod = await s.api('PUT', '/v1/websites')
  assert.equal(wrongMethod.status, 405)
  assert.equal(wrongMethod.body.kind, 'method_not_allowed')
  assert.equal(wrongMethod.headers.get('allow'), 'GET, HEAD, POST')
  assert.deepEqual(wrongMethod.body.details.allowed, ['GET', 'HEAD', 'POST'])
  assert.match(wrongMethod.body.message, /^PUT is not allowed on \/v1\/websites; allowed: GET, HEAD, POST$/)
  const website = await s.api('POST', '/v1/websites/ws_x')
  assert.equal(website.status, 405)
  assert.equal(website.headers.get('allow'), 'GET, HEAD, PATCH, DELETE')
})

test('malformed JSON is a 400 validation error that says where it broke', async (t) => {
  const s = await startServer(t)
  const res = await s.api('POST', '/v1/websites', { raw: '{"name": "x",' })
  assert.equal(res.status, 400)
  assert.equal(res.body.kind, 'validation')
  assert.equal(res.body.details.field, 'body')
  assert.equal(res.body.details.reason, 'invalid_json')
  assert.match(res.body.message, /not valid JSON/)
})

test('schema violations name the bad field', async (t) => {
  const s = await startServer(t)
  const cases: [unknown, string, RegExp][] = [
    [{}, 'body.name', /required/],
    [{ name: 42 }, 'body.name', /string/],
    [{ name: 'x', colour: 'red' }, 'body.colour', /not a known field/],
    [{ name: 'x', slug: 'Not A Slug' }, 'body.slug', /lowercase/],
    [[1, 2], 'body', /object/],
  ]
  for (const [body, field, message] of cases) {
    const res = await s.api('POST', '/v1/websites', { body })
    assert.equal(res.status, 400, JSON.stringify(body))
    assert.equal(res.body.details.field, field, JSON.stringify(body))
    assert.match(res.body.message, message)
  }
  const query = await s.api('GET', '/v1/websites?limit=abc')
  assert.equal(query.status, 400)
  assert.equal(query.body.details.field, 'query.limit')
  const unknown = await s.api('GET', '/v1/websites?colour=red')
  assert.equal(unknown.body.details.field, 'query.colour')
  const notJson = await s.api('POST', '/v1/websites', { raw: 'name=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } })
  assert.equal(notJson.status, 400)
  assert.match(notJson.body.message, /application\/json/)
})

test('a body over the limit is a 413, declared or streamed', async (t) => {
  const s = await startServer(t)
  const big = JSON.stringify({ name: 'x', description: 'y'.repeat(1100 * 1024) })
  const res = await s.api('POST', '/v1/websites', { raw: big })
  assert.equal(res.status, 413)
  assert.equal(res.body.kind, 'payload_too_large')
  assert.equal(res.body.details.limitBytes, 1 << 20)
  // Without a Content-Length the limit applies while the body streams in.
  const chunks = new ReadableStream({
    start(controller) {
      for (let i = 0; i < 20; i++) controller.enqueue(new TextEncoder().encode('x'.repeat(64 * 1024)))
      controller.close()
    },
  })
  const streamed = await fetch(`${s.origin}/v1/websites`, {
    method: 'POST',
    headers: { authorization: `Bearer ${s.adminKey}`, 'content-type': 'application/json' },
    body: chunks,
    duplex: 'half',
  } as RequestInit)
  assert.equal(streamed.status, 413)
  assert.equal(((await streamed.json()) as any).kind, 'payload_too_large')
  // The server is still healthy afterwards.
  assert.equal((await s.api('GET', '/v1/me')).status, 200)
})

/**
 * A POST through Node's http client, writing `body` as fast as it can: with a Content-Length or
 * chunked, on a keep-alive connection or one it asks to close.
 */
function nodePost(
  port: number,
  path: string,
  body: Buffer,
  key: string,
  how: { chunked: boolean; keepAlive: boolean },
): Promise<{ status: number; connection: string | undefined; text: string } | { error: string }> {
  return new Promise((resolve) => {
    const agent = new Agent({ keepAlive: how.keepAlive })
    const headers: Record<string, string | number> = { authorization: `Bearer ${key}`, 'content-type': 'application/json' }
    if (!how.chunked) headers['content-length'] = body.length
    const req = request({ host: '127.0.0.1', port, method: 'POST', path, agent, headers }, (res) => {
      let text = ''
      res.on('data', (c) => (text += c))
      res.on('end', () => {
        agent.destroy()
        resolve({ status: res.statusCode!, connection: res.headers.connection, text })
      })
    })
    req.on('error', (error: NodeJS.ErrnoException) => {
      agent.destroy()
      resolve({ error: error.code ?? error.message })
    })
    for (let at = 0; at < body.length; at += 1 << 16) req.write(body.subarray(at, at + (1 << 16)))
    req.end()
  })
}

test('a client still sending a body over the limit sees the 413 (not EPIPE), told to close the connection', async (t) => {
  const s = await startServer(t)
  for (const mb of [2, 10, 50]) {
    for (const chunked of [false, true]) {
      for (const keepAlive of [true, false]) {
        const res = await nodePost(s.plinth.port, '/v1/websites', Buffer.alloc(mb << 20, 32), s.adminKey, { chunked, keepAlive })
        const label = `${mb} MB ${chunked ? 'chunked' : 'with a length'}${keepAlive ? '' : ', Connection: close'}`
        assert.ok('status' in res, `${label}: ${JSON.stringify(res)}`)
        assert.equal(res.status, 413, label)
        assert.equal(res.connection, 'close', label)
        assert.equal(JSON.parse(res.text).details.limitBytes, 1 << 20)
      }
    }
  }
  assert.equal((await s.api('GET', '/v1/me')).status, 200)
})

test('a body that stops arriving is answered 408 and its connection closed, before uWS would close it silently', async (t) => {
  const s = await startServer(t)
  const started = Date.now()
  const answer = await new Promise<string>((resolve) => {
    const socket = connect(s.plinth.port, '127.0.0.1')
    let text = ''
    socket.on('data', (c) => (text += c.toString()))
    socket.on('close', () => resolve(text))
    socket.on('error', () => undefined)
    socket.write(
      `POST /v1/websites HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${s.adminKey}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"name":`,
    )
  })
  const waited = Date.now() - started
  assert.match(answer, /^HTTP\/1\.1 408 Request Timeout\r\n/)
  const body = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))
  assert.equal(body.kind, 'request_timeout')
  assert.match(body.message, /stopped arriving: nothing for 7 s after 8 of 100 bytes/)
  assert.ok(waited >= 6900 && waited < 8000, `${waited} ms`)
})

test('a trailing slash on an API path reaches the same resource', async (t) => {
  const s = await startServer(t)
  const w = await createWebsite(s)
  const slash = await s.api('GET', `/v1/websites/${w.id}/`)
  assert.equal(slash.status, 200)
  assert.equal(slash.body.id, w.id)
})

test('an id too long for any key is a 404 (or a 400 naming the field), never a crash', async (t) => {
  const s = await startServer(t)
  const long = 'a'.repeat(5000)
  for (const path of [`/v1/websites/ws_${long}`, `/v1/websites/ws_${long}/source/summary`, `/v1/websites/${'é'.repeat(700)}`]) {
    const res = await s.api('GET', path)
    assert.equal(res.status, 404, path.slice(0, 40))
    assert.equal(res.body.kind, 'not_found')
  }
  const key = await s.api('PATCH', `/v1/api-keys/key_${long}`, { body: { name: 'x' } })
  assert.ok(key.status === 404 || (key.status === 400 && key.body.details.field === 'path.keyId'), JSON.stringify(key.body).slice(0, 200))
  assert.equal((await s.api('GET', '/v1/me')).status, 200)
})

test('a request with two Host headers is a 400, on the API and on a site host alike', async (t) => {
  // RFC 9112 3.2: "A server MUST respond with a 400 (Bad Request) status code to … any [request] that
  // contains more than one Host header field".
  const s = await startServer(t)
  const site = await createWebsite(s, { name: 'Hosted', kind: 'static', subdomain: 'hosted' })
  await s.api('POST', `/v1/websites/${site.id}/deploy/json`, { body: { files: [{ path: 'index.html', content: 'hi' }] } })
  assert.equal((await s.api('POST', `/v1/websites/${site.id}/publish`)).status, 200)
  const send = (head: string) =>
    new Promise<string>((resolve, reject) => {
      const socket = connect(s.plinth.port, '127.0.0.1', () => socket.write(`${head}\r\n`))
      let text = ''
      socket.on('data', (chunk) => (text += chunk.toString()))
      socket.on('end', () => resolve(text))
      socket.on('error', reject)
      setTimeout(() => socket.end(), 1500)
    })
  for (const [first, second] of [
    ['hosted.localhost', 'localhost'],
    ['localhost', 'hosted.localhost'],
    ['hosted.localhost', 'hosted.localhost'],
  ]) {
    const answer = await send(`GET / HTTP/1.1\r\nHost: ${first}\r\nUser-Agent: test\r\nHost: ${second}\r\n`)
    assert.match(answer, /^HTTP\/1\.1 400 /, `${first} then ${second}: ${answer.slice(0, 80)}`)
    assert.match(answer, /more than one Host header/)
  }
  // One Host header still reaches the site.
  assert.match(await send('GET / HTTP/1.1\r\nHost: hosted.localhost\r\nConnection: close\r\n'), /^HTTP\/1\.1 200 [\s\S]*hi$/)
})
