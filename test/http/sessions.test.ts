import assert from 'node:assert/strict'
import { test } from 'node:test'
import { spawnSync } from 'node:child_process'
import { startServer } from '../helpers/server.js'
import { addPerson, Browserless, setUpOwner } from '../helpers/people.js'
import { AnonymousAgent, staticSite } from '../helpers/anonymous.js'

test('the owner sets up their account through the one-time link, then signs out and in', async (t) => {
  const server = await startServer(t)
  const page = await fetch(`${server.origin}/app/setup`)
  assert.equal(page.status, 200)
  const html = await page.text()
  assert.match(html, /<form[^>]* method="post" action="\/app\/setup">/)
  assert.equal(page.headers.get('x-frame-options'), 'DENY')
  // Every field a person types in carries the server's own length limits (the code fields come from the link).
  for (const path of ['/app/setup', '/app/invite', '/app/sign-in', '/app/claim']) {
    const inputs = (await (await fetch(`${server.origin}${path}`)).text()).match(/<input [^>]*>/g) ?? []
    const typed = inputs.filter((input) => /name="(email|name|password)"/.test(input))
    assert.ok(typed.length >= 2, `${path}: ${inputs.join(' ')}`)
    for (const input of typed) {
      const limit = { email: '254', name: '200', password: '200' }[/name="(\w+)"/.exec(input)![1] as 'email']
      assert.match(input, new RegExp(`maxlength="${limit}"`), `${path}: ${input}`)
    }
  }
  assert.match(html, /name="password" type="password" required minlength="10" maxlength="200"/)

  // A wrong code is refused without saying more.
  const stranger = new Browserless(server)
  const wrong = await stranger.post('/app/setup', {
    token: 'wsu_nope',
    email: 'o@example.com',
    name: 'Olive <Owner>',
    password: 'owner-password-1',
  })
  assert.equal(wrong.status, 404)
  assert.equal(stranger.cookie, '')
  // The form again, saying why and keeping what was typed but the password; a reload asks for the page, not the post.
  const refused = await wrong.text()
  assert.match(refused, /<p class="error" role="alert">This setup link is unknown, used or expired/)
  assert.match(refused, /name="email" [^>]*value="o@example.com"/)
  assert.match(refused, /name="name" [^>]*value="Olive &lt;Owner&gt;"/)
  assert.doesNotMatch(refused, /owner-password-1/)
  assert.match(refused, /history\.replaceState\(null,'',"\/app\/setup"\)/)

  const owner = await setUpOwner(server, 'Owner@Example.com')
  const me = await owner.api('GET', '/v1/me')
  assert.equal(me.status, 200)
  assert.equal(me.body.actor.kind, 'user')
  assert.equal(me.body.access.role, 'owner')
  assert.equal(me.body.person.email, 'Owner@Example.com')
  assert.equal(me.body.organization.id, server.plinth.installation.orgId, "the first organization is the owner's personal workspace")
  assert.deepEqual(
    me.body.workspaces.map((w: any) => [w.id, w.role, w.personal]),
    [[server.plinth.installation.orgId, 'owner', true]],
  )

  // The link works once.
  const again = await new Browserless(server).post('/app/setup', {
    token: server.plinth.installation.setupCode!,
    email: 'x@example.com',
    password: 'another-password',
  })
  assert.equal(again.status, 404)

  // A refused sign-in answers the form again; a reload asks for the sign-in page with where it was going.
  const wrongPassword = await new Browserless(server).post('/app/sign-in', {
    email: 'owner@example.com',
    password: 'not-the-password',
    next: '/app/keys',
  })
  assert.equal(wrongPassword.status, 401)
  assert.match(await wrongPassword.text(), /history\.replaceState\(null,'',"\/app\/sign-in\?next=%2Fapp%2Fkeys"\)/)

  // Signing out ends the session at once.
  const out = await owner.post('/app/sign-out', {})
  assert.equal(out.status, 303)
  const cookie = owner.cookie
  assert.equal(cookie, '')
  // Emails compare case-insensitively.
  await owner.signIn('owner@EXAMPLE.com', 'owner-password-1')
  assert.equal((await owner.api('GET', '/v1/me')).status, 200)
})

test('the setup link expires after 24 hours', async (t) => {
  const server = await startServer(t)
  server.clock.advance(24 * 3600_000 + 1000)
  const late = await new Browserless(server).post('/app/setup', {
    token: server.plinth.installation.setupCode!,
    email: 'o@example.com',
    password: 'owner-password-1',
  })
  assert.equal(late.status, 404)
  assert.match(await late.text(), /unknown, used or expired/)
})

