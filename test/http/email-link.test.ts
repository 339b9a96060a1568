import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { ParsedMail } from 'mailparser'
import { tool } from '../helpers/agent.js'
import { oauthToken } from '../helpers/oauth.js'
import { addPerson } from '../helpers/people.js'
import { createWebsite, startServer, type TestServer } from '../helpers/server.js'
import { smtpEnv, startSmtp } from '../helpers/smtp.js'

/*
 * email_link, as the product's agent skill names it: a site's published or draft link, or a storage
 * website's folder or file link, mailed to up to 10 people by the server, through the REST API and
 * the MCP tool, against a real SMTP server.
 */

const to = (m: ParsedMail) => (m.to && !Array.isArray(m.to) ? m.to.text : '')

/** A storage website with one file in folder `notes`, which has a password. */
async function sharedFolder(server: TestServer) {
  const files = await createWebsite(server, { name: 'Files', kind: 'storage', subdomain: 'files-share' })
  const begun = await server.api('POST', `/v1/websites/${files.id}/objects/uploads`, {
    body: { folder: 'notes', files: [{ name: 'plan.txt', byteSize: 5 }] },
  })
  assert.equal(begun.status, 201, JSON.stringify(begun.body))
  const upload = begun.body.files[0].upload
  const put = await fetch(upload.url.replace(/^http:\/\/[^/]+/, server.origin), { method: 'PUT', headers: upload.headers, body: 'hello' })
  assert.equal(put.status, 200)
  const done = await server.api('POST', `/v1/websites/${files.id}/objects/finalize`, { body: { ids: [begun.body.files[0].id] } })
  assert.equal(done.status, 200, JSON.stringify(done.body))
  const folder = begun.body.folder as string
  const locked = await server.api('PUT', `/v1/websites/${files.id}/objects/folders/${encodeURIComponent(folder)}/password`, {
    body: { password: 'folder-secret-1' },
  })
  assert.equal(locked.status, 200)
  return { id: files.id as string, folder, objectId: done.body.files[0].objectId as string }
}

test('email_link mails a published link to each address once, with the message, from the person (Reply-To); a folder with its password only when given and right; a draft link; the answer lists each recipient', async (t) => {
  const smtp = await startSmtp(t)
  const server = await startServer(t, smtpEnv(smtp), { mailPollMs: 50 })
  const site = await createWebsite(server, { name: 'Bakery', kind: 'static', subdomain: 'bakery-share' })
  await server.api('POST', `/v1/websites/${site.id}/deploy/json`, { body: { files: [{ path: 'index.html', content: '<h1>Bread</h1>' }] } })
  const path = `/v1/websites/${site.id}/email-link`

  // Not published yet: the live link would show nothing, and the answer says what to do.
  const early = await server.api('POST', path, { body: { to: ['ann@example.com'], link: 'published' } })
  assert.equal(early.status, 409)
  assert.match(early.body.message, /not published.*publish_website.*link: "draft"/)
  assert.equal((await server.api('POST', `/v1/websites/${site.id}/publish`)).status, 200)

  // A person, through an application (OAuth): Reply-To is their address.
  const ada = await addPerson(server, 'ada@example.com', 'ada-password-1', 'Ada Lovelace')
  const token = await oauthToken(server, ada, '/v1')
  const own = await server.api('POST', '/v1/websites', { key: token, body: { name: 'Ada site', kind: 'static', subdomain: 'ada-share' } })
  await server.api('POST', `/v1/websites/${own.body.id}/deploy/json`, {
    key: token,
    body: { files: [{ path: 'index.html', content: 'hi' }] },
  })
  await server.api('POST', `/v1/websites/${own.body.id}/publish`, { key: token })
  const sent = await server.api('POST', `/v1/websites/${own.body.id}/email-link`, {
    key: token,
    body: {
      to: ['ann@example.com', ' Ann@Example.com', 'bo@example.org'],
      link: 'published',
      message: 'Here is the new site.\n<b>not html</b>',
    },
  })
  assert.equal(sent.status, 200, JSON.stringify(sent.body))
  assert.equal(sent.body.link, 'http://ada-share.localhost:' + server.plinth.port)
  assert.deepEqual(
    sent.body.recipients.map((r: any) => [r.email, r.state]),
    [
      ['ann@example.com', 'queued'],
      ['bo@example.org', 'queued'],
    ],
  )
  const mails = [await smtp.message(1), await smtp.message(2)]
  assert.deepEqual(mails.map(to).sort(), ['ann@example.com', 'bo@example.org'])
  for (const mail of mails) {
    assert.equal(mail.subject, 'Ada Lovelace shared Ada site with you')
    assert.equal(mail.replyTo?.value[0]?.address, 'ada@example.com')
    assert.ok((mail.text ?? '').includes('Here is the new site.\n<b>not html</b>'))
    assert.ok((mail.text ?? '').includes(sent.body.link))
    assert.ok(!(mail.html || '').includes('<b>not html</b>'), 'the message is text in the HTML part, never markup')
  }

  // A protected folder: a wrong password is refused; without one the mail says whom to ask; with it, it carries it.
  const files = await sharedFolder(server)
  const folderPath = `/v1/websites/${files.id}/email-link`
  const wrong = await server.api('POST', folderPath, {
    body: { to: ['cy@example.com'], link: 'folder', folder: files.folder, password: 'guess-1234' },
  })
  assert.deepEqual([wrong.status, wrong.body.details?.field], [400, 'body.password'])
  const withIt = await server.api('POST', folderPath, {
    body: { to: ['cy@example.com'], link: 'folder', folder: files.folder, password: 'folder-secret-1' },
  })
  assert.equal(withIt.status, 200, JSON.stringify(withIt.body))
  assert.match(withIt.body.link, new RegExp(`^http://files-share\\.localhost:\\d+/${files.folder}/$`))
  const folderMail = await smtp.message(3)
  assert.match(folderMail.text ?? '', /It asks for a password: folder-secret-1/)
  assert.equal(folderMail.replyTo, undefined, 'an API key has no address to reply to')
  const without = await server.api('POST', folderPath, { body: { to: ['di@example.com'], link: 'folder', folder: files.folder } })
  assert.equal(without.status, 200)
  const withoutMail = await smtp.message(4)
  assert.match(withoutMail.text ?? '', /It asks for a password: ask .+ for it\./)
  assert.doesNotMatch(withoutMail.text ?? '', /folder-secret-1/)
  // A storage website has no published or draft page; a site has no folders.
  assert.equal((await server.api('POST', folderPath, { body: { to: ['x@example.com'], link: 'draft' } })).status, 400)
  assert.equal((await server.api('POST', path, { body: { to: ['x@example.com'], link: 'folder', folder: 'a' } })).status, 400)
  const missing = await server.api('POST', folderPath, { body: { to: ['x@example.com'], link: 'folder', folder: 'nothing-here' } })
  assert.equal(missing.status, 404)

  // The draft link, through the MCP tool the skill names.
  const viaMcp = await tool(server, 'email_link', { websiteId: site.id, to: ['ed@example.com'], link: 'draft' })
  assert.equal(viaMcp.link, `http://draft--bakery-share.localhost:${server.plinth.port}`)
  assert.match((await smtp.message(5)).text ?? '', /draft--bakery-share/)
})

