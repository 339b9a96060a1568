import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { test } from 'node:test'
import { AnonymousAgent, DAY, HOUR, hostOf, staticSite } from '../helpers/anonymous.js'
import { addPerson, Browserless, setUpOwner } from '../helpers/people.js'
import { ManualClock } from '../../core/clock.js'
import { loadConfig } from '../../core/config.js'
import { silentLogger } from '../../core/log.js'
import { startPlinth } from '../../plinth/start.js'
import { rawPost, rawRequest } from '../helpers/http.js'
import { ADMIN_KEY, startServer, tempDir } from '../helpers/server.js'
import { waitUntil } from '../helpers/wait.js'

test('an agent without an account publishes a static site that is live at once, updates it, and swaps it; the answers say what to do next', async (t) => {
  const server = await startServer(t)
  const agent = await new AnonymousAgent(server).issue()
  const issued = await server.api('POST', '/public/v1/anonymous/credentials', { key: null })
  assert.equal(issued.body.claimPage, `http://localhost:${server.plinth.port}/app/claim`)

  assert.equal((await agent.status()).status, 404, 'no site yet')
  const created = await agent.create(staticSite('My Portfolio', { '/index.html': '<h1>Hello</h1>', '/about.html': 'About' }))
  assert.equal(created.status, 201, JSON.stringify(created.body))
  const site = created.body
  assert.match(site.id, /^ws_/)
  assert.deepEqual([site.name, site.kind, site.status, site.headVersion, site.publishedVersion], ['My Portfolio', 'static', 'live', 2, 2])
  assert.match(site.urls.published, /^http:\/\/my-portfolio-[a-z0-9]{6}\.localhost:\d+\/?$/)
  assert.deepEqual(site.next.actions, ['update', 'replace', 'claim'])
  assert.match(site.next.message, /PUT \/public\/v1\/anonymous\/sites\/ws_/)
  assert.equal(site.deadlines.editUntil, new Date(server.clock.now() + DAY).toISOString())
  assert.equal(site.deadlines.claimUntil, new Date(server.clock.now() + 7 * DAY).toISOString())
  // Where the product's skill reads them too: at the top level.
  assert.deepEqual([site.liveUntil, site.claimUntil], [site.deadlines.liveUntil, site.deadlines.claimUntil])
  assert.match(site.live, /^Live at http:\/\/my-portfolio-/)
  const host = hostOf(site.urls.published)
  assert.equal((await server.site(host, '/')).body.toString(), '<h1>Hello</h1>')

  // A lost create answer is recovered with `current`; a second create is refused with what to do.
  assert.equal((await agent.status()).body.id, site.id)
  const again = await agent.create(staticSite('Another', { '/index.html': 'x' }))
  assert.equal(again.status, 409)
  assert.equal(again.body.details.reason, 'site_already_created')
  assert.match(again.body.message, /PUT \/public\/v1\/anonymous\/sites\/ws_.*replace: true/)

  // An update replaces the whole tree: files left out are removed; a stale version is refused.
  const updated = await agent.update(site.id, {
    expectedHeadVersion: 2,
    name: 'ignored',
    files: [{ path: '/index.html', content: '<h1>Hello again</h1>' }],
  })
  assert.equal(updated.status, 200, JSON.stringify(updated.body))
  assert.deepEqual([updated.body.headVersion, updated.body.publishedVersion, updated.body.name], [3, 3, 'My Portfolio'])
  assert.equal((await server.site(host, '/')).body.toString(), '<h1>Hello again</h1>')
  assert.equal((await server.site(host, '/about.html')).status, 404)
  assert.equal((await agent.update(site.id, { expectedHeadVersion: 2, files: [{ path: '/index.html', content: 'stale' }] })).status, 409)

  // Replace: a new site at a new address; the old one is gone (label freed), the deadlines stay.
  server.clock.advance(HOUR)
  const swapped = await agent.create(staticSite('Portfolio v2', { '/index.html': 'v2' }, { replace: true }))
  assert.equal(swapped.status, 201, JSON.stringify(swapped.body))
  assert.notEqual(swapped.body.id, site.id)
  assert.equal(swapped.body.deadlines.editUntil, site.deadlines.editUntil, 'a swap keeps the 24-hour window')
  assert.equal((await server.site(hostOf(swapped.body.urls.published), '/')).body.toString(), 'v2')
  assert.equal((await server.site(host, '/')).status, 404, 'the old site is offline')
  assert.equal(server.plinth.store.websites.get(site.id), undefined, 'and purged')
  assert.equal((await agent.status(site.id)).status, 404)
  assert.equal((await agent.status()).body.id, swapped.body.id)

  // The token works only here: never on /v1, never from a query string.
  const v1 = await server.api('GET', '/v1/websites', { key: agent.token })
  assert.equal(v1.status, 401)
  assert.match(v1.body.message, /only on the anonymous endpoints/)
  assert.equal((await server.api('GET', `/public/v1/anonymous/sites/current?token=${agent.token}`, { key: null })).status, 401)
})

