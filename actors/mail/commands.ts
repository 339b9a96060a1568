// `plinth mail list|show|retry|test`: the outbox as the operator sees it.
import { ApiError } from '../../core/errors.js'
import { MAIL_STATES, type MailMessageRecord, type MailState } from '../../core/schemas/mail.js'
import type { Mail } from './mail.js'
import { testMessage } from './templates.js'

export type MailCommand =
  | { command: 'mail-list'; state: string | null; limit: number }
  | { command: 'mail-show'; id: string }
  | { command: 'mail-retry'; id: string }
  | { command: 'mail-test'; to: string }

const iso = (ms: number | null) => (ms === null ? '-' : new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z'))

function lastAnswer(record: MailMessageRecord): string {
  const last = record.attempts.at(-1)
  return last === undefined ? '' : last.answer
}

/** Why nothing leaves this server, when that is so (said under every listing). */
function relayNote(mail: Mail): string {
  return mail.sending
    ? ''
    : '\nNo relay is configured (PLINTH_SMTP_URL): messages are held here. `plinth mail show ID` prints one (its link included) to pass on by hand.'
}

export async function runMailCommand(mail: Mail, command: MailCommand): Promise<{ message: string }> {
  switch (command.command) {
    case 'mail-list': {
      if (command.state !== null && !(MAIL_STATES as readonly string[]).includes(command.state))
        throw new ApiError('validation', `--state must be one of ${MAIL_STATES.join(', ')}, not ${command.state}`)
      const rows = [...mail.outbox.list({ state: (command.state ?? undefined) as MailState | undefined, limit: command.limit })].map(
        (m) =>
          `${m.id}  ${iso(m.createdAt)}  ${m.state.padEnd(8)}  ${m.kind.padEnd(15)}  ${m.to}  ${m.subject}${lastAnswer(m) === '' ? '' : `\n    last answer: ${lastAnswer(m)}`}`,
      )
      return { message: `${rows.length === 0 ? 'The outbox is empty.' : rows.join('\n')}${relayNote(mail)}` }
    }
    case 'mail-show': {
      const record = mail.outbox.get(command.id)
      if (record === undefined) throw new ApiError('not_found', `No message ${command.id} in the outbox (plinth mail list shows them)`)
      const content = mail.outbox.content(record)
      const attempts = record.attempts.map((a) => `  ${iso(a.at)}  ${a.answer}`).join('\n')
      return {
        message: [
          `Message ${record.id} (${record.kind}), ${record.state}`,
          `To: ${record.to}`,
          `Subject: ${record.subject}`,
          `Message-ID: <${record.messageId}>`,
          `Queued: ${iso(record.createdAt)}  Next attempt: ${iso(record.nextAttemptAt)}  Sent: ${iso(record.sentAt)}`,
          record.attempts.length === 0 ? 'Attempts: none' : `Attempts:\n${attempts}`,
          '',
          content === null ? '(Its content was dropped once it was sent or failed: only the above is kept.)' : content.text,
        ].join('\n'),
      }
    }
    case 'mail-retry': {
      const retried = await mail.retryNow(command.id)
      if (typeof retried === 'string') throw new ApiError('conflict', retried)
      return { message: `Message ${retried.id} to ${retried.to} is due now; the sender hands it to the relay within a second.` }
    }
    case 'mail-test': {
      const answer = await mail.sendNow(command.to, testMessage(mail.server()))
      return { message: answer }
    }
  }
}
