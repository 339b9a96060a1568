import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { test } from 'node:test'
import { sharedSpecText, specEndpoints, specText } from '../helpers/spec.js'
import { sharedServer } from '../helpers/server.js'

/**
 * The description (`GET /openapi.json`) against the spec's endpoint tables, row by row: every
 * endpoint the spec names is described at its method and path, with the spec's operationId,
 * capability and rate class wherever the spec gives one.
 */

const server = sharedServer()

test('the copy of the spec the tests read is the shared spec', () => {
  const shared = sharedSpecText()
  if (shared === null) return // a checkout without ../shared (CI's clean clone) reads the copy alone
  assert.equal(specText(), shared, 'test/fixtures/spec.md differs from ../shared/spec.md: copy it again')
})

test('every endpoint of the spec is described with the spec’s operationId, x-capability and x-rate-limit-class', async (t) => {
  const s = await server(t)
  const doc = (await s.api('GET', '/openapi.json', { key: null })).body
  const endpoints = specEndpoints()
  // Sanity: the parser read the tables (139 rows, 80 with an operationId, when this test was written), not an empty list.
  assert.ok(endpoints.length > 130, `only ${endpoints.length} endpoint rows read from the spec`)
  assert.ok(endpoints.filter((e) => e.operationId !== null).length > 75)
  const problems: string[] = []
  for (const e of endpoints) {
    const entry = doc.paths[e.path]?.[e.method.toLowerCase()]
    if (entry === undefined) {
      problems.push(`not described: ${e.method} ${e.path}  (spec: ${e.line})`)
      continue
    }
    if (e.operationId !== null && entry.operationId !== e.operationId)
      problems.push(`${e.method} ${e.path}: operationId ${entry.operationId}, the spec says ${e.operationId}  (spec: ${e.line})`)
    if (e.capability !== null && entry['x-capability'] !== e.capability)
      problems.push(`${e.method} ${e.path}: x-capability ${entry['x-capability']}, the spec says ${e.capability}  (spec: ${e.line})`)
    if (e.rateClass !== null && entry['x-rate-limit-class'] !== e.rateClass)
      problems.push(
        `${e.method} ${e.path}: x-rate-limit-class ${entry['x-rate-limit-class']}, the spec says ${e.rateClass}  (spec: ${e.line})`,
      )
  }
  assert.deepEqual(problems, [])
})

test('the spec names the claim operations websites.claimCode and websites.claimAnonymous', async (t) => {
  // Spec: "| POST | /websites/claim-codes | websites.claimCode | websites.read | S | …" and
  // "| POST | /websites/claims | websites.claimAnonymous | websites.read | S | …"
  const s = await server(t)
  const doc = (await s.api('GET', '/openapi.json', { key: null })).body
  assert.equal(doc.paths['/v1/websites/claim-codes'].post.operationId, 'websites.claimCode')
  assert.equal(doc.paths['/v1/websites/claims'].post.operationId, 'websites.claimAnonymous')
})

test('every operation carries x-capability and x-rate-limit-class, POST /v1/mcp included', async (t) => {
  // Spec: "`GET /openapi.json` (machine-readable description; every operation carries `x-capability`
  // and `x-rate-limit-class`), `POST /v1/mcp` (remote MCP server)"
  const s = await server(t)
  const doc = (await s.api('GET', '/openapi.json', { key: null })).body
  const mcp = doc.paths['/v1/mcp']?.post
  assert.ok(mcp, 'POST /v1/mcp is described')
  assert.equal(mcp['x-rate-limit-class'], 'standard')
  assert.equal(mcp['x-capability'], 'websites.read')
  assert.ok(mcp.responses['200'] && mcp.responses['401'] && mcp.responses['429'])
  for (const [path, item] of Object.entries<Record<string, any>>(doc.paths)) {
    for (const [method, entry] of Object.entries<any>(item)) {
      assert.equal(typeof entry['x-capability'], 'string', `${method} ${path} lacks x-capability`)
      assert.ok(['standard', 'expensive'].includes(entry['x-rate-limit-class']), `${method} ${path} lacks x-rate-limit-class`)
    }
  }
  // Operations without credentials say they need no capability.
  assert.equal(doc.paths['/openapi.json'].get['x-capability'], 'none')
  assert.equal(doc.paths['/public/v1/anonymous/credentials'].post['x-capability'], 'none')
})

