import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { test } from 'node:test'
import { tool, ticketDeploy } from '../helpers/agent.js'
import { multipartBody } from '../helpers/http.js'
import { createKey, createWebsite, startServer } from '../helpers/server.js'

/*
 * Ticket deploys as the hosted product's agent skill runs them (Webly-AI/webly-plugin, SKILL.md, "Working
 * over MCP" step 1, and its helper's `deploy --ticket`): the agent calls begin_deploy over MCP, the helper
 * sends the folder from disk to POST /public/v1/deploys with the ticket, in plain fetch calls.
 */

const FOLDER = { '/index.html': '<h1>Home</h1>', '/css/site.css': 'h1{color:red}', '/docs/guide/index.html': '<p>Guide</p>' }

test('begin_deploy gives a signed ticket; the folder becomes a draft; a ticket is good for one deploy, here only, for 5 minutes', async (t) => {
  const s = await startServer(t)
  const site = await createWebsite(s, { name: 'Folder', kind: 'static', subdomain: 'folder' })
  const begun = await tool(s, 'begin_deploy', { websiteId: site.id })
  // "wd_<base64url of a JSON object holding at least websiteId and the head version>.<digits>.<base64url signature>"
  const match = /^wd_([A-Za-z0-9_-]+)\.(\d+)\.([A-Za-z0-9_-]+)$/.exec(begun.ticket)
  assert.ok(match, begun.ticket)
  const claims = JSON.parse(Buffer.from(match[1]!, 'base64url').toString())
  assert.equal(claims.websiteId, site.id)
  assert.equal(claims.headVersion, begun.headVersion)
  assert.equal(Date.parse(begun.expiresAt), s.clock.now() + 5 * 60 * 1000)

  const done = await ticketDeploy(s, begun.ticket, FOLDER)
  assert.equal(done.status, 201, JSON.stringify(done.body))
  assert.deepEqual(
    [done.body.version, done.body.headVersion, done.body.publishedVersion, done.body.urls.published],
    [begun.headVersion + 1, begun.headVersion + 1, null, null],
    'a new draft, never published by this call',
  )
  assert.equal(done.body.replaced, undefined)
  const css = await s.site('draft--folder.localhost', '/css/site.css')
  assert.equal(css.status, 200)
  assert.match(css.headers['content-type'] as string, /^text\/css/, 'the type comes from the path')
  assert.equal((await s.site('draft--folder.localhost', '/docs/guide/')).body.toString(), '<p>Guide</p>', 'folders are kept')
  assert.equal((await s.site('folder.localhost', '/')).status, 404, 'nothing is live')

  // One deploy per ticket.
  const again = await ticketDeploy(s, begun.ticket, FOLDER)
  assert.equal(again.status, 401)
  assert.equal(again.body.details.reason, 'ticket_invalid')
  assert.match(again.body.message, /already used/)
  // A ticket works nowhere else, and nothing else works here.
  const fresh = (await tool(s, 'begin_deploy', { websiteId: site.id })).ticket
  const elsewhere = await s.api('GET', '/v1/websites', { key: fresh })
  assert.equal(elsewhere.status, 401)
  assert.match(elsewhere.body.message, /works only at POST \/public\/v1\/deploys/)
  const byKey = await ticketDeploy(s, s.adminKey, FOLDER)
  assert.equal(byKey.status, 401)
  assert.match(byKey.body.message, /takes a deploy ticket: call begin_deploy/)
  // Without a ticket, or with a header that is not one, the answer says which ticket to send.
  for (const headers of [{}, { authorization: 'Bearer' }] as Record<string, string>[]) {
    const none = await fetch(`${s.origin}/public/v1/deploys`, { method: 'POST', headers, body: new FormData() })
    const said = (await none.json()) as any
    assert.deepEqual([none.status, said.details?.reason], [401, 'ticket_invalid'], JSON.stringify(headers))
    assert.match(said.message, /begin_deploy/)
  }
  // A forged ticket (claims changed, signature kept) and an expired one are refused.
  const other = await createWebsite(s, { name: 'Other', kind: 'static' })
  const otherHead = (await s.api('GET', `/v1/websites/${other.id}/source/summary`)).body.headVersion
  const [, , expiry, signature] = /^wd_([^.]+)\.(\d+)\.(.+)$/.exec(fresh)!
  const forgedClaims = Buffer.from(JSON.stringify({ ...claims, websiteId: other.id })).toString('base64url')
  const forged = await ticketDeploy(s, `wd_${forgedClaims}.${expiry}.${signature}`, FOLDER)
  assert.equal(forged.status, 401)
  assert.match(forged.body.message, /not issued here/)
  s.clock.advance(5 * 60 * 1000 + 1)
  const expired = await ticketDeploy(s, fresh, FOLDER)
  assert.equal(expired.status, 401)
  assert.match(expired.body.message, /expired/)
  // Nothing of that reached the site.
  assert.equal((await s.api('GET', `/v1/websites/${site.id}/source/summary`)).body.headVersion, done.body.version)
  assert.equal((await s.api('GET', `/v1/websites/${other.id}/source/summary`)).body.headVersion, otherHead)
})

