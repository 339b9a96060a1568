/*
 * The functions runtime on a real isolate: each test boots an isolated-vm isolate as the functions
 * process does (the runtime script, then a site's compiled script), with a small host made here (a real
 * HostCrypto, real timers, a fetch answered from a Map, a Map for KV), and asserts what a caller of
 * __plinthInvoke sees: the 'head' and 'write' calls, the log lines, the outcome.
 */
import assert from 'node:assert/strict'
import { createHash, createHmac } from 'node:crypto'
import { randomBytes } from 'node:crypto'
import { test } from 'node:test'
import ivm from 'isolated-vm'
import { HostCrypto } from '../../render/functions/host-crypto.js'
import { compileRuntime, runtimeScript } from '../../render/functions/runtime-script.js'

type Pairs = [string, string][]

interface Answer {
  status?: number
  statusText?: string
  headers?: Pairs
  body?: string | Uint8Array
}

interface Sent {
  head: { status: number; statusText: string; headers: Pairs } | null
  writes: { bytes: Buffer; at: number }[]
  /** When the runtime said the answer was whole. */
  ended?: number
}

/** The host's side, as the functions process plays it (minus IPC): what each request sent and asked. */
class FakeHost {
  readonly logs: { id: number; level: string; text: string }[] = []
  readonly calls: { id: number; op: string; json: string }[] = []
  readonly sent = new Map<number, Sent>()
  readonly kv = new Map<string, { value: Buffer; metadata: unknown; expiration: number | null }>()
  /** fetch() answers by URL; a URL under refused.example is refused as the host refuses private addresses. */
  readonly upstream = new Map<string, Answer>()
  /** env.ASSETS answers by path. */
  readonly assets = new Map<string, Answer>()
  readonly crypto = new HostCrypto()

  answer(found: Answer | undefined, url: string): [string, ArrayBuffer | undefined] {
    const a = found ?? { status: 404, body: 'not found' }
    const body = typeof a.body === 'string' ? Buffer.from(a.body) : Buffer.from(a.body ?? new Uint8Array(0))
    const head = { status: a.status ?? 200, statusText: a.statusText ?? '', headers: a.headers ?? [], url, redirected: false }
    return [JSON.stringify(head), body.buffer.slice(body.byteOffset, body.byteOffset + body.byteLength) as ArrayBuffer]
  }

  async call(id: number, op: string, json: string, bytes: ArrayBuffer | undefined): Promise<[string, ArrayBuffer | undefined]> {
    this.calls.push({ id, op, json })
    const sent = this.sent.get(id)
    switch (op) {
      case 'head':
        assert.ok(sent, `a head for request ${id}, which was not invoked`)
        assert.equal(sent.head, null, 'the head is sent once')
        sent.head = JSON.parse(json)
        return ['{}', undefined]
      case 'write':
        assert.ok(sent?.head, 'a write comes after the head')
        sent.writes.push({ bytes: Buffer.from(bytes!), at: Date.now() })
        return ['{}', undefined]
      case 'respond':
        assert.ok(sent, `an answer for request ${id}, which was not invoked`)
        assert.equal(sent.head, null, 'the head is sent once')
        sent.head = JSON.parse(json)
        if (bytes !== undefined && bytes.byteLength > 0) sent.writes.push({ bytes: Buffer.from(bytes), at: Date.now() })
        sent.ended = Date.now()
        return ['{}', undefined]
      case 'end':
        assert.ok(sent?.head, 'the end comes after the head')
        sent.ended = Date.now()
        return ['{}', undefined]
      case 'sleep':
        await new Promise((resolve) => setTimeout(resolve, (JSON.parse(json) as { ms: number }).ms))
        return ['{}', undefined]
      case 'subtle':
        return this.crypto.handle(json, bytes)
      case 'fetch': {
        const request = JSON.parse(json) as { url: string }
        if (new URL(request.url).hostname === 'refused.example') throw new Error('refused: refused.example resolves to a private address')
        return this.answer(this.upstream.get(request.url), request.url)
      }
      case 'assets': {
        const request = JSON.parse(json) as { url: string }
        return this.answer(this.assets.get(new URL(request.url).pathname), request.url)
      }
      case 'kv':
        return this.kvCall(JSON.parse(json), bytes)
      default:
        throw new Error(`unknown op ${op}`)
    }
  }

  kvCall(
    request: { op: string; key?: string; prefix?: string; metadata?: unknown; expiration?: number },
    bytes: ArrayBuffer | undefined,
  ): [string, ArrayBuffer | undefined] {
    switch (request.op) {
      case 'get': {
        const entry = this.kv.get(request.key!)
        if (entry === undefined) return [JSON.stringify({ found: false, metadata: null, expiration: null }), undefined]
        const copy = Buffer.from(entry.value)
        return [
          JSON.stringify({ found: true, metadata: entry.metadata ?? null, expiration: entry.expiration }),
          copy.buffer.slice(copy.byteOffset, copy.byteOffset + copy.length) as ArrayBuffer,
        ]
      }
      case 'put':
        this.kv.set(request.key!, {
          value: Buffer.from(bytes!),
          metadata: request.metadata ?? null,
          expiration: request.expiration ?? null,
        })
        return ['{}', undefined]
      case 'delete':
        this.kv.delete(request.key!)
        return ['{}', undefined]
      case 'list': {
        const keys = [...this.kv.keys()]
          .filter((k) => k.startsWith(request.prefix ?? ''))
          .sort()
          .map((name) => ({ name, metadata: this.kv.get(name)!.metadata ?? undefined }))
        return [JSON.stringify({ keys, list_complete: true }), undefined]
      }
      default:
        throw new Error(`unknown kv op ${request.op}`)
    }
  }
}