test('sign-in is limited per address too: many emails from one address are refused after 10', async (t) => {
  const server = await startServer(t)
  const person = new Browserless(server)
  const statuses: number[] = []
  for (let i = 0; i < 11; i++)
    statuses.push((await person.post('/app/sign-in', { email: `guess${i}@example.com`, password: 'wrong-password' })).status)
  assert.deepEqual(statuses, [...Array(10).fill(401), 429])
})

test('a signed-out session, an expired one and a wrong password are refused; sign-in is rate limited', async (t) => {
  const server = await startServer(t)
  const owner = await setUpOwner(server)
  const stale = owner.cookie
  await owner.post('/app/sign-out', {})
  const after = await server.api('GET', '/v1/me', { key: null, headers: { cookie: stale } })
  assert.equal(after.status, 401)
  assert.equal(after.body.details.reason, 'session_expired')

  // Wrong password and unknown email read the same.
  const person = new Browserless(server)
  const badPassword = await person.post('/app/sign-in', { email: 'owner@example.com', password: 'not-the-password' })
  const badEmail = await person.post('/app/sign-in', { email: 'nobody@example.com', password: 'not-the-password' })
  assert.equal(badPassword.status, 401)
  assert.equal(badEmail.status, 401)
  const a = (await badPassword.text()).match(/<p class="error"[^>]*>(.*?)<\/p>/)![1]
  const b = (await badEmail.text()).match(/<p class="error"[^>]*>(.*?)<\/p>/)![1]
  assert.equal(a, b)
  assert.equal(person.cookie, '')

  // Idle expiry: a session unused for more than 7 days ends.
  await owner.signIn('owner@example.com', 'owner-password-1')
  server.clock.advance(8 * 24 * 3600_000)
  assert.equal((await owner.api('GET', '/v1/me')).status, 401)

  // Per email: the 11th attempt in a row is refused with Retry-After, even with the right password.
  let last: Response | undefined
  for (let i = 0; i < 11; i++)
    last = await person.post('/app/sign-in', { email: 'owner@example.com', password: i === 10 ? 'owner-password-1' : 'wrong-password' })
  assert.equal(last!.status, 429)
  assert.ok(Number(last!.headers.get('retry-after')) > 0)
})

test('a session changes nothing from a foreign Origin (CSRF); reads need no Origin', async (t) => {
  const server = await startServer(t)
  const owner = await setUpOwner(server)
  const foreign = await owner.api('POST', '/v1/websites', { name: 'From evil' }, { origin: 'https://evil.example' })
  assert.equal(foreign.status, 403)
  assert.equal(foreign.body.details.reason, 'origin_not_trusted')
  const none = await owner.api('POST', '/v1/websites', { name: 'No origin' }, { origin: null })
  assert.equal(none.status, 403)
  const list = await owner.api('GET', '/v1/websites', undefined, { origin: null })
  assert.equal(list.status, 200)
  assert.equal(list.body.items.length, 0, 'nothing was created by the refused requests')
  const made = await owner.api('POST', '/v1/websites', { name: 'From the dashboard' })
  assert.equal(made.status, 201)
  // The dashboard's own forms refuse foreign origins too.
  const signOut = await owner.post('/app/sign-out', {}, { origin: 'https://evil.example' })
  assert.equal(signOut.status, 403)
  assert.equal((await owner.api('GET', '/v1/me')).status, 200, 'the session survived the forged sign-out')
  // The audit log names the person as a user.
  const audit = await server.api('GET', '/v1/audit-log?eventType=website.created')
  assert.deepEqual(
    audit.body.items.map((e: any) => [e.actor.kind, e.actor.id]),
    [['user', (await owner.api('GET', '/v1/me')).body.person.id]],
  )
})

test('/v1/me describes an API key; API keys get user_required where a person is needed', async (t) => {
  const server = await startServer(t)
  const me = await server.api('GET', '/v1/me')
  assert.equal(me.body.actor.kind, 'api_key')
  assert.equal(me.body.person, undefined)
  assert.equal(me.body.access.role, 'admin')
})

