import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import { test } from 'node:test'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { auth } from '@modelcontextprotocol/sdk/client/auth.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { AnonymousAgent, staticSite } from '../helpers/anonymous.js'
import { startServer, type TestServer } from '../helpers/server.js'
import { Browserless, formFields, setUpOwner } from '../helpers/people.js'
import { MemoryProvider } from '../helpers/oauth.js'

const REDIRECT = 'http://127.0.0.1:9/callback'

/** The MCP endpoint under the API origin (tokens are bound to this resource). */
function mcpUrl(server: TestServer): string {
  return `http://localhost:${server.plinth.port}/v1/mcp`
}

/** The person consents on the dashboard page the SDK was sent to; returns the code from the redirect. */
async function consent(person: Browserless, url: URL, choice: Record<string, string> = {}): Promise<URL> {
  const page = await person.get(url.href)
  assert.equal(page.status, 200, `consent page: ${page.status} ${page.headers.get('location')}`)
  const html = await page.text()
  const answer = await person.post('/app/oauth/authorize', { ...formFields(html), decision: 'approve', ...choice })
  assert.equal(answer.status, 303, await answer.text())
  return new URL(answer.headers.get('location')!)
}

async function authorize(server: TestServer, person: Browserless, provider: MemoryProvider): Promise<void> {
  assert.equal(await auth(provider, { serverUrl: mcpUrl(server) }), 'REDIRECT')
  // The SDK asks for every scope the resource lists; the person grants platform:edit.
  const back = await consent(person, provider.authorizationUrl!, { grant_scope: 'platform:edit' })
  assert.equal(back.origin + back.pathname, REDIRECT)
  assert.equal(back.searchParams.get('state'), provider.authorizationUrl!.searchParams.get('state'))
  assert.equal(await auth(provider, { serverUrl: mcpUrl(server), authorizationCode: back.searchParams.get('code')! }), 'AUTHORIZED')
}

async function connect(t: any, server: TestServer, provider: MemoryProvider): Promise<Client> {
  const client = new Client({ name: provider.name, version: '1.0.0' })
  await client.connect(new StreamableHTTPClientTransport(new URL(mcpUrl(server)), { authProvider: provider }))
  t.after(() => client.close())
  return client
}

function mcpStatus(server: TestServer, token: string): Promise<number> {
  return fetch(mcpUrl(server), {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
  }).then((r) => r.status)
}