test('after 24 hours the site goes offline and edits are closed (still claimable); after 7 days everything is purged and the token is spent', async (t) => {
  const server = await startServer(t, {}, { anonymousSweepMs: 20 })
  const agent = await new AnonymousAgent(server).issue()
  const site = (await agent.create(staticSite('Short lived', { '/index.html': 'hi' }))).body
  const host = hostOf(site.urls.published)
  // A visitor's form submission with a file, sent while it is live, goes with the site at the purge.
  const boundary = '----purge'
  const multipart = `--${boundary}\r\nContent-Disposition: form-data; name="cv"; filename="cv.txt"\r\nContent-Type: text/plain\r\n\r\nonly in a submission\r\n--${boundary}--\r\n`
  assert.equal(
    (
      await rawPost(server.plinth.port, host, '/_platform/forms/apply', multipart, {
        'content-type': `multipart/form-data; boundary=${boundary}`,
      })
    ).status,
    200,
  )
  server.clock.advance(DAY - 1000)
  assert.equal(
    (await agent.update(site.id, { expectedHeadVersion: 2, files: [{ path: '/index.html', content: 'still open' }] })).status,
    200,
  )
  server.clock.advance(1000)
  // The background sweeper acts on the moved clock.
  await waitFor(async () => (await server.site(host, '/')).status === 404)
  const closed = await agent.update(site.id, { expectedHeadVersion: 3, files: [{ path: '/index.html', content: 'late' }] })
  assert.equal(closed.status, 410)
  assert.equal(closed.body.details.reason, 'edit_window_closed')
  assert.match(closed.body.message, /can still be claimed/)
  assert.equal(
    (await agent.create(staticSite('Swap', { '/index.html': 'x' }, { replace: true }))).body.details.reason,
    'edit_window_closed',
  )
  const status = (await agent.status()).body
  assert.deepEqual([status.status, status.live, status.urls.published, status.next.actions], ['offline', null, null, ['claim']])
  assert.match(status.next.message, /claim/)
  // Another credential's site shares the blob of "hi": it must outlive the first site's purge.
  const sharing = await new AnonymousAgent(server).issue()
  assert.equal((await sharing.create(staticSite('Same bytes', { '/index.html': 'hi' }))).status, 201)

  server.clock.advance(6 * DAY)
  await waitFor(async () => server.plinth.store.websites.get(site.id) === undefined)
  const spent = await agent.status()
  assert.equal(spent.body.details.reason, 'credential_expired')
  assert.equal(server.plinth.store.websites.get(site.id), undefined)
  assert.equal(server.plinth.store.labels.get(host.split('.')[0]), undefined, 'the label is free again')
  assert.equal((await agent.create(staticSite('Again', { '/index.html': 'x' }))).body.details.reason, 'credential_expired')
  // Blobs only the purged site named are released; a blob another site names stays.
  const store = server.plinth.store
  const hash = (text: string) => createHash('sha256').update(text).digest('hex')
  assert.equal(store.hasBlob(hash('still open')), false, 'released with its last website')
  assert.equal(store.hasBlob(hash('hi')), true, 'still named by the other site')
  assert.equal(store.blobReferences(hash('hi')), 1)
  assert.equal(store.hasBlob(hash('only in a submission')), false, 'the form file went with its site')
  assert.equal([...store.submissionsByForm.range({ start: [site.id, '', 0], end: [site.id, '\uffff', 0] })].length, 0)
})

test('the limits of an anonymous site: 25 files, 1 MiB a file, 5 MiB in all, the kind of each file', async (t) => {
  const server = await startServer(t)
  const agent = await new AnonymousAgent(server).issue()
  const many = Object.fromEntries(Array.from({ length: 26 }, (_, i) => [`/p${i}.html`, 'x']))
  const tooMany = await agent.create(staticSite('Many', many))
  assert.equal(tooMany.status, 413)
  assert.match(tooMany.body.message, /at most 25 files/)
  const big = await agent.create(staticSite('Big', { '/index.html': 'x'.repeat((1 << 20) + 1) }))
  assert.equal(big.status, 413)
  const five = Object.fromEntries(Array.from({ length: 6 }, (_, i) => [`/f${i}.txt`, 'y'.repeat(1 << 20)]))
  const tree = await agent.create(staticSite('Tree', five))
  assert.equal(tree.status, 413)
  assert.match(tree.body.message, /5 MiB/)
  const wrongShape = await agent.create({ name: 'Mixed', kind: 'static', files: [{ file: { type: 'page', name: 'home' }, content: 'x' }] })
  assert.equal(wrongShape.status, 400)
  assert.match(wrongShape.body.details.field, /^body\.files\[0\]/)
  assert.equal((await agent.create({ name: 'Empty', kind: 'static', files: [] })).status, 400)
  assert.equal((await agent.status()).status, 404, 'nothing was created by refused requests')
})

async function waitFor(condition: () => Promise<boolean>): Promise<void> {
  await waitUntil(condition, 'the sweeper to act')
}

