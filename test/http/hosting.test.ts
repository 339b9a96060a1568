import assert from 'node:assert/strict'
import { test } from 'node:test'
import { createWebsite, startServer } from '../helpers/server.js'

test('site hostnames reach the hosting plane, which serves nothing of an unpublished site', async (t) => {
  const s = await startServer(t)
  const w = await createWebsite(s, { name: 'Hosted', subdomain: 'hosted' })
  for (const host of [`hosted.localhost:${s.plinth.port}`, `draft--hosted.localhost`, 'unknown.localhost', 'custom.example.org']) {
    const res = await s.site(host, '/')
    assert.equal(res.status, 404, host)
    assert.match(String(res.headers['content-type']), /text\/html/)
    // An empty site's own draft host says what is true; every other host says nothing of the site.
    assert.match(res.body.toString(), host.startsWith('draft--') ? /Nothing here yet/ : /Site not found/)
  }
  // The API answers on its own host only: a site host never reaches an API route.
  const api = await s.site('hosted.localhost', `/v1/websites/${w.id}`)
  assert.equal(api.status, 404)
  assert.match(api.body.toString(), /Site not found/)
  const viaApiHost = await s.site(`localhost:${s.plinth.port}`, '/v1/me')
  assert.equal(viaApiHost.status, 401)
})
