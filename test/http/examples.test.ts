import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { readFileSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { test, type TestContext } from 'node:test'
import { fileURLToPath } from 'node:url'
import { API_KEY_PREFIX, SECRET_PREFIXES } from '../../core/ids.js'
import { EXAMPLES_FILE, EXAMPLE_ORIGIN, type ApiExample, type ApiExamples, type ExampleRequest } from '../../http/docs/examples.js'
import { operations } from '../../http/operations/index.js'
import type { AnyOperation } from '../../http/operation.js'
import { dnsServer } from '../helpers/dns.js'
import { startServer, type TestServer } from '../helpers/server.js'
import { PNG, SKIPPED, STEPS, type Call, type Scene } from './examples/calls.js'

/*
 * The examples of /openapi.json and /docs/api are real calls: test/http/examples/calls.ts runs against
 * a fresh server here, and each answer, with what changes from run to run (ids, secrets, signatures,
 * the port) made stable, must equal the one docs/api-examples.json holds. An example that stops
 * matching the server fails this test; PLINTH_WRITE_EXAMPLES=1 writes the file anew from the calls.
 */

const WRITE = process.env.PLINTH_WRITE_EXAMPLES === '1'
const REGENERATE = 'PLINTH_WRITE_EXAMPLES=1 node --no-node-snapshot --test dist/test/http/examples.test.js'
const ROOT = fileURLToPath(new URL('../../../', import.meta.url))
/** Where the image assets.import fetches appears in the examples (a loopback server here). */
const IMAGE_ORIGIN = 'https://images.example.com'

const byId = new Map<string, AnyOperation>(operations.map((o) => [o.operationId, o]))

/** A loopback web server with the one image assets.import fetches. */
async function imageServer(t: TestContext): Promise<string> {
  const server = createServer((req, res) => {
    if (req.url === '/photos/croissant.png') res.writeHead(200, { 'content-type': 'image/png' }).end(PNG)
    else res.writeHead(404).end()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.after(() => server.close())
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

/** Makes one call of an operation: its path from the table, the credential, the body as JSON, a form or bytes. */
async function send(
  server: TestServer,
  operation: AnyOperation,
  call: Call,
): Promise<{ status: number; body: unknown; request: ExampleRequest }> {
  const params = call.params ?? {}
  const path = operation.path.replace(/\{(\w+)\}/g, (_, name: string) => {
    if (params[name] === undefined) throw new Error(`${operation.operationId}: no value for {${name}}`)
    return encodeURIComponent(params[name])
  })
  const query = Object.fromEntries(Object.entries(call.query ?? {}).map(([name, value]) => [name, String(value)]))
  const search = new URLSearchParams(query).toString()
  const headers = new Headers(call.headers)
  const auth = call.auth ?? 'key'
  if (auth === 'key') headers.set('authorization', `Bearer ${server.adminKey}`)
  else if (auth !== 'none') headers.set('authorization', `Bearer ${auth.token}`)
  const request: ExampleRequest = {
    method: operation.method,
    path,
    ...(search === '' ? {} : { query }),
    auth: auth === 'key' ? '$KEY' : auth === 'none' ? null : (auth.shown ?? auth.token),
    ...(call.headers === undefined ? {} : { headers: call.headers }),
  }
  let body: string | Buffer | FormData | undefined
  if (call.json !== undefined) {
    headers.set('content-type', 'application/json')
    body = JSON.stringify(call.json)
    request.json = call.json
  } else if (call.form !== undefined) {
    const form = new FormData()
    for (const part of call.form) {
      if ('value' in part) form.append(part.name, part.value)
      else form.append(part.name, new Blob([part.content], part.contentType === undefined ? {} : { type: part.contentType }), part.file)
    }
    body = form
    request.form = call.form.map((part) =>
      'value' in part ? { name: part.name, value: part.value } : { name: part.name, file: part.file },
    )
  } else if (call.bytes !== undefined) {
    body = Buffer.from(call.bytes.content)
    request.bytes = call.bytes.file
  }
  const response = await fetch(`${server.origin}${path}${search === '' ? '' : `?${search}`}`, { method: operation.method, headers, body })
  const text = await response.text()
  let parsed: unknown = text
  try {
    parsed = JSON.parse(text)
  } catch {
    // not JSON: kept as text
  }
  return { status: response.status, body: parsed, request }
}

/** An id: one of core/ids.ts's prefixes and 20 random characters. */
const ID =
  /(?<![A-Za-z0-9])(ws|org|usr|key|aud|inv|tr|cli|grt|fb|anc|sub|dom|obj|upl|ast|col|fld|itm|pg|ses|msg|req)_[a-z0-9]{20}(?![a-z0-9])/g
/** A secret: an API key, an edit lease's token, or any prefix of core/ids.ts's SECRET_PREFIXES (signed tokens hold dots). */
const SECRET = new RegExp(
  `(?<![A-Za-z0-9])(${[API_KEY_PREFIX, 'wl_', ...Object.values(SECRET_PREFIXES)].map((p) => p.slice(0, -1)).join('|')})_[A-Za-z0-9_.-]{20,}`,
  'g',
)
/** A shared folder's unguessable suffix (`recipes-3f9a2c1b5e7d90a1c2b4`). */
const FOLDER_SUFFIX = /(?<=[a-z0-9]-)[a-z0-9]{20}(?![a-z0-9])/g
/** Values random on every run that no pattern tells: a webhook secret, an upload signature, a list's cursor (opaque, it holds ids and sequence numbers). */
const RANDOM_KEYS = new Set(['secret', 'X-Upload-Signature', 'nextCursor'])
/** Measurements (milliseconds a check or a function took): the file keeps the numbers once measured, and a run must answer the same keys. */
const MEASURED_KEYS = new Set(['timings', 'durationMs', 'cpuMs'])
const RANDOM_TEXT = [
  /platform-verify=[0-9a-f]{32}/g,
  /(?<=\/share\/analytics\/[a-z]+_[a-z0-9]+\/)[A-Za-z0-9_-]{16,}/g,
  // The function logs' cursor: its run's random mark (the line's number after the dot stays).
  /(?<="cursor":")[0-9a-z]{8}(?=\.\d+")/g,
]

/** Stable text of `length` characters from `alphabet`, the same for the same seed on every run. */
function stable(seed: string, length: number, alphabet: string): string {
  let out = ''
  for (let round = 0; out.length < length; round++) {
    for (const byte of createHash('sha256').update(`${seed}:${round}`).digest()) {
      if (out.length === length) break
      out += alphabet[byte % alphabet.length]
    }
  }
  return out
}

const LOWER = '0123456789abcdefghijklmnopqrstuvwxyz'
const BASE64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'
const HEX = '0123456789abcdef'

/** The alphabet a random text was drawn from, as far as it shows. */
function alphabetOf(text: string): string {
  if (/^[0-9a-f]+$/.test(text)) return HEX
  if (/^[0-9a-z]+$/.test(text)) return LOWER
  return BASE64URL
}

/**
 * The examples with what differs from run to run made stable: the server's port is 8080 (the origin
 * the docs are written for), the image host a public name, and every id, secret and random value a
 * stand-in of the same shape (the same one wherever it appears), numbered in order of appearance.
 */
function normalize(
  examples: Record<string, ApiExample>,
  server: TestServer,
  images: string,
  randoms: readonly string[],
): Record<string, ApiExample> {
  let text = JSON.stringify(examples)
  text = text.split(images).join(IMAGE_ORIGIN)
  text = text.split(`localhost:${server.plinth.port}`).join(new URL(EXAMPLE_ORIGIN).host)
  text = text.split(`127.0.0.1:${server.plinth.port}`).join(new URL(EXAMPLE_ORIGIN).host)
  const stand = new Map<string, string>()
  const count = new Map<string, number>()
  const take = (real: string, kind: string, make: (seed: string) => string) => {
    if (stand.has(real)) return
    const n = (count.get(kind) ?? 0) + 1
    count.set(kind, n)
    stand.set(real, make(`${kind}:${n}`))
  }
  const found: { at: number; real: string; kind: string; make: (seed: string) => string }[] = []
  for (const match of text.matchAll(ID)) {
    const prefix = match[1]!
    found.push({ at: match.index, real: match[0], kind: prefix, make: (seed) => `${prefix}_${stable(seed, 20, LOWER)}` })
  }
  for (const match of text.matchAll(SECRET)) {
    const prefix = match[1]!
    // Signed tokens keep their shape: random segments stand in, the expiry (on the test clock) stays.
    const make = (seed: string) =>
      `${prefix}_${match[0]
        .slice(prefix.length + 1)
        .split('.')
        .map((part, i) => (/^\d+$/.test(part) ? part : stable(`${seed}:${i}`, part.length, BASE64URL)))
        .join('.')}`
    found.push({ at: match.index, real: match[0], kind: prefix, make })
  }
  for (const match of text.matchAll(FOLDER_SUFFIX))
    found.push({ at: match.index, real: match[0], kind: 'folder', make: (seed) => stable(seed, 20, LOWER) })
  for (const pattern of RANDOM_TEXT)
    for (const match of text.matchAll(pattern)) {
      const value = match[0]
      const head = value.includes('=') ? value.slice(0, value.indexOf('=') + 1) : ''
      const random = value.slice(head.length)
      found.push({ at: match.index, real: value, kind: 'random', make: (seed) => head + stable(seed, random.length, alphabetOf(random)) })
    }
  // Texts the calls name as random (an anonymous site's label): what follows their last hyphen stands in,
  // drawn from the label's alphabet (not guessed from six characters: one in 130 is all hex).
  for (const value of randoms) {
    const head = value.slice(0, value.lastIndexOf('-') + 1)
    const random = value.slice(head.length)
    found.push({ at: text.indexOf(value), real: value, kind: 'random', make: (seed) => head + stable(seed, random.length, LOWER) })
  }
  const walk = (value: unknown) => {
    if (Array.isArray(value)) value.forEach(walk)
    else if (value !== null && typeof value === 'object')
      for (const [key, inner] of Object.entries(value)) {
        // (A secret with a known prefix, an API key's, keeps it: the pattern above took it.)
        if (RANDOM_KEYS.has(key) && typeof inner === 'string' && inner.length >= 16 && !new RegExp(`^${SECRET.source}$`).test(inner)) {
          const at = text.indexOf(JSON.stringify(inner)) + 1
          found.push({ at, real: inner, kind: 'random', make: (seed) => stable(seed, inner.length, alphabetOf(inner)) })
        } else walk(inner)
      }
  }
  walk(JSON.parse(text))
  for (const f of found.sort((a, b) => a.at - b.at)) take(f.real, f.kind, f.make)
  // A key's hint (`wb_AbCd…`) is the start of its secret: it follows the secret's stand-in.
  for (const [real, standIn] of [...stand]) if (real.startsWith('wb_')) stand.set(`${real.slice(0, 7)}…`, `${standIn.slice(0, 7)}…`)
  if (stand.size > 0) {
    const any = new RegExp(
      [...stand.keys()]
        .sort((a, b) => b.length - a.length)
        .map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
        .join('|'),
      'g',
    )
    text = text.replace(any, (real) => stand.get(real)!)
  }
  return JSON.parse(text)
}

/** `actual` with the measurements `expected` holds in their place (where both measured the same things). */
function measured(actual: unknown, expected: unknown): unknown {
  if (Array.isArray(actual)) return actual.map((item, i) => measured(item, Array.isArray(expected) ? expected[i] : undefined))
  if (actual === null || typeof actual !== 'object') return actual
  const other = (expected ?? {}) as Record<string, unknown>
  return Object.fromEntries(
    Object.entries(actual).map(([key, value]) => {
      const kept = other[key]
      const same = (a: unknown, b: unknown) =>
        (typeof a === 'number' && typeof b === 'number') ||
        (a !== null && b !== null && typeof a === 'object' && typeof b === 'object' && Object.keys(a).join() === Object.keys(b).join())
      return [key, MEASURED_KEYS.has(key) && same(value, kept) ? kept : measured(value, kept)]
    }),
  )
}

/** The operations whose answers differ from the file, each with the first difference. */
function differences(expected: Record<string, ApiExample>, actual: Record<string, ApiExample>): string[] {
  const out: string[] = []
  for (const id of new Set([...Object.keys(expected), ...Object.keys(actual)])) {
    try {
      assert.deepStrictEqual(measured(actual[id], expected[id]), expected[id])
    } catch (error) {
      out.push(`${id}:\n${(error as Error).message.split('\n').slice(0, 30).join('\n')}`)
    }
  }
  return out
}

test('every operation has an example made by a real call, and the answers the server gives now are those docs/api-examples.json records', async (t) => {
  const started = Date.now()
  const dns = await dnsServer(t)
  const images = await imageServer(t)
  const server = await startServer(t, {
    PLINTH_DNS_SERVERS: dns.address,
    PLINTH_DOMAIN_TARGET: 'sites.plinth.example',
    PLINTH_OUTBOUND_ALLOW: '127.0.0.1',
  })
  const scene: Scene = { server, dns: dns.zone, images }
  const recorded: Record<string, ApiExample> = {}
  const randoms: string[] = []
  for (const step of STEPS) {
    // A second between calls: times in the answers read as a session would, and the key's bucket refills.
    server.clock.advance(1000)
    if ('act' in step) {
      await step.act(scene)
      continue
    }
    const operation = byId.get(step.op)
    assert.ok(operation !== undefined, `${step.op} is not an operation of the table`)
    const { status, body, request } = await send(server, operation, step.call?.(scene) ?? {})
    assert.equal(status, step.status, `${step.op} answered ${status}: ${JSON.stringify(body)}`)
    if (step.keep !== undefined) scene[step.keep] = body
    randoms.push(...(step.random?.(body) ?? []))
    if (step.scene === true) continue
    assert.equal(recorded[step.op], undefined, `${step.op} has two examples: mark the others scene: true`)
    recorded[step.op] = { request, status, answer: body }
  }
  const uncovered = operations.map((o) => o.operationId).filter((id) => recorded[id] === undefined && SKIPPED[id] === undefined)
  assert.deepEqual(uncovered, [], 'operations with neither an example in test/http/examples/calls.ts nor a reason in SKIPPED')
  assert.deepEqual(
    Object.keys(SKIPPED).filter((id) => recorded[id] !== undefined || !byId.has(id)),
    [],
    'SKIPPED names only operations of the table without an example',
  )

  const examples = normalize(recorded, server, images, randoms)
  const file: ApiExamples = {
    about: `Written by test/http/examples.test.ts from real calls (test/http/examples/calls.ts) against a fresh server; ${REGENERATE} writes it anew.`,
    origin: EXAMPLE_ORIGIN,
    examples,
  }
  const path = `${ROOT}${EXAMPLES_FILE}`
  t.diagnostic(`${Object.keys(examples).length} examples, ${Object.keys(SKIPPED).length} operations skipped, ${Date.now() - started} ms`)
  if (WRITE) return writeFileSync(path, `${JSON.stringify(file, null, 2)}\n`)
  const checked = JSON.parse(readFileSync(path, 'utf8')) as ApiExamples
  const wrong = differences(checked.examples, examples)
  assert.ok(
    wrong.length === 0,
    `${wrong.length} example(s) in ${EXAMPLES_FILE} no longer match what the server answers. If the change is meant, run \`npm run build && ${REGENERATE}\` and commit the file.\n\n${wrong.join('\n\n')}`,
  )

  // What the server serves: each example in /openapi.json (the answer, the JSON body, a curl command
  // naming this server) and under its operation in /docs/api, as the file has it.
  const here = (value: unknown) =>
    JSON.parse(JSON.stringify(value).split(`localhost:${server.plinth.port}`).join(new URL(EXAMPLE_ORIGIN).host))
  const doc = (await server.api('GET', '/openapi.json', { key: null })).body
  const reference = await (await fetch(`${server.origin}/docs/api`)).text()
  for (const operation of operations) {
    const example = checked.examples[operation.operationId]
    const entry = doc.paths[operation.path][operation.method.toLowerCase()]
    if (example === undefined) {
      assert.equal(entry['x-codeSamples'], undefined, operation.operationId)
      continue
    }
    const [sample] = entry['x-codeSamples']
    assert.equal(sample.lang, 'Shell')
    assert.ok(sample.source.startsWith(`curl -s ${example.request.method === 'GET' ? '' : `-X ${example.request.method} `}`), sample.source)
    assert.ok(sample.source.includes(`${server.origin.replace('127.0.0.1', 'localhost')}${operation.path.split('{')[0]}`), sample.source)
    assert.ok(reference.includes(sample.source), `/docs/api shows the curl example of ${operation.operationId}`)
    const answered = entry.responses[String(example.status)].content['application/json'].examples.example.value
    assert.deepEqual(here(answered), example.answer, operation.operationId)
    if (example.request.json !== undefined)
      assert.deepEqual(
        here(entry.requestBody.content['application/json'].examples.example.value),
        example.request.json,
        operation.operationId,
      )
  }
})
