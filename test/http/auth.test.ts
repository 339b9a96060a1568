import assert from 'node:assert/strict'
import { test } from 'node:test'
import { createKey, createWebsite, startServer } from '../helpers/server.js'

test('missing, malformed and unknown keys are 401 in the error shape', async (t) => {
  const s = await startServer(t)
  const cases: [Record<string, string>, RegExp][] = [
    [{}, /Missing API key/],
    [{ authorization: 'Basic abc' }, /Malformed/],
    [{ authorization: 'Bearer nope' }, /start with wb_/],
    [{ authorization: 'Bearer wb_' + 'x'.repeat(43) }, /Unknown API key/],
  ]
  for (const [headers, message] of cases) {
    const res = await s.api('GET', '/v1/websites', { key: null, headers })
    assert.equal(res.status, 401)
    assert.equal(res.body.kind, 'unauthorized')
    assert.match(res.body.message, message)
    assert.ok(res.headers.get('x-ratelimit-limit'))
    // As the MCP endpoint's 401 does (RFC 9728 5.1): where an OAuth client starts; a credential that was
    // sent and refused is an invalid_token.
    const metadata = `http://localhost:${s.plinth.port}/.well-known/oauth-protected-resource/v1`
    assert.equal(
      res.headers.get('www-authenticate'),
      `Bearer resource_metadata="${metadata}"${headers.authorization === undefined ? '' : ', error="invalid_token"'}`,
    )
  }
})

test('an OAuth client can start from any REST 401: its resource metadata names the API and the authorization server', async (t) => {
  const s = await startServer(t)
  const refused = await fetch(`${s.origin}/v1/websites`)
  const challenge = refused.headers.get('www-authenticate') ?? ''
  const url = /resource_metadata="([^"]+)"/.exec(challenge)?.[1]
  assert.ok(url, challenge)
  const metadata = (await (await fetch(url.replace('localhost', '127.0.0.1'))).json()) as any
  assert.equal(metadata.resource, `http://localhost:${s.plinth.port}/v1`, 'the REST API is the resource (a token for it works here)')
  assert.deepEqual(metadata.authorization_servers, [`http://localhost:${s.plinth.port}`])
  const server = (await (await fetch(`${s.origin}/.well-known/oauth-authorization-server`)).json()) as any
  assert.ok(server.authorization_endpoint && server.token_endpoint && server.registration_endpoint)
})

test('GET /v1/me returns the organization, access scope and exact capabilities', async (t) => {
  const s = await startServer(t)
  const w = await createWebsite(s)
  const admin = await s.api('GET', '/v1/me')
  assert.equal(admin.status, 200)
  assert.match(admin.body.organization.id, /^org_/)
  assert.deepEqual(admin.body.access, { kind: 'organization', role: 'admin' })
  assert.ok(admin.body.capabilities.includes('apiKeys.manage'))
  const editor = await createKey(s, { kind: 'websites', role: 'content_editor', websiteIds: [w.id] })
  const me = await s.api('GET', '/v1/me', { key: editor.secret })
  assert.deepEqual(me.body.access, { kind: 'websites', role: 'content_editor', websiteIds: [w.id] })
  assert.deepEqual(me.body.capabilities, [
    'websites.read',
    'cms.schema.read',
    'cms.items.read',
    'cms.items.write',
    'assets.read',
    'assets.write',
    'pages.read',
  ])
  const full = await createKey(s, { kind: 'organization', role: 'full_editor' })
  const fullCaps: string[] = (await s.api('GET', '/v1/me', { key: full.secret })).body.capabilities
  // Roles are additive: content_editor within full_editor within admin.
  assert.ok(me.body.capabilities.every((c: string) => fullCaps.includes(c)))
  assert.ok(fullCaps.every((c: string) => admin.body.capabilities.includes(c)))
  assert.ok(fullCaps.includes('source.write') && fullCaps.includes('publishing.manage'))
  assert.ok(!fullCaps.includes('websites.create') && !fullCaps.includes('auditLog.read'))
})

test('a website outside the key scope is 404; inside the scope without the capability is 403', async (t) => {
  const s = await startServer(t)
  const mine = await createWebsite(s, { name: 'mine' })
  const other = await createWebsite(s, { name: 'other' })
  const key = await createKey(s, { kind: 'websites', role: 'content_editor', websiteIds: [mine.id] })
  const outside = await s.api('GET', `/v1/websites/${other.id}`, { key: key.secret })
  const missing = await s.api('GET', '/v1/websites/ws_nothere', { key: key.secret })
  assert.equal(outside.status, 404)
  assert.equal(outside.body.kind, 'not_found')
  // Indistinguishable from a website that does not exist.
  assert.equal(outside.body.message.replace(other.id, 'X'), missing.body.message.replace('ws_nothere', 'X'))
  // Anything under an out-of-scope website is 404 too, even where the role would also be refused.
  const rename = await s.api('PATCH', `/v1/websites/${other.id}/subdomain`, { key: key.secret, body: { label: 'zzz' } })
  assert.equal(rename.status, 404)
  const inside = await s.api('GET', `/v1/websites/${mine.id}`, { key: key.secret })
  assert.equal(inside.status, 200)
  const forbidden = await s.api('DELETE', `/v1/websites/${mine.id}`, { key: key.secret })
  assert.equal(forbidden.status, 403)
  assert.equal(forbidden.body.kind, 'forbidden')
  assert.equal(forbidden.body.details.capability, 'websites.manage')
  const list = await s.api('GET', '/v1/websites', { key: key.secret })
  assert.deepEqual(
    list.body.items.map((x: any) => x.id),
    [mine.id],
  )
  const create = await s.api('POST', '/v1/websites', { key: key.secret, body: { name: 'no' } })
  assert.equal(create.status, 403)
  assert.equal(create.body.details.capability, 'websites.create')
})
