import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { ParsedMail } from 'mailparser'
import { runOperatorCommand } from '../../actors/operator.js'
import { oauthToken } from '../helpers/oauth.js'
import { addPerson, Browserless } from '../helpers/people.js'
import { startServer } from '../helpers/server.js'
import { linkIn, smtpEnv, startSmtp } from '../helpers/smtp.js'

/*
 * The account operations through the REST API (the account screen's calls; tested in Chromium by
 * test/app/account.test.ts): who may call them, what they refuse, and the email link's rules.
 */

/** The last message to an address among those received (the relay takes a commit's messages in any order). */
function sentTo(received: readonly ParsedMail[], address: string): ParsedMail {
  const found = received.findLast((m) => m.to !== undefined && !Array.isArray(m.to) && m.to.text === address)
  assert.ok(found !== undefined, `a message to ${address}`)
  return found
}

test('only the person in a dashboard session changes their password or email: a key gets user_required, an application session_required; a name an application may change', async (t) => {
  const server = await startServer(t)
  const ada = await addPerson(server, 'ada@example.com', 'ada-password-1', 'Ada')
  const token = await oauthToken(server, ada, '/v1')
  const asApp = (method: string, path: string, body?: unknown) => server.api(method, path, { key: token, body })

  const byKey = await server.api('PUT', '/v1/me/password', { body: { currentPassword: 'x', newPassword: 'new-password-1' } })
  assert.equal(byKey.status, 403)
  assert.equal(byKey.body.details.reason, 'user_required')
  for (const [path, body] of [
    ['/v1/me/password', { currentPassword: 'ada-password-1', newPassword: 'new-password-1' }],
    ['/v1/me/email', { email: 'ada@example.org', currentPassword: 'ada-password-1' }],
  ] as const) {
    const res = await asApp(path.endsWith('password') ? 'PUT' : 'POST', path, body)
    assert.equal(res.status, 403, JSON.stringify(res.body))
    assert.equal(res.body.details.reason, 'session_required')
    assert.match(res.body.message, /Only you, signed in to the dashboard, may change your (password|email address).*Account page/)
  }
  assert.equal((await new Browserless(server).post('/app/sign-in', { email: 'ada@example.com', password: 'ada-password-1' })).status, 303)
  const renamed = await asApp('PATCH', '/v1/me', { name: 'Ada Lovelace' })
  assert.deepEqual([renamed.status, renamed.body.name], [200, 'Ada Lovelace'])
  // An empty change is refused, naming why.
  const empty = await ada.api('PATCH', '/v1/me', {})
  assert.equal(empty.status, 400)
})

test('the password change: the current password checked, the sign-up rules, other sessions ended and this one kept, an audit event', async (t) => {
  const server = await startServer(t)
  const ada = await addPerson(server, 'ada@example.com', 'ada-password-1', 'Ada')
  const phone = new Browserless(server)
  await phone.signIn('ada@example.com', 'ada-password-1')

  const wrong = await ada.api('PUT', '/v1/me/password', { currentPassword: 'guess-password-1', newPassword: 'new-password-1' })
  assert.equal(wrong.status, 400)
  assert.equal(wrong.body.details.field, 'body.currentPassword')
  const short = await ada.api('PUT', '/v1/me/password', { currentPassword: 'ada-password-1', newPassword: 'short' })
  assert.equal(short.status, 400)
  assert.match(short.body.message, /password must be 10 to \d+ characters long/)
  assert.equal((await phone.api('GET', '/v1/me')).status, 200, 'refused changes sign nobody out')

  const changed = await ada.api('PUT', '/v1/me/password', { currentPassword: 'ada-password-1', newPassword: 'new-password-1' })
  assert.deepEqual([changed.status, changed.body], [200, { changed: true, otherSessionsEnded: 1 }])
  assert.equal((await phone.api('GET', '/v1/me')).status, 401)
  const mine = await ada.api('GET', '/v1/me/sessions')
  assert.equal(mine.status, 200)
  assert.deepEqual(
    mine.body.items.map((s: any) => [s.current, s.device]),
    [[true, 'node']],
  )
  assert.equal((await new Browserless(server).post('/app/sign-in', { email: 'ada@example.com', password: 'ada-password-1' })).status, 401)
  await new Browserless(server).signIn('ada@example.com', 'new-password-1')
  const audit = await ada.api('GET', '/v1/audit-log?eventType=person.password_changed')
  assert.equal(audit.status, 200, JSON.stringify(audit.body))
  assert.equal(audit.body.items.length, 1)
})