test('the anonymous endpoints state the spec’s own limits; public reads get the standard class per address', async (t) => {
  // Spec (Anonymous limits): "per network | 60 credentials then 120 per day; …" and (Rate limits)
  // "| standard | 120 | about 600/min | all operations not marked E |"
  const s = await server(t)
  const doc = (await s.api('GET', '/openapi.json', { key: null })).body
  const issue = doc.paths['/public/v1/anonymous/credentials'].post
  assert.match(issue.description, /60 credentials, then 120 a day per network/)
  assert.deepEqual(
    issue['x-rate-limits'].map((b: any) => [b.bucket, b.burst]),
    [
      ['reads', 120],
      ['networkCredentials', 60],
    ],
  )
  const create = doc.paths['/public/v1/anonymous/sites'].post
  assert.match(create.description, /5 creates or swaps, then 10 a day per credential/)
  assert.match(doc.paths['/api/anonymous/claim'].post.description, /60 claims, then 60 an hour per network/)
  // A public read draws from its address's bucket with the standard class's burst.
  const root = await s.api('GET', '/', { key: null })
  assert.equal(root.headers.get('x-ratelimit-limit'), '120')
  const fresh = await fetch(`${s.origin}/public/v1/anonymous/credentials`, { method: 'POST' })
  assert.equal(fresh.status, 201)
  // The headers report the bucket nearest to empty: the network's 60 credentials.
  assert.equal(fresh.headers.get('x-ratelimit-limit'), '60')
})

test('assets.import is in class S, as every asset operation', async (t) => {
  // Spec: "### Assets (class S)" … "| POST | /websites/{id}/assets/import | assets.import | assets.write | …"
  const s = await server(t)
  const doc = (await s.api('GET', '/openapi.json', { key: null })).body
  assert.equal(doc.paths['/v1/websites/{websiteId}/assets/import'].post['x-rate-limit-class'], 'standard')
})

test('the README’s table of operations names each operation’s method, path (with the description’s parameter names), MCP tool and capability', async (t) => {
  const s = await server(t)
  const doc = (await s.api('GET', '/openapi.json', { key: null })).body
  const byId = new Map<string, { method: string; path: string; entry: any }>()
  for (const [path, item] of Object.entries<any>(doc.paths))
    for (const [method, entry] of Object.entries<any>(item)) byId.set(entry.operationId, { method: method.toUpperCase(), path, entry })
  const readme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8')
  const rows = readme.split('\n').filter((line) => /^\| [a-zA-Z]+\.[a-zA-Z.]+ \| `/.test(line))
  assert.ok(rows.length > 140, `${rows.length} rows read from the README's table`)
  const problems: string[] = []
  for (const row of rows) {
    const [id, rest, tool, capability] = row
      .replace(/^\||\|$/g, '')
      .split(' | ')
      .map((c) => c.trim())
    const op = byId.get(id)
    if (op === undefined) {
      problems.push(`${id}: not an operation of the description`)
      continue
    }
    const [method, path] = /^`(\w+) ([^`?\s]+)/.exec(rest)!.slice(1)
    if (method !== op.method || path !== op.path)
      problems.push(`${id}: README says ${method} ${path}, the description ${op.method} ${op.path}`)
    const named = /^`(\w+)`$/.exec(tool)?.[1] ?? null
    if ((op.entry['x-mcp-tool'] ?? null) !== named)
      problems.push(`${id}: README's tool ${tool}, the description's ${op.entry['x-mcp-tool']}`)
    if (/^[a-z]+\.[a-z.]+$/.test(capability ?? '') && capability !== op.entry['x-capability'])
      problems.push(`${id}: README's capability ${capability}, the description's ${op.entry['x-capability']}`)
  }
  const listed = new Set(rows.map((row) => row.split(' | ')[0].slice(2)))
  for (const id of byId.keys()) if (!listed.has(id) && id !== 'mcp.request') problems.push(`${id} is missing from the README's table`)
  assert.deepEqual(problems, [])
})
