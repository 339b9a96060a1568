import assert from 'node:assert/strict'
import { test } from 'node:test'
import { runCli, spawnPlinth } from './helpers/process.js'
import { tempDir } from './helpers/server.js'
import { smtpEnv, startSmtp } from './helpers/smtp.js'
import { waitUntil } from './helpers/wait.js'

/*
 * The outbox across a crash, and `plinth mail` as an operator runs it: a process killed with SIGKILL
 * while the relay holds its message (queued, not yet answered) sends it after the restart, once.
 */

const KEY = 'wb_mailprocesstestkey000000000000000000000'

test('a kill -9 while the relay holds a message loses nothing: plinth mail list shows it queued, the restart sends it once; plinth mail show and test through the CLI', async (t) => {
  const smtp = await startSmtp(t)
  // The relay reads the first message and never answers it.
  smtp.answers.push({ code: 'hang' })
  const dir = tempDir(t)
  const env = { PLINTH_DATA_DIR: dir, PLINTH_ADMIN_KEY: KEY, ...smtpEnv(smtp) }
  const first = await spawnPlinth(t, env)
  const invited = await fetch(`http://127.0.0.1:${first.port}/v1/members/invitations`, {
    method: 'POST',
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ email: 'mia@example.com', role: 'full_editor' }),
  })
  assert.equal(invited.status, 201, await invited.text())
  await waitUntil(() => smtp.offered === 1, 'the relay to be reading the message')
  first.child.kill('SIGKILL')
  await first.exited

  // With the server down, the CLI opens the data directory itself: the message is still to be sent.
  const listed = await runCli(['mail', 'list'], { PLINTH_DATA_DIR: dir })
  assert.equal(listed.code, 0, listed.stderr)
  assert.match(listed.stdout, /msg_[a-z0-9]+ +\S+ +queued +invitation +mia@example\.com/)
  const id = /(msg_[a-z0-9]+)/.exec(listed.stdout)![1]

  const second = await spawnPlinth(t, env)
  const message = await smtp.message(1)
  assert.equal(message.to && !Array.isArray(message.to) ? message.to.text : '', 'mia@example.com')
  // Through the running server's control socket: sent, with the relay's answer; the content is gone once sent.
  const shown = await waitUntil(async () => {
    const out = await runCli(['mail', 'show', id], { PLINTH_DATA_DIR: dir })
    return /^Message msg_[a-z0-9]+ \(invitation\), sent$/m.test(out.stdout) && out
  }, 'the message to be recorded as sent')
  assert.match(shown.stdout, /250 Message queued as test/)
  assert.equal(smtp.received.length, 1, 'sent once')
  const tested = await runCli(['mail', 'test', '--to', 'ops@example.com'], { PLINTH_DATA_DIR: dir })
  assert.equal(tested.code, 0, tested.stderr)
  assert.match(tested.stdout, /^Sent message msg_[a-z0-9]+ to ops@example\.com from no-reply@plinth\.test: the relay answered 250/)
  assert.equal((await smtp.message(2)).subject?.startsWith('A test message from Plinth'), true)
  second.child.kill('SIGTERM')
  await second.exited
})
