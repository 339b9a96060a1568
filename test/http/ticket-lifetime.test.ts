import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { test } from 'node:test'
import { runOperatorCommand } from '../../actors/operator.js'
import { tool, ticketDeploy } from '../helpers/agent.js'
import { Browserless, setUpOwner } from '../helpers/people.js'
import { oauthToken } from '../helpers/oauth.js'
import { createKey, createWebsite, startServer, type TestServer } from '../helpers/server.js'

/*
 * How long a deploy ticket (begin_deploy) and the upload tokens it leads to stay good: only while
 * whoever asked for them may still deploy to that website, never renewed past the first ticket's own
 * five minutes, and given back when their request deployed nothing.
 */

const FOLDER = { '/index.html': '<h1>Home</h1>' }
const MINUTE = 60 * 1000

/** POST /public/v1/deploys/uploads with a ticket: the fresh ticket and the files' upload instructions. */
async function uploads(s: TestServer, ticket: string, files: { path: string; size: number; sha256: string }[] = []) {
  const response = await fetch(`${s.origin}/public/v1/deploys/uploads`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ticket}`, 'content-type': 'application/json' },
    body: JSON.stringify({ files }),
  })
  return { status: response.status, body: (await response.json()) as any }
}

test('a revoked key’s ticket, renewed ticket and upload token stop at once; renewals end with the first ticket’s five minutes', async (t) => {
  const s = await startServer(t)
  const site = await createWebsite(s, { name: 'Tickets', kind: 'static', subdomain: 'tickets' })
  const k2 = await createKey(s, { kind: 'organization', role: 'full_editor' }, { name: 'K2' })

  // A chain: begin_deploy at t0, renewed at t0 + 4 min (good until t0 + 9 min), but no renewal after t0 + 5 min.
  const first = (await tool(s, 'begin_deploy', { websiteId: site.id }, k2.secret)).ticket as string
  s.clock.advance(4 * MINUTE)
  const renewed = await uploads(s, first)
  assert.equal(renewed.status, 200, JSON.stringify(renewed.body))
  s.clock.advance(2 * MINUTE)
  const again = await uploads(s, renewed.body.ticket)
  assert.deepEqual([again.status, again.body.details?.reason], [401, 'ticket_invalid'])
  assert.match(again.body.message, /renewals end with the first ticket's lifetime.*begin_deploy/)
  // That refusal deployed nothing, so the renewed ticket is still good for its deploy (its own five minutes).
  const deployed = await ticketDeploy(s, renewed.body.ticket, FOLDER)
  assert.equal(deployed.status, 201, JSON.stringify(deployed.body))

  // Revoked: the ticket, a renewed one and an upload token all stop, and nothing reaches the site.
  const bytes = Buffer.alloc(2 << 20, 7)
  const large = { path: '/big.bin', size: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') }
  const ticket = (await tool(s, 'begin_deploy', { websiteId: site.id }, k2.secret)).ticket as string
  const spare = (await tool(s, 'begin_deploy', { websiteId: site.id }, k2.secret)).ticket as string
  const withUpload = await uploads(s, ticket, [large])
  assert.equal(withUpload.status, 200, JSON.stringify(withUpload.body))
  const upload = withUpload.body.files[0].upload
  assert.equal((await s.api('DELETE', `/v1/api-keys/${k2.id}`)).status, 200)
  assert.equal((await s.api('GET', '/v1/me', { key: k2.secret })).status, 401)
  for (const [what, answer] of [
    ['the renewed ticket', await ticketDeploy(s, withUpload.body.ticket, FOLDER)],
    ['a ticket never used', await ticketDeploy(s, spare, FOLDER)],
  ] as const) {
    assert.deepEqual([answer.status, answer.body.details?.reason], [401, 'ticket_invalid'], what)
    assert.match(answer.body.message, /API key that asked for this token was revoked.*begin_deploy/, what)
  }
  assert.equal((await uploads(s, spare)).status, 401, 'no fresh ticket from a revoked key’s')
  const put = await fetch(upload.url, { method: 'PUT', headers: upload.headers, body: bytes })
  const refused = (await put.json()) as any
  assert.deepEqual([put.status, refused.details?.reason], [401, 'upload_token_invalid'])
  assert.match(refused.message, /revoked/)
  const summary = (await s.api('GET', `/v1/websites/${site.id}/source/summary`)).body
  assert.equal(summary.headVersion, deployed.body.version, 'nothing deployed after the revoke')
})

test('a rotation ends what the old secret made: its tickets, a renewed ticket and upload tokens; the new secret’s tickets deploy', async (t) => {
  const s = await startServer(t)
  const site = await createWebsite(s, { name: 'Rotated', kind: 'static', subdomain: 'rotated' })
  const key = await createKey(s, { kind: 'organization', role: 'full_editor' }, { name: 'Rotating' })
  const bytes = Buffer.alloc(2 << 20, 3)
  const large = { path: '/big.bin', size: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') }
  const ticket = (await tool(s, 'begin_deploy', { websiteId: site.id }, key.secret)).ticket as string
  const spare = (await tool(s, 'begin_deploy', { websiteId: site.id }, key.secret)).ticket as string
  const withUpload = await uploads(s, ticket, [large])
  assert.equal(withUpload.status, 200, JSON.stringify(withUpload.body))
  const upload = withUpload.body.files[0].upload
  const head = (await s.api('GET', `/v1/websites/${site.id}/source/summary`)).body.headVersion

  const rotated = await s.api('POST', `/v1/api-keys/${key.id}/rotate`)
  assert.equal(rotated.status, 200, JSON.stringify(rotated.body))
  for (const [what, answer] of [
    ['the renewed ticket', await ticketDeploy(s, withUpload.body.ticket, FOLDER)],
    ['a ticket never used', await ticketDeploy(s, spare, FOLDER)],
  ] as const) {
    assert.deepEqual([answer.status, answer.body.details?.reason], [401, 'ticket_invalid'], what)
    assert.match(answer.body.message, /API key that asked for this token was rotated since.*new secret.*begin_deploy/, what)
  }
  const put = await fetch(upload.url, { method: 'PUT', headers: upload.headers, body: bytes })
  const refused = (await put.json()) as any
  assert.deepEqual([put.status, refused.details?.reason], [401, 'upload_token_invalid'])
  assert.match(refused.message, /rotated since/)
  assert.equal((await s.api('GET', `/v1/websites/${site.id}/source/summary`)).body.headVersion, head, 'nothing deployed')

  // The new secret's ticket deploys, and goes on deploying through renewals, until the next rotation.
  const fresh = (await tool(s, 'begin_deploy', { websiteId: site.id }, rotated.body.secret)).ticket as string
  const renewed = await uploads(s, fresh)
  assert.equal(renewed.status, 200, JSON.stringify(renewed.body))
  const deployed = await ticketDeploy(s, renewed.body.ticket, FOLDER)
  assert.equal(deployed.status, 201, JSON.stringify(deployed.body))
})

test('a ticket stops when its person leaves the workspace, when its key expires or loses the role, and when its website is trashed or suspended', async (t) => {
  const s = await startServer(t)
  const owner = await setUpOwner(s)
  const orgId = s.plinth.installation.orgId
  const site = await createWebsite(s, { name: 'Stops', kind: 'static', subdomain: 'stops' })
  const begin = async (key: string) => (await tool(s, 'begin_deploy', { websiteId: site.id }, key)).ticket as string
  const refusedFor = async (ticket: string, reason: RegExp, what: string) => {
    const answer = await ticketDeploy(s, ticket, FOLDER)
    assert.deepEqual([answer.status, answer.body.details?.reason], [401, 'ticket_invalid'], `${what}: ${JSON.stringify(answer.body)}`)
    assert.match(answer.body.message, reason, what)
  }

  // A member asks for a ticket in the dashboard's way (a session), then is removed from the workspace.
  const invite = await owner.api('POST', '/v1/members/invitations', { email: 'mia@example.com', role: 'full_editor' })
  const mia = new Browserless(s)
  const code = invite.body.acceptUrl.split('#code=')[1]
  assert.equal((await mia.post('/app/invite', { code, name: 'Mia', password: 'mia-password-1' })).status, 303)
  const asMia = { 'x-organization-id': orgId }
  const byMia = await mia.api('POST', `/v1/websites/${site.id}/deploy/tickets`, undefined, { headers: asMia })
  assert.equal(byMia.status, 201, JSON.stringify(byMia.body))
  const miaId = (await owner.api('GET', '/v1/members')).body.items.find((m: any) => m.email === 'mia@example.com').userId
  assert.equal((await owner.api('DELETE', `/v1/members/${miaId}`)).status, 200)
  await refusedFor(byMia.body.ticket, /person who asked for this token is no longer a member/, 'member removed')

  // A key that expires, and a key whose role no longer deploys.
  const expiring = await createKey(
    s,
    { kind: 'organization', role: 'full_editor' },
    { expiresAt: new Date(s.clock.now() + MINUTE).toISOString() },
  )
  const expiringTicket = await begin(expiring.secret)
  const demoted = await createKey(s, { kind: 'organization', role: 'full_editor' })
  const demotedTicket = await begin(demoted.secret)
  const patched = await s.api('PATCH', `/v1/api-keys/${demoted.id}`, { body: { access: { kind: 'organization', role: 'content_editor' } } })
  assert.equal(patched.status, 200, JSON.stringify(patched.body))
  s.clock.advance(MINUTE)
  await refusedFor(expiringTicket, /API key that asked for this token expired/, 'key expired')
  await refusedFor(demotedTicket, /may no longer use source\.write on this website/, 'key demoted')

  // The website trashed, then restored and suspended by the operator.
  const trashed = await begin(s.adminKey)
  assert.equal((await s.api('DELETE', `/v1/websites/${site.id}`)).status, 200)
  await refusedFor(trashed, /website of this token is in the trash/, 'trashed')
  assert.equal((await s.api('POST', `/v1/websites/${site.id}/restore`)).status, 200)
  const suspended = await begin(s.adminKey)
  await runOperatorCommand(s.plinth.registry, { command: 'suspend', websiteId: site.id, reason: 'phishing' })
  await refusedFor(suspended, /taken down by the platform/, 'suspended')
  await runOperatorCommand(s.plinth.registry, { command: 'unsuspend', websiteId: site.id })
  // The same ticket works again once nothing stands in its way: those refusals deployed nothing.
  const back = await ticketDeploy(s, suspended, FOLDER)
  assert.equal(back.status, 201, JSON.stringify(back.body))
})

test('a ticket refused for its rate (429) deployed nothing and works after Retry-After; a session cookie at the ticket endpoints is the 401 that asks for a ticket', async (t) => {
  const s = await startServer(t)
  const owner = await setUpOwner(s)
  const site = await createWebsite(s, { name: 'Rate', kind: 'static', subdomain: 'rate' })
  const key = await createKey(s, { kind: 'organization', role: 'full_editor' })
  const ticket = (await tool(s, 'begin_deploy', { websiteId: site.id }, key.secret)).ticket as string
  // The key's expensive bucket (20 at once) spent by other deploys of the same key.
  for (let i = 0; i < 20; i++) {
    const spent = await s.api('POST', `/v1/websites/${site.id}/deployments/ensure`, { key: key.secret, body: {} })
    assert.notEqual(spent.status, 429, `call ${i}`)
  }
  const limited = await ticketDeploy(s, ticket, FOLDER)
  assert.equal(limited.status, 429, JSON.stringify(limited.body))
  const wait = Number(limited.body.details.retryAfterSeconds)
  assert.ok(wait > 0)
  s.clock.advance(wait * 1000)
  const retried = await ticketDeploy(s, ticket, FOLDER)
  assert.equal(retried.status, 201, JSON.stringify(retried.body))

  // A person's session cookie, with the dashboard's Origin, authenticates neither deploy endpoint.
  const form = new FormData()
  form.append('files', new Blob(['<p>x</p>']), 'index.html')
  for (const [path, body, type] of [
    ['/public/v1/deploys', form, undefined],
    ['/public/v1/deploys/uploads', JSON.stringify({ files: [] }), 'application/json'],
  ] as const) {
    const headers: Record<string, string> = { cookie: owner.cookie, origin: owner.appOrigin }
    if (type !== undefined) headers['content-type'] = type
    const answer = await fetch(`${s.origin}${path}`, { method: 'POST', headers, body })
    const said = (await answer.json()) as any
    assert.deepEqual([answer.status, said.details?.reason], [401, 'ticket_invalid'], `${path}: ${JSON.stringify(said)}`)
    assert.match(said.message, /takes a deploy ticket: call begin_deploy/)
  }
})

test('a ticket an OAuth application asked for stops when the person disconnects the application', async (t) => {
  const s = await startServer(t)
  const owner = await setUpOwner(s)
  const site = (await owner.api('POST', '/v1/websites', { name: 'Connected', kind: 'static' })).body
  // The person connects an agent over OAuth (resource /v1), as an MCP host would.
  const access = await oauthToken(s, owner, '/v1', { scope: 'platform:edit', clientName: 'Deploying Agent' })
  const begin = async () => {
    const begun = await s.api('POST', `/v1/websites/${site.id}/deploy/tickets`, { key: access })
    assert.equal(begun.status, 201, JSON.stringify(begun.body))
    return begun.body.ticket as string
  }
  assert.equal((await ticketDeploy(s, await begin(), FOLDER)).status, 201, 'the connected agent deploys')
  const ticket = await begin()
  const grantId = (await owner.api('GET', '/v1/me/connections')).body.items[0].id
  assert.equal((await owner.api('DELETE', `/v1/me/connections/${grantId}`)).status, 200)
  const refused = await ticketDeploy(s, ticket, { '/index.html': '<h1>After</h1>' })
  assert.deepEqual([refused.status, refused.body.details?.reason], [401, 'ticket_invalid'])
  assert.match(refused.body.message, /application that asked for this token was disconnected/)
})