interface Invoked {
  id: number
  outcome: { ok?: true; failure?: { message: string; stack: string } }
  status: number | undefined
  headers: Headers
  body: Buffer
  text: string
  writes: { bytes: Buffer; at: number }[]
  logs: { level: string; text: string }[]
}

interface RequestOptions {
  headers?: Pairs
  body?: string | Uint8Array
  env?: Record<string, string>
}

let nextId = 1

/** An isolate as the functions process sets one up: the host's References, the runtime, then the site's script. */
async function boot(t: { after(fn: () => void): void }, site: string, host = new FakeHost()) {
  const isolate = new ivm.Isolate({ memoryLimit: 128 })
  t.after(() => {
    if (!isolate.isDisposed) isolate.dispose()
  })
  const context = await isolate.createContext()
  await context.global.set(
    '__plinthHost',
    {
      log: new ivm.Reference((id: number, level: string, text: string) => void host.logs.push({ id, level, text })),
      random: new ivm.Reference((length: number) => new Uint8Array(randomBytes(Math.min(65536, length))).buffer),
      // isolated-vm 5 reports a promise that is already rejected when it is returned as unhandled (the
      // isolate still gets the rejection): it is marked handled here, as a host must do.
      call: new ivm.Reference((id: number, op: string, json: string, bytes: ArrayBuffer | undefined) => {
        const answer = host.call(id, op, json, bytes)
        answer.catch(() => undefined)
        return answer
      }),
    },
    { copy: true },
  )
  await (await compileRuntime(isolate)).run(context)
  await (await isolate.compileScript(site, { filename: 'file:///functions.js' })).run(context)
  const invoke = (await context.global.get('__plinthInvoke', { reference: true })) as ivm.Reference<
    (id: number, head: string, body: ArrayBuffer | undefined) => Promise<string>
  >
  return {
    host,
    context,
    async request(method: string, url: string, options: RequestOptions = {}): Promise<Invoked> {
      const id = nextId++
      const sent: Sent = { head: null, writes: [] }
      host.sent.set(id, sent)
      const body =
        options.body === undefined ? undefined : typeof options.body === 'string' ? Buffer.from(options.body) : Buffer.from(options.body)
      const head = JSON.stringify({ method, url, headers: options.headers ?? [], env: options.env ?? {}, cf: { country: 'NL' } })
      const json = await invoke.apply(
        undefined,
        [id, head, body === undefined ? undefined : (body.buffer.slice(body.byteOffset, body.byteOffset + body.length) as ArrayBuffer)],
        {
          arguments: { copy: true },
          result: { promise: true, copy: true },
        },
      )
      const all = Buffer.concat(sent.writes.map((w) => w.bytes))
      return {
        id,
        outcome: JSON.parse(json),
        status: sent.head?.status,
        headers: new Headers(sent.head?.headers ?? []),
        body: all,
        text: all.toString('utf8'),
        writes: sent.writes,
        logs: host.logs.filter((l) => l.id === id).map(({ level, text }) => ({ level, text })),
      }
    },
  }
}

/** A site's compiled script as the compile step writes it: the route table, most specific first. */
const site = (routes: string, prelude = '') => `${prelude}\nglobalThis.__plinthSite = { routes: [\n${routes}\n] }`

test('a JSON API: [id] params, the method picks the handler, the request body read as JSON', async (t) => {
  const app = await boot(
    t,
    site(`
      { routePath: '/api/todos/:id', mountPath: '/api/todos', method: 'GET', middlewares: [], modules: [(c) => Response.json({ id: c.params.id, path: c.functionPath })] },
      { routePath: '/api/todos/:id', mountPath: '/api/todos', method: 'DELETE', middlewares: [], modules: [(c) => new Response(null, { status: 204 })] },
      { routePath: '/api/todos', mountPath: '/api/todos', method: 'POST', middlewares: [], modules: [async ({ request }) => {
          const todo = await request.json()
          return Response.json({ created: todo.title, by: request.headers.get('x-user'), cf: request.cf.country }, { status: 201, headers: { 'x-api': '1' } })
        }] },
      { routePath: '/files/:path*', mountPath: '/files', method: '', middlewares: [], modules: [(c) => Response.json(c.params)] },
      { routePath: '/echo', mountPath: '/', method: 'PUT', middlewares: [], modules: [({ request }) => new Response(request.body, { headers: { 'x-was-stream': String(request.body instanceof ReadableStream) } })] },
    `),
  )
  const got = await app.request('GET', 'https://site.example/api/todos/42')
  assert.deepEqual(got.outcome, { ok: true })
  assert.equal(got.status, 200)
  assert.equal(got.headers.get('content-type'), 'application/json')
  assert.deepEqual(JSON.parse(got.text), { id: '42', path: '/api/todos/42' })

  const created = await app.request('POST', 'https://site.example/api/todos', {
    headers: [
      ['content-type', 'application/json'],
      ['x-user', 'ada'],
    ],
    body: JSON.stringify({ title: 'write tests' }),
  })
  assert.equal(created.status, 201)
  assert.equal(created.headers.get('x-api'), '1')
  assert.deepEqual(JSON.parse(created.text), { created: 'write tests', by: 'ada', cf: 'NL' })

  const deleted = await app.request('DELETE', 'https://site.example/api/todos/42')
  assert.equal(deleted.status, 204)
  assert.equal(deleted.writes.length, 0)

  assert.deepEqual(JSON.parse((await app.request('GET', 'https://site.example/files/a/b/c.txt')).text), { path: ['a', 'b', 'c.txt'] })
  assert.deepEqual(JSON.parse((await app.request('GET', 'https://site.example/files')).text), {})

  // The body arrives whole, and is still a ReadableStream to the site.
  const echoed = await app.request('PUT', 'https://site.example/echo', { body: new Uint8Array([0, 1, 2, 255]) })
  assert.equal(echoed.headers.get('x-was-stream'), 'true')
  assert.deepEqual([...echoed.body], [0, 1, 2, 255])
})