test('the email change: a link to the new address and a notice to the old; the old address stays until the link is opened; a newer request replaces the link; 24 hours; taken addresses refused', async (t) => {
  const smtp = await startSmtp(t)
  const server = await startServer(t, smtpEnv(smtp), { mailPollMs: 50 })
  const ada = await addPerson(server, 'ada@example.com', 'ada-password-1', 'Ada')
  await addPerson(server, 'bob@example.com', 'bob-password-1', 'Bob')

  const taken = await ada.api('POST', '/v1/me/email', { email: 'BOB@example.com', currentPassword: 'ada-password-1' })
  assert.deepEqual([taken.status, taken.body.details.field], [409, 'body.email'])
  const same = await ada.api('POST', '/v1/me/email', { email: 'ada@example.com', currentPassword: 'ada-password-1' })
  assert.equal(same.status, 400)
  const wrong = await ada.api('POST', '/v1/me/email', { email: 'ada@example.org', currentPassword: 'not-it-password' })
  assert.deepEqual([wrong.status, wrong.body.details.field], [400, 'body.currentPassword'])
  assert.equal(smtp.offered, 0, 'refused requests send nothing')

  const first = await ada.api('POST', '/v1/me/email', { email: 'ada@example.org', currentPassword: 'ada-password-1' })
  assert.equal(first.status, 202, JSON.stringify(first.body))
  assert.deepEqual([first.body.email, first.body.pendingEmail, first.body.mailSent], ['ada@example.com', 'ada@example.org', true])
  const me = await ada.api('GET', '/v1/me')
  assert.deepEqual([me.body.person.email, me.body.person.pendingEmail], ['ada@example.com', 'ada@example.org'])
  const sent = [await smtp.message(1), await smtp.message(2)]
  const to = (m: (typeof sent)[number]) => (m.to && !Array.isArray(m.to) ? m.to.text : '')
  const firstLink = linkIn(
    sent.find((m) => to(m) === 'ada@example.org')!,
    '/confirm-email',
  )
  const notice = sent.find((m) => to(m) === 'ada@example.com')!
  assert.doesNotMatch(notice.text ?? '', /confirm-email/)
  assert.equal(notice.headers.get('auto-submitted'), 'auto-generated')

  // A second request (another address) replaces the first: the first link no longer works.
  const second = await ada.api('POST', '/v1/me/email', { email: 'lovelace@example.org', currentPassword: 'ada-password-1' })
  assert.equal(second.status, 202)
  await smtp.message(4)
  const secondLink = linkIn(sentTo(smtp.received, 'lovelace@example.org'), '/confirm-email')
  const stranger = new Browserless(server)
  const token = (link: string) => new URL(link).hash.replace(/^#token=/, '')
  const stale = await stranger.post('/app/confirm-email', { token: token(firstLink) })
  assert.equal(stale.status, 404)
  assert.match(await stale.text(), /replaced by a newer one or expired/)

  // 24 hours later the second has expired too (the page says so when it opens); a third, opened in time, works.
  server.clock.advance(24 * 3600_000 + 1000)
  const checked = await stranger.post('/app/link-check', { kind: 'email', code: token(secondLink) })
  assert.equal(((await checked.json()) as { ok: boolean }).ok, false)
  assert.equal((await stranger.post('/app/confirm-email', { token: token(secondLink) })).status, 404)
  assert.equal((await ada.api('GET', '/v1/me')).body.person.email, 'ada@example.com')
  assert.equal((await ada.api('POST', '/v1/me/email', { email: 'lovelace@example.org', currentPassword: 'ada-password-1' })).status, 202)
  await smtp.message(6)
  const third = token(linkIn(sentTo(smtp.received, 'lovelace@example.org'), '/confirm-email'))
  const confirmed = await stranger.post('/app/confirm-email', { token: third })
  assert.equal(confirmed.status, 303)
  assert.match(confirmed.headers.get('location') ?? '', /\/app\/sign-in\?email_changed=1&email=lovelace%40example\.org$/)
  const after = (await ada.api('GET', '/v1/me')).body.person
  assert.deepEqual([after.email, after.pendingEmail], ['lovelace@example.org', null])
  await new Browserless(server).signIn('lovelace@example.org', 'ada-password-1')
  assert.equal((await new Browserless(server).post('/app/sign-in', { email: 'ada@example.com', password: 'ada-password-1' })).status, 401)
})

test('with no SMTP configured: the email link and an invitation wait in the outbox for the operator (plinth mail show prints them), and the answers say no mail was sent', async (t) => {
  const server = await startServer(t)
  const ada = await addPerson(server, 'ada@example.com', 'ada-password-1', 'Ada')
  const asked = await ada.api('POST', '/v1/me/email', { email: 'ada@example.org', currentPassword: 'ada-password-1' })
  assert.deepEqual([asked.status, asked.body.mailSent], [202, false])
  const invited = await server.api('POST', '/v1/members/invitations', { body: { email: 'mia@example.com', role: 'full_editor' } })
  assert.deepEqual([invited.status, invited.body.emailed], [201, false])
  const held = [...server.plinth.registry.mail.outbox.list({ limit: 10 })]
  assert.deepEqual(held.map((m) => [m.kind, m.to, m.state]).sort(), [
    ['email_change', 'ada@example.org', 'held'],
    ['email_changed', 'ada@example.com', 'held'],
    ['invitation', 'mia@example.com', 'held'],
  ])
  const invitation = held.find((m) => m.kind === 'invitation')!
  const shown = (await runOperatorCommand(server.plinth.registry, { command: 'mail-show', id: invitation.id })).message
  assert.ok(shown.includes(invited.body.acceptUrl.split('#')[1]), `plinth mail show prints the invitation's link:\n${shown}`)
})

test('invitations count against the mail limits: past them the invitation is refused with mail_limit and nothing is made', async (t) => {
  const smtp = await startSmtp(t)
  const server = await startServer(t, { ...smtpEnv(smtp), PLINTH_MAIL_LIMITS: 'address=2/h,10/d;organization=100/h,1000/d' })
  const first = await server.api('POST', '/v1/members/invitations', { body: { email: 'mia@example.com', role: 'full_editor' } })
  assert.deepEqual([first.status, first.body.emailed], [201, true])
  const again = await server.api('POST', `/v1/members/invitations/${first.body.id}/resend`)
  assert.equal(again.status, 200)
  assert.notEqual(again.body.acceptUrl, first.body.acceptUrl)
  const third = await server.api('POST', `/v1/members/invitations/${first.body.id}/resend`)
  assert.equal(third.status, 429, JSON.stringify(third.body))
  assert.equal(third.body.details.reason, 'mail_limit')
  assert.ok(Number(third.headers.get('retry-after')) > 0)
  // The link the second answer gave still works: the refused resend changed nothing.
  const stranger = new Browserless(server)
  const check = await stranger.post('/app/link-check', { kind: 'invite', code: again.body.acceptUrl.split('#code=')[1] })
  assert.equal(((await check.json()) as { ok: boolean }).ok, true)
})
