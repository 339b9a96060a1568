import assert from 'node:assert/strict'
import { generateKeyPairSync } from 'node:crypto'
import { promises as dnsPromises } from 'node:dns'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { dkimVerify } from 'mailauth/lib/dkim/verify.js'
import { dnsServer } from '../helpers/dns.js'
import { runOperatorCommand } from '../../actors/operator.js'
import { addPerson, Browserless } from '../helpers/people.js'
import { startServer, tempDir, type TestServer } from '../helpers/server.js'
import { linkIn, smtpEnv, startSmtp } from '../helpers/smtp.js'
import { waitUntil } from '../helpers/wait.js'

/** What `plinth mail …` prints (the operator's commands, as the control socket runs them). */
async function mailCli(server: TestServer, command: Parameters<typeof runOperatorCommand>[1]): Promise<string> {
  return (await runOperatorCommand(server.plinth.registry, command)).message
}

/** The outbox's messages, newest first (as `plinth mail list` reads them). */
function outbox(server: TestServer) {
  return [...server.plinth.registry.mail.outbox.list({ limit: 100 })]
}

/** The page's text without its tags (what a person reads). */
async function text(response: Response): Promise<string> {
  return (await response.text()).replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ')
}

test('a person who forgot their password: the same answer for an address with and without an account, a link by mail that works once for 30 minutes, every session signed out, an audit event', async (t) => {
  const smtp = await startSmtp(t)
  const server = await startServer(t, smtpEnv(smtp), { mailPollMs: 50 })
  const rose = await addPerson(server, 'rose@example.com', 'old-password-1')
  assert.equal((await rose.api('GET', '/v1/me')).status, 200)

  const stranger = new Browserless(server)
  const known = await stranger.post('/app/forgot', { email: 'rose@example.com' })
  const unknown = await stranger.post('/app/forgot', { email: 'nobody@example.com' })
  assert.deepEqual([known.status, unknown.status], [200, 200])
  const said = (await text(known)).replace('rose@example.com', 'ADDRESS')
  assert.equal((await text(unknown)).replace('nobody@example.com', 'ADDRESS'), said, 'both answers are the same page')
  assert.match(said, /If an account signs in with ADDRESS, a link to choose a new password is on its way/)

  const mail = await smtp.message(1)
  assert.equal(mail.to && !Array.isArray(mail.to) ? mail.to.text : '', 'rose@example.com')
  assert.deepEqual([mail.from?.value[0]?.name, mail.from?.value[0]?.address], ['Plinth', 'no-reply@plinth.test'])
  assert.match(mail.subject ?? '', /^Reset your password on 127\.0\.0\.1:\d+$|^Reset your password on localhost:\d+$/)
  assert.equal(mail.headers.get('auto-submitted'), 'auto-generated')
  assert.match(mail.messageId ?? '', /^<msg_[a-z0-9]+@/)
  assert.match(mail.text ?? '', /the account rose@example\.com/)
  assert.match(mail.text ?? '', /ignore this message/)
  assert.ok((mail.html || '').includes('Choose a new password'), 'an HTML part too')
  // Only the address with an account was sent anything (marked sent once the relay's answer is committed, a moment after it arrived).
  await waitUntil(() => outbox(server).every((m) => m.state === 'sent'), 'the message marked sent')
  assert.deepEqual(
    outbox(server).map((m) => [m.to, m.kind, m.state]),
    [['rose@example.com', 'password_reset', 'sent']],
  )

  const link = linkIn(mail, '/reset')
  const token = new URL(link).hash.replace(/^#token=/, '')
  assert.ok(token.length >= 40, 'at least 128 bits')
  const page = await stranger.get('/app/reset')
  assert.equal(page.status, 200)
  const checked = await stranger.post('/app/link-check', { kind: 'reset', code: token })
  assert.equal(((await checked.json()) as { ok: boolean }).ok, true)
  // The sign-up rules hold for the new password.
  const short = await stranger.post('/app/reset', { token, password: 'short' })
  assert.equal(short.status, 400)
  assert.match(await text(short), /at least 10|10 to/i)
  const done = await stranger.post('/app/reset', { token, password: 'new-password-1' })
  assert.equal(done.status, 303, await done.text())
  assert.match(done.headers.get('location') ?? '', /\/app\/sign-in\?reset=1/)
  assert.match(await text(await stranger.get(done.headers.get('location')!)), /Your password was changed/)

  // Every session of the person ended; the new password signs in, the old one does not.
  assert.equal((await rose.api('GET', '/v1/me')).status, 401)
  assert.equal((await new Browserless(server).post('/app/sign-in', { email: 'rose@example.com', password: 'old-password-1' })).status, 401)
  await new Browserless(server).signIn('rose@example.com', 'new-password-1')
  // The link works once.
  const again = await stranger.post('/app/reset', { token, password: 'another-password-1' })
  assert.equal(again.status, 404)
  assert.match(await text(again), /unknown, used or expired/)
  // The reset is in the person's audit log.
  const person = server.plinth.registry.people.personByEmail('rose@example.com')!
  const audit = [
    ...server.plinth.registry.reads.audit.range({ start: [person.personalOrgId, 0], end: [person.personalOrgId, Number.MAX_SAFE_INTEGER] }),
  ]
  assert.ok(audit.some(({ value }) => value.eventType === 'person.password_reset' && value.resourceId === person.id))

  // A second link, 31 minutes later, no longer works.
  await stranger.post('/app/forgot', { email: 'rose@example.com' })
  const second = linkIn(await smtp.message(2), '/reset')
  server.clock.advance(31 * 60_000)
  const late = await stranger.post('/app/reset', { token: new URL(second).hash.replace(/^#token=/, ''), password: 'late-password-1' })
  assert.equal(late.status, 404)
  assert.equal(smtp.received.length, 2)
})

test('the outbox loses nothing: the relay down then back (sent once), a 451 then accepted (retried), a 550 (failed, shown by plinth mail list)', async (t) => {
  const smtp = await startSmtp(t)
  const server = await startServer(t, smtpEnv(smtp), { mailPollMs: 50 })
  await addPerson(server, 'ivy@example.com')
  const asker = new Browserless(server)
  /** The newest of `n` messages once it is in `wanted` state. */
  const reaches = (n: number, wanted: string, what: string) =>
    waitUntil(() => {
      const newest = outbox(server).length >= n ? outbox(server)[0] : undefined
      return newest?.state === wanted && newest
    }, what)

  // The relay is down: the request is answered at once, the message waits and is retried.
  await smtp.stop()
  assert.equal((await asker.post('/app/forgot', { email: 'ivy@example.com' })).status, 200)
  const waiting = await reaches(1, 'retrying', 'the message to wait for the relay')
  assert.match(waiting.attempts[0]!.answer, /ECONNECTION|ECONNREFUSED/)
  await smtp.start()
  server.clock.advance(61_000)
  await smtp.message(1)
  await reaches(1, 'sent', 'the message to be sent')
  assert.equal(smtp.offered, 1, 'sent once')

  // 451: a temporary refusal, retried a minute later.
  smtp.answers.push({ code: 451, message: 'Try again later' })
  await asker.post('/app/forgot', { email: 'ivy@example.com' })
  const refused = await reaches(2, 'retrying', 'the 451 to be recorded')
  assert.match(refused.attempts[0]!.answer, /451/)
  server.clock.advance(61_000)
  await smtp.message(2)
  await reaches(2, 'sent', 'the retried message to be sent')
  assert.equal(smtp.offered, 3)

  // 550: refused for good; the operator sees it and why.
  smtp.answers.push({ code: 550, message: 'No such user here' })
  await asker.post('/app/forgot', { email: 'ivy@example.com' })
  const failed = await reaches(3, 'failed', 'the 550 to fail the message')
  assert.equal(failed.sealed, null, 'the content (the link) is dropped once the message failed')
  const listed = await mailCli(server, { command: 'mail-list', state: 'failed', limit: 10 })
  assert.match(listed, new RegExp(`${failed.id} .* failed +password_reset +ivy@example\\.com`))
  assert.match(listed, /last answer: 550/)
  // Past every retry's time, a pass of the sender after the clock moved (the second: one under way may have read the old time).
  server.clock.advance(6 * 3_600_000)
  const sender = server.plinth.registry.mail.sender
  await sender.sendDue()
  await sender.sendDue()
  assert.equal(smtp.offered, 4, 'never retried')
})

test('with no relay configured, messages are held for the operator: the forgot page says email is off, plinth mail show prints the link, and it works', async (t) => {
  const server = await startServer(t, {}, { mailPollMs: 50 })
  await addPerson(server, 'moss@example.com')
  const asker = new Browserless(server)
  const page = await text(await asker.get('/app/forgot'))
  assert.match(page, /This server sends no email .*plinth mail show/)
  await asker.post('/app/forgot', { email: 'moss@example.com' })
  const held = await waitUntil(() => outbox(server)[0], 'the message to be queued')
  assert.equal(held.state, 'held')
  assert.match(
    await mailCli(server, { command: 'mail-list', state: null, limit: 10 }),
    /held +password_reset +moss@example\.com[\s\S]*No relay is configured/,
  )
  const shown = await mailCli(server, { command: 'mail-show', id: held.id })
  const link = /https?:\S+\/app\/reset#token=\S+/.exec(shown)?.[0]
  assert.ok(link !== undefined, shown)
  const done = await asker.post('/app/reset', { token: new URL(link).hash.replace(/^#token=/, ''), password: 'moss-password-2' })
  assert.equal(done.status, 303)
  assert.match(await mailCli(server, { command: 'mail-test', to: 'ops@example.com' }), /No relay is configured .* held in the outbox/)
})

test('with DKIM configured every message is signed: the signature verifies against the key published in DNS, and fails on a changed message', async (t) => {
  const smtp = await startSmtp(t)
  const dir = tempDir(t)
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
  writeFileSync(join(dir, 'dkim.pem'), privateKey.export({ type: 'pkcs8', format: 'pem' }))
  const dns = await dnsServer(t)
  // What an operator publishes: {selector}._domainkey.{domain} TXT, the public key as base64 DER.
  dns.zone['mail2026._domainkey.plinth.test'] = {
    // Over 255 bytes: one record of several character-strings, as DNS providers split it.
    TXT: [`v=DKIM1; k=rsa; p=${publicKey.export({ type: 'spki', format: 'der' }).toString('base64')}`.match(/.{1,255}/g)!],
  }
  const server = await startServer(
    t,
    { ...smtpEnv(smtp), PLINTH_DKIM_DOMAIN: 'plinth.test', PLINTH_DKIM_SELECTOR: 'mail2026', PLINTH_DKIM_KEY_FILE: join(dir, 'dkim.pem') },
    { mailPollMs: 50 },
  )
  assert.match(await mailCli(server, { command: 'mail-test', to: 'ops@example.com' }), /the relay answered 250/)
  await smtp.message(1)
  const resolver = new dnsPromises.Resolver()
  resolver.setServers([dns.address])
  const resolve = (name: string, type: string) => (type === 'TXT' ? resolver.resolveTxt(name) : Promise.reject(new Error(`no ${type}`)))
  const signed = await dkimVerify(smtp.raw[0]!, { resolver: resolve })
  assert.deepEqual(
    signed.results.map((r) => [r.signingDomain, r.status.result]),
    [['plinth.test', 'pass']],
  )
  const changed = Buffer.from(smtp.raw[0]!.toString('utf8').replace(/^Subject: .*$/m, 'Subject: Something else'))
  const tampered = await dkimVerify(changed, { resolver: resolve })
  assert.deepEqual(
    tampered.results.map((r) => r.status.result),
    ['fail'],
  )
})