test('email_link limits: 10 addresses a call (the 11th refused), a bad address named, the mail limits per address (429 mail_limit, nothing sent)', async (t) => {
  const smtp = await startSmtp(t)
  const server = await startServer(
    t,
    { ...smtpEnv(smtp), PLINTH_MAIL_LIMITS: 'address=2/h,10/d;organization=100/h,1000/d' },
    { mailPollMs: 50 },
  )
  const site = await createWebsite(server, { name: 'Shop', kind: 'static', subdomain: 'shop-share' })
  await server.api('POST', `/v1/websites/${site.id}/deploy/json`, { body: { files: [{ path: 'index.html', content: 'shop' }] } })
  await server.api('POST', `/v1/websites/${site.id}/publish`)
  const path = `/v1/websites/${site.id}/email-link`
  const eleven = Array.from({ length: 11 }, (_, i) => `p${i}@example.com`)
  const tooMany = await server.api('POST', path, { body: { to: eleven, link: 'published' } })
  assert.equal(tooMany.status, 400)
  assert.equal(tooMany.body.details.field, 'body.to')
  const bad = await server.api('POST', path, { body: { to: ['ok@example.com', 'not-an-address'], link: 'published' } })
  assert.deepEqual([bad.status, bad.body.details.field], [400, 'body.to[1]'])
  const long = await server.api('POST', path, { body: { to: ['ok@example.com'], link: 'published', message: 'x'.repeat(2001) } })
  assert.equal(long.status, 400)
  assert.equal(smtp.offered, 0, 'nothing refused was sent')

  for (let i = 0; i < 2; i++)
    assert.equal((await server.api('POST', path, { body: { to: ['fay@example.com'], link: 'published' } })).status, 200)
  const third = await server.api('POST', path, { body: { to: ['gil@example.com', 'fay@example.com'], link: 'published' } })
  assert.equal(third.status, 429, JSON.stringify(third.body))
  assert.equal(third.body.details.reason, 'mail_limit')
  await smtp.message(2)
  assert.deepEqual(
    [...server.plinth.registry.mail.outbox.list({ limit: 10 })].map((m) => m.to),
    ['fay@example.com', 'fay@example.com'],
    'the refused call queued nothing, not even for the address under its limit',
  )
})