test('a person claims with a claim code: the site moves to their workspace at the same address, the token is spent, a retry says alreadyClaimed', async (t) => {
  const server = await startServer(t, {}, { anonymousSweepMs: 20 })
  const owner = await setUpOwner(server)
  const agent = await new AnonymousAgent(server).issue()
  const site = (await agent.create(staticSite('Claim me', { '/index.html': 'mine' }))).body
  const host = hostOf(site.urls.published)

  assert.equal(
    (await server.api('POST', '/v1/websites/claim-codes')).body.details.reason,
    'user_required',
    'an API key makes no claim codes',
  )
  const code = await owner.api('POST', '/v1/websites/claim-codes')
  assert.equal(code.status, 201)
  assert.match(code.body.code, /^wc_/)
  assert.equal(code.body.expiresAt, new Date(server.clock.now() + 10 * 60 * 1000).toISOString())
  const claim = (body: Record<string, unknown>) => server.api('POST', '/api/anonymous/claim', { key: null, body })
  const wrong = await claim({ token: agent.token, code: 'wc_wrong' })
  assert.deepEqual([wrong.status, wrong.body.details.reason], [401, 'claim_code_invalid'])
  assert.equal((await claim({ token: agent.token })).status, 401, 'no person, no code')
  server.clock.advance(11 * 60 * 1000)
  assert.equal(
    (await claim({ token: agent.token, code: code.body.code })).body.details.reason,
    'claim_code_invalid',
    'codes last 10 minutes',
  )

  const fresh = (await owner.api('POST', '/v1/websites/claim-codes')).body.code
  const claimed = await claim({ token: agent.token, code: fresh })
  assert.equal(claimed.status, 200, JSON.stringify(claimed.body))
  const me = (await owner.api('GET', '/v1/me')).body
  assert.equal(claimed.body.workspace.id, server.plinth.installation.orgId)
  assert.equal(claimed.body.alreadyClaimed, false)
  assert.equal(claimed.body.website.id, site.id)
  assert.equal(claimed.body.website.claimHeld, false)
  assert.equal(claimed.body.website.urls.published, site.urls.published, 'same address')
  assert.equal(claimed.body.billingUrl, undefined)
  // The claimed site's own page in the dashboard, in the workspace it went to.
  assert.equal(
    claimed.body.dashboardUrl,
    `http://localhost:${server.plinth.port}/app/websites/${site.id}?workspace=${claimed.body.workspace.id}`,
  )
  assert.deepEqual(claimed.body.workspace, me.organization, 'the personal workspace the session acts in')
  const listed = await owner.api('GET', '/v1/websites')
  assert.ok(
    listed.body.items.some((w: any) => w.id === site.id),
    'the website is in the workspace',
  )
  assert.equal((await server.site(host, '/')).body.toString(), 'mine')
  const audit = await server.api('GET', `/v1/audit-log?eventType=website.claimed`)
  assert.equal(audit.body.items[0].websiteId, site.id)

  // The token is spent: every anonymous endpoint says so; the same person retrying is told it is done.
  const spent = await agent.status()
  assert.deepEqual([spent.status, spent.body.details.reason], [410, 'credential_consumed'])
  assert.equal((await agent.create(staticSite('More', { '/index.html': 'x' }))).body.details.reason, 'credential_consumed')
  const retry = await claim({ token: agent.token, code: (await owner.api('POST', '/v1/websites/claim-codes')).body.code })
  assert.deepEqual([retry.status, retry.body.alreadyClaimed], [200, true])
  const other = await addPerson(server, 'other@example.com')
  const stolen = await other.api('POST', '/api/anonymous/claim', { token: agent.token })
  assert.deepEqual([stolen.status, stolen.body.details.reason], [410, 'credential_consumed'])

  // Claimed, it is an ordinary site: its 24 hours no longer apply.
  server.clock.advance(2 * DAY)
  await server.plinth.registry.sweepAnonymous()
  assert.equal((await server.site(host, '/')).body.toString(), 'mine')
  assert.equal(
    (
      await owner.api('POST', `/v1/websites/${site.id}/deploy/json`, {
        files: [{ path: 'index.html', content: 'edited in the workspace' }],
      })
    ).status,
    201,
  )
})

test('a signed-in person claims on the API with their session (trusted Origin only), also after the preview ended: the site comes back', async (t) => {
  const server = await startServer(t, {}, { anonymousSweepMs: 20 })
  const owner = await setUpOwner(server)
  const agent = await new AnonymousAgent(server).issue()
  const site = (await agent.create(staticSite('Late claim', { '/index.html': 'back' }))).body
  const host = hostOf(site.urls.published)
  server.clock.advance(DAY)
  await waitFor(async () => (await server.site(host, '/')).status === 404)
  const foreign = await owner.api('POST', '/api/anonymous/claim', { token: agent.token }, { origin: 'https://evil.example' })
  assert.deepEqual([foreign.status, foreign.body.details.reason], [403, 'origin_not_trusted'])
  assert.equal(
    (await server.api('POST', '/api/anonymous/claim', { body: { token: agent.token } })).body.details.reason,
    'user_required',
    'an API key cannot claim',
  )
  const claimed = await owner.api('POST', '/v1/websites/claims', { token: agent.token })
  assert.equal(claimed.status, 200, JSON.stringify(claimed.body))
  assert.equal((await server.site(host, '/')).body.toString(), 'back', 'claimed (billing off): an ordinary active site again')
})

