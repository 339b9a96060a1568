import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { ParsedMail } from 'mailparser'
import { rawPost } from '../helpers/http.js'
import { addPerson, Browserless } from '../helpers/people.js'
import { startServer } from '../helpers/server.js'
import { linkIn, smtpEnv, startSmtp } from '../helpers/smtp.js'

/*
 * A form's submissions by mail, against a real SMTP server: a member's address at once, another only
 * once it confirms, spam never, Reply-To from the visitor's email, one-click unsubscribe (RFC 8058),
 * and a digest past the per-minute number.
 */

const URLENCODED = { 'content-type': 'application/x-www-form-urlencoded' }
const to = (m: ParsedMail) => (m.to && !Array.isArray(m.to) ? m.to.text : '')

/** Ada's published static site with a contact form (in her own workspace, so her address is a member's). */
async function adaSite(server: Awaited<ReturnType<typeof startServer>>, label: string) {
  const ada = await addPerson(server, 'ada@example.com', 'ada-password-1', 'Ada')
  const created = await ada.api('POST', '/v1/websites', { name: 'Bakery', kind: 'static', subdomain: label })
  assert.equal(created.status, 201, JSON.stringify(created.body))
  const id = created.body.id as string
  await ada.api('POST', `/v1/websites/${id}/deploy/json`, {
    files: [{ path: 'index.html', content: '<form method="post" action="/_platform/forms/contact"></form>' }],
  })
  assert.equal((await ada.api('POST', `/v1/websites/${id}/publish`)).status, 200)
  const submit = (fields: Record<string, string>) =>
    rawPost(server.plinth.port, `${label}.localhost`, '/_platform/forms/contact', new URLSearchParams(fields).toString(), URLENCODED)
  return { ada, id, submit, path: `/v1/websites/${id}/forms/contact/notifications` }
}