test('middleware: outermost first, adds a header to what next() returns, and context.data goes along the chain', async (t) => {
  const app = await boot(
    t,
    site(`
      { routePath: '/api/me', mountPath: '/api', method: '', middlewares: [], modules: [(c) => Response.json({ data: c.data, order: c.data.order })] },
      { routePath: '/api', mountPath: '/api', method: '', middlewares: [async (c) => {
          c.data.order.push('api')
          c.data = { ...c.data, role: 'admin' }
          const response = await c.next()
          response.headers.set('x-api-mw', 'yes')
          return response
        }], modules: [] },
      { routePath: '/', mountPath: '/', method: '', middlewares: [[async (c) => {
          c.data.user = 'ada'
          c.data.order = ['root-1']
          const response = await c.next()
          response.headers.append('x-root-mw', 'yes')
          return response
        }, (c) => { c.data.order.push('root-2'); return c.next() }]], modules: [] },
    `),
  )
  const got = await app.request('GET', 'https://site.example/api/me')
  assert.deepEqual(got.outcome, { ok: true })
  assert.equal(got.headers.get('x-root-mw'), 'yes')
  assert.equal(got.headers.get('x-api-mw'), 'yes')
  assert.deepEqual(JSON.parse(got.text), {
    data: { user: 'ada', order: ['root-1', 'root-2', 'api'], role: 'admin' },
    order: ['root-1', 'root-2', 'api'],
  })
})

test('with no route left, next() falls through to env.ASSETS.fetch, also in front of static files and after passThroughOnException()', async (t) => {
  const host = new FakeHost()
  host.assets.set('/about.html', { status: 200, headers: [['content-type', 'text/html']], body: '<h1>About</h1>' })
  const app = await boot(
    t,
    site(`
      { routePath: '/api/hello', mountPath: '/api', method: 'GET', middlewares: [], modules: [() => new Response('hello')] },
      { routePath: '/about.html', mountPath: '/', method: 'PUT', middlewares: [], modules: [(c) => { c.passThroughOnException(); throw new Error('broken') }] },
      { routePath: '/', mountPath: '/', method: '', middlewares: [async (c) => {
          const response = await c.next()
          response.headers.set('x-served-by', 'middleware')
          return response
        }], modules: [] },
    `),
    host,
  )
  const page = await app.request('GET', 'https://site.example/about.html')
  assert.deepEqual(page.outcome, { ok: true })
  assert.equal(page.status, 200)
  assert.equal(page.text, '<h1>About</h1>')
  assert.equal(page.headers.get('content-type'), 'text/html')
  assert.equal(page.headers.get('x-served-by'), 'middleware')
  // After passThroughOnException(), an exception gives the static file instead of a failure.
  const passed = await app.request('PUT', 'https://site.example/about.html', { body: 'x' })
  assert.deepEqual(passed.outcome, { ok: true })
  assert.equal(passed.text, '<h1>About</h1>')
  // A route of another method is no match: the static files answer (404 here).
  const post = await app.request('POST', 'https://site.example/api/hello', { body: 'x' })
  assert.equal(post.status, 404)
  assert.ok(host.calls.some((c) => c.op === 'assets' && JSON.parse(c.json).method === 'POST'))
})

test('a form POST read with request.formData(): urlencoded and multipart with a file', async (t) => {
  const app = await boot(
    t,
    site(`
      { routePath: '/submit', mountPath: '/', method: 'POST', middlewares: [], modules: [async ({ request }) => {
          const form = await request.formData()
          const out = {}
          for (const [name, value] of form) out[name] = typeof value === 'string' ? value : { file: value.name, type: value.type, size: value.size, text: await value.text() }
          return Response.json(out)
        }] },
    `),
  )
  const urlencoded = await app.request('POST', 'https://site.example/submit', {
    headers: [['content-type', 'application/x-www-form-urlencoded']],
    body: 'name=Ada+Lovelace&email=ada%40example.com&note=caf%C3%A9',
  })
  assert.deepEqual(urlencoded.outcome, { ok: true })
  assert.deepEqual(JSON.parse(urlencoded.text), { name: 'Ada Lovelace', email: 'ada@example.com', note: 'café' })

  const boundary = '----formboundary7MA4YWxk'
  const multipart = [
    `--${boundary}`,
    'Content-Disposition: form-data; name="title"',
    '',
    'Report ✓',
    `--${boundary}`,
    'Content-Disposition: form-data; name="upload"; filename="notes.txt"',
    'Content-Type: text/plain',
    '',
    'line one\r\nline two',
    `--${boundary}--`,
    '',
  ].join('\r\n')
  const got = await app.request('POST', 'https://site.example/submit', {
    headers: [['content-type', `multipart/form-data; boundary=${boundary}`]],
    body: multipart,
  })
  assert.deepEqual(got.outcome, { ok: true })
  assert.deepEqual(JSON.parse(got.text), {
    title: 'Report ✓',
    upload: { file: 'notes.txt', type: 'text/plain', size: 18, text: 'line one\r\nline two' },
  })

  const wrong = await app.request('POST', 'https://site.example/submit', { headers: [['content-type', 'text/plain']], body: 'x' })
  assert.match(wrong.outcome.failure!.message, /FormData can only parse the following MIME types/)
})