test('with billing on, a claim onto the free plan is held: online until its 24 hours end, then offline and read-only until upgraded and activated', async (t) => {
  const server = await startServer(t, { PLINTH_BILLING: 'on' }, { anonymousSweepMs: 20 })
  const owner = await setUpOwner(server)
  const agent = await new AnonymousAgent(server).issue()
  const site = (await agent.create(staticSite('Held', { '/index.html': 'held' }))).body
  const host = hostOf(site.urls.published)
  server.clock.advance(2 * HOUR)
  const claimed = await owner.api('POST', '/v1/websites/claims', { token: agent.token })
  assert.equal(claimed.status, 200, JSON.stringify(claimed.body))
  assert.equal(claimed.body.website.claimHeld, true)
  assert.equal(claimed.body.billingUrl, `http://localhost:${server.plinth.port}/app/billing`)
  assert.match(claimed.body.message, /held/)
  assert.equal((await owner.api('GET', '/v1/billing')).body.usage.websites, 0, 'held sites take no slot')
  // Editable while the preview lasts.
  assert.equal(
    (await owner.api('POST', `/v1/websites/${site.id}/deploy/json`, { files: [{ path: 'index.html', content: 'held v2' }] })).status,
    201,
  )
  assert.equal((await owner.api('POST', `/v1/websites/${site.id}/publish`)).status, 200)
  assert.equal((await server.site(host, '/')).body.toString(), 'held v2')

  server.clock.advance(22 * HOUR)
  await waitFor(async () => (await server.site(host, '/')).status === 404)
  const edit = await owner.api('POST', `/v1/websites/${site.id}/deploy/json`, { files: [{ path: 'index.html', content: 'no' }] })
  assert.deepEqual([edit.status, edit.body.details.reason], [402, 'claim_held'])
  const refused = await owner.api('POST', `/v1/websites/${site.id}/activate`)
  assert.deepEqual([refused.status, refused.body.details.reason], [402, 'claim_held'])
  assert.equal((await owner.api('GET', `/v1/websites/${site.id}`)).body.claimHeld, true)

  await server.plinth.registry.plans.set({ kind: 'user', id: 'operator', name: 'test' }, server.plinth.installation.orgId, 'base')
  const activated = await owner.api('POST', `/v1/websites/${site.id}/activate`)
  assert.equal(activated.status, 200, JSON.stringify(activated.body))
  assert.equal(activated.body.claimHeld, false)
  assert.equal((await server.site(host, '/')).body.toString(), 'held v2', 'active at the same address')
  assert.equal((await owner.api('GET', '/v1/billing')).body.usage.websites, 1)
})

test('an upgrade activates held claims by itself while the plan has room', async (t) => {
  const server = await startServer(t, { PLINTH_BILLING: 'on', PLINTH_PLAN_WEBSITES: 'free=1,base=2,max=25' }, { anonymousSweepMs: 20 })
  const owner = await setUpOwner(server)
  const hosts: string[] = []
  const ids: string[] = []
  for (const name of ['First held', 'Second held', 'Third held']) {
    const agent = await new AnonymousAgent(server).issue()
    const site = (await agent.create(staticSite(name, { '/index.html': name }))).body
    hosts.push(hostOf(site.urls.published))
    ids.push(site.id)
    assert.equal((await owner.api('POST', '/v1/websites/claims', { token: agent.token })).body.website.claimHeld, true)
  }
  server.clock.advance(DAY)
  await waitFor(async () => (await server.site(hosts[2], '/')).status === 404)
  // Base has two slots: the two oldest held sites come back, the third stays held.
  await server.plinth.registry.plans.set({ kind: 'user', id: 'operator', name: 'test' }, server.plinth.installation.orgId, 'base', {
    comped: true,
  })
  assert.equal((await server.site(hosts[0], '/')).body.toString(), 'First held')
  assert.equal((await server.site(hosts[1], '/')).body.toString(), 'Second held')
  assert.equal((await server.site(hosts[2], '/')).status, 404)
  assert.deepEqual(await Promise.all(ids.map(async (id) => (await owner.api('GET', `/v1/websites/${id}`)).body.claimHeld)), [
    false,
    false,
    true,
  ])
})