test('file names in a ticket deploy are UTF-8 (RFC 7578 4.2), or filename*= (RFC 5987): each file is served at its path and listed under its name', async (t) => {
  const s = await startServer(t)
  const site = await createWebsite(s, { name: 'Unicode folder', kind: 'static', subdomain: 'unicode-folder' })
  const draft = (path: string) => s.site('draft--unicode-folder.localhost', path)
  const listed = async () => (await s.api('GET', `/v1/websites/${site.id}/source/files`)).body.items.map((f: any) => f.path)
  // The helper's deploy: FormData puts each path's UTF-8 bytes in filename="…".
  const first = await ticketDeploy(s, (await tool(s, 'begin_deploy', { websiteId: site.id })).ticket, {
    '/‥/x.html': '<p>leader</p>',
    '/naïve/index.html': '<p>naive</p>',
  })
  assert.equal(first.status, 201, JSON.stringify(first.body))
  assert.deepEqual(await listed(), ['naïve/index.html', '‥/x.html'])
  assert.equal((await draft('/%E2%80%A5/x')).body.toString(), '<p>leader</p>')
  assert.equal((await draft('/na%C3%AFve/')).body.toString(), '<p>naive</p>')

  // filename*= (with an ASCII fallback beside it, which it overrides) names the same kind of path.
  const { body, contentType } = multipartBody([
    { name: 'files', filename: '‥/x.html', content: '<p>leader again</p>' },
    { name: 'files', filename: 'resume/index.html', filenameStar: 'résumé/index.html', content: '<p>cv</p>' },
  ])
  const ticket = (await tool(s, 'begin_deploy', { websiteId: site.id })).ticket
  const second = await fetch(`${s.origin}/public/v1/deploys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ticket}`, 'content-type': contentType },
    body,
  })
  assert.equal(second.status, 201, await second.text())
  assert.deepEqual(await listed(), ['résumé/index.html', '‥/x.html'], 'the folder is the whole tree')
  assert.equal((await draft('/%E2%80%A5/x')).body.toString(), '<p>leader again</p>')
  assert.equal((await draft('/r%C3%A9sum%C3%A9/')).body.toString(), '<p>cv</p>')
})

