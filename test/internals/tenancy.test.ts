import assert from 'node:assert/strict'
import { test } from 'node:test'
import { insertApiKey } from '../../actors/organization/organization.js'
import { createWebsite, startServer } from '../helpers/server.js'

// No API creates organizations yet, so the second tenant is made directly in the store.
test('another organization never sees, confirms or touches this one', async (t) => {
  const s = await startServer(t)
  const mine = await createWebsite(s, { name: 'Mine' })
  const { clock } = s.plinth.registry
  const { store } = s.plinth
  const secret = 'wb_' + 'o'.repeat(43)
  await store.commit(() => {
    const org = { v: 1 as const, id: 'org_other', name: 'Other', createdAt: clock.now() }
    store.organizations.put(org.id, org)
    insertApiKey(store, org.id, { kind: 'user', id: 'usr_other', name: 'Other owner' }, clock.now(), {
      name: 'Admin key (first start)',
      access: { kind: 'organization', role: 'admin' },
      expiresAt: null,
      secret,
    })
  })
  const get = await s.api('GET', `/v1/websites/${mine.id}`, { key: secret })
  assert.equal(get.status, 404)
  assert.deepEqual(get.body, { kind: 'not_found', message: `Website ${mine.id} not found` })
  assert.equal((await s.api('DELETE', `/v1/websites/${mine.id}`, { key: secret })).status, 404)
  assert.deepEqual((await s.api('GET', '/v1/websites', { key: secret })).body.items, [])
  const audit = (await s.api('GET', '/v1/audit-log', { key: secret })).body.items
  assert.deepEqual(
    audit.map((e: any) => e.actor.id),
    ['usr_other'],
  )
  const keys = (await s.api('GET', '/v1/api-keys')).body.items
  assert.equal((await s.api('GET', `/v1/api-keys/${keys[0].id}`, { key: secret })).status, 404)
  const scoped = await s.api('POST', '/v1/api-keys', {
    key: secret,
    body: { access: { kind: 'websites', role: 'full_editor', websiteIds: [mine.id] } },
  })
  assert.equal(scoped.status, 400)
  // Subdomains are global: the other organization cannot take this one's label, slugs are per organization.
  assert.equal((await s.api('POST', '/v1/websites', { key: secret, body: { name: 'x', subdomain: mine.subdomain } })).status, 409)
  assert.equal((await s.api('POST', '/v1/websites', { key: secret, body: { name: 'x', slug: mine.slug } })).status, 201)
  assert.equal((await s.api('GET', `/v1/websites/${mine.id}`)).body.name, 'Mine')
})