test('an MCP client connects over OAuth: discovery, registration, consent, tokens, tool calls as the person, refresh rotation and reuse detection', async (t) => {
  const server = await startServer(t)
  const owner = await setUpOwner(server)

  // Without a credential the endpoint points at its protected-resource metadata.
  const bare = await fetch(mcpUrl(server), { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
  assert.equal(bare.status, 401)
  assert.equal(
    bare.headers.get('www-authenticate'),
    `Bearer resource_metadata="http://localhost:${server.plinth.port}/.well-known/oauth-protected-resource/v1/mcp"`,
  )

  const provider = new MemoryProvider('Test Agent', REDIRECT, 'platform:edit')
  await authorize(server, owner, provider)
  const url = provider.authorizationUrl!
  assert.equal(url.searchParams.get('code_challenge_method'), 'S256')
  assert.equal(url.searchParams.get('resource'), mcpUrl(server))

  const client = await connect(t, server, provider)
  const whoami = await client.callTool({ name: 'whoami', arguments: {} })
  const me = whoami.structuredContent as any
  assert.equal(me.actor.kind, 'oauth')
  assert.equal(me.actor.agent, 'Test Agent')
  assert.equal(me.access.role, 'full_editor', 'platform:edit caps the owner at full_editor')
  assert.equal(me.person.email, 'owner@example.com')
  const denied = await client.callTool({ name: 'create_api_key', arguments: { access: { kind: 'organization', role: 'admin' } } })
  assert.equal(denied.isError, true)
  assert.equal((denied.structuredContent as any).details.capability, 'apiKeys.manage')

  // An admin-scoped grant acts and is audited with the application's name.
  const admin = new MemoryProvider('Admin Agent', REDIRECT, 'platform:edit')
  assert.equal(await auth(admin, { serverUrl: mcpUrl(server) }), 'REDIRECT')
  admin.authorizationUrl!.searchParams.set('scope', 'platform:admin')
  const back = await consent(owner, admin.authorizationUrl!, { grant_scope: 'platform:admin' })
  assert.equal(await auth(admin, { serverUrl: mcpUrl(server), authorizationCode: back.searchParams.get('code')! }), 'AUTHORIZED')
  const adminClient = await connect(t, server, admin)
  const created = await adminClient.callTool({ name: 'create_website', arguments: { name: 'Made by an agent' } })
  assert.equal(created.isError, undefined, JSON.stringify(created.structuredContent))
  const audit = await server.api('GET', '/v1/audit-log?eventType=website.created')
  assert.equal(audit.body.items[0].actor.kind, 'oauth')
  assert.equal(audit.body.items[0].metadata.agent, 'Admin Agent')
  const byKind = await server.api('GET', '/v1/audit-log?actorKind=oauth')
  assert.ok(byKind.body.items.length >= 1 && byKind.body.items.every((e: any) => e.actor.kind === 'oauth'))

  // A token for the MCP resource is refused at the REST API (another resource).
  const accessToken = provider.saved!.access_token
  const rest = await server.api('GET', '/v1/me', { key: accessToken })
  assert.equal(rest.status, 401)
  assert.match(rest.body.message, /issued for .*\/v1\/mcp/)

  // Refresh rotates: a new pair, and the spent refresh token is dead.
  const spent = provider.saved!.refresh_token!
  const clientId = (provider.info as { client_id: string }).client_id
  const refreshed = await tokenRequest(server, { grant_type: 'refresh_token', refresh_token: spent, client_id: clientId })
  assert.equal(refreshed.status, 200)
  assert.notEqual(refreshed.body.refresh_token, spent)
  assert.equal(await mcpStatus(server, refreshed.body.access_token), 200)
  // Reuse of the spent token revokes the whole grant: the fresh access token stops working too.
  const reuse = await tokenRequest(server, { grant_type: 'refresh_token', refresh_token: spent, client_id: clientId })
  assert.equal(reuse.status, 400)
  assert.equal(reuse.body.error, 'invalid_grant')
  assert.equal(await mcpStatus(server, refreshed.body.access_token), 401)
  assert.equal(await mcpStatus(server, accessToken), 401)
})

test('revocation (RFC 7009) and the dashboard disconnect end a token at once; access tokens expire', async (t) => {
  const server = await startServer(t)
  const owner = await setUpOwner(server)
  const first = new MemoryProvider('Revoked Agent', REDIRECT, 'platform:edit')
  await authorize(server, owner, first)
  assert.equal(await mcpStatus(server, first.saved!.access_token), 200)
  const revoke = await fetch(`${server.origin}/oauth/revoke`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token: first.saved!.refresh_token! }),
  })
  assert.equal(revoke.status, 200)
  assert.equal(await mcpStatus(server, first.saved!.access_token), 401)

  const second = new MemoryProvider('Disconnected Agent', REDIRECT, 'platform:edit')
  await authorize(server, owner, second)
  // The person's connected applications, as the dashboard's Account screen lists them (a person only).
  const connections = await owner.api('GET', '/v1/me/connections')
  const grant = connections.body.items.find((c: any) => c.application === 'Disconnected Agent')
  assert.ok(grant, 'the connected application is listed')
  assert.deepEqual([grant.scope, grant.organizationId], ['platform:edit', server.plinth.installation.orgId])
  assert.equal((await server.api('GET', '/v1/me/connections')).body.details.reason, 'user_required', 'an API key has no connections')
  assert.equal((await owner.api('DELETE', `/v1/me/connections/${grant.id}`)).status, 200)
  assert.equal(await mcpStatus(server, second.saved!.access_token), 401)
  assert.ok(!(await owner.api('GET', '/v1/me/connections')).body.items.some((c: any) => c.application === 'Disconnected Agent'))
  assert.equal((await owner.api('DELETE', `/v1/me/connections/${grant.id}`)).status, 404, 'gone')

  const third = new MemoryProvider('Expiring Agent', REDIRECT, 'platform:edit')
  await authorize(server, owner, third)
  server.clock.advance(3601_000)
  assert.equal(await mcpStatus(server, third.saved!.access_token), 401)
})