test('the would_revert guard: a folder that would undo edits made elsewhere is refused, force replaces them and says so', async (t) => {
  const s = await startServer(t)
  const site = await createWebsite(s, { name: 'Guarded', kind: 'static', subdomain: 'guarded' })
  const first = await ticketDeploy(s, (await tool(s, 'begin_deploy', { websiteId: site.id })).ticket, FOLDER)
  const base = first.body.version
  // Someone edits the site in another way (the dashboard, another clone): the home page changes.
  const edit = await s.api('POST', `/v1/websites/${site.id}/deploy/json`, {
    body: { files: [{ path: 'index.html', content: '<h1>Edited elsewhere</h1>' }] },
  })
  assert.equal(edit.status, 201, JSON.stringify(edit.body))
  const head = edit.body.version

  // This folder still has the old home page: deploying it would undo the edit.
  const refused = await ticketDeploy(s, (await tool(s, 'begin_deploy', { websiteId: site.id })).ticket, FOLDER, {
    baseVersion: String(base),
  })
  assert.equal(refused.status, 409, JSON.stringify(refused.body))
  assert.deepEqual(refused.body.details, { reason: 'would_revert', baseVersion: base, headVersion: head, paths: ['index.html'] })
  assert.match(refused.body.message, /read_source_files/)
  assert.equal((await s.site('draft--guarded.localhost', '/')).body.toString(), '<h1>Edited elsewhere</h1>', 'the edit stands')

  // A folder that took the edit in (merged) goes through, and says what it replaced.
  const merged = { ...FOLDER, '/index.html': '<h1>Edited elsewhere</h1>', '/new.html': 'new' }
  const kept = await ticketDeploy(s, (await tool(s, 'begin_deploy', { websiteId: site.id })).ticket, merged, { baseVersion: String(base) })
  assert.equal(kept.status, 201, JSON.stringify(kept.body))
  assert.deepEqual(kept.body.replaced, { fromVersion: head, toVersion: kept.body.version })

  // Another edit elsewhere; force sends the folder anyway (earlier versions stay in the history).
  const second = await s.api('POST', `/v1/websites/${site.id}/deploy/json`, { body: { files: [{ path: 'extra.html', content: 'x' }] } })
  const forced = await ticketDeploy(s, (await tool(s, 'begin_deploy', { websiteId: site.id })).ticket, FOLDER, {
    baseVersion: String(kept.body.version),
    force: 'true',
  })
  assert.equal(forced.status, 201, JSON.stringify(forced.body))
  assert.deepEqual(forced.body.replaced, { fromVersion: second.body.version, toVersion: forced.body.version })
  assert.equal((await s.site('draft--guarded.localhost', '/extra.html')).status, 404, 'the folder is the whole tree')
})