test('a KV counter through the host: get, put with metadata, list, and Cloudflare-like validation', async (t) => {
  const host = new FakeHost()
  const app = await boot(
    t,
    site(`
      { routePath: '/count', mountPath: '/', method: 'GET', middlewares: [], modules: [async ({ env }) => {
          const count = Number((await env.KV.get('visits')) ?? '0') + 1
          await env.KV.put('visits', String(count), { metadata: { by: 'counter' }, expirationTtl: 3600 })
          const { value, metadata } = await env.KV.getWithMetadata('visits', 'json')
          return Response.json({ count, value, metadata })
        }] },
      { routePath: '/kv-misc', mountPath: '/', method: 'GET', middlewares: [], modules: [async ({ env }) => {
          await env.KV.put('bytes', new Uint8Array([1, 2, 3]))
          const bytes = new Uint8Array(await env.KV.get('bytes', { type: 'arrayBuffer' }))
          const stream = await env.KV.get('bytes', 'stream')
          const streamed = new Uint8Array(await new Response(stream).arrayBuffer())
          const listed = await env.KV.list({ prefix: 'b' })
          await env.KV.delete('bytes')
          const missing = await env.KV.get('bytes')
          const errors = []
          for (const attempt of [
            () => env.KV.get('x'.repeat(513)),
            () => env.KV.get(''),
            () => env.KV.put('k', 'v', { expirationTtl: 10 }),
            () => env.KV.put('k', 'x'.repeat(1024 * 1024 + 1)),
            () => env.KV.get('k', 'blob'),
            () => env.KV.list({ limit: 5000 }),
          ]) {
            try { await attempt(); errors.push('no error') } catch (e) { errors.push(e.message) }
          }
          return Response.json({ bytes: [...bytes], streamed: [...streamed], listed, missing, errors })
        }] },
    `),
    host,
  )
  for (const expected of [1, 2, 3]) {
    const got = await app.request('GET', 'https://site.example/count')
    assert.deepEqual(got.outcome, { ok: true })
    assert.deepEqual(JSON.parse(got.text), { count: expected, value: expected, metadata: { by: 'counter' } })
  }
  assert.equal(host.kv.get('visits')!.value.toString(), '3')
  const putCall = host.calls.filter((c) => c.op === 'kv' && JSON.parse(c.json).op === 'put').at(-1)!
  assert.deepEqual(JSON.parse(putCall.json), { op: 'put', key: 'visits', expirationTtl: 3600, metadata: { by: 'counter' } })

  const misc = JSON.parse((await app.request('GET', 'https://site.example/kv-misc')).text)
  assert.deepEqual(misc.bytes, [1, 2, 3])
  assert.deepEqual(misc.streamed, [1, 2, 3])
  assert.deepEqual(misc.listed, { keys: [{ name: 'bytes' }], list_complete: true, cacheStatus: null })
  assert.equal(misc.missing, null)
  assert.deepEqual(misc.errors, [
    'KV GET failed: 414 UTF-8 encoded length of 513 exceeds key length limit of 512.',
    'KV GET failed: 400 Key names must not be empty.',
    'KV PUT failed: 400 Invalid expiration_ttl of 10. Expiration TTL must be at least 60.',
    'KV PUT failed: 413 Value length of 1048577 exceeds limit of 1048576.',
    'Unknown response type. Possible types are "text", "arrayBuffer", "json", and "stream".',
    'KV LIST failed: 400 Invalid key_count_limit of 5000. Please specify an integer less than 1001.',
  ])
})

test('a streamed body: chunks enqueued with a timer between them arrive as separate writes, as they come', async (t) => {
  const app = await boot(
    t,
    site(`
      { routePath: '/stream', mountPath: '/', method: 'GET', middlewares: [], modules: [() => {
          const encoder = new TextEncoder()
          let n = 0
          const body = new ReadableStream({
            async pull(controller) {
              if (n === 3) return controller.close()
              if (n > 0) await new Promise((resolve) => setTimeout(resolve, 60))
              controller.enqueue(encoder.encode('chunk ' + n++ + '\\n'))
            },
          })
          return new Response(body, { headers: { 'content-type': 'text/plain' } })
        }] },
      { routePath: '/piped', mountPath: '/', method: 'GET', middlewares: [], modules: [() => {
          const { readable, writable } = new TransformStream()
          const writer = writable.getWriter()
          ;(async () => {
            for (const word of ['one ', 'two ', 'three']) {
              await writer.write(new TextEncoder().encode(word))
              await scheduler.wait(20)
            }
            await writer.close()
          })()
          return new Response(readable)
        }] },
    `),
  )
  const got = await app.request('GET', 'https://site.example/stream')
  assert.deepEqual(got.outcome, { ok: true })
  assert.equal(got.text, 'chunk 0\nchunk 1\nchunk 2\n')
  assert.deepEqual(
    got.writes.map((w) => w.bytes.toString()),
    ['chunk 0\n', 'chunk 1\n', 'chunk 2\n'],
  )
  // Each chunk was written when it was made, not gathered: the writes are spread over the waits.
  assert.ok(got.writes[2].at - got.writes[0].at >= 100, `writes at ${got.writes.map((w) => w.at - got.writes[0].at).join(', ')} ms`)

  const piped = await app.request('GET', 'https://site.example/piped')
  assert.equal(piped.text, 'one two three')
  assert.equal(piped.writes.length, 3)
})

