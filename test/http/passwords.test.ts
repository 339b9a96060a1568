import assert from 'node:assert/strict'
import { test } from 'node:test'
import { rawPost, rawRequest } from '../helpers/http.js'
import { createWebsite, startServer, type TestServer } from '../helpers/server.js'

/*
 * Site passwords as the agent skill describes them (SKILL.md: "set_website_password protects a whole site on
 * every address, draft included ... Webly keeps only a hash ... On 402 plan_required, give them
 * details.upgradeUrl"), tried as a visitor's browser and a program would.
 */

async function publishedSite(server: TestServer, label: string, text: string): Promise<string> {
  const site = await createWebsite(server, { name: label, kind: 'static', subdomain: label })
  await server.api('POST', `/v1/websites/${site.id}/deploy/json`, { body: { files: [{ path: 'index.html', content: text }] } })
  assert.equal((await server.api('POST', `/v1/websites/${site.id}/publish`)).status, 200)
  return site.id
}

const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString()
const FORM = { 'content-type': 'application/x-www-form-urlencoded' }
const basic = (user: string, password: string) => ({ authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` })

test('a password protects every address of a site: the page and its form, a host-only cookie, Basic auth for programs, no shared caching', async (t) => {
  const server = await startServer(t)
  const port = server.plinth.port
  const id = await publishedSite(server, 'secret', '<h1>Members only</h1>')
  const open = await rawRequest(port, 'secret.localhost', '/')
  assert.match(open.headers['cache-control'] as string, /^public/)

  const set = await server.api('PUT', `/v1/websites/${id}/password`, { body: { password: 'open sesame' } })
  assert.equal(set.status, 200, JSON.stringify(set.body))
  assert.equal(set.body.protected, true)

  // A visitor gets the password page (a plain form, no script), and nothing of the site, on every address.
  for (const host of ['secret.localhost', 'draft--secret.localhost']) {
    const locked = await rawRequest(port, host, '/index.html?x=1')
    assert.equal(locked.status, 401, host)
    const html = locked.body.toString()
    assert.match(html, /<form method="post" action="\/_platform\/password">/)
    assert.match(html, /name="next" value="\/index.html\?x=1"/)
    assert.doesNotMatch(html, /Members only|<script/)
    assert.equal(locked.headers['cache-control'], 'no-store')
    assert.doesNotMatch(locked.headers['www-authenticate'] as string, /^Basic/i, 'no browser dialog: the page is the way in')
    assert.match(html, /Programs: send the password as HTTP Basic credentials, with any user name/, 'a program learns the way in')
  }

  // Wrong, then right: a cookie for this host only, and back where the visitor was going.
  const wrong = await rawPost(port, 'secret.localhost', '/_platform/password', form({ password: 'nope', next: '/index.html' }), FORM)
  assert.equal(wrong.status, 401)
  assert.match(wrong.body.toString(), /Wrong password/)
  const right = await rawPost(port, 'secret.localhost', '/_platform/password', form({ password: 'open sesame', next: '/index.html' }), FORM)
  assert.equal(right.status, 303)
  assert.equal(right.headers.location, '/index.html')
  const setCookie = (right.headers['set-cookie'] as string[])[0]!
  assert.match(setCookie, /^plinth_site_pass=[^;]+; Path=\/; Max-Age=604800; HttpOnly; SameSite=Lax$/)
  assert.doesNotMatch(setCookie, /Domain=/i, 'host-only: never a parent-domain cookie')
  const cookie = setCookie.split(';')[0]!
  const inside = await rawRequest(port, 'secret.localhost', '/', { cookie })
  assert.equal(inside.status, 200)
  assert.equal(inside.body.toString(), '<h1>Members only</h1>')
  assert.equal(inside.headers['cache-control'], 'private, no-store', 'a shared cache never keeps a protected page')
  const revalidated = await rawRequest(port, 'secret.localhost', '/', { cookie, 'if-none-match': inside.headers.etag as string })
  assert.deepEqual([revalidated.status, revalidated.headers['cache-control']], [304, 'private, no-store'])
  // The site's assets are behind the password too, and never shared-cacheable while it holds.
  const uploadForm = new FormData()
  uploadForm.set('file', new Blob(['%PDF-1.4 a small document'], { type: 'application/pdf' }), 'notes.pdf')
  const asset = (await (
    await fetch(`${server.origin}/v1/websites/${id}/assets`, {
      method: 'POST',
      headers: { authorization: `Bearer ${server.adminKey}` },
      body: uploadForm,
    })
  ).json()) as any
  assert.ok(asset.id, JSON.stringify(asset))
  assert.equal((await rawRequest(port, 'secret.localhost', `/_platform/media/${asset.id}`)).status, 401)
  const media = await rawRequest(port, 'secret.localhost', `/_platform/media/${asset.id}`, { cookie })
  assert.deepEqual([media.status, media.headers['cache-control']], [200, 'private, no-store'])
  // The next path is only ever a path on this host.
  const away = await rawPost(
    port,
    'secret.localhost',
    '/_platform/password',
    form({ password: 'open sesame', next: '//evil.example/' }),
    FORM,
  )
  assert.equal(away.headers.location, '/')

  // Programs: HTTP Basic with any user name.
  assert.equal((await rawRequest(port, 'secret.localhost', '/', basic('anyone', 'open sesame'))).status, 200)
  assert.equal((await rawRequest(port, 'secret.localhost', '/', basic('anyone', 'open sesame'))).status, 200, 'remembered')
  assert.equal((await rawRequest(port, 'draft--secret.localhost', '/', basic('', 'open sesame'))).status, 200)
  assert.equal((await rawRequest(port, 'secret.localhost', '/', basic('anyone', 'wrong'))).status, 401)

  // A new password ends the old one's cookies and Basic credentials; only a hash is stored.
  await server.api('PUT', `/v1/websites/${id}/password`, { body: { password: 'second one' } })
  assert.equal((await rawRequest(port, 'secret.localhost', '/', { cookie })).status, 401)
  assert.equal((await rawRequest(port, 'secret.localhost', '/', basic('anyone', 'open sesame'))).status, 401)
  const stored = server.plinth.store.sitePasswords.get(id)!
  assert.match(stored.hash, /^scrypt\$/)
  assert.ok(!JSON.stringify(stored).includes('second one'))

  // Wrong passwords are rate limited per address and site.
  const tries = []
  for (let i = 0; i < 12; i++)
    tries.push((await rawPost(port, 'secret.localhost', '/_platform/password', form({ password: `guess ${i}` }), FORM)).status)
  assert.ok(tries.includes(429), JSON.stringify(tries))
  // Basic credentials too, from the same bucket: a guess past the limit is refused before it is checked, the right one with it.
  server.clock.advance(60_000)
  const guesses = []
  for (let i = 0; i < 12; i++) guesses.push((await rawRequest(port, 'secret.localhost', '/', basic('bot', `guess ${i}`))).status)
  assert.deepEqual(guesses.slice(-2), [429, 429], JSON.stringify(guesses))
  const limited = await rawRequest(port, 'secret.localhost', '/', basic('bot', 'second one'))
  assert.deepEqual([limited.status, limited.headers['retry-after'] !== undefined], [429, true])
  server.clock.advance(60_000)
  assert.equal((await rawRequest(port, 'secret.localhost', '/', basic('bot', 'second one'))).status, 200)

  // Removed: open to everyone again, cacheable again.
  const removed = await server.api('PUT', `/v1/websites/${id}/password`, { body: { password: null } })
  assert.equal(removed.body.protected, false)
  const again = await rawRequest(port, 'secret.localhost', '/')
  assert.deepEqual([again.status, again.headers['cache-control']], [200, 'public, max-age=0, must-revalidate'])
})

test('with billing on, a password needs a paid plan: 402 plan_required with the upgrade link', async (t) => {
  const server = await startServer(t, { PLINTH_BILLING: 'on', PLINTH_PLAN_WEBSITES: 'free=3,base=5,max=25' })
  const id = await publishedSite(server, 'free', 'free site')
  const refused = await server.api('PUT', `/v1/websites/${id}/password`, { body: { password: 'open sesame' } })
  assert.equal(refused.status, 402, JSON.stringify(refused.body))
  assert.equal(refused.body.details.reason, 'plan_required')
  assert.match(refused.body.details.upgradeUrl, /\/app\/billing/)
  assert.equal((await rawRequest(server.plinth.port, 'free.localhost', '/')).status, 200, 'the site stays open')
})

test('a password on a shared folder (set_folder_password, or password on begin_object_upload): its page, files and zip ask for it; the rest of the site and other folders stay open', async (t) => {
  const server = await startServer(t)
  const port = server.plinth.port
  const host = 'vault.localhost'
  const site = await createWebsite(server, { name: 'Vault', kind: 'storage', subdomain: 'vault' })
  const share = async (name: string, text: string, password?: string, folder?: string) => {
    const begun = await server.api('POST', `/v1/websites/${site.id}/objects/uploads`, {
      body: {
        files: [{ name, byteSize: Buffer.byteLength(text) }],
        ...(password === undefined ? {} : { password }),
        ...(folder === undefined ? {} : { folder }),
      },
    })
    assert.equal(begun.status, 201, JSON.stringify(begun.body))
    const file = begun.body.files[0]
    const put = await fetch(file.upload.url.replace(/^http:\/\/[^/]+/, server.origin), {
      method: 'PUT',
      headers: file.upload.headers,
      body: text,
    })
    assert.equal(put.status, 200)
    await server.api('POST', `/v1/websites/${site.id}/objects/finalize`, { body: { ids: [file.id] } })
    return begun.body.folder as string
  }
  const secret = await share('plans/q3.txt', 'the plans', 'folder sesame')
  const open = await share('menu.txt', 'lunch')
  assert.equal((await rawRequest(port, host, `/${open}/menu.txt`)).body.toString(), 'lunch', 'another folder stays open')

  // The folder's page, a file in a subfolder, and its zip: the password page, nothing of the files.
  for (const path of [`/${secret}/`, `/${secret}/plans/q3.txt`, `/${secret}/?zip`]) {
    const locked = await rawRequest(port, host, path)
    assert.equal(locked.status, 401, path)
    assert.doesNotMatch(locked.body.toString(), /the plans/)
    assert.match(locked.body.toString(), new RegExp(`name="folder" value="${secret}"`))
  }
  // A program sends Basic auth; a browser posts the form and gets a cookie for that folder only.
  const viaBasic = await rawRequest(port, host, `/${secret}/plans/q3.txt`, basic('any', 'folder sesame'))
  assert.deepEqual([viaBasic.status, viaBasic.body.toString(), viaBasic.headers['cache-control']], [200, 'the plans', 'private, no-store'])
  assert.equal((await rawRequest(port, host, `/${secret}/plans/q3.txt`, basic('any', 'wrong'))).status, 401)
  const wrong = await rawPost(port, host, '/_platform/password', form({ password: 'nope', next: `/${secret}/`, folder: secret }), FORM)
  assert.equal(wrong.status, 401)
  const right = await rawPost(
    port,
    host,
    '/_platform/password',
    form({ password: 'folder sesame', next: `/${secret}/`, folder: secret }),
    FORM,
  )
  assert.equal(right.status, 303)
  const cookie = String(right.headers['set-cookie'])
  // Path=/<folder>: the folder's page with or without its slash, and everything under it.
  assert.match(cookie, new RegExp(`Path=/${secret};`), 'the cookie is for that folder')
  assert.doesNotMatch(cookie, /Domain=/i, 'host-only')
  const pass = cookie.split(';')[0]!
  assert.equal((await rawRequest(port, host, `/${secret}/plans/q3.txt`, { cookie: pass })).body.toString(), 'the plans')
  // The cookie of this folder is not the site's: a folder with no password takes no form.
  const stray = await rawPost(port, host, '/_platform/password', form({ password: 'folder sesame', next: '/', folder: open }), FORM)
  assert.equal(stray.status, 400)

  // An encoded slash is not a way around the folder's password.
  assert.equal((await rawRequest(port, host, `/${secret}%2Fplans/q3.txt`)).status, 404)
  assert.equal((await rawRequest(port, host, `/${secret}%2Fplans/`)).status, 404)
  // A protected folder inside a protected folder asks for its own password too, and its files stay
  // out of the outer folder's zip.
  await share('notes.txt', 'outer notes', undefined, secret)
  const inner = await server.api('PUT', `/v1/websites/${site.id}/objects/folders/${encodeURIComponent(`${secret}/plans`)}/password`, {
    body: { password: 'inner sesame' },
  })
  assert.equal(inner.body.protected, true)
  assert.equal((await rawRequest(port, host, `/${secret}/plans/q3.txt`, { cookie: pass })).status, 401, 'the outer cookie is not enough')
  assert.equal(
    (await rawRequest(port, host, `/${secret}/plans/q3.txt`, { cookie: pass, ...basic('any', 'inner sesame') })).body.toString(),
    'the plans',
  )
  const outerZip = await rawRequest(port, host, `/${secret}/?zip`, { cookie: pass })
  assert.equal(outerZip.status, 200)
  assert.ok(
    outerZip.body.includes(Buffer.from('notes.txt')) && !outerZip.body.includes(Buffer.from('q3.txt')),
    'the inner folder stays out',
  )
  // Moved, a folder keeps its password (and its inner folder's).
  const moved = await server.api('PATCH', `/v1/websites/${site.id}/objects/folders/${secret}`, { body: { to: 'vault-moved' } })
  assert.equal(moved.status, 200, JSON.stringify(moved.body))
  assert.equal((await rawRequest(port, host, '/vault-moved/notes.txt')).status, 401)
  assert.equal((await rawRequest(port, host, '/vault-moved/notes.txt', basic('any', 'folder sesame'))).body.toString(), 'outer notes')
  assert.equal((await rawRequest(port, host, '/vault-moved/plans/q3.txt', basic('any', 'folder sesame'))).status, 401)
  await server.api('PATCH', `/v1/websites/${site.id}/objects/folders/vault-moved`, { body: { to: secret } })
  await server.api('PUT', `/v1/websites/${site.id}/objects/folders/${encodeURIComponent(`${secret}/plans`)}/password`, {
    body: { password: null },
  })

  // Removed: open again to anyone with the link.
  const removed = await server.api('PUT', `/v1/websites/${site.id}/objects/folders/${secret}/password`, { body: { password: null } })
  assert.deepEqual([removed.status, removed.body.protected], [200, false])
  assert.equal((await rawRequest(port, host, `/${secret}/plans/q3.txt`)).body.toString(), 'the plans')
  // Set again with the tool's operation: the old cookie no longer lets in.
  const again = await server.api('PUT', `/v1/websites/${site.id}/objects/folders/${secret}/password`, { body: { password: 'another one' } })
  assert.equal(again.body.protected, true)
  assert.equal((await rawRequest(port, host, `/${secret}/plans/q3.txt`, { cookie: pass })).status, 401)
})

test('a shared folder whose last file expired asks for no password any more: the sweeper drops its password with the folder', async (t) => {
  const server = await startServer(t)
  const site = await createWebsite(server, { name: 'Brief', kind: 'storage', subdomain: 'brief' })
  const begun = await server.api('POST', `/v1/websites/${site.id}/objects/uploads`, {
    body: { files: [{ name: 'note.txt', byteSize: 5 }], password: 'short lived' },
  })
  const file = begun.body.files[0]
  const folder = begun.body.folder as string
  const put = await fetch(file.upload.url.replace(/^http:\/\/[^/]+/, server.origin), {
    method: 'PUT',
    headers: file.upload.headers,
    body: 'hello',
  })
  assert.equal(put.status, 200)
  const done = await server.api('POST', `/v1/websites/${site.id}/objects/finalize`, { body: { ids: [file.id] } })
  const objectId = done.body.files[0].objectId as string
  assert.equal(
    (await server.api('PUT', `/v1/websites/${site.id}/objects/folders/${folder}/label`, { body: { label: 'Brief' } })).status,
    200,
  )
  const expiresAt = new Date(server.clock.now() + 60_000).toISOString()
  assert.equal((await server.api('PATCH', `/v1/websites/${site.id}/objects/${objectId}`, { body: { expiresAt } })).status, 200)
  assert.equal((await rawRequest(server.plinth.port, 'brief.localhost', `/${folder}/note.txt`)).status, 401)
  // Another protected folder whose file expires too, while a new file is on its way into it: its password stays.
  const busy = await server.api('POST', `/v1/websites/${site.id}/objects/uploads`, {
    body: { files: [{ name: 'old.txt', byteSize: 3 }], password: 'still here' },
  })
  const old = busy.body.files[0]
  await fetch(old.upload.url.replace(/^http:\/\/[^/]+/, server.origin), { method: 'PUT', headers: old.upload.headers, body: 'old' })
  const oldId = (await server.api('POST', `/v1/websites/${site.id}/objects/finalize`, { body: { ids: [old.id] } })).body.files[0].objectId
  await server.api('PATCH', `/v1/websites/${site.id}/objects/${oldId}`, { body: { expiresAt } })
  const coming = await server.api('POST', `/v1/websites/${site.id}/objects/uploads`, {
    body: { folder: busy.body.folder, files: [{ name: 'new.txt', byteSize: 3 }] },
  })
  assert.equal(coming.status, 201)

  server.clock.advance(2 * 60_000)
  assert.ok((await server.plinth.registry.sweepExpired()) >= 2, 'the sweeper took the files')
  assert.equal(
    (await rawRequest(server.plinth.port, 'brief.localhost', `/${busy.body.folder}/new.txt`)).status,
    401,
    'a folder with an upload under way keeps its password',
  )
  // Nothing is left to protect: the folder is gone, not a password form that says it was there.
  assert.equal((await rawRequest(server.plinth.port, 'brief.localhost', `/${folder}/note.txt`)).status, 404)
  assert.equal((await rawRequest(server.plinth.port, 'brief.localhost', `/${folder}/`)).status, 404)
  assert.equal((await server.api('GET', `/v1/websites/${site.id}/objects`)).body.items.length, 0)
})