test('a head that moved after begin_deploy is 409 expectedHeadVersion; framework sites and large files are refused with what to do', async (t) => {
  const s = await startServer(t)
  const site = await createWebsite(s, { name: 'Moving', kind: 'static' })
  const { ticket, headVersion } = await tool(s, 'begin_deploy', { websiteId: site.id })
  await s.api('POST', `/v1/websites/${site.id}/deploy/json`, { body: { files: [{ path: 'index.html', content: 'meanwhile' }] } })
  const moved = await ticketDeploy(s, ticket, FOLDER)
  assert.equal(moved.status, 409)
  assert.equal(moved.body.details.expectedHeadVersion, headVersion)
  assert.match(moved.body.message, /get a new ticket with begin_deploy/)

  const framework = await createWebsite(s, { name: 'Typed', kind: 'framework' })
  const refused = await tool(s, 'begin_deploy', { websiteId: framework.id })
  assert.equal(refused.kind, 'validation', JSON.stringify(refused))

  // A content editor may not deploy, so it gets no ticket.
  const editor = await createKey(s, { kind: 'organization', role: 'content_editor' })
  const denied = await tool(s, 'begin_deploy', { websiteId: site.id }, editor.secret)
  assert.equal(denied.details?.capability ?? denied.kind, 'source.write', JSON.stringify(denied))

  // Over 100 MiB goes in parts: announced without their digests, it is told how.
  const huge = await fetch(`${s.origin}/public/v1/deploys/uploads`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${(await tool(s, 'begin_deploy', { websiteId: site.id })).ticket}`,
      'content-type': 'application/json',
    },
    body: JSON.stringify({ files: [{ path: '/media/film.mp4', size: 201 * 1024 * 1024, sha256: 'a'.repeat(64) }] }),
  })
  const told = (await huge.json()) as any
  assert.deepEqual([huge.status, told.details.field], [400, 'body.files.0.partSha256'])
  assert.match(told.message, /send it in 3 parts of 100 MiB, with partSha256/)
})

test('large files of a ticket deploy go first, by hash: each PUT is checked, content the organization sent before is not sent again, and the deploy names them in uploaded', async (t) => {
  const s = await startServer(t)
  const site = await createWebsite(s, { name: 'Media', kind: 'static', subdomain: 'media' })
  const clip = Buffer.alloc(3 * 1024 * 1024 + 11, 7)
  const sha256 = createHash('sha256').update(clip).digest('hex')
  const announce = async (ticket: string) => {
    const response = await fetch(`${s.origin}/public/v1/deploys/uploads`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ticket}`, 'content-type': 'application/json' },
      body: JSON.stringify({ files: [{ path: '/media/clip.mp4', size: clip.length, sha256 }] }),
    })
    return { status: response.status, body: (await response.json()) as any }
  }
  // Sent in the deploy's body, a file over 1 MiB is refused with where it goes instead; the ticket stays good.
  const ticket = (await tool(s, 'begin_deploy', { websiteId: site.id })).ticket
  const inline = await ticketDeploy(s, ticket, { '/media/clip.mp4': 'x'.repeat(2 * 1024 * 1024) })
  assert.deepEqual([inline.status, inline.body.details.reason], [413, 'file_too_large'])
  assert.match(inline.body.message, /first through POST \/public\/v1\/deploys\/uploads .* this ticket stays good/)
  const first = await announce(ticket)
  assert.equal(first.status, 200, JSON.stringify(first.body))
  // That call spent it and answered a fresh one: the old one says which to use.
  const spent = await announce(ticket)
  assert.equal(spent.status, 401)
  assert.match(spent.body.message, /deploy with the ticket it answered/)
  const [target] = first.body.files
  assert.deepEqual([target.path, target.size, target.hash], ['/media/clip.mp4', clip.length, sha256])
  assert.match(target.upload.headers.Authorization, /^Bearer wu_/)
  const put = (bytes: Buffer) =>
    fetch(target.upload.url.replace(/^http:\/\/[^/]+/, s.origin), { method: 'PUT', headers: target.upload.headers, body: bytes })
  // Bytes that are not the file announced are refused.
  const wrong = await put(Buffer.alloc(clip.length, 8))
  assert.equal(wrong.status, 400)
  assert.match(((await wrong.json()) as any).message, /SHA-256/)
  assert.equal((await put(clip)).status, 200)
  // The deploy names it; the ticket the uploads call answered is the one to deploy with.
  const done = await ticketDeploy(
    s,
    first.body.ticket,
    { '/index.html': '<video src="/media/clip.mp4">' },
    {
      uploaded: JSON.stringify([{ path: target.path, size: target.size, sha256: target.hash }]),
    },
  )
  assert.equal(done.status, 201, JSON.stringify(done.body))
  const served = await s.site('draft--media.localhost', '/media/clip.mp4')
  assert.equal(served.status, 200)
  assert.ok(served.body.equals(clip), 'the draft serves the large file whole')
  const part = await s.site('draft--media.localhost', '/media/clip.mp4', { range: 'bytes=0-9' })
  assert.equal(part.status, 206)
  // Next time the same content is not sent again.
  const again = await announce((await tool(s, 'begin_deploy', { websiteId: site.id })).ticket)
  assert.equal(again.body.files[0].upload, undefined)
  // A file the organization never sent cannot be named.
  const forged = await ticketDeploy(
    s,
    again.body.ticket,
    { '/index.html': 'x' },
    {
      uploaded: JSON.stringify([{ path: '/other.bin', size: 5, sha256: 'b'.repeat(64) }]),
    },
  )
  assert.deepEqual([forged.status, forged.body.details.field], [400, 'body.uploaded.0'])
})

