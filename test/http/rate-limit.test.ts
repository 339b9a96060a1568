import assert from 'node:assert/strict'
import { test } from 'node:test'
import { createKey, startServer } from '../helpers/server.js'

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