test('50 live anonymous sites per network: an IPv6 /64 counts as one, a trusted proxy’s X-Forwarded-For names the client, a site going offline makes room', async (t) => {
  const server = await startServer(t, { PLINTH_TRUSTED_PROXIES: '127.0.0.1,::1' }, { anonymousSweepMs: 20 })
  const from = (address: string) => new AnonymousAgent(server, { 'x-forwarded-for': `${address}, 127.0.0.1` })
  for (let i = 1; i <= 50; i++) {
    const agent = await from(`2001:db8:1:2::${i.toString(16)}`).issue()
    assert.equal((await agent.create(staticSite(`Site ${i}`, { '/index.html': String(i) }))).status, 201)
  }
  const full = await (await from('2001:db8:1:2:ffff::9').issue()).create(staticSite('One more', { '/index.html': 'x' }))
  assert.equal(full.status, 409)
  assert.equal(full.body.details.reason, 'network_limit')
  assert.equal(full.body.details.retryAfterSeconds, 24 * 3600)
  assert.match(full.body.message, /50 live anonymous sites/)
  assert.equal(
    (await (await from('2001:db8:1:3::1').issue()).create(staticSite('Next door', { '/index.html': 'x' }))).status,
    201,
    'another /64 is another network',
  )
  assert.equal((await (await from('198.51.100.7').issue()).create(staticSite('IPv4', { '/index.html': 'x' }))).status, 201)
  // The window of the first sites ends: the network has room again.
  server.clock.advance(DAY)
  await waitFor(async () => server.plinth.registry.anonymous.networkLive('2001:db8:1:2::/64').count === 0)
  assert.equal((await (await from('2001:db8:1:2::77').issue()).create(staticSite('Later', { '/index.html': 'x' }))).status, 201)
})

test('per-network buckets: 60 credentials, then 429 with Retry-After; X-Forwarded-For from an untrusted peer changes nothing', async (t) => {
  const server = await startServer(t)
  const issue = (address: string) =>
    server.api('POST', '/public/v1/anonymous/credentials', { key: null, headers: { 'x-forwarded-for': address } })
  for (let i = 0; i < 60; i++) assert.equal((await issue(`203.0.113.${i}`)).status, 201)
  const limited = await issue('203.0.113.200')
  assert.equal(limited.status, 429, 'the peer is not a trusted proxy, so every request came from 127.0.0.1')
  assert.ok(Number(limited.headers.get('retry-after')) > 0)
  server.clock.advance(12 * 60 * 1000)
  assert.equal((await issue('203.0.113.201')).status, 201, 'the bucket refills (120 a day)')
})

test('per-credential buckets: 5 creates or swaps, then 10 a day; 20 edits, then 20 an hour', async (t) => {
  const server = await startServer(t)
  const agent = await new AnonymousAgent(server).issue()
  let site = (await agent.create(staticSite('Swapper', { '/index.html': '0' }))).body
  for (let i = 1; i < 5; i++) site = (await agent.create(staticSite('Swapper', { '/index.html': String(i) }, { replace: true }))).body
  const sixth = await agent.create(staticSite('Swapper', { '/index.html': '6' }, { replace: true }))
  assert.equal(sixth.status, 429)
  for (let i = 0; i < 20; i++)
    assert.equal(
      (await agent.update(site.id, { expectedHeadVersion: site.headVersion + i, files: [{ path: '/index.html', content: `edit ${i}` }] }))
        .status,
      200,
    )
  const edit = await agent.update(site.id, {
    expectedHeadVersion: site.headVersion + 20,
    files: [{ path: '/index.html', content: 'one too many' }],
  })
  assert.equal(edit.status, 429)
  server.clock.advance(4 * 60 * 1000)
  assert.equal(
    (
      await agent.update(site.id, {
        expectedHeadVersion: site.headVersion + 20,
        files: [{ path: '/index.html', content: 'after a while' }],
      })
    ).status,
    200,
  )
})

test('PLINTH_ANONYMOUS=invite_only needs an operator’s invite code; off hides the endpoints', async (t) => {
  const invited = await startServer(t, { PLINTH_ANONYMOUS: 'invite_only' })
  const refused = await invited.api('POST', '/public/v1/anonymous/credentials', { key: null })
  assert.deepEqual([refused.status, refused.body.details.reason], [503, 'invite_only'])
  const { runOperatorCommand } = await import('../../actors/operator.js')
  const made = await runOperatorCommand(invited.plinth.registry, { command: 'anonymous-invite', uses: 1, days: null, note: 'test' })
  const code = /wv_[A-Za-z0-9_-]{43}/.exec(made.message)![0]
  assert.equal(
    (await invited.api('POST', '/public/v1/anonymous/credentials', { key: null, headers: { 'x-invite-code': code } })).status,
    201,
  )
  assert.equal(
    (await invited.api('POST', '/public/v1/anonymous/credentials', { key: null, headers: { 'x-invite-code': code } })).body.details.reason,
    'invite_only',
    'used up',
  )

  const off = await startServer(t, { PLINTH_ANONYMOUS: 'off' })
  assert.equal((await off.api('POST', '/public/v1/anonymous/credentials', { key: null })).status, 404)
})

const page = (text: string) =>
  `import { definePage } from '@platform'\nexport default definePage({ route: '/', metadata: { title: 'Anon' }, render: () => <main><h1>${text}</h1></main> })\n`
const broken =
  "import { definePage } from '@platform'\nexport default definePage({ route: '/', metadata: { title: 'Broken' }, render: () => <main>{notDefinedAnywhere}</main> })\n"