test("a deploy's large files count against the plan's storage: refused before any byte moves when they do not fit", async (t) => {
  const s = await startServer(t, { PLINTH_BILLING: 'on', PLINTH_FREE_STORAGE_BYTES: '2MiB' })
  const site = await createWebsite(s, { name: 'Full', kind: 'static', subdomain: 'full' })
  const response = await fetch(`${s.origin}/public/v1/deploys/uploads`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${(await tool(s, 'begin_deploy', { websiteId: site.id })).ticket}`,
      'content-type': 'application/json',
    },
    body: JSON.stringify({ files: [{ path: '/media/clip.mp4', size: 3 * 1024 * 1024, sha256: 'c'.repeat(64) }] }),
  })
  const body = (await response.json()) as any
  assert.deepEqual([response.status, body.details.reason], [402, 'storage_limit'])
  assert.match(body.message, /large files of this deploy/)
  // The free plan's largest file is 100 MiB: a larger one is refused whole, before any byte moves.
  const huge = await fetch(`${s.origin}/public/v1/deploys/uploads`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${(await tool(s, 'begin_deploy', { websiteId: site.id })).ticket}`,
      'content-type': 'application/json',
    },
    body: JSON.stringify({ files: [{ path: '/media/film.mp4', size: 101 * 1024 * 1024, sha256: 'a'.repeat(64) }] }),
  })
  assert.equal(huge.status, 413)
  assert.deepEqual(((await huge.json()) as any).details, { reason: 'file_too_large', file: '/media/film.mp4', limit: 100 * 1024 * 1024 })
})

