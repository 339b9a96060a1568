// Hands the outbox's due messages to the relay (nodemailer over SMTP), retrying what may pass later.
import type { Clock } from '../../core/clock.js'
import type { Logger } from '../../core/log.js'
import type { MailMessageRecord } from '../../core/schemas/mail.js'
import type { Outbox } from './outbox.js'
import type { MailStore } from './tables.js'
import type { MailTransport, RelayAnswer } from './transport.js'

const MINUTE_MS = 60_000
/** Waits before each retry of a temporary failure (then every 6 hours), for 48 hours after the message was queued. */
export const MAIL_RETRY_MS = [MINUTE_MS, 5 * MINUTE_MS, 30 * MINUTE_MS, 120 * MINUTE_MS]
export const MAIL_RETRY_EVERY_MS = 360 * MINUTE_MS
export const MAIL_RETRY_WINDOW_MS = 48 * 60 * MINUTE_MS
/** Messages handed over at once (one connection each). */
const CONCURRENCY = 4

/** When the next attempt is, after `failures` temporary failures of a message queued at `createdAt`; null: give up. */
export function nextAttempt(createdAt: number, failures: number, now: number): number | null {
  const next = now + (MAIL_RETRY_MS[failures - 1] ?? MAIL_RETRY_EVERY_MS)
  return next > createdAt + MAIL_RETRY_WINDOW_MS ? null : next
}

/**
 * Sends what is due, a pass at a time (the chores' scheduler runs it where writes are made: the
 * embedded server, or a cluster's primary). Each attempt's answer is recorded on the message: a 2xx
 * sent, a 5xx failed for good, anything else (a 4xx, no answer, a refused connection or login)
 * retried with backoff. A crash between the relay's answer and its record sends the message again
 * after the restart: a message may arrive twice, never not at all.
 */
export class MailSender {
  #running: Promise<number> | null = null
  /** Messages this process handed over, and those it gave up on (the metrics' counters). */
  sent = 0
  failed = 0

  constructor(
    private readonly store: MailStore,
    private readonly outbox: Outbox,
    private readonly transport: MailTransport | null,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {}

  /** One pass over what is due (never two at once); resolves with how many were tried. */
  sendDue(): Promise<number> {
    if (this.transport === null) return Promise.resolve(0)
    this.#running ??= this.#pass(this.transport).finally(() => (this.#running = null))
    return this.#running
  }

  /** Resolves when the pass under way (if any) has finished. */
  async drained(): Promise<void> {
    await this.#running
  }

  async #pass(transport: MailTransport): Promise<number> {
    const due = [...this.outbox.due(this.clock.now(), 100)]
    let next = 0
    const worker = async () => {
      while (next < due.length) await this.#attempt(transport, due[next++]!)
    }
    await Promise.all(Array.from({ length: Math.min(CONCURRENCY, due.length) }, worker))
    return due.length
  }

  /** Hands one message to the relay now (`plinth mail test`); resolves with its record after the attempt. */
  async sendOne(record: MailMessageRecord): Promise<MailMessageRecord> {
    if (this.transport === null) return record
    return (await this.#attempt(this.transport, record)) ?? record
  }

  async #attempt(transport: MailTransport, record: MailMessageRecord): Promise<MailMessageRecord | undefined> {
    const content = this.outbox.content(record)
    if (content === null) return undefined
    let answer: RelayAnswer
    try {
      answer = await transport.send({ to: record.to, subject: record.subject, messageId: record.messageId, ...content })
    } catch (error) {
      // The transport answers every relay's refusal itself: a throw here is a bug.
      this.log.error('handing a message to the relay failed unexpectedly', {
        messageId: record.id,
        error: (error as Error)?.stack ?? String(error),
      })
      answer = { ok: false, permanent: false, code: null, answer: String((error as Error)?.message ?? error) }
    }
    const at = this.clock.now()
    const failures = record.attempts.length + 1
    const next = answer.ok || answer.permanent ? null : nextAttempt(record.createdAt, failures, at)
    const updated = await this.store.commit(() => {
      const current = this.store.mailMessages.get(record.id)
      if (current === undefined) return undefined
      return this.outbox.recordAttempt(current, { at, answer: answer.answer, code: answer.code }, next, answer.ok)
    })
    if (answer.ok) this.sent++
    else if (next === null) {
      this.failed++
      this.log.warn('a message could not be delivered and was given up on', {
        messageId: record.id,
        kind: record.kind,
        answer: answer.answer,
      })
    }
    return updated
  }
}