test('framework sites: 202 while the gate builds, live by themselves when ready; a failed build stays on the site with its diagnostics; a replace that fails is 400 build_failed and leaves the old site', async (t) => {
  const server = await startServer(t)
  const agent = await new AnonymousAgent(server).issue()
  const created = await agent.create({
    name: 'Typed',
    kind: 'framework',
    files: [{ file: { type: 'page', name: 'home' }, content: page('First') }],
  })
  assert.equal(created.status, 202, JSON.stringify(created.body))
  assert.equal(created.body.status, 'building')
  assert.match(created.body.next.message, /poll GET/)
  const live = await agent.settled()
  assert.equal(live.body.status, 'live', JSON.stringify(live.body.deployment))
  const host = hostOf(live.body.urls.published)
  assert.match((await server.site(host, '/')).body.toString(), /<h1>First<\/h1>/)

  const updated = await agent.update(live.body.id, {
    expectedHeadVersion: live.body.headVersion,
    files: [{ file: { type: 'page', name: 'home' }, content: page('Second') }],
  })
  assert.equal(updated.status, 202)
  assert.equal((await agent.settled()).body.status, 'live')
  assert.match((await server.site(host, '/')).body.toString(), /<h1>Second<\/h1>/)

  const failedSwap = await agent.create({
    name: 'Typed',
    kind: 'framework',
    replace: true,
    files: [{ file: { type: 'page', name: 'home' }, content: broken }],
  })
  assert.equal(failedSwap.status, 400)
  assert.equal(failedSwap.body.details.reason, 'build_failed')
  assert.ok(failedSwap.body.details.diagnostics.some((d: any) => /notDefinedAnywhere/.test(d.message)))
  assert.equal((await agent.status()).body.id, live.body.id, 'the old site is untouched')
  assert.match((await server.site(host, '/')).body.toString(), /<h1>Second<\/h1>/)

  // A failed first build stays on its site; a fixed tree goes live.
  const other = await new AnonymousAgent(server).issue()
  await other.create({ name: 'Broken', kind: 'framework', files: [{ file: { type: 'page', name: 'home' }, content: broken }] })
  const failed = await other.settled()
  assert.equal(failed.body.status, 'failed')
  assert.ok(failed.body.deployment.diagnostics.some((d: any) => /notDefinedAnywhere/.test(d.message)))
  assert.match(failed.body.next.message, /fix deployment.diagnostics/)
  await other.update(failed.body.id, {
    expectedHeadVersion: failed.body.headVersion,
    files: [{ file: { type: 'page', name: 'home' }, content: page('Fixed') }],
  })
  const fixed = await other.settled()
  assert.equal(fixed.body.status, 'live')
  assert.match((await server.site(hostOf(fixed.body.urls.published), '/')).body.toString(), /<h1>Fixed<\/h1>/)
})

