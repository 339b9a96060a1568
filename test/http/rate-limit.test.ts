import assert from 'node:assert/strict'
import { test } from 'node:test'
import { rawPost } from '../helpers/http.js'
import { createKey, createWebsite, startServer } from '../helpers/server.js'

test('the standard bucket allows a burst of 120, then 429 with Retry-After, and refills with the clock', async (t) => {
  const s = await startServer(t)
  let last
  for (let i = 0; i < 120; i++) {
    last = await s.api('GET', '/v1/me')
    assert.equal(last.status, 200, `request ${i + 1}`)
    assert.equal(last.headers.get('x-ratelimit-limit'), '120')
    assert.equal(last.headers.get('x-ratelimit-remaining'), String(119 - i))
  }
  const limited = await s.api('GET', '/v1/me')
  assert.equal(limited.status, 429)
  assert.equal(limited.body.kind, 'rate_limited')
  assert.equal(limited.headers.get('retry-after'), '1')
  assert.equal(limited.headers.get('x-ratelimit-remaining'), '0')
  // About 600 a minute: one token every 100 ms.
  s.clock.advance(100)
  assert.equal((await s.api('GET', '/v1/me')).status, 200)
  assert.equal((await s.api('GET', '/v1/me')).status, 429)
  s.clock.advance(60_000)
  const refilled = await s.api('GET', '/v1/me')
  assert.equal(refilled.status, 200)
  assert.equal(refilled.headers.get('x-ratelimit-remaining'), '119')
})

test('buckets are per key: one key at its limit does not slow another', async (t) => {
  const s = await startServer(t)
  const other = await createKey(s, { kind: 'organization', role: 'full_editor' })
  for (let i = 0; i < 119; i++) await s.api('GET', '/v1/me')
  assert.equal((await s.api('GET', '/v1/me')).status, 429)
  const res = await s.api('GET', '/v1/me', { key: other.secret })
  assert.equal(res.status, 200)
  assert.equal(res.headers.get('x-ratelimit-remaining'), '119')
})

test('every door answers with X-RateLimit-Limit and X-RateLimit-Remaining, refusals included', async (t) => {
  // Spec (Limits): "Every response carries `X-RateLimit-Limit` and `X-RateLimit-Remaining`; 429 carries
  // `Retry-After`, which clients observe."
  const s = await startServer(t)
  const site = await createWebsite(s, { name: 'Doors', kind: 'static', subdomain: 'doors' })
  await s.api('POST', `/v1/websites/${site.id}/deploy/json`, { body: { files: [{ path: 'index.html', content: 'hi' }] } })
  assert.equal((await s.api('POST', `/v1/websites/${site.id}/publish`)).status, 200)
  const json = { 'content-type': 'application/json' }
  const doors: [string, () => Promise<{ status: number; headers: (name: string) => string | undefined }>][] = [
    ['REST 200', () => fetched(`${s.origin}/v1/me`, { headers: { authorization: `Bearer ${s.adminKey}` } })],
    [
      'REST 400',
      () => fetched(`${s.origin}/v1/websites`, { method: 'POST', headers: { authorization: `Bearer ${s.adminKey}`, ...json }, body: '{}' }),
    ],
    ['REST 401', () => fetched(`${s.origin}/v1/me`)],
    ['REST unknown route 404', () => fetched(`${s.origin}/v1/nothing-here`)],
    ['REST 405', () => fetched(`${s.origin}/v1/me`, { method: 'DELETE' })],
    ['public operation', () => fetched(`${s.origin}/openapi.json`)],
    ['MCP 401', () => fetched(`${s.origin}/v1/mcp`, { method: 'POST', headers: json, body: '{}' })],
    [
      'MCP 200',
      () =>
        fetched(`${s.origin}/v1/mcp`, {
          method: 'POST',
          headers: { authorization: `Bearer ${s.adminKey}`, ...json, accept: 'application/json, text/event-stream' },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
        }),
    ],
    ['anonymous claim {} 400', () => fetched(`${s.origin}/api/anonymous/claim`, { method: 'POST', headers: json, body: '{}' })],
    ['anonymous status 401', () => fetched(`${s.origin}/public/v1/anonymous/sites/current`)],
    ['anonymous credential 201', () => fetched(`${s.origin}/public/v1/anonymous/credentials`, { method: 'POST' })],
    [
      'OAuth token 401',
      () =>
        fetched(`${s.origin}/oauth/token`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: 'grant_type=authorization_code&client_id=nobody',
        }),
    ],
    [
      'form post 200',
      () =>
        raw(
          rawPost(s.plinth.port, 'doors.localhost', '/_platform/forms/contact', 'name=Ada', {
            'content-type': 'application/x-www-form-urlencoded',
          }),
        ),
    ],
    [
      'form post 400',
      () => raw(rawPost(s.plinth.port, 'doors.localhost', '/_platform/forms/contact', 'x', { 'content-type': 'application/xml' })),
    ],
    [
      'tracker collect 204',
      () =>
        raw(
          rawPost(s.plinth.port, 'doors.localhost', '/_platform/collect', JSON.stringify({ type: 'pageview', path: '/' }), {
            'content-type': 'application/json',
          }),
        ),
    ],
    [
      'tracker collect 400',
      () => raw(rawPost(s.plinth.port, 'doors.localhost', '/_platform/collect', 'not json', { 'content-type': 'application/json' })),
    ],
  ]
  const missing: string[] = []
  for (const [door, request] of doors) {
    const res = await request()
    if (!/^\d+$/.test(res.headers('x-ratelimit-limit') ?? '') || !/^\d+$/.test(res.headers('x-ratelimit-remaining') ?? ''))
      missing.push(`${door} (${res.status})`)
  }
  assert.deepEqual(missing, [], 'doors that answered without the rate-limit headers')
})

async function fetched(url: string, init: RequestInit = {}) {
  const res = await fetch(url, init)
  await res.arrayBuffer()
  return { status: res.status, headers: (name: string) => res.headers.get(name) ?? undefined }
}

async function raw(pending: Promise<{ status: number; headers: Record<string, string | string[] | undefined> }>) {
  const res = await pending
  return { status: res.status, headers: (name: string) => res.headers[name] as string | undefined }
}
