import assert from 'node:assert/strict'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { createKey, createWebsite, startServer } from '../helpers/server.js'

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? filesUnder(path) : [path]
  })
}

test('a key secret is wb_ and 32+ random bytes, returned once and stored only as a hash', async (t) => {
  const s = await startServer(t)
  const key = await createKey(s, { kind: 'organization', role: 'full_editor' }, { name: 'ci' })
  assert.match(key.secret, /^wb_[A-Za-z0-9_-]{43,}$/)
  assert.equal(Buffer.from(key.secret.slice(3), 'base64url').length >= 32, true)
  assert.equal(key.name, 'ci')
  assert.equal(key.status, 'active')
  const got = await s.api('GET', `/v1/api-keys/${key.id}`)
  assert.equal(got.status, 200)
  assert.equal(got.body.secret, undefined)
  const list = await s.api('GET', '/v1/api-keys')
  assert.ok(list.body.items.every((k: any) => k.secret === undefined))
  await s.plinth.close()
  const secretBytes = Buffer.from(key.secret)
  for (const file of filesUnder(s.dataDir)) {
    assert.equal(readFileSync(file).includes(secretBytes), false, `secret found in ${file}`)
  }
})

test('access rules: websiteIds required for websites scope, admin only for organization scope', async (t) => {
  const s = await startServer(t)
  const w = await createWebsite(s)
  const cases: [unknown, string][] = [
    [{ kind: 'websites', role: 'full_editor' }, 'body.access.websiteIds'],
    [{ kind: 'websites', role: 'admin', websiteIds: [w.id] }, 'body.access.role'],
    [{ kind: 'organization', role: 'owner' }, 'body.access.role'],
    [{ kind: 'organization', role: 'admin', websiteIds: [w.id] }, 'body.access.websiteIds'],
    [{ kind: 'websites', role: 'full_editor', websiteIds: ['ws_unknown'] }, 'body.access.websiteIds[0]'],
  ]
  for (const [access, field] of cases) {
    const res = await s.api('POST', '/v1/api-keys', { body: { access } })
    assert.equal(res.status, 400, JSON.stringify(access))
    assert.equal(res.body.kind, 'validation')
    assert.equal(res.body.details.field, field, JSON.stringify(access))
  }
  const ok = await createKey(s, { kind: 'websites', role: 'content_editor', websiteIds: [w.id] })
  assert.deepEqual(ok.access, { kind: 'websites', role: 'content_editor', websiteIds: [w.id] })
})

test('rotate stops the old secret at once and the new one works', async (t) => {
  const s = await startServer(t)
  const key = await createKey(s, { kind: 'organization', role: 'full_editor' })
  assert.equal((await s.api('GET', '/v1/me', { key: key.secret })).status, 200)
  const rotated = await s.api('POST', `/v1/api-keys/${key.id}/rotate`)
  assert.equal(rotated.status, 200)
  assert.notEqual(rotated.body.secret, key.secret)
  assert.ok(rotated.body.rotatedAt)
  const old = await s.api('GET', '/v1/me', { key: key.secret })
  assert.equal(old.status, 401)
  assert.equal((await s.api('GET', '/v1/me', { key: rotated.body.secret })).status, 200)
})

test('revoke stops the secret at once; status=all lists revoked keys', async (t) => {
  const s = await startServer(t)
  const key = await createKey(s, { kind: 'organization', role: 'full_editor' })
  const revoked = await s.api('DELETE', `/v1/api-keys/${key.id}`)
  assert.equal(revoked.status, 200)
  assert.equal(revoked.body.status, 'revoked')
  const res = await s.api('GET', '/v1/me', { key: key.secret })
  assert.equal(res.status, 401)
  assert.equal(res.body.kind, 'unauthorized')
  const active = await s.api('GET', '/v1/api-keys')
  assert.ok(!active.body.items.some((k: any) => k.id === key.id))
  const all = await s.api('GET', '/v1/api-keys?status=all')
  assert.equal(all.body.items.find((k: any) => k.id === key.id).status, 'revoked')
  assert.equal((await s.api('POST', `/v1/api-keys/${key.id}/rotate`)).status, 409)
  assert.equal((await s.api('PATCH', `/v1/api-keys/${key.id}`, { body: { name: 'x' } })).status, 409)
})

