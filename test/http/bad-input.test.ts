import assert from 'node:assert/strict'
import { test } from 'node:test'
import { createKey, createWebsite, startServer } from '../helpers/server.js'

const TRUNCATED = '--X\r\nContent-Disposition: form-data; name="files"; filename="a.html"\r\n\r\nhello'
const MULTIPART = { 'content-type': 'multipart/form-data; boundary=X' }

test('a multipart body that ends inside a file part is a 400, and the server goes on serving', async (t) => {
  const s = await startServer(t)
  const w = await createWebsite(s, { name: 'Static', kind: 'static' })
  for (let i = 0; i < 3; i++) {
    const res = await s.api('POST', `/v1/websites/${w.id}/deploy`, { raw: TRUNCATED, headers: MULTIPART })
    assert.equal(res.status, 400, JSON.stringify(res.body))
    assert.equal(res.body.details.field, 'body')
    assert.match(res.body.message, /multipart body cannot be read: Unexpected end of form .*"a\.html".*send the whole body/)
  }
  // Nothing was written, and the process is alive.
  assert.equal((await s.api('GET', `/v1/websites/${w.id}`)).body.headVersion, 1)
  const ok = await s.api('POST', `/v1/websites/${w.id}/deploy`, { raw: '--X\r\nContent-Disposition: form-data; name="files"; filename="a.html"\r\n\r\nhello\r\n--X--\r\n', headers: MULTIPART })
  assert.equal(ok.status, 201, JSON.stringify(ok.body))
})

test('scope and capability are checked before a body is read: a refused caller gets its 404 or 403, not a complaint about the body', async (t) => {
  const s = await startServer(t)
  const w = await createWebsite(s, { name: 'Static', kind: 'static' })
  const other = await createWebsite(s, { name: 'Other', kind: 'static' })
  const scoped = await createKey(s, { kind: 'websites', role: 'full_editor', websiteIds: [other.id] })
  const reader = await createKey(s, { kind: 'organization', role: 'content_editor' })
  const outOfScope = await s.api('POST', `/v1/websites/${w.id}/deploy`, { key: scoped.secret, raw: TRUNCATED, headers: MULTIPART })
  assert.equal(outOfScope.status, 404, JSON.stringify(outOfScope.body))
  const missing = await s.api('POST', '/v1/websites/ws_x/deploy', { raw: TRUNCATED, headers: MULTIPART })
  assert.equal(missing.status, 404, JSON.stringify(missing.body))
  const lacking = await s.api('POST', `/v1/websites/${w.id}/deploy/json`, { key: reader.secret, raw: '{"files": [' })
  assert.equal(lacking.status, 403, JSON.stringify(lacking.body))
  assert.equal(lacking.body.details.capability, 'source.write')
})