test('a member removed from the organization a token was authorized for loses it on the next request', async (t) => {
  const server = await startServer(t)
  const owner = await setUpOwner(server)
  const orgId = server.plinth.installation.orgId
  const invite = await owner.api('POST', '/v1/members/invitations', { email: 'agent-user@example.com', role: 'admin' })
  const member = new Browserless(server)
  assert.equal(
    (await member.post('/app/invite', { code: invite.body.acceptUrl.split('#code=')[1], name: 'Agent User', password: 'agent-user-pw-1' }))
      .status,
    303,
  )
  const provider = new MemoryProvider('Team Agent', REDIRECT, 'platform:edit')
  assert.equal(await auth(provider, { serverUrl: mcpUrl(server) }), 'REDIRECT')
  const back = await consent(member, provider.authorizationUrl!, { organization: orgId, grant_scope: 'platform:edit' })
  assert.equal(await auth(provider, { serverUrl: mcpUrl(server), authorizationCode: back.searchParams.get('code')! }), 'AUTHORIZED')
  const client = await connect(t, server, provider)
  const me = (await client.callTool({ name: 'whoami', arguments: {} })).structuredContent as any
  assert.equal(me.organization.id, orgId, 'the token acts in the workspace chosen at consent')
  const memberId = me.person.id
  assert.equal((await owner.api('DELETE', `/v1/members/${memberId}`)).status, 200)
  const after = await fetch(mcpUrl(server), {
    method: 'POST',
    headers: {
      authorization: `Bearer ${provider.saved!.access_token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
  })
  assert.equal(after.status, 401)
  assert.equal(((await after.json()) as any).details.reason, 'not_a_member')
})

test('bad authorization requests: unregistered redirect URI, PKCE plain, a code used twice, a wrong verifier', async (t) => {
  const server = await startServer(t)
  const owner = await setUpOwner(server)
  const registered = await fetch(`${server.origin}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ client_name: 'Hand Client', redirect_uris: [REDIRECT] }),
  })
  assert.equal(registered.status, 201)
  const { client_id } = (await registered.json()) as { client_id: string }
  const badUri = await fetch(`${server.origin}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ redirect_uris: ['http://evil.example/cb'] }),
  })
  assert.equal(badUri.status, 400)
  assert.equal(((await badUri.json()) as any).error, 'invalid_redirect_uri')
  // RFC 7591 2 (redirect_uris: "Array of redirection URI strings for use in redirect-based flows such as
  // the authorization code"): a client of the code grant with none could never be sent its code.
  const noUris = await fetch(`${server.origin}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ client_name: 'Nowhere', redirect_uris: [] }),
  })
  assert.equal(noUris.status, 400)
  assert.equal(((await noUris.json()) as any).error, 'invalid_redirect_uri')

  const verifier = randomBytes(32).toString('base64url')
  const challenge = createHash('sha256').update(verifier).digest('base64url')
  const params = (extra: Record<string, string>) =>
    `/app/oauth/authorize?${new URLSearchParams({ response_type: 'code', client_id, redirect_uri: REDIRECT, code_challenge: challenge, code_challenge_method: 'S256', state: 's1', ...extra })}`

  const mismatch = await owner.get(params({ redirect_uri: `${REDIRECT}/other` }))
  assert.equal(mismatch.status, 400, 'shown on the page, never redirected to an unregistered address')
  assert.equal(mismatch.headers.get('location'), null)
  const plain = await owner.get(params({ code_challenge_method: 'plain', code_challenge: verifier }))
  assert.equal(plain.status, 303)
  const plainBack = new URL(plain.headers.get('location')!)
  assert.equal(plainBack.searchParams.get('error'), 'invalid_request')
  assert.equal(plainBack.searchParams.get('state'), 's1')
  assert.equal(plainBack.searchParams.get('code'), null)

  // A signed-out person is sent to sign in first, and back here after.
  const signedOut = await fetch(server.origin + params({}), { redirect: 'manual' })
  assert.equal(signedOut.status, 303)
  assert.match(signedOut.headers.get('location')!, /^\/app\/sign-in\?next=%2Fapp%2Foauth%2Fauthorize/)

  const back = await consent(owner, new URL(`http://localhost:${server.plinth.port}${params({})}`))
  const code = back.searchParams.get('code')!
  const wrong = await tokenRequest(server, {
    grant_type: 'authorization_code',
    code,
    client_id,
    redirect_uri: REDIRECT,
    code_verifier: randomBytes(32).toString('base64url'),
  })
  assert.equal(wrong.status, 400)
  assert.equal(wrong.body.error, 'invalid_grant')
  // (The failed exchange did not spend the code.)
  const good = await tokenRequest(server, {
    grant_type: 'authorization_code',
    code,
    client_id,
    redirect_uri: REDIRECT,
    code_verifier: verifier,
  })
  assert.equal(good.status, 200, JSON.stringify(good.body))
  assert.equal(good.headers.get('cache-control'), 'no-store')
  assert.equal(await mcpStatus(server, good.body.access_token), 200)
  const twice = await tokenRequest(server, {
    grant_type: 'authorization_code',
    code,
    client_id,
    redirect_uri: REDIRECT,
    code_verifier: verifier,
  })
  assert.equal(twice.status, 400)
  assert.equal(await mcpStatus(server, good.body.access_token), 401, 'a code used twice revokes the tokens issued from it')

  // RFC 6749 4.1.2 ("The client MUST NOT use the authorization code more than once"): two exchanges of
  // one code sent at the same moment, as a replaying attacker would, never both get tokens.
  const raced = (await consent(owner, new URL(`http://localhost:${server.plinth.port}${params({})}`))).searchParams.get('code')!
  const exchange = { grant_type: 'authorization_code', code: raced, client_id, redirect_uri: REDIRECT, code_verifier: verifier }
  const answers = await Promise.all([1, 2, 3, 4].map(() => tokenRequest(server, exchange)))
  assert.deepEqual(
    answers.map((a) => a.status).sort(),
    [200, 400, 400, 400],
    `one exchange of a code wins: ${JSON.stringify(answers.map((a) => a.body))}`,
  )
  // And the winner's token is revoked, since the code was presented again.
  const winner = answers.find((a) => a.status === 200)!
  assert.equal(await mcpStatus(server, winner.body.access_token), 401)

  // Refresh tokens too: one refresh token spent by two requests at once yields one new pair at most.
  const fresh = (await consent(owner, new URL(`http://localhost:${server.plinth.port}${params({})}`))).searchParams.get('code')!
  const pair = await tokenRequest(server, { ...exchange, code: fresh })
  assert.equal(pair.status, 200)
  const refreshes = await Promise.all(
    [1, 2, 3].map(() => tokenRequest(server, { grant_type: 'refresh_token', refresh_token: pair.body.refresh_token, client_id })),
  )
  assert.equal(refreshes.filter((r) => r.status === 200).length <= 1, true, JSON.stringify(refreshes.map((r) => r.status)))
})