test('form notifications: the member at once, another address after it confirms, never spam; fields, Reply-To and one-click unsubscribe in each message', async (t) => {
  const smtp = await startSmtp(t)
  const server = await startServer(t, smtpEnv(smtp), { mailPollMs: 50 })
  const { ada, submit, path } = await adaSite(server, 'bakery-notify')

  const set = await ada.api('PUT', path, { recipients: ['ada@example.com', 'Sam@Example.org', 'ada@example.com'] })
  assert.equal(set.status, 200, JSON.stringify(set.body))
  assert.deepEqual(set.body.recipients, [
    { email: 'ada@example.com', state: 'active' },
    { email: 'Sam@Example.org', state: 'pending' },
  ])
  const confirmMail = await smtp.message(1)
  assert.equal(to(confirmMail), 'sam@example.org', 'the outbox writes addresses in lower case')
  assert.match(confirmMail.text ?? '', /Ada asked to send the submissions of the form contact on Bakery/)
  const token = new URL(linkIn(confirmMail, '/notify-confirm')).hash.replace(/^#token=/, '')

  // A submission: Ada is mailed, Sam (not confirmed) is not.
  assert.equal((await submit({ name: 'Vera', email: 'vera@example.net', message: 'Two loaves please' })).status, 200)
  const first = await smtp.message(2)
  assert.equal(to(first), 'ada@example.com')
  assert.equal(first.subject, 'New submission to contact on Bakery')
  assert.match(first.text ?? '', /name: Vera\nemail: vera@example\.net\nmessage: Two loaves please/)
  assert.equal(first.replyTo?.value[0]?.address, 'vera@example.net')
  assert.equal(first.headers.get('auto-submitted'), 'auto-generated')
  const unsubscribeLink = (first.text ?? '').match(/http\S+\/app\/unsubscribe\/\S+/)![0]
  // (mailparser gathers the List-* headers under `list`.)
  const list = first.headers.get('list') as { unsubscribe?: { url?: string }; 'unsubscribe-post'?: { name?: string } }
  assert.equal(list['unsubscribe-post']?.name, 'List-Unsubscribe=One-Click')
  assert.equal(list.unsubscribe?.url, unsubscribeLink, 'List-Unsubscribe names the same link')

  // Spam is kept for review, never mailed.
  assert.equal((await submit({ name: 'Bot', _honey: 'filled' })).status, 200)

  // Sam confirms; the next submission reaches both.
  const stranger = new Browserless(server)
  const checked = await stranger.post('/app/link-check', { kind: 'notify', code: token })
  assert.match(
    ((await checked.json()) as { message: string }).message,
    /Send the submissions of the form contact on Bakery to Sam@Example\.org/,
  )
  const confirmed = await stranger.post('/app/notify-confirm', { token })
  assert.equal(confirmed.status, 200)
  assert.equal((await ada.api('GET', path)).body.recipients[1].state, 'active')
  assert.equal((await stranger.post('/app/notify-confirm', { token })).status, 404, 'a link works once')
  assert.equal((await submit({ name: 'Wes', message: 'Hello' })).status, 200)
  const [third, fourth] = [await smtp.message(3), await smtp.message(4)]
  assert.deepEqual([to(third), to(fourth)].sort(), ['ada@example.com', 'sam@example.org'])
  assert.equal(third.replyTo, undefined, 'no email field, no Reply-To')
  assert.equal(smtp.received.length, 4, 'the spam submission sent nothing')

  // Ada's one-click unsubscribe (a mail client's POST, no cookie, no Origin): she is off the list.
  const page = await fetch(unsubscribeLink)
  assert.match(await page.text(), /Stop sending the submissions of the form contact on Bakery to ada@example\.com\?/)
  assert.equal((await ada.api('GET', path)).body.recipients.length, 2, 'opening the link alone changes nothing')
  const oneClick = await fetch(unsubscribeLink, { method: 'POST', headers: URLENCODED, body: 'List-Unsubscribe=One-Click' })
  assert.equal(oneClick.status, 200)
  assert.deepEqual(
    (await ada.api('GET', path)).body.recipients.map((r: any) => r.email),
    ['Sam@Example.org'],
  )
  const forged = await fetch(
    unsubscribeLink.replace(/.$/, (c) => (c === 'A' ? 'B' : 'A')),
    { method: 'POST', headers: URLENCODED, body: 'List-Unsubscribe=One-Click' },
  )
  assert.equal(forged.status, 404)
  assert.equal((await submit({ name: 'Xan' })).status, 200)
  assert.equal(to(await smtp.message(5)), 'sam@example.org')

  // Only addresses: a bad one is named; more than 10 refused.
  const bad = await ada.api('PUT', path, { recipients: ['ok@example.com', 'nope'] })
  assert.deepEqual([bad.status, bad.body.details.field], [400, 'body.recipients[1]'])
  const many = await ada.api('PUT', path, { recipients: Array.from({ length: 11 }, (_, i) => `p${i}@example.com`) })
  assert.equal(many.status, 400)
})

test('past 10 submissions a minute, the rest of the minute comes as one digest', async (t) => {
  const smtp = await startSmtp(t)
  // Limits above the messages here (the default, 10 an hour an address, would hold the digest back 10 minutes).
  const server = await startServer(
    t,
    { ...smtpEnv(smtp), PLINTH_MAIL_LIMITS: 'address=50/h,100/d;organization=200/h,1000/d' },
    { mailPollMs: 50 },
  )
  const { ada, submit, path } = await adaSite(server, 'busy-notify')
  assert.equal((await ada.api('PUT', path, { recipients: ['ada@example.com'] })).status, 200)
  for (let i = 1; i <= 13; i++) assert.equal((await submit({ name: `Visitor ${i}` })).status, 200)
  await smtp.message(10)
  assert.deepEqual(
    smtp.received.map((m) => m.subject),
    Array.from({ length: 10 }, () => 'New submission to contact on Bakery'),
  )
  // The minute ends (the server's clock): one digest with the 3 others.
  server.clock.advance(61_000)
  const digest = await smtp.message(11)
  assert.equal(digest.subject, '3 new submissions to contact on Bakery')
  assert.match(digest.text ?? '', /\/app\/websites\/ws_[a-z0-9]+\/forms\/contact/)
  assert.equal(
    (digest.headers.get('list') as { 'unsubscribe-post'?: { name?: string } })['unsubscribe-post']?.name,
    'List-Unsubscribe=One-Click',
  )
  // A new minute: mailed one by one again.
  assert.equal((await submit({ name: 'Visitor 14' })).status, 200)
  const next = await smtp.message(12)
  assert.equal(next.subject, 'New submission to contact on Bakery')
})