test('a deploy file over 100 MiB goes in 100 MiB parts, each checked against its SHA-256; a rerun sends only the missing parts; the site streams it with Range', async (t) => {
  const s = await startServer(t)
  const site = await createWebsite(s, { name: 'Film', kind: 'static', subdomain: 'film' })
  const PART = 100 * 1024 * 1024
  const film = Buffer.allocUnsafe(PART + 5)
  for (let i = 0; i < film.length; i += 4096) film.fill(i % 251, i, Math.min(i + 4096, film.length))
  const digests = [film.subarray(0, PART), film.subarray(PART)].map((part) => createHash('sha256').update(part).digest())
  const partSha256 = digests.map((d) => d.toString('hex'))
  // The file's fingerprint, as the helper computes it: the SHA-256 of its parts' digests.
  const sha256 = createHash('sha256').update(Buffer.concat(digests)).digest('hex')
  const announce = async (ticket: string, files: unknown[]) => {
    const response = await fetch(`${s.origin}/public/v1/deploys/uploads`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ticket}`, 'content-type': 'application/json' },
      body: JSON.stringify({ files }),
    })
    return { status: response.status, body: (await response.json()) as any }
  }
  const begin = async () => (await tool(s, 'begin_deploy', { websiteId: site.id })).ticket as string
  const forged = await announce(await begin(), [{ path: '/film.mp4', size: film.length, sha256: 'e'.repeat(64), partSha256 }])
  assert.deepEqual([forged.status, forged.body.details.field], [400, 'body.files.0.sha256'])

  const first = await announce(await begin(), [{ path: '/film.mp4', size: film.length, sha256, partSha256 }])
  assert.equal(first.status, 200, JSON.stringify(first.body))
  const [target] = first.body.files
  assert.equal(target.upload, undefined)
  assert.equal(target.partSize, PART)
  assert.deepEqual(
    target.parts.map((p: any) => [p.partNumber, p.size]),
    [
      [1, PART],
      [2, 5],
    ],
  )
  const put = (part: any, body: Buffer) =>
    fetch(part.url.replace(/^http:\/\/[^/]+/, s.origin), { method: 'PUT', headers: part.headers, body })
  // Part 2 first; then part 1 with one byte changed, refused by its digest.
  assert.equal((await put(target.parts[1], film.subarray(PART))).status, 200)
  const corrupt = Buffer.from(film.subarray(0, PART))
  corrupt[12345] ^= 1
  const refused = await put(target.parts[0], corrupt)
  assert.equal(refused.status, 400)
  assert.match(((await refused.json()) as any).message, /Part 1's SHA-256/)
  // The deploy runs again: only the part still missing is asked for.
  const rerun = await announce(await begin(), [{ path: '/film.mp4', size: film.length, sha256, partSha256 }])
  assert.deepEqual(
    rerun.body.files[0].parts.map((p: any) => p.partNumber),
    [1],
  )
  // Part 2, which passed, sent again with other bytes: refused, and missing again (never kept with those bytes).
  assert.equal((await put(target.parts[1], Buffer.from('XXXXX'))).status, 400)
  const resumed = await announce(await begin(), [{ path: '/film.mp4', size: film.length, sha256, partSha256 }])
  assert.deepEqual(
    resumed.body.files[0].parts.map((p: any) => p.partNumber),
    [1, 2],
  )
  assert.equal((await put(resumed.body.files[0].parts[0], film.subarray(0, PART))).status, 200)
  assert.equal((await put(resumed.body.files[0].parts[1], film.subarray(PART))).status, 200)
  const done = await ticketDeploy(
    s,
    resumed.body.ticket,
    { '/index.html': '<video src="/film.mp4">' },
    { uploaded: JSON.stringify([{ path: '/film.mp4', size: film.length, sha256 }]) },
  )
  assert.equal(done.status, 201, JSON.stringify(done.body))
  const whole = await s.site('draft--film.localhost', '/film.mp4')
  assert.deepEqual([whole.status, whole.headers['content-type'], Number(whole.headers['content-length'])], [200, 'video/mp4', film.length])
  assert.ok(whole.body.equals(film), 'the draft serves the film whole')
  const tail = await s.site('draft--film.localhost', '/film.mp4', { range: `bytes=${PART}-` })
  assert.deepEqual([tail.status, tail.headers['content-range']], [206, `bytes ${PART}-${PART + 4}/${film.length}`])
  assert.ok(tail.body.equals(film.subarray(PART)))
  const etag = whole.headers.etag as string
  assert.equal((await s.site('draft--film.localhost', '/film.mp4', { 'if-none-match': etag })).status, 304)
  // Reading the source: the film is named with its size, never sent inline.
  const one = await s.api('GET', `/v1/websites/${site.id}/source/files/read?path=film.mp4`)
  assert.equal(one.status, 400)
  assert.match(one.body.message, /large file .* Download it from the site at \/film\.mp4/)
  const both = await s.api('POST', `/v1/websites/${site.id}/source/files/read`, { body: { paths: ['index.html', 'film.mp4'] } })
  assert.deepEqual(
    [both.body.files.map((f: any) => f.path), both.body.large.map((f: any) => [f.path, f.size])],
    [['index.html'], [['film.mp4', film.length]]],
  )
  // Held now: a later deploy sends nothing of it again.
  const later = await announce(await begin(), [{ path: '/film.mp4', size: film.length, sha256, partSha256 }])
  assert.deepEqual([later.body.files[0].parts, later.body.files[0].upload], [undefined, undefined])
  // The 64 bytes of the part digests hash to the same fingerprint: sent as a file of their own, they
  // are that file, and the film stays the film (bytes are kept under their own SHA-256).
  const digestsFile = Buffer.concat(digests)
  const twin = await announce(await begin(), [{ path: '/digests.bin', size: digestsFile.length, sha256 }])
  assert.equal((await put(twin.body.files[0].upload, digestsFile)).status, 200)
  const still = await s.site('draft--film.localhost', '/film.mp4')
  assert.ok(still.body.equals(film), 'the film is served whole after the 64-byte twin was sent')
})

test('large files no version names are let go a day after they were last sent: the plan stops counting them; deployed ones stay', async (t) => {
  const s = await startServer(t)
  const site = await createWebsite(s, { name: 'Sweep', kind: 'static', subdomain: 'sweep' })
  const bytes = (fill: number) => Buffer.alloc(2 * 1024 * 1024, fill)
  const [kept, stray] = [bytes(1), bytes(2)]
  const file = (path: string, b: Buffer) => ({ path, size: b.length, sha256: createHash('sha256').update(b).digest('hex') })
  const announce = async (files: unknown[]) => {
    const ticket = (await tool(s, 'begin_deploy', { websiteId: site.id })).ticket
    const response = await fetch(`${s.origin}/public/v1/deploys/uploads`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ticket}`, 'content-type': 'application/json' },
      body: JSON.stringify({ files }),
    })
    return (await response.json()) as any
  }
  const sent = await announce([file('/kept.bin', kept), file('/stray.bin', stray)])
  for (const [i, b] of [kept, stray].entries()) {
    const target = sent.files[i]
    const put = await fetch(target.upload.url.replace(/^http:\/\/[^/]+/, s.origin), {
      method: 'PUT',
      headers: target.upload.headers,
      body: b,
    })
    assert.equal(put.status, 200)
  }
  // Only the first is deployed; the second never is.
  const done = await ticketDeploy(s, sent.ticket, { '/index.html': 'x' }, { uploaded: JSON.stringify([file('/kept.bin', kept)]) })
  assert.equal(done.status, 201, JSON.stringify(done.body))
  const used = async () => (await s.api('GET', '/v1/billing')).body.storage.used as number
  assert.equal(await used(), 4 * 1024 * 1024)

  s.clock.advance(25 * 60 * 60 * 1000)
  await s.plinth.registry.sweepExpired()
  assert.equal(await used(), 2 * 1024 * 1024, 'the file no deploy named stopped counting')
  const served = await s.site('draft--sweep.localhost', '/kept.bin')
  assert.ok(served.body.equals(kept), 'the deployed one is still served')
  const again = await announce([file('/kept.bin', kept), file('/stray.bin', stray)])
  assert.deepEqual(
    again.files.map((f: any) => f.upload !== undefined),
    [false, true],
    'the stray file is asked for again; the deployed one is not',
  )
})

