import assert from 'node:assert/strict'
import { rawPost } from '../helpers/http.js'
import { test } from 'node:test'
import { operations } from '../../http/operations/index.js'
import { createKey, startServer } from '../helpers/server.js'
import { addPerson, setUpOwner } from '../helpers/people.js'
import { oauthToken } from '../helpers/oauth.js'

test('a person of another organization, by session or OAuth token, never sees, confirms or touches this one: every operation', async (t) => {
  const server = await startServer(t)
  const owner = await setUpOwner(server)
  const victimOrg = server.plinth.installation.orgId
  const site = await server.api('POST', '/v1/websites', { body: { name: 'Victim site', kind: 'static', subdomain: 'victim-site' } })
  const websiteId = site.body.id as string
  assert.equal(
    (await server.api('POST', `/v1/websites/${websiteId}/deploy/json`, { body: { files: [{ path: 'index.html', content: 'victim' }] } }))
      .status,
    201,
  )
  assert.equal((await server.api('POST', `/v1/websites/${websiteId}/publish`)).status, 200)
  const key = await createKey(server, { kind: 'organization', role: 'full_editor' }, { name: 'victim key' })
  const invitation = (await owner.api('POST', '/v1/members/invitations', { email: 'someone@example.com', role: 'admin' })).body
  const ownerId = (await owner.api('GET', '/v1/me')).body.person.id as string
  assert.equal(
    (
      await rawPost(server.plinth.port, 'victim-site.localhost', '/_platform/forms/contact', 'name=Victim+visitor', {
        'content-type': 'application/x-www-form-urlencoded',
      })
    ).status,
    200,
  )
  const submissionId = (await server.api('GET', `/v1/websites/${websiteId}/forms/contact/submissions`)).body.items[0].id as string
  const domainId = (await server.api('POST', `/v1/websites/${websiteId}/domains`, { body: { hostname: 'victim.example.com' } })).body
    .id as string
  const storage = (await server.api('POST', '/v1/websites', { body: { name: 'Victim files', kind: 'storage', subdomain: 'victim-files' } }))
    .body.id as string
  const objectId = (
    await server.api('POST', `/v1/websites/${storage}/objects/uploads`, {
      body: { files: [{ name: 'secret.txt', byteSize: 6 }], folder: 'victim-folder' },
    })
  ).body.files[0].id as string
  const assetId = (
    await server.api('POST', `/v1/websites/${websiteId}/assets/uploads`, {
      body: { filename: 'secret.png', contentType: 'image/png', bytes: 10 },
    })
  ).body.asset.id as string
  const collection = (
    await server.api('POST', `/v1/websites/${websiteId}/collections`, {
      body: { name: 'Victim posts', fields: [{ name: 'Title', type: 'text' }] },
    })
  ).body
  const itemId = (
    await server.api('POST', `/v1/websites/${websiteId}/collections/${collection.id}/items`, { body: { values: { title: 'Secret' } } })
  ).body.id as string
  // A function secret of the victim's site: no stranger reads, sets or deletes it.
  assert.equal(
    (
      await server.api('PUT', `/v1/websites/${websiteId}/functions/variables/VICTIM_SECRET`, {
        body: { value: 'victim-value', secret: true },
      })
    ).status,
    200,
  )
  const ids: Record<string, string> = {
    name: 'VICTIM_SECRET',
    websiteId,
    keyId: key.id,
    userId: ownerId,
    invitationId: invitation.id,
    form: 'contact',
    submissionId,
    domainId,
    objectId,
    partNumber: '1',
    folder: 'victim-folder',
    assetId,
    colId: collection.id,
    fieldId: collection.fields[0].id,
    itemId,
    postId: (await server.api('POST', `/v1/websites/${websiteId}/blog/posts`, { body: { title: 'Victim post' } })).body.post.id,
    pageId: (await server.api('POST', `/v1/websites/${websiteId}/pages`, { body: { title: 'Victim page' } })).body.id,
  }
  // The owner's own connected application: a stranger cannot see or revoke it.
  const ownerToken = await oauthToken(server, owner, '/v1')
  ids.grantId = (await owner.api('GET', '/v1/me/connections')).body.items[0].id
  // The owner's dashboard session: a stranger cannot see or end it.
  ids.sessionId = (await owner.api('GET', '/v1/me/sessions')).body.items[0].id
  const before = (await server.api('GET', `/v1/websites/${websiteId}`)).body

  // Each stranger is an owner of their own workspace; each sends about one request per operation (its own rate bucket).
  const viaSession = await addPerson(server, 'stranger-session@example.com')
  const viaHeader = await addPerson(server, 'stranger-header@example.com')
  const viaToken = await addPerson(server, 'stranger-token@example.com')
  const token = await oauthToken(server, viaToken, '/v1')
  const callers: { name: string; call(method: string, path: string): Promise<{ status: number; body: any }> }[] = [
    { name: 'session', call: (method, path) => viaSession.api(method, path, method === 'GET' ? undefined : {}) },
    {
      name: 'session naming the organization',
      call: (method, path) =>
        viaHeader.api(method, path, method === 'GET' ? undefined : {}, { headers: { 'x-organization-id': victimOrg } }),
    },
    { name: 'OAuth token', call: (method, path) => server.api(method, path, { key: token, body: method === 'GET' ? undefined : {} }) },
  ]
  assert.equal((await callers[2].call('GET', '/v1/me')).body.actor.kind, 'oauth')

  const leaks: string[] = []
  for (const operation of operations) {
    if (operation.public === true) continue
    // About one request per operation for each caller: the server's clock moves half a second an operation,
    // so the callers' own buckets (refilled by that clock) never run dry over some 300 operations.
    server.clock.advance(500)
    const names = [...operation.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1])
    for (const name of names)
      assert.ok(name in ids, `${operation.operationId}: the sweep has no id of the other organization for {${name}}; add one`)
    const path = operation.path.replace(/\{(\w+)\}/g, (_, name: string) => ids[name])
    for (const caller of callers) {
      const naming = caller.name === 'session naming the organization'
      if (names.length === 0 && !naming) continue // acts in the caller's own workspace: checked by the lists below
      const { status, body } = await caller.call(operation.method, path)
      // A website of another organization, or any organization not one's own, is a 404; an id of another
      // organization in an organization-level path is a 404 after the body is checked (a 400 names the body).
      // The ticket endpoints take a ticket and nothing else: a session or a token there is the 401 that asks for one.
      const allowed = operation.ticket === true ? [401] : names.includes('websiteId') || naming ? [404] : [400, 404]
      if (!allowed.includes(status))
        leaks.push(
          `${caller.name}: ${operation.operationId} ${operation.method} ${path} answered ${status} ${JSON.stringify(body).slice(0, 120)}`,
        )
      if (JSON.stringify(body).includes('Victim site')) leaks.push(`${caller.name}: ${operation.operationId} showed the website's name`)
    }
  }
  assert.deepEqual(leaks, [])

  // Lists in the strangers' own workspaces show nothing of the other organization.
  for (const path of [
    '/v1/websites',
    '/v1/websites?scope=trash',
    '/v1/members',
    '/v1/members/invitations',
    '/v1/api-keys',
    '/v1/audit-log',
    '/v1/domains',
    '/v1/me/connections',
    '/v1/me/sessions',
  ]) {
    const text =
      JSON.stringify((await viaSession.api('GET', path)).body) + JSON.stringify((await server.api('GET', path, { key: token })).body)
    // (A part number is not an id of anyone's: it is any number.)
    for (const id of Object.values(ids)) if (id !== ids.partNumber) assert.ok(!text.includes(id), `${path} shows ${id}`)
  }
  // And nothing changed: the website, its live host, the key, the invitation and the members.
  assert.deepEqual((await server.api('GET', `/v1/websites/${websiteId}`)).body, before)
  assert.equal((await server.site('victim-site.localhost', '/')).body.toString(), 'victim')
  assert.equal((await server.api('GET', `/v1/api-keys/${key.id}`)).body.status, 'active')
  assert.deepEqual(
    (await server.api('GET', `/v1/websites/${websiteId}/functions`)).body.variables.map((v: any) => v.name),
    ['VICTIM_SECRET'],
  )
  assert.equal((await server.api('GET', '/v1/me', { key: ownerToken })).status, 200, 'the owner’s connected application still works')
  assert.equal((await owner.api('GET', '/v1/me/sessions')).body.items[0].id, ids.sessionId, 'the owner’s session still works')
  assert.equal((await owner.api('GET', '/v1/members/invitations')).body.items.length, 1)
  assert.deepEqual(
    (await owner.api('GET', '/v1/members')).body.items.map((m: any) => m.userId),
    [ownerId],
  )
})
