import assert from 'node:assert/strict'
import { test } from 'node:test'
import { appendAudit } from '../../actors/organization/audit.js'
import { createKey, createWebsite, startServer } from '../helpers/server.js'

test('website and key changes are recorded with the acting key, newest first', async (t) => {
  const s = await startServer(t)
  const me = (await s.api('GET', '/v1/me')).body
  const actor = await createKey(s, { kind: 'organization', role: 'admin' }, { name: 'robot' })
  const w = (await s.api('POST', '/v1/websites', { key: actor.secret, body: { name: 'Audited' } })).body
  await s.api('PATCH', `/v1/websites/${w.id}`, { key: actor.secret, body: { name: 'Audited 2' } })
  await s.api('PATCH', `/v1/websites/${w.id}/subdomain`, { key: actor.secret, body: { label: 'audited-new' } })
  await s.api('DELETE', `/v1/websites/${w.id}`, { key: actor.secret })
  await s.api('POST', `/v1/websites/${w.id}/restore`, { key: actor.secret })
  const victim = await createKey(s, { kind: 'organization', role: 'content_editor' })
  await s.api('PATCH', `/v1/api-keys/${victim.id}`, { key: actor.secret, body: { name: 'renamed' } })
  await s.api('POST', `/v1/api-keys/${victim.id}/rotate`, { key: actor.secret })
  await s.api('DELETE', `/v1/api-keys/${victim.id}`, { key: actor.secret })

  const res = await s.api('GET', '/v1/audit-log?limit=100')
  assert.equal(res.status, 200)
  const types = res.body.items.map((e: any) => e.eventType)
  assert.deepEqual(types.slice(0, 9), [
    'api_key.revoked',
    'api_key.rotated',
    'api_key.updated',
    'api_key.created',
    'website.restored',
    'website.deleted',
    'website.subdomain_renamed',
    'website.updated',
    'website.created',
  ])
  const byActor = res.body.items.filter((e: any) => e.actor.id === actor.id)
  assert.equal(byActor.length, 8)
  assert.ok(byActor.every((e: any) => e.actor.kind === 'api_key' && e.actor.name === 'robot'))
  const rename = res.body.items.find((e: any) => e.eventType === 'website.subdomain_renamed')
  assert.deepEqual(rename.metadata, { from: 'audited', to: 'audited-new' })
  assert.equal(rename.websiteId, w.id)
  // The first key's creation at first start is attributed to the owner person.
  const first = res.body.items.at(-1)
  assert.equal(first.eventType, 'api_key.created')
  assert.equal(first.actor.kind, 'user')
  assert.equal(first.resourceId, me.actor.id)
  // No secret ever appears in the log.
  assert.ok(!JSON.stringify(res.body).includes(victim.secret))
})

test('filters take several comma-separated values and combine; pages do not overlap', async (t) => {
  const s = await startServer(t)
  const a = await createWebsite(s, { name: 'a' })
  const b = await createWebsite(s, { name: 'b' })
  await s.api('DELETE', `/v1/websites/${a.id}`)
  const key = await createKey(s, { kind: 'organization', role: 'full_editor' })
  const q = async (query: string) => (await s.api('GET', `/v1/audit-log?${query}`)).body.items
  assert.deepEqual(
    (await q('eventType=website.deleted')).map((e: any) => e.websiteId),
    [a.id],
  )
  assert.equal((await q('eventType=website.created,website.deleted')).length, 3)
  assert.equal((await q('resourceType=api_key')).length, 2)
  assert.equal((await q(`websiteId=${a.id},${b.id}&eventType=website.created`)).length, 2)
  assert.equal((await q('actorKind=user')).length, 1)
  assert.equal((await q('actorKind=api_key')).length, 4)
  assert.equal((await q(`actorId=${key.id}`)).length, 0)
  const bad = await s.api('GET', '/v1/audit-log?actorKind=robot')
  assert.equal(bad.status, 400)
  assert.equal(bad.body.details.field, 'query.actorKind')
  const page1 = await s.api('GET', '/v1/audit-log?limit=2')
  const page2 = await s.api('GET', `/v1/audit-log?limit=2&cursor=${page1.body.nextCursor}`)
  const page3 = await s.api('GET', `/v1/audit-log?limit=2&cursor=${page2.body.nextCursor}`)
  const ids = [...page1.body.items, ...page2.body.items, ...page3.body.items].map((e: any) => e.id)
  assert.equal(new Set(ids).size, 5)
  assert.equal(page3.body.nextCursor, null)
  const editor = await s.api('GET', '/v1/audit-log', { key: key.secret })
  assert.equal(editor.status, 403)
  assert.equal(editor.body.details.capability, 'auditLog.read')
})

test('a rare filter on a long log answers short pages with a cursor instead of reading the whole log', async (t) => {
  const s = await startServer(t)
  const w = await createWebsite(s, { name: 'rare' })
  await s.api('DELETE', `/v1/websites/${w.id}`)
  // 12,000 newer entries that the filter does not match (written straight to the store: making
  // them through the API would take minutes).
  const store = s.plinth.store
  const me = (await s.api('GET', '/v1/me')).body
  await store.commit(() => {
    for (let i = 0; i < 12_000; i++) {
      appendAudit(store, me.organization.id, { kind: 'api_key', id: 'key_filler', name: 'filler' }, s.clock.now(), {
        eventType: 'website.updated',
        resourceType: 'website',
        resourceId: w.id,
        websiteId: w.id,
      })
    }
  })
  const pages: any[] = []
  let cursor: string | null = null
  do {
    const res: { status: number; body: any } = await s.api(
      'GET',
      `/v1/audit-log?eventType=website.deleted${cursor === null ? '' : `&cursor=${cursor}`}`,
    )
    assert.equal(res.status, 200)
    pages.push(res.body)
    cursor = res.body.nextCursor
  } while (cursor !== null && pages.length < 10)
  assert.equal(cursor, null, 'the walk ends')
  assert.deepEqual(pages[0].items, [], 'the first page stops after 5,000 non-matching entries')
  assert.notEqual(pages[0].nextCursor, null)
  assert.equal(pages.length, 3)
  assert.deepEqual(
    pages.flatMap((p) => p.items).map((e: any) => [e.eventType, e.websiteId]),
    [['website.deleted', w.id]],
  )
  // Unfiltered pages are full as before.
  const full = await s.api('GET', '/v1/audit-log?limit=100')
  assert.equal(full.body.items.length, 100)
  assert.equal(full.body.items[0].actor.id, 'key_filler')
})