test('a held large file named again by an uploads call is kept another day for the deploy that follows', async (t) => {
  const s = await startServer(t)
  const site = await createWebsite(s, { name: 'Touch', kind: 'static', subdomain: 'touch' })
  const bytes = Buffer.alloc(2 * 1024 * 1024, 3)
  const file = { path: '/later.bin', size: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') }
  const announce = async () => {
    const ticket = (await tool(s, 'begin_deploy', { websiteId: site.id })).ticket
    const response = await fetch(`${s.origin}/public/v1/deploys/uploads`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ticket}`, 'content-type': 'application/json' },
      body: JSON.stringify({ files: [file] }),
    })
    return (await response.json()) as any
  }
  const target = (await announce()).files[0]
  const put = await fetch(target.upload.url.replace(/^http:\/\/[^/]+/, s.origin), {
    method: 'PUT',
    headers: target.upload.headers,
    body: bytes,
  })
  assert.equal(put.status, 200)
  const HOUR = 60 * 60 * 1000
  s.clock.advance(23 * HOUR)
  assert.equal((await announce()).files[0].upload, undefined, 'held: not asked for')
  s.clock.advance(2 * HOUR)
  await s.plinth.registry.sweepExpired()
  assert.equal((await s.api('GET', '/v1/billing')).body.storage.used, bytes.length, 'a day since it was named again: kept')
  s.clock.advance(25 * HOUR)
  await s.plinth.registry.sweepExpired()
  assert.equal((await s.api('GET', '/v1/billing')).body.storage.used, 0, 'a day unused since: let go')
})