test('plinth user add and reset-password work on a stopped server, and the person signs in', async (t) => {
  const server = await startServer(t)
  const dataDir = server.dataDir
  await server.plinth.close()
  const run = (args: string[], input: string) =>
    spawnSync(process.execPath, ['--no-node-snapshot', 'dist/bin/plinth.js', ...args], {
      input,
      env: { ...process.env, PLINTH_DATA_DIR: dataDir },
      encoding: 'utf8',
    })
  const added = run(['user', 'add', '--email', 'cli@example.com', '--name', 'Cli Person'], 'first-password-1\n')
  assert.equal(added.status, 0, added.stderr)
  assert.match(added.stdout, /Created usr_[a-z0-9]+ \(cli@example.com\) with the personal workspace org_/)
  const dup = run(['user', 'add', '--email', 'CLI@example.com'], 'first-password-1\n')
  assert.equal(dup.status, 1)
  assert.match(dup.stderr, /already exists/)
  const short = run(['user', 'reset-password', '--email', 'cli@example.com'], 'short\n')
  assert.equal(short.status, 1)
  assert.match(short.stderr, /10 to 200 characters/)
  const reset = run(['user', 'reset-password', '--email', 'cli@example.com'], 'second-password-2\n')
  assert.equal(reset.status, 0, reset.stderr)

  const again = await startServer(t, { PLINTH_DATA_DIR: dataDir })
  const person = new Browserless(again)
  assert.equal((await person.post('/app/sign-in', { email: 'cli@example.com', password: 'first-password-1' })).status, 401)
  await person.signIn('cli@example.com', 'second-password-2')
  const me = await person.api('GET', '/v1/me')
  assert.equal(me.body.person.name, 'Cli Person')
  assert.equal(me.body.access.role, 'owner')
  assert.notEqual(me.body.organization.id, again.plinth.installation.orgId, 'their own personal workspace')
})

export { addPerson }

test('a session cookie planted by a hosted site acts for nobody: two session cookies on one request are signed out, everywhere', async (t) => {
  // A site under the dashboard's parent domain sets `plinth_session=<attacker's session>; Domain=…;
  // Path=/app/claim`; the browser then sends both, the longer path's first. Neither may be acted on.
  const server = await startServer(t)
  const victim = await setUpOwner(server)
  const attacker = await addPerson(server, 'mallory@example.com')
  const both = `${attacker.cookie}; ${victim.cookie}`
  const withBoth = (init: RequestInit & { headers?: Record<string, string> } = {}) => ({
    ...init,
    redirect: 'manual' as const,
    headers: { cookie: both, origin: victim.appOrigin, ...init.headers },
  })

  const me = await fetch(`${server.origin}/v1/me`, withBoth())
  const body = (await me.json()) as any
  assert.deepEqual([me.status, body.details.reason], [401, 'session_ambiguous'])
  assert.match(body.message, /two session cookies.*Clear this domain’s cookies/)

  // The claim a victim makes on the claim page: with both cookies it claims into nobody's workspace.
  const agent = await new AnonymousAgent(server).issue()
  const site = (await agent.create(staticSite('Planted', { '/index.html': 'mine' }))).body
  const claim = await fetch(
    `${server.origin}/api/anonymous/claim`,
    withBoth({ method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token: agent.token }) }),
  )
  assert.equal(claim.status, 401)
  const page = await fetch(
    `${server.origin}/app/claim`,
    withBoth({
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: agent.token }),
    }),
  )
  assert.notEqual(page.status, 303, 'no claim went through')
  assert.equal((await agent.status(site.id)).body.status, 'live', 'still anonymous: claimed by nobody')
  assert.equal((await attacker.api('GET', '/v1/websites')).body.items.length, 0, 'nothing landed in the attacker’s workspace')

  // The dashboard and the OAuth consent page treat the browser as signed out, and say why.
  const home = await fetch(`${server.origin}/app`, withBoth())
  assert.deepEqual([home.status, home.headers.get('location')], [303, '/app/sign-in'])
  const signIn = await (await fetch(`${server.origin}/app/sign-in`, withBoth())).text()
  assert.match(signIn, /two session cookies/)
  // One cookie alone still works, for each of them.
  assert.equal((await victim.api('GET', '/v1/me')).status, 200)
})

test('over https the session cookie is __Host- (Secure, Path=/, no Domain), and a cookie of the plain name is ignored', async (t) => {
  const server = await startServer(t, { PLINTH_API_ORIGIN: 'https://api.example.test', PLINTH_SITE_DOMAIN: 'sites.test' })
  const appOrigin = 'https://api.example.test'
  const owner = new Browserless(server, appOrigin)
  const setup = await owner.post('/app/setup', {
    token: server.plinth.installation.setupCode!,
    email: 'owner@example.com',
    password: 'owner-password-1',
  })
  assert.equal(setup.status, 303)
  const set = setup.headers.get('set-cookie') ?? ''
  assert.match(set, /^__Host-plinth_session=ps_[^;]+; Path=\/; HttpOnly; SameSite=Lax; Max-Age=\d+; Secure$/)
  assert.doesNotMatch(set, /Domain=/i)
  assert.equal((await owner.api('GET', '/v1/me')).status, 200)
  // A site could plant `plinth_session` (no prefix) for a parent domain: over https it is not read.
  const secret = /^__Host-plinth_session=([^;]+)/.exec(set)![1]
  const planted = await fetch(`${server.origin}/v1/me`, { headers: { cookie: `plinth_session=${secret}` } })
  assert.equal(planted.status, 401)
})