test('a restart in the middle of the windows keeps every deadline', async (t) => {
  const dir = tempDir(t)
  const clock = new ManualClock()
  // One serving thread (the main one): a serving thread learns of the sweep's changes a moment after the
  // sweep resolves (nothing here waits for it, as an API write's answer does), and the page was still
  // served there once in a full run.
  const config = loadConfig({ PORT: '0', HOST: '127.0.0.1', PLINTH_DATA_DIR: dir, PLINTH_ADMIN_KEY: ADMIN_KEY, PLINTH_SERVE_THREADS: '1' })
  const first = await startPlinth({ config, clock, log: silentLogger, anonymousSweepMs: 0 })
  // Closed here on the way; on a failure, by these (a close is once).
  t.after(() => first.close())
  const call = (port: number, method: string, path: string, token: string, body?: unknown) =>
    fetch(`http://127.0.0.1:${port}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }))
  const { token } = (await call(first.port, 'POST', '/public/v1/anonymous/credentials', '')).body
  const site = (await call(first.port, 'POST', '/public/v1/anonymous/sites', token, staticSite('Durable', { '/index.html': 'durable' })))
    .body
  const label = hostOf(site.urls.published).split('.')[0]
  clock.advance(12 * HOUR)
  await first.close()

  const second = await startPlinth({ config, clock, log: silentLogger, anonymousSweepMs: 0 })
  t.after(() => second.close())
  const after = (await call(second.port, 'GET', '/public/v1/anonymous/sites/current', token)).body
  assert.deepEqual(after.deadlines, site.deadlines)
  assert.equal((await rawRequest(second.port, `${label}.localhost`, '/')).body.toString(), 'durable')
  clock.advance(12 * HOUR)
  await second.registry.sweepAnonymous()
  assert.equal((await rawRequest(second.port, `${label}.localhost`, '/')).status, 404, 'offline at the 24 hours, across the restart')
  await second.close()

  const third = await startPlinth({ config, clock, log: silentLogger, anonymousSweepMs: 0 })
  t.after(() => third.close())
  assert.equal((await call(third.port, 'GET', '/public/v1/anonymous/sites/current', token)).body.status, 'offline')
  clock.advance(6 * DAY)
  await third.registry.sweepAnonymous()
  assert.equal((await call(third.port, 'GET', '/public/v1/anonymous/sites/current', token)).body.details.reason, 'credential_expired')
  assert.equal(third.store.labels.get(label), undefined)
})

test('the 500 MiB byte budget of a credential counts every version an update keeps, never an update that changes nothing, and then refuses with anonymous_storage_limit', async (t) => {
  const server = await startServer(t)
  const agent = await new AnonymousAgent(server).issue()
  // Five files of 1 MiB: 5 MiB decoded a request, the most one request may send.
  const files = Array.from({ length: 5 }, (_, i) => ({ path: `/f${i}.txt`, content: String(i).repeat(1 << 20) }))
  const site = (await agent.create({ name: 'Budget', kind: 'static', files })).body
  const used = () => site.storage.usedBytes as number
  assert.equal(used(), 5 << 20)
  // The same folder again (a redeploy that changes nothing): no version, nothing kept, nothing counted.
  const same = await agent.update(site.id, { expectedHeadVersion: site.headVersion, files })
  assert.equal(same.status, 200, JSON.stringify(same.body))
  assert.deepEqual([same.body.headVersion, same.body.storage.usedBytes], [site.headVersion, 5 << 20])
  // Each version an update keeps counts whole (every version, updates and swaps included).
  let head = site.headVersion as number
  for (let i = 1; i < 100; i++) {
    server.clock.advance(4 * 60 * 1000)
    files[0]!.content = (i % 2 === 1 ? 'a' : 'b').repeat(1 << 20)
    const sent = await agent.update(site.id, { expectedHeadVersion: head, files })
    assert.equal(sent.status, 200, `request ${i}: ${JSON.stringify(sent.body)}`)
    assert.equal(sent.body.storage.usedBytes, (i + 1) * (5 << 20))
    head = sent.body.headVersion
  }
  server.clock.advance(4 * 60 * 1000)
  const over = await agent.update(site.id, { expectedHeadVersion: head, files: [{ path: '/small.txt', content: 'x' }] })
  assert.equal(over.status, 413)
  assert.equal(over.body.details.reason, 'anonymous_storage_limit')
  assert.match(over.body.message, /Claim the site/)
})

test('a site the operator takes down reports status suspended, with nothing to do but ask', async (t) => {
  const server = await startServer(t)
  const agent = await new AnonymousAgent(server).issue()
  const site = (await agent.create(staticSite('Taken down', { '/index.html': 'bad' }))).body
  const { runOperatorCommand } = await import('../../actors/operator.js')
  await runOperatorCommand(server.plinth.registry, { command: 'suspend', websiteId: site.id, reason: 'phishing' })
  const status = (await agent.status()).body
  assert.deepEqual([status.status, status.live, status.next.actions], ['suspended', null, []])
  assert.match(status.next.message, /phishing/)
  assert.equal((await server.site(hostOf(site.urls.published), '/')).status, 404)
})

test('per-network buckets for creates (100, swaps included), edits (200) and claims (60), each then 429', async (t) => {
  const server = await startServer(t, { PLINTH_TRUSTED_PROXIES: '127.0.0.1,::1' })
  const from = (address: string) => new AnonymousAgent(server, { 'x-forwarded-for': address })
  // 20 credentials of one network, each a create and four swaps: 100 creates.
  const agents: AnonymousAgent[] = []
  const sites: any[] = []
  for (let i = 0; i < 20; i++) {
    const agent = await from('192.0.2.10').issue()
    let site = (await agent.create(staticSite(`Net ${i}`, { '/index.html': `${i}` }))).body
    for (let swap = 0; swap < 4; swap++)
      site = (await agent.create(staticSite(`Net ${i}`, { '/index.html': `${i}.${swap}` }, { replace: true }))).body
    assert.equal(site.status, 'live')
    agents.push(agent)
    sites.push(site)
  }
  const extra = await from('192.0.2.10').issue()
  assert.equal((await extra.create(staticSite('One too many', { '/index.html': 'x' }))).status, 429, 'the network made 100 creates')
  // 10 credentials x 20 edits: 200 edits from the network.
  for (let i = 0; i < 10; i++) {
    for (let n = 0; n < 20; n++) {
      const edited = await agents[i].update(sites[i].id, {
        expectedHeadVersion: sites[i].headVersion + n,
        files: [{ path: '/index.html', content: `edit ${n}` }],
      })
      assert.equal(edited.status, 200, `credential ${i} edit ${n}`)
    }
  }
  const edit = await agents[10].update(sites[10].id, {
    expectedHeadVersion: sites[10].headVersion,
    files: [{ path: '/index.html', content: 'edit 201' }],
  })
  assert.equal(edit.status, 429, 'the network made 200 edits')
  // 60 claims from one network, with one claim code.
  const owner = await setUpOwner(server)
  const code = (await owner.api('POST', '/v1/websites/claim-codes')).body.code
  const claims: AnonymousAgent[] = []
  for (let i = 0; i < 61; i++) {
    const agent = await from(`198.51.100.${i}`).issue()
    await agent.create(staticSite(`To claim ${i}`, { '/index.html': `${i}` }))
    claims.push(agent)
  }
  const claim = (agent: AnonymousAgent) =>
    server.api('POST', '/api/anonymous/claim', {
      key: null,
      body: { token: agent.token, code },
      headers: { 'x-forwarded-for': '203.0.113.99' },
    })
  for (let i = 0; i < 60; i++) assert.equal((await claim(claims[i])).status, 200, `claim ${i}`)
  const limited = await claim(claims[60])
  assert.equal(limited.status, 429, 'the network made 60 claims')
  assert.ok(Number(limited.headers.get('retry-after')) >= 1)
})

test('simultaneous creates cannot all take a network’s last place; X-Forwarded-For hops with a port count as their address', async (t) => {
  const server = await startServer(t, { PLINTH_TRUSTED_PROXIES: '127.0.0.1,::1' })
  const from = (address: string) => new AnonymousAgent(server, { 'x-forwarded-for': address })
  for (let i = 0; i < 49; i++)
    assert.equal((await (await from('192.0.2.50').issue()).create(staticSite(`Fill ${i}`, { '/index.html': `${i}` }))).status, 201)
  const racers = await Promise.all([0, 1, 2].map(() => from('192.0.2.50').issue()))
  const results = await Promise.all(racers.map((agent, i) => agent.create(staticSite(`Racer ${i}`, { '/index.html': `r${i}` }))))
  assert.deepEqual(results.map((r) => r.status).sort(), [201, 409, 409], 'exactly one takes the 50th place')
  assert.equal(server.plinth.registry.anonymous.networkLive('192.0.2.50').count, 50)
  assert.equal((await (await from('198.51.100.7:5555').issue()).create(staticSite('Ported', { '/index.html': 'p' }))).status, 201)
  assert.equal(server.plinth.registry.anonymous.networkLive('198.51.100.7').count, 1)
})

test('the claim page makes no account for a token that claims nothing', async (t) => {
  const server = await startServer(t)
  const visitor = new Browserless(server)
  const fake = await visitor.post('/app/claim', {
    token: `wa_${'x'.repeat(43)}`,
    email: 'someone@example.com',
    password: 'some-password-1',
  })
  assert.equal(fake.status, 404)
  assert.equal(server.plinth.registry.people.personByEmail('someone@example.com'), undefined)
  const agent = await new AnonymousAgent(server).issue()
  const empty = await visitor.post('/app/claim', { token: agent.token, email: 'someone@example.com', password: 'some-password-1' })
  assert.equal(empty.status, 404, 'nothing published yet')
  assert.equal(server.plinth.registry.people.personByEmail('someone@example.com'), undefined)
  await agent.create(staticSite('Real', { '/index.html': 'r' }))
  const real = await visitor.post('/app/claim', { token: agent.token, email: 'someone@example.com', password: 'some-password-1' })
  assert.equal(real.status, 200, await real.text())
  assert.ok(server.plinth.registry.people.personByEmail('someone@example.com'))
})

test('a storage site: created without files, found with `storage`, one per credential beside the website', async (t) => {
  const server = await startServer(t)
  const agent = await new AnonymousAgent(server).issue()
  const created = await agent.create({ name: 'My files', kind: 'storage' })
  assert.equal(created.status, 201, JSON.stringify(created.body))
  assert.deepEqual(
    [created.body.kind, created.body.status, created.body.storage],
    ['storage', 'live', { usedBytes: 0, limitBytes: 500 * (1 << 20), sharedBytes: 0 }],
  )
  assert.equal((await agent.status('storage')).body.id, created.body.id)
  assert.equal((await agent.status()).body.id, created.body.id, 'with only shared files, current is the storage site')
  assert.equal(
    (await agent.create({ name: 'Files', kind: 'storage', files: [{ path: '/a.txt', content: 'x' }] })).status,
    400,
    'no files at creation',
  )
  assert.equal((await agent.create({ name: 'More files', kind: 'storage' })).body.details.reason, 'site_already_created')
  const website = await agent.create(staticSite('And a website', { '/index.html': 'w' }))
  assert.equal(website.status, 201, 'one website beside it')
  const current = (await agent.status()).body
  assert.equal(current.id, website.body.id, 'once there is a website, current is the website')
  assert.deepEqual(current.storage, { usedBytes: 1, limitBytes: 500 * (1 << 20), sharedBytes: 0 }, 'the budget on every site')
})

test("an anonymous site's versions have their own addresses too", async (t) => {
  const server = await startServer(t)
  const agent = await new AnonymousAgent(server).issue()
  const site = (await agent.create(staticSite('Versions', { '/index.html': '<p>first</p>' }))).body
  const first = site.headVersion as number
  server.clock.advance(4 * 60 * 1000)
  const updated = await agent.update(site.id, { expectedHeadVersion: first, files: [{ path: '/index.html', content: '<p>second</p>' }] })
  assert.equal(updated.status, 200, JSON.stringify(updated.body))
  const label = hostOf(site.urls.published).split('.')[0]
  const earlier = await server.site(`v${first}--${label}.localhost`, '/')
  assert.deepEqual([earlier.status, earlier.body.toString()], [200, '<p>first</p>'])
  assert.equal((await server.site(hostOf(site.urls.published), '/')).body.toString(), '<p>second</p>')
  // Past its live window the site goes offline, and its versions' addresses with it.
  server.clock.advance(2 * DAY)
  await server.plinth.registry.sweepAnonymous()
  assert.equal((await server.site(hostOf(site.urls.published), '/')).status, 404)
  assert.equal((await server.site(`v${first}--${label}.localhost`, '/')).status, 404)
})
