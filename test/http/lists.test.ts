import assert from 'node:assert/strict'
import { test } from 'node:test'
import { createWebsite, startServer } from '../helpers/server.js'

test('limit is 1-100 with a default of 20; out of range is 400', async (t) => {
  const s = await startServer(t)
  for (let i = 0; i < 25; i++) await createWebsite(s, { name: `site ${i}` })
  const first = await s.api('GET', '/v1/websites')
  assert.equal(first.body.items.length, 20)
  assert.equal(typeof first.body.nextCursor, 'string')
  for (const limit of ['0', '101', '-1', '2.5']) {
    const res = await s.api('GET', `/v1/websites?limit=${limit}`)
    assert.equal(res.status, 400, limit)
    assert.equal(res.body.details.field, 'query.limit')
  }
  const all = await s.api('GET', '/v1/websites?limit=100')
  assert.equal(all.body.items.length, 25)
  assert.equal(all.body.nextCursor, null)
})

test('paging neither repeats nor skips an item while others are created', async (t) => {
  const s = await startServer(t)
  const created: string[] = []
  for (let i = 0; i < 12; i++) created.push((await createWebsite(s, { name: `before ${i}` })).id)
  const seen: string[] = []
  let cursor: string | null = null
  do {
    const res: any = await s.api('GET', `/v1/websites?limit=5${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`)
    assert.equal(res.status, 200)
    seen.push(...res.body.items.map((w: any) => w.id))
    cursor = res.body.nextCursor
    // Others create websites between pages.
    await createWebsite(s, { name: 'during' })
  } while (cursor !== null)
  assert.deepEqual(seen, [...created].reverse())
})

test('a cursor that was not made by the list is a 400 naming cursor', async (t) => {
  const s = await startServer(t)
  for (const cursor of ['garbage', Buffer.from('[9,1]').toString('base64url'), Buffer.from('{}').toString('base64url')]) {
    const res = await s.api('GET', `/v1/websites?cursor=${cursor}`)
    assert.equal(res.status, 400)
    assert.equal(res.body.details.field, 'query.cursor')
  }
})