test('crypto.subtle: HMAC sign and verify and a SHA-256 digest match Node; AES-GCM round trip; random values', async (t) => {
  const app = await boot(
    t,
    site(`
      { routePath: '/crypto', mountPath: '/', method: 'GET', middlewares: [], modules: [async () => {
          const encoder = new TextEncoder()
          const hex = (buffer) => [...new Uint8Array(buffer)].map((b) => b.toString(16).padStart(2, '0')).join('')
          const key = await crypto.subtle.importKey('raw', encoder.encode('s3cret'), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign', 'verify'])
          const signature = await crypto.subtle.sign('HMAC', key, encoder.encode('message'))
          const valid = await crypto.subtle.verify('HMAC', key, signature, encoder.encode('message'))
          const forged = await crypto.subtle.verify('HMAC', key, signature, encoder.encode('messagE'))
          const digest = await crypto.subtle.digest('SHA-256', encoder.encode('hello'))
          const aes = await crypto.subtle.generateKey({ name: 'AES-GCM', length: 256 }, true, ['encrypt', 'decrypt'])
          const iv = crypto.getRandomValues(new Uint8Array(12))
          const sealed = await crypto.subtle.encrypt({ name: 'AES-GCM', iv }, aes, encoder.encode('secret text'))
          const opened = new TextDecoder().decode(await crypto.subtle.decrypt({ name: 'AES-GCM', iv }, aes, sealed))
          const jwk = await crypto.subtle.exportKey('jwk', aes)
          const again = await crypto.subtle.importKey('jwk', jwk, 'AES-GCM', false, ['decrypt'])
          const reopened = new TextDecoder().decode(await crypto.subtle.decrypt({ name: 'AES-GCM', iv }, again, sealed))
          let tampered
          try { await crypto.subtle.decrypt({ name: 'AES-GCM', iv }, aes, new Uint8Array(sealed).map((b, i) => (i === 0 ? b ^ 1 : b))) } catch (e) { tampered = e.name + ' ' + (e instanceof DOMException) }
          let unusable
          try { await crypto.subtle.sign('HMAC', aes, new Uint8Array(1)) } catch (e) { unusable = e.name }
          return Response.json({
            signature: hex(signature), valid, forged, digest: hex(digest), opened, reopened, tampered, unusable,
            key: { type: key.type, extractable: key.extractable, algorithm: key.algorithm, usages: key.usages },
            jwkKty: jwk.kty, uuid: crypto.randomUUID(), ivLength: iv.length, ivNonZero: iv.some((b) => b !== 0),
          })
        }] },
    `),
  )
  const got = await app.request('GET', 'https://site.example/crypto')
  assert.deepEqual(got.outcome, { ok: true })
  const body = JSON.parse(got.text)
  assert.equal(body.signature, createHmac('sha256', 's3cret').update('message').digest('hex'))
  assert.equal(body.valid, true)
  assert.equal(body.forged, false)
  assert.equal(body.digest, createHash('sha256').update('hello').digest('hex'))
  assert.equal(body.opened, 'secret text')
  assert.equal(body.reopened, 'secret text')
  assert.equal(body.tampered, 'OperationError true')
  assert.equal(body.unusable, 'InvalidAccessError')
  assert.deepEqual(body.key, {
    type: 'secret',
    extractable: false,
    algorithm: { name: 'HMAC', length: 48, hash: { name: 'SHA-256' } },
    usages: ['sign', 'verify'],
  })
  assert.equal(body.jwkKty, 'oct')
  assert.match(body.uuid, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
  assert.equal(body.ivNonZero, true)
})

test('failures: a thrown Error gives its message and stack; odd thrown values are described safely; a non-Response is named', async (t) => {
  const app = await boot(
    t,
    site(`
      { routePath: '/throw', mountPath: '/', method: '', middlewares: [], modules: [() => { throw new TypeError('the database is down') }] },
      { routePath: '/reject', mountPath: '/', method: '', middlewares: [], modules: [async () => { await null; throw new Error('later') }] },
      { routePath: '/string', mountPath: '/', method: '', middlewares: [], modules: [() => { throw 'just a string' }] },
      { routePath: '/getter', mountPath: '/', method: '', middlewares: [], modules: [() => {
          throw { get message() { throw new Error('gotcha') }, get stack() { throw new Error('gotcha') }, code: 7 }
        }] },
      { routePath: '/proxy', mountPath: '/', method: '', middlewares: [], modules: [() => {
          throw new Proxy({}, { get() { throw new Error('trap') }, ownKeys() { throw new Error('trap') }, getPrototypeOf() { throw new Error('trap') } })
        }] },
      { routePath: '/long', mountPath: '/', method: '', middlewares: [], modules: [() => { throw new Error('x'.repeat(5000)) }] },
      { routePath: '/nothing', mountPath: '/', method: '', middlewares: [], modules: [() => {}] },
      { routePath: '/object', mountPath: '/', method: '', middlewares: [], modules: [() => ({ status: 200 })] },
      { routePath: '/mid-stream', mountPath: '/', method: '', middlewares: [], modules: [() => {
          let pulls = 0
          return new Response(new ReadableStream({
            async pull(controller) {
              if (pulls++ === 0) return controller.enqueue(new TextEncoder().encode('partial'))
              await scheduler.wait(5)
              controller.error(new Error('stream broke'))
            },
          }))
        }] },
    `),
  )
  const thrown = await app.request('GET', 'https://site.example/throw')
  assert.equal(thrown.status, undefined, 'no head was sent')
  assert.equal(thrown.outcome.failure!.message, 'the database is down')
  assert.match(thrown.outcome.failure!.stack, /^TypeError: the database is down\n\s+at .*functions\.js/)

  assert.equal((await app.request('GET', 'https://site.example/reject')).outcome.failure!.message, 'later')
  assert.deepEqual((await app.request('GET', 'https://site.example/string')).outcome, { failure: { message: 'just a string', stack: '' } })
  assert.equal(
    (await app.request('GET', 'https://site.example/getter')).outcome.failure!.message,
    '{ message: [Getter], stack: [Getter], code: 7 }',
  )
  assert.equal(typeof (await app.request('GET', 'https://site.example/proxy')).outcome.failure!.message, 'string')
  const long = (await app.request('GET', 'https://site.example/long')).outcome.failure!
  assert.equal(long.message.length, 2000)
  assert.match(
    (await app.request('GET', 'https://site.example/nothing')).outcome.failure!.message,
    /returned undefined \(is a `return` missing\?\) instead of a Response/,
  )
  assert.match(
    (await app.request('GET', 'https://site.example/object')).outcome.failure!.message,
    /returned \{ status: 200 \} instead of a Response/,
  )
  const broken = await app.request('GET', 'https://site.example/mid-stream')
  assert.equal(broken.status, 200, 'the head went out before the stream failed')
  assert.equal(broken.text, 'partial')
  assert.equal(broken.outcome.failure!.message, 'stream broke')
})

test('console output reaches the host log with its request and level; top-level lines carry request 0', async (t) => {
  const host = new FakeHost()
  const app = await boot(
    t,
    site(
      `{ routePath: '/log', mountPath: '/', method: '', middlewares: [], modules: [async () => {
          console.log('hello', 42, { a: [1, 'two'], nested: { deep: { deeper: true } } })
          console.info('%s has %d items', 'cart', 3)
          console.warn(new Map([['k', 1]]), new Set([1]), null, undefined, 10n, Symbol('s'))
          await new Promise((resolve) => setTimeout(resolve, 5))
          console.error(new RangeError('bad range'))
          console.debug(new Uint8Array([1, 2]), [function named() {}, class Thing {}], new Headers({ 'x-a': '1' }))
          const circular = { name: 'loop' }
          circular.self = circular
          console.log(circular, { get boom() { throw new Error('no') } })
          return new Response('logged')
        }] },`,
      `console.log('loading functions')`,
    ),
    host,
  )
  assert.deepEqual(host.logs, [{ id: 0, level: 'log', text: 'loading functions' }])
  const got = await app.request('GET', 'https://site.example/log')
  assert.deepEqual(got.outcome, { ok: true })
  assert.deepEqual(got.logs.slice(0, 3), [
    { level: 'log', text: "hello 42 { a: [ 1, 'two' ], nested: { deep: { deeper: true } } }" },
    { level: 'info', text: 'cart has 3 items' },
    { level: 'warn', text: "Map(1) { 'k' => 1 } Set(1) { 1 } null undefined 10n Symbol(s)" },
  ])
  assert.equal(got.logs[3].level, 'error')
  assert.match(got.logs[3].text, /^RangeError: bad range\n\s+at /)
  assert.deepEqual(got.logs.slice(4), [
    { level: 'debug', text: "Uint8Array(2) [ 1, 2 ] [ [Function: named], [class Thing] ] Headers { 'x-a': '1' }" },
    { level: 'log', text: "{ name: 'loop', self: [Circular] } { boom: [Getter] }" },
  ])
})

test('two requests in flight in one isolate: the log lines and host calls of each carry its id, and the timers of a finished request stay silent', async (t) => {
  const host = new FakeHost()
  const app = await boot(
    t,
    site(`
      { routePath: '/slow/:name', mountPath: '/slow', method: '', middlewares: [], modules: [async ({ params, env }) => {
          console.log('start ' + params.name)
          await scheduler.wait(params.name === 'a' ? 60 : 20)
          console.log('after wait ' + params.name)
          await env.KV.put('by-' + params.name, params.name)
          console.log('after put ' + params.name)
          if (params.name === 'b') setTimeout(() => console.log('late timer b'), 200)
          return new Response(params.name)
        }] },
    `),
    host,
  )
  const [a, b] = await Promise.all([app.request('GET', 'https://site.example/slow/a'), app.request('GET', 'https://site.example/slow/b')])
  assert.equal(a.text, 'a')
  assert.equal(b.text, 'b')
  assert.deepEqual(
    a.logs.map((l) => l.text),
    ['start a', 'after wait a', 'after put a'],
  )
  assert.deepEqual(
    b.logs.map((l) => l.text),
    ['start b', 'after wait b', 'after put b'],
  )
  const puts = host.calls.filter((c) => c.op === 'kv').map((c) => [c.id, JSON.parse(c.json).key])
  assert.deepEqual(
    puts.sort(),
    [
      [b.id, 'by-b'],
      [a.id, 'by-a'],
    ].sort(),
  )
  await new Promise((resolve) => setTimeout(resolve, 250))
  assert.ok(!host.logs.some((l) => l.text === 'late timer b'), 'a timer of a finished request does not run')
})

test('timers: setTimeout callbacks run in delay order, a cleared one never runs, setInterval repeats until cleared', async (t) => {
  const app = await boot(
    t,
    site(`
      { routePath: '/timers', mountPath: '/', method: '', middlewares: [], modules: [async () => {
          const order = []
          await new Promise((resolve) => {
            setTimeout(() => order.push('a:60'), 60)
            setTimeout(() => order.push('b:20'), 20)
            setTimeout((word) => order.push('c:0 ' + word), 0, 'with-arg')
            const cleared = setTimeout(() => order.push('never'), 10)
            clearTimeout(cleared)
            queueMicrotask(() => order.push('microtask'))
            let ticks = 0
            const interval = setInterval(() => {
              order.push('tick ' + ++ticks)
              if (ticks === 3) clearInterval(interval)
            }, 15)
            setTimeout(resolve, 120)
          })
          const signal = AbortSignal.timeout(10)
          await new Promise((resolve) => signal.addEventListener('abort', resolve))
          order.push('timeout signal: ' + signal.reason.name)
          return Response.json(order)
        }] },
    `),
  )
  const got = await app.request('GET', 'https://site.example/timers')
  assert.deepEqual(got.outcome, { ok: true })
  const order = JSON.parse(got.text) as string[]
  assert.equal(order[0], 'microtask')
  assert.equal(order[1], 'c:0 with-arg')
  assert.ok(!order.includes('never'))
  assert.deepEqual(
    order.filter((e) => e.startsWith('tick')),
    ['tick 1', 'tick 2', 'tick 3'],
  )
  assert.ok(order.indexOf('b:20') < order.indexOf('a:60'))
  assert.ok(order.indexOf('tick 1') < order.indexOf('b:20'))
  assert.equal(order.at(-1), 'timeout signal: TimeoutError')
})

test('the host functions are out of reach: __plinthHost is gone before site code runs, and no global leads to it', async (t) => {
  const app = await boot(
    t,
    site(
      `{ routePath: '/probe', mountPath: '/', method: '', middlewares: [], modules: [() => Response.json({
          atLoad: globalThis.__atLoad,
          now: typeof globalThis.__plinthHost,
          named: Object.getOwnPropertyNames(globalThis).filter((n) => /plinthHost|^ivm|^Reference$|^(log|random|call)$/i.test(n)),
          process: typeof process, require: typeof require,
        })] },`,
      `globalThis.__atLoad = [typeof __plinthHost, 'typeof globalThis.__plinthHost', '__plinthHost' in globalThis].map(String)`,
    ),
  )
  const got = await app.request('GET', 'https://site.example/probe')
  assert.deepEqual(JSON.parse(got.text), {
    atLoad: ['undefined', 'typeof globalThis.__plinthHost', 'false'],
    now: 'undefined',
    named: [],
    process: 'undefined',
    require: 'undefined',
  })
})

test('fetch() goes through the host: the answer as a Response, a refusal as a TypeError, an aborted signal as its reason', async (t) => {
  const host = new FakeHost()
  host.upstream.set('https://api.example/data', { status: 200, headers: [['content-type', 'application/json']], body: '{"temp":21}' })
  const app = await boot(
    t,
    site(`
      { routePath: '/proxy', mountPath: '/', method: '', middlewares: [], modules: [async () => {
          const upstream = await fetch('https://api.example/data', { method: 'POST', body: 'q=1', headers: { 'x-key': 'k' } })
          const data = await upstream.json()
          let refused
          try { await fetch('https://refused.example/') } catch (e) { refused = e.constructor.name + ': ' + e.message }
          const controller = new AbortController()
          controller.abort()
          let aborted
          try { await fetch('https://api.example/data', { signal: controller.signal }) } catch (e) { aborted = e.name }
          let immutable
          try { upstream.headers.set('x', 'y') } catch (e) { immutable = e.message }
          return Response.json({ data, status: upstream.status, type: upstream.headers.get('content-type'), refused, aborted, immutable })
        }] },
    `),
    host,
  )
  const got = await app.request('GET', 'https://site.example/proxy')
  assert.deepEqual(got.outcome, { ok: true })
  assert.deepEqual(JSON.parse(got.text), {
    data: { temp: 21 },
    status: 200,
    type: 'application/json',
    refused: 'TypeError: fetch() failed: refused: refused.example resolves to a private address',
    aborted: 'AbortError',
    immutable: "Can't modify immutable headers.",
  })
  const sent = JSON.parse(host.calls.find((c) => c.op === 'fetch')!.json)
  assert.deepEqual(sent, {
    method: 'POST',
    url: 'https://api.example/data',
    headers: [
      ['content-type', 'text/plain;charset=UTF-8'],
      ['x-key', 'k'],
    ],
    redirect: 'follow',
  })
})

test('advanced mode: a _worker.js fetch(request, env, ctx) handler is called directly; waitUntil work finishes before the answer', async (t) => {
  const host = new FakeHost()
  const app = await boot(
    t,
    `globalThis.__plinthSite = { worker: { async fetch(request, env, ctx) {
        const url = new URL(request.url)
        ctx.waitUntil((async () => { await scheduler.wait(30); await env.KV.put('last', url.pathname) })())
        if (url.pathname.startsWith('/static')) return env.ASSETS.fetch(request)
        return new Response('worker ' + url.pathname + ' ' + env.GREETING, { headers: [['set-cookie', 'a=1; Path=/'], ['set-cookie', 'b=2; Expires=Wed, 21 Oct 2026 07:28:00 GMT']] })
      } } }`,
    host,
  )
  const got = await app.request('GET', 'https://site.example/hello?x=1', { env: { GREETING: 'hi' } })
  assert.deepEqual(got.outcome, { ok: true })
  assert.equal(got.text, 'worker /hello hi')
  assert.deepEqual(got.headers.getSetCookie(), ['a=1; Path=/', 'b=2; Expires=Wed, 21 Oct 2026 07:28:00 GMT'])
  assert.equal(host.kv.get('last')?.value.toString(), '/hello')
  // The visitor's answer ended before waitUntil's work did.
  const end = host.calls.findIndex((c) => c.op === 'end' || c.op === 'respond')
  const put = host.calls.findIndex((c) => c.op === 'kv' && c.json.includes('"put"'))
  assert.ok(end !== -1 && put !== -1 && end < put, JSON.stringify(host.calls.map((c) => c.op)))
})

test('the Web APIs a function uses: URL, encodings, base64, structuredClone, Headers, Blob, FormData bodies, AbortController', async (t) => {
  const app = await boot(
    t,
    site(`
      { routePath: '/apis', mountPath: '/', method: '', middlewares: [], modules: [async ({ request }) => {
          const url = new URL('/path/../a b?x=1&y=two#frag', request.url)
          url.searchParams.append('z', 'ü')
          const bytes = new TextEncoder().encode('héllo 😀')
          const invalid = new TextDecoder().decode(new Uint8Array([0x61, 0xff, 0xe2, 0x82, 0x62]))
          let fatal
          try { new TextDecoder('utf-8', { fatal: true }).decode(new Uint8Array([0xc3])) } catch (e) { fatal = e.constructor.name }
          const streamed = new TextDecoder()
          const split = streamed.decode(new Uint8Array([0xf0, 0x9f]), { stream: true }) + streamed.decode(new Uint8Array([0x98, 0x80]))
          const headers = new Headers([['X-B', '2'], ['x-a', '1'], ['X-A', '3']])
          const clone = structuredClone({ d: new Date(0), m: new Map([[1, { deep: true }]]), u8: new Uint8Array([5]) })
          let notCloneable
          try { structuredClone({ f() {} }) } catch (e) { notCloneable = e.name }
          const form = new FormData()
          form.append('field', 'value')
          form.append('file', new Blob(['blob text'], { type: 'text/plain' }), 'b.txt')
          const roundTrip = await new Request('https://x.example/', { method: 'POST', body: form }).formData()
          const controller = new AbortController()
          let reason
          controller.signal.addEventListener('abort', () => { reason = controller.signal.reason.name })
          controller.abort()
          const blob = new Blob(['abc', new Uint8Array([100, 101])])
          const response = new Response('body text')
          const copy = response.clone()
          return Response.json({
            href: url.href, search: [...url.searchParams], encoded: bytes.length, decoded: new TextDecoder().decode(bytes), invalid, fatal, split,
            b64: btoa('hello'), unb64: atob('aGVsbG8='), headers: [...headers], clone: [clone.d instanceof Date, clone.m.get(1).deep, clone.u8[0]], notCloneable,
            form: [roundTrip.get('field'), roundTrip.get('file').name, await roundTrip.get('file').text()], reason,
            blob: [blob.size, await blob.slice(1, 4).text()], texts: [await response.text(), await copy.text(), response.bodyUsed],
            self: self === globalThis, ua: navigator.userAgent, tag: Object.prototype.toString.call(response), now: typeof performance.now(),
          })
        }] },
    `),
  )
  const got = await app.request('GET', 'https://site.example/apis')
  assert.deepEqual(got.outcome, { ok: true })
  assert.deepEqual(JSON.parse(got.text), {
    href: 'https://site.example/a%20b?x=1&y=two&z=%C3%BC#frag',
    search: [
      ['x', '1'],
      ['y', 'two'],
      ['z', 'ü'],
    ],
    encoded: 11,
    decoded: 'héllo 😀',
    invalid: 'a\ufffd\ufffdb',
    fatal: 'TypeError',
    split: '😀',
    b64: 'aGVsbG8=',
    unb64: 'hello',
    headers: [
      ['x-a', '1, 3'],
      ['x-b', '2'],
    ],
    clone: [true, true, 5],
    notCloneable: 'DataCloneError',
    form: ['value', 'b.txt', 'blob text'],
    reason: 'AbortError',
    blob: [5, 'bcd'],
    texts: ['body text', 'body text', true],
    self: true,
    ua: 'Plinth',
    tag: '[object Response]',
    now: 'number',
  })
})

test('a cold start: creating an isolate and running the runtime script (median of 20), compiled plain and from the code cache', async (t) => {
  const script = await runtimeScript()
  const median = async (compile: (isolate: ivm.Isolate) => Promise<ivm.Script>) => {
    const times: number[] = []
    for (let i = 0; i < 20; i++) {
      const started = performance.now()
      const isolate = new ivm.Isolate({ memoryLimit: 128 })
      const context = await isolate.createContext()
      await context.global.set(
        '__plinthHost',
        {
          log: new ivm.Reference(() => {}),
          random: new ivm.Reference(() => new ArrayBuffer(0)),
          call: new ivm.Reference(async () => ['{}', undefined]),
        },
        { copy: true },
      )
      await (await compile(isolate)).run(context)
      times.push(performance.now() - started)
      assert.equal(await context.eval('typeof __plinthInvoke'), 'function')
      isolate.dispose()
    }
    times.sort((a, b) => a - b)
    return (times[9] + times[10]) / 2
  }
  const plain = await median((isolate) => isolate.compileScript(script))
  const cached = await median(compileRuntime)
  t.diagnostic(
    `runtime script ${script.length} bytes; isolate + runtime median ${plain.toFixed(1)} ms, ${cached.toFixed(1)} ms with the code cache`,
  )
  assert.ok(plain < 500 && cached < 500, `medians ${plain} and ${cached} ms`)
})