async function tokenRequest(server: TestServer, form: Record<string, string>) {
  const response = await fetch(`${server.origin}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(form),
  })
  return { status: response.status, headers: response.headers, body: (await response.json()) as any }
}

test('an agent connected over OAuth makes a claim code for the helper that holds the token, or claims a token itself (claim_website)', async (t) => {
  const server = await startServer(t)
  const owner = await setUpOwner(server)
  const provider = new MemoryProvider('Claiming Agent', REDIRECT, 'platform:edit')
  await authorize(server, owner, provider)
  const client = await connect(t, server, provider)
  const tools = (await client.listTools()).tools
  const described = tools.find((tool) => tool.name === 'create_claim_code')
  assert.match(described?.description ?? '', /published anonymously/)

  // The helper holds the token; the agent hands it a code; the helper claims with {token, code}.
  const helper = await new AnonymousAgent(server).issue()
  const first = (await helper.create(staticSite('Helper site', { '/index.html': 'one' }))).body
  const code = (await client.callTool({ name: 'create_claim_code', arguments: {} })).structuredContent as any
  assert.match(code.code, /^wc_/)
  const claimed = await server.api('POST', '/api/anonymous/claim', { key: null, body: { token: helper.token, code: code.code } })
  assert.equal(claimed.status, 200, JSON.stringify(claimed.body))
  assert.equal(claimed.body.website.id, first.id)

  // The agent holds a token itself.
  const own = await new AnonymousAgent(server).issue()
  const second = (await own.create(staticSite('Agent site', { '/index.html': 'two' }))).body
  const result = await client.callTool({ name: 'claim_website', arguments: { token: own.token } })
  assert.equal(result.isError, undefined, JSON.stringify(result.structuredContent))
  assert.equal((result.structuredContent as any).website.id, second.id)
  const audit = await owner.api('GET', '/v1/audit-log?eventType=website.claimed')
  const entry = audit.body.items.find((e: any) => e.websiteId === second.id)
  assert.deepEqual([entry.actor.kind, entry.metadata.agent], ['oauth', 'Claiming Agent'])
  const spent = await client.callTool({ name: 'claim_website', arguments: { token: helper.token } })
  assert.equal((spent.structuredContent as any).alreadyClaimed, true, 'the same person: already claimed')
})