test('PATCH of access takes effect on the next request', async (t) => {
  const s = await startServer(t)
  const w = await createWebsite(s)
  const key = await createKey(s, { kind: 'organization', role: 'admin' })
  assert.equal((await s.api('PATCH', `/v1/websites/${w.id}`, { key: key.secret, body: { name: 'by admin' } })).status, 200)
  const patched = await s.api('PATCH', `/v1/api-keys/${key.id}`, {
    body: { access: { kind: 'organization', role: 'content_editor' }, name: 'demoted' },
  })
  assert.equal(patched.status, 200)
  assert.equal(patched.body.name, 'demoted')
  const denied = await s.api('PATCH', `/v1/websites/${w.id}`, { key: key.secret, body: { name: 'again' } })
  assert.equal(denied.status, 403)
  assert.equal(denied.body.details.capability, 'websites.manage')
  const me = await s.api('GET', '/v1/me', { key: key.secret })
  assert.deepEqual(me.body.access, { kind: 'organization', role: 'content_editor' })
})

test('expiresAt is enforced on the injected clock', async (t) => {
  const s = await startServer(t)
  const past = await s.api('POST', '/v1/api-keys', {
    body: { access: { kind: 'organization', role: 'full_editor' }, expiresAt: new Date(s.clock.now() - 1000).toISOString() },
  })
  assert.equal(past.status, 400)
  assert.equal(past.body.details.field, 'body.expiresAt')
  const key = await createKey(
    s,
    { kind: 'organization', role: 'full_editor' },
    { expiresAt: new Date(s.clock.now() + 3600_000).toISOString() },
  )
  assert.equal((await s.api('GET', '/v1/me', { key: key.secret })).status, 200)
  s.clock.advance(3600_000)
  const expired = await s.api('GET', '/v1/me', { key: key.secret })
  assert.equal(expired.status, 401)
  assert.equal(expired.body.details.reason, 'key_expired')
  assert.equal((await s.api('GET', `/v1/api-keys/${key.id}`)).body.status, 'expired')
  const extended = await s.api('PATCH', `/v1/api-keys/${key.id}`, { body: { expiresAt: null } })
  assert.equal(extended.body.expiresAt, null)
  assert.equal((await s.api('GET', '/v1/me', { key: key.secret })).status, 200)
})

test('list filters by websiteId and pages newest first', async (t) => {
  const s = await startServer(t)
  const a = await createWebsite(s, { name: 'a' })
  const b = await createWebsite(s, { name: 'b' })
  const ka = await createKey(s, { kind: 'websites', role: 'full_editor', websiteIds: [a.id] })
  const kb = await createKey(s, { kind: 'websites', role: 'full_editor', websiteIds: [b.id] })
  const forA = await s.api('GET', `/v1/api-keys?websiteId=${a.id}`)
  const ids = forA.body.items.map((k: any) => k.id)
  assert.ok(ids.includes(ka.id))
  assert.ok(!ids.includes(kb.id))
  // The organization-scope admin key reaches every website.
  assert.ok(forA.body.items.some((k: any) => k.access.kind === 'organization'))
  const page1 = await s.api('GET', '/v1/api-keys?limit=1')
  assert.equal(page1.body.items[0].id, kb.id)
  assert.ok(page1.body.nextCursor)
})

test('only admin keys manage keys', async (t) => {
  const s = await startServer(t)
  const editor = await createKey(s, { kind: 'organization', role: 'full_editor' })
  const res = await s.api('POST', '/v1/api-keys', { key: editor.secret, body: { access: { kind: 'organization', role: 'admin' } } })
  assert.equal(res.status, 403)
  assert.equal(res.body.details.capability, 'apiKeys.manage')
  assert.equal((await s.api('GET', '/v1/api-keys', { key: editor.secret })).status, 403)
})
