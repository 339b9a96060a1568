import assert from 'node:assert/strict'
import { test } from 'node:test'
import { createKey, startServer, type TestServer } from '../helpers/server.js'
import { addPerson, Browserless, setUpOwner } from '../helpers/people.js'

async function publishedStatic(server: TestServer, subdomain: string, who: { api: TestServer['api'] } = server) {
  const created = await who.api('POST', '/v1/websites', { body: { name: subdomain, kind: 'static', subdomain } })
  assert.equal(created.status, 201, JSON.stringify(created.body))
  const id = created.body.id as string
  assert.equal(
    (
      await server.api('POST', `/v1/websites/${id}/deploy/json`, {
        body: { files: [{ path: 'index.html', content: `<h1>${subdomain}</h1>` }] },
      })
    ).status,
    201,
  )
  assert.equal((await server.api('POST', `/v1/websites/${id}/publish`)).status, 200)
  return id
}

test('members: invite by email, accept in /app (new account or signed in), roles, removal ends access on the next request', async (t) => {
  const server = await startServer(t)
  const owner = await setUpOwner(server)
  const invite = await owner.api('POST', '/v1/members/invitations', { email: 'Mia@Example.com', role: 'full_editor' })
  assert.equal(invite.status, 201, JSON.stringify(invite.body))
  assert.match(invite.body.acceptUrl, /\/app\/invite#code=wi_/)
  const code = invite.body.acceptUrl.split('#code=')[1]
  assert.equal((await owner.api('GET', '/v1/members/invitations')).body.items.length, 1)
  assert.equal(
    (await owner.api('POST', '/v1/members/invitations', { email: 'owner@example.com', role: 'admin' })).status,
    409,
    'already a member',
  )

  // Mia has no account: she creates it on the accept page.
  const mia = new Browserless(server)
  assert.equal((await mia.get('/app/invite')).status, 200)
  const accepted = await mia.post('/app/invite', { code, name: 'Mia', password: 'mia-password-1' })
  assert.equal(accepted.status, 303, await accepted.text())
  const orgId = server.plinth.installation.orgId
  const asMember = await mia.api('GET', '/v1/websites', undefined, { headers: { 'x-organization-id': orgId } })
  assert.equal(asMember.status, 200)
  const me = await mia.api('GET', '/v1/me', undefined, { headers: { 'x-organization-id': orgId } })
  assert.equal(me.body.access.role, 'full_editor')
  assert.equal(me.body.workspaces.length, 2, 'her personal workspace and the one she joined')
  // The code works once.
  assert.equal((await new Browserless(server).post('/app/invite', { code, name: 'X', password: 'xxxx-password' })).status, 404)

  const members = await owner.api('GET', '/v1/members')
  assert.deepEqual(members.body.items.map((m: any) => [m.email, m.role]).sort(), [
    ['Mia@Example.com', 'full_editor'],
    ['owner@example.com', 'owner'],
  ])
  const ownerId = members.body.items.find((m: any) => m.role === 'owner').userId
  const miaId = members.body.items.find((m: any) => m.role !== 'owner').userId
  assert.equal((await owner.api('PATCH', `/v1/members/${ownerId}`, { role: 'admin' })).status, 409, 'the owner cannot be demoted')
  assert.equal((await owner.api('DELETE', `/v1/members/${ownerId}`)).status, 409, 'the owner cannot be removed')
  assert.equal(
    (await mia.api('GET', '/v1/members', undefined, { headers: { 'x-organization-id': orgId } })).status,
    403,
    'full_editor lacks members.manage',
  )
  assert.equal((await owner.api('PATCH', `/v1/members/${miaId}`, { role: 'admin' })).body.role, 'admin')
  assert.equal(
    (await mia.api('GET', '/v1/members', undefined, { headers: { 'x-organization-id': orgId } })).status,
    200,
    'a role change counts on the next request',
  )

  assert.equal((await owner.api('DELETE', `/v1/members/${miaId}`)).status, 200)
  const gone = await mia.api('GET', '/v1/websites', undefined, { headers: { 'x-organization-id': orgId } })
  assert.equal(gone.status, 404, 'removed: the organization is not hers anymore')
  const audit = await server.api('GET', '/v1/audit-log?resourceType=member,invitation')
  assert.deepEqual(audit.body.items.map((e: any) => e.eventType).reverse(), [
    'member.invited',
    'member.joined',
    'member.role_changed',
    'member.removed',
  ])

  // An existing person accepts while signed in; a person with another email cannot.
  const bob = await addPerson(server, 'bob@example.com')
  const eve = await addPerson(server, 'eve@example.com')
  const second = await owner.api('POST', '/v1/members/invitations', { email: 'bob@example.com', role: 'content_editor' })
  const secondCode = second.body.acceptUrl.split('#code=')[1]
  assert.equal((await eve.post('/app/invite', { code: secondCode })).status, 403)
  assert.equal((await bob.post('/app/invite', { code: secondCode })).status, 303)
  assert.equal((await bob.api('GET', '/v1/me', undefined, { headers: { 'x-organization-id': orgId } })).body.access.role, 'content_editor')
  // Revoked invitations stop working.
  const third = await owner.api('POST', '/v1/members/invitations', { email: 'zed@example.com', role: 'admin' })
  assert.equal((await owner.api('DELETE', `/v1/members/invitations/${third.body.id}`)).status, 200)
  assert.equal(
    (await new Browserless(server).post('/app/invite', { code: third.body.acceptUrl.split('#code=')[1], password: 'zed-password-1' }))
      .status,
    404,
  )
})

test('collaborators see and act on their one website; every other id of the organization is 404 to them', async (t) => {
  const server = await startServer(t)
  const owner = await setUpOwner(server)
  const shared = await publishedStatic(server, 'shared-site')
  const secret = await publishedStatic(server, 'secret-site')
  const invite = await owner.api('POST', `/v1/websites/${shared}/collaborators/invitations`, {
    email: 'cora@example.com',
    role: 'full_editor',
  })
  assert.equal(invite.status, 201, JSON.stringify(invite.body))
  const cora = await addPerson(server, 'cora@example.com')
  assert.equal((await cora.post('/app/invite', { code: invite.body.acceptUrl.split('#code=')[1] })).status, 303)

  const got = await cora.api('GET', `/v1/websites/${shared}`)
  assert.equal(got.status, 200)
  const deploy = await cora.api('POST', `/v1/websites/${shared}/deploy/json`, { files: [{ path: 'index.html', content: 'by cora' }] })
  assert.equal(deploy.status, 201)
  assert.equal((await cora.api('GET', `/v1/websites/${secret}`)).status, 404)
  assert.equal((await cora.api('GET', `/v1/websites/${secret}/source/versions`)).status, 404)
  assert.equal((await cora.api('DELETE', `/v1/websites/${shared}`)).status, 403, 'full_editor cannot delete the website')
  const other = { headers: { 'x-organization-id': server.plinth.installation.orgId } }
  assert.equal(
    (await cora.api('GET', '/v1/audit-log', undefined, other)).status,
    404,
    'not a member: the organization does not exist for her',
  )
  assert.equal((await cora.api('GET', '/v1/members', undefined, other)).status, 404)
  const mine = await cora.api('GET', '/v1/websites')
  assert.deepEqual(mine.body.items, [], 'her own workspace lists nothing of the other organization')
  const list = await owner.api('GET', `/v1/websites/${shared}/collaborators`)
  assert.deepEqual(
    list.body.items.map((c: any) => [c.email, c.role]),
    [['cora@example.com', 'full_editor']],
  )
  assert.equal((await owner.api('DELETE', `/v1/websites/${shared}/collaborators/${list.body.items[0].userId}`)).status, 200)
  assert.equal((await cora.api('GET', `/v1/websites/${shared}`)).status, 404, 'removed on the next request')
})

test('transfers: start, get, cancel, accept by another organization with the live host serving throughout; codes are single-use and expire', async (t) => {
  const server = await startServer(t)
  const id = await publishedStatic(server, 'moving-site')
  const host = 'moving-site.localhost'
  const scoped = await createKey(server, { kind: 'websites', role: 'full_editor', websiteIds: [id] })
  const receiver = await addPerson(server, 'receiver@example.com')
  const receiverOrg = (await receiver.api('GET', '/v1/me')).body.organization.id

  const started = await server.api('POST', `/v1/websites/${id}/transfer`, { body: {} })
  assert.equal(started.status, 201, JSON.stringify(started.body))
  assert.match(started.body.code, /^wt_/)
  assert.equal((await server.api('POST', `/v1/websites/${id}/transfer`, { body: {} })).status, 409, 'one pending transfer at a time')
  const pending = await server.api('GET', `/v1/websites/${id}/transfer`)
  assert.equal(pending.body.transfer.status, 'pending')
  assert.equal(pending.body.transfer.code, undefined, 'the code is shown only at start')
  assert.equal((await server.api('DELETE', `/v1/websites/${id}/transfer`)).status, 200)
  assert.equal((await receiver.api('POST', '/v1/websites/transfers/accept', { code: started.body.code })).status, 404, 'a cancelled code')

  // Expiry on the clock.
  const expiring = await server.api('POST', `/v1/websites/${id}/transfer`, { body: {} })
  server.clock.advance(7 * 24 * 3600_000 + 1000)
  await receiver.signIn('receiver@example.com', 'person-password-1') // (a week idle ends a session too)
  assert.equal((await receiver.api('POST', '/v1/websites/transfers/accept', { code: expiring.body.code })).status, 404, 'an expired code')
  assert.equal((await server.api('GET', `/v1/websites/${id}/transfer`)).body.transfer, null)

  const secretBefore = (await server.api('GET', `/v1/websites/${id}/forms`)).body.webhookSigning.secret
  const domain = (await server.api('POST', `/v1/websites/${id}/domains`, { body: { hostname: 'moving.example.com' } })).body
  // CMS content and assets go with it.
  await server.api('POST', `/v1/websites/${id}/collections`, { body: { name: 'Notes', fields: [{ name: 'Text', type: 'text' }] } })
  const note = (
    await server.api('POST', `/v1/websites/${id}/collections/notes/items`, { body: { values: { text: 'Moves along' }, publish: true } })
  ).body
  const asset = (
    await server.api('POST', `/v1/websites/${id}/assets/uploads`, { body: { filename: 'a.png', contentType: 'image/png', bytes: 10 } })
  ).body.asset
  const code = (await server.api('POST', `/v1/websites/${id}/transfer`, { body: { toOrganizationId: receiverOrg } })).body.code
  assert.equal((await server.site(host, '/')).status, 200)
  const keyRole = await server.api('POST', '/v1/websites/transfers/accept', { key: scoped.secret, body: { code } })
  assert.equal(keyRole.status, 403, 'accepting needs websites.create in the receiving organization')
  assert.equal((await receiver.api('POST', '/v1/websites/transfers/accept', { code: 'wt_wrong' })).status, 404)
  const accepted = await receiver.api('POST', '/v1/websites/transfers/accept', { code })
  assert.equal(accepted.status, 200, JSON.stringify(accepted.body))
  assert.equal(accepted.body.publishedVersion, 2)
  assert.equal((await server.site(host, '/')).status, 200, 'the live host serves after the move')
  assert.equal((await server.api('GET', `/v1/websites/${id}`)).status, 404, 'the old organization sees 404')
  assert.notEqual(
    (await receiver.api('GET', `/v1/websites/${id}/forms`)).body.webhookSigning.secret,
    secretBefore,
    'the webhook secret the old organization knew is rotated',
  )
  assert.deepEqual(
    (await receiver.api('GET', `/v1/websites/${id}/domains`)).body.items.map((d: any) => d.id),
    [domain.id],
    'transfers carry domains',
  )
  assert.equal((await receiver.api('GET', `/v1/websites/${id}/items/${note.id}`)).body.text, 'Moves along', 'transfers carry CMS items')
  assert.equal((await receiver.api('GET', `/v1/websites/${id}/assets/${asset.id}`)).body.id, asset.id, 'and assets')
  assert.equal((await server.api('GET', `/v1/websites/${id}/items/${note.id}`)).status, 404)
  assert.deepEqual(
    (await receiver.api('GET', '/v1/domains')).body.items.map((d: any) => d.hostname),
    ['moving.example.com'],
  )
  assert.equal(
    (await server.api('GET', `/v1/websites/${id}`, { key: scoped.secret })).status,
    404,
    'website-scoped keys of the old organization lose access',
  )
  const versions = await receiver.api('GET', `/v1/websites/${id}/source/versions`)
  assert.equal(versions.status, 200)
  assert.equal(versions.body.items.length, 2, 'the whole history moved')
  assert.equal((await receiver.api('POST', '/v1/websites/transfers/accept', { code })).status, 404, 'a used code')
  const audit = await receiver.api('GET', '/v1/audit-log?eventType=website.transfer_accepted')
  assert.equal(audit.body.items.length, 1)
})

test("a transfer drops the edit lease: the old organization's lease token stops working", async (t) => {
  const server = await startServer(t)
  const site = await server.api('POST', '/v1/websites', { body: { name: 'Leased framework site' } })
  const lease = (await server.api('POST', `/v1/websites/${site.body.id}/source/lease`)).body
  const put = (who: { api: TestServer['api'] } | Browserless, token: string) =>
    who instanceof Browserless
      ? who.api('PUT', `/v1/websites/${site.body.id}/source/file`, {
          leaseToken: token,
          file: { type: 'module', name: 'a' },
          content: 'export const a = 1\n',
        })
      : who.api('PUT', `/v1/websites/${site.body.id}/source/file`, {
          body: { leaseToken: token, file: { type: 'module', name: 'a' }, content: 'export const a = 1\n' },
        })
  assert.equal((await put(server, lease.leaseToken)).status, 201, 'the lease works before the move')
  const receiver = await addPerson(server, 'lease-receiver@example.com')
  const { code } = (await server.api('POST', `/v1/websites/${site.body.id}/transfer`, { body: {} })).body
  assert.equal((await receiver.api('POST', '/v1/websites/transfers/accept', { code })).status, 200)
  const stale = await put(receiver, lease.leaseToken)
  assert.equal(stale.status, 409)
  assert.equal(stale.body.message, 'Invalid edit lease')
  const fresh = (await receiver.api('POST', `/v1/websites/${site.body.id}/source/lease`)).body
  assert.equal(
    (await put(receiver, fresh.leaseToken)).status,
    200,
    'the new organization takes its own lease (the same content: unchanged)',
  )
})

test('plans: with billing off nothing is limited; with billing on a full plan answers 402 plan_limit, the operator raises it', async (t) => {
  const off = await startServer(t)
  for (let i = 0; i < 3; i++) assert.equal((await off.api('POST', '/v1/websites', { body: { name: `site ${i}` } })).status, 201)
  const billingOff = await off.api('GET', '/v1/billing')
  assert.equal(billingOff.body.enabled, false)
  // Spec: "Billing may be switched off on a server (`enabled: false`): then there are no plans".
  assert.equal(billingOff.body.plan, null, 'no plan, not "free"')
  assert.deepEqual(billingOff.body.limits, { websites: null, storageBytes: null, shareLinkMaxDays: null })
  assert.equal(billingOff.body.usage.websites, 3)

  const on = await startServer(t, { PLINTH_BILLING: 'on', PLINTH_PLAN_WEBSITES: 'free=2,base=3,max=25' })
  const a = await on.api('POST', '/v1/websites', { body: { name: 'one' } })
  await on.api('POST', '/v1/websites', { body: { name: 'two' } })
  assert.equal(
    (await on.api('POST', '/v1/websites', { body: { name: 'files', kind: 'storage' } })).status,
    201,
    'storage sites take no slot',
  )
  const full = await on.api('POST', '/v1/websites', { body: { name: 'three' } })
  assert.equal(full.status, 402)
  assert.equal(full.body.details.reason, 'plan_limit')
  assert.match(full.body.details.upgradeUrl, /\/app\/billing$/)
  // Restore needs room too.
  assert.equal((await on.api('DELETE', `/v1/websites/${a.body.id}`)).status, 200)
  assert.equal((await on.api('POST', '/v1/websites', { body: { name: 'three' } })).status, 201)
  const restore = await on.api('POST', `/v1/websites/${a.body.id}/restore`)
  assert.equal(restore.status, 402)
  assert.equal(restore.body.details.reason, 'plan_limit')
  await on.plinth.registry.plans.set({ kind: 'user', id: 'operator', name: 'test' }, on.plinth.installation.orgId, 'base')
  assert.equal((await on.api('POST', `/v1/websites/${a.body.id}/restore`)).status, 200)
  const billing = await on.api('GET', '/v1/billing')
  assert.deepEqual(
    [billing.body.enabled, billing.body.plan, billing.body.limits.websites, billing.body.usage.websites],
    [true, 'base', 3, 3],
  )
  // Without Stripe configured the provider operations say so; API keys cannot change the plan.
  assert.equal((await on.api('POST', '/v1/billing/checkout', { body: { plan: 'max' } })).body.details.reason, 'user_required')
  const owner = await setUpOwner(on)
  const checkout = await owner.api('POST', '/v1/billing/checkout', { plan: 'max' })
  assert.equal(checkout.status, 409)
  assert.equal(checkout.body.details.reason, 'billing_not_configured')
})

test('feedback is stored with its sender and listed by the operator', async (t) => {
  const server = await startServer(t)
  const sent = await server.api('POST', '/v1/feedback', {
    body: { message: 'The deploy error was clear, thanks', context: { websiteId: 'ws_x' } },
  })
  assert.equal(sent.status, 201)
  assert.match(sent.body.id, /^fb_/)
  assert.equal((await server.api('POST', '/v1/feedback', { body: { message: '' } })).status, 400)
  const { runOperatorCommand } = await import('../../actors/operator.js')
  const listed = await runOperatorCommand(server.plinth.registry, { command: 'feedback' })
  assert.match(listed.message, /api_key:key_[a-z0-9]+\n {2}The deploy error was clear, thanks\n {2}context: \{"websiteId":"ws_x"\}/)
})
