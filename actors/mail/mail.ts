// Outgoing mail as the rest of the server sees it: queue a message in a commit, send what is due, show the operator the outbox.
import type { Clock } from '../../core/clock.js'
import { fromAddress, MAIL_LIMITS_DEFAULT, type MailConfig } from '../../core/config-mail.js'
import type { Logger } from '../../core/log.js'
import type { MailKind, MailMessageRecord } from '../../core/schemas/mail.js'
import { Outbox } from './outbox.js'
import { MailSender } from './sender.js'
import type { MailStore } from './tables.js'
import type { Composed, Server } from './templates.js'
import { smtpTransport, type MailTransport } from './transport.js'

/** No relay and the default limits: messages are held for the operator (the embedded default). */
export const MAIL_OFF: MailConfig = Object.freeze({ smtp: null, from: null, dkim: null, limits: MAIL_LIMITS_DEFAULT })

export interface MailOptions {
  store: MailStore
  clock: Clock
  log: Logger
  config: MailConfig
  /** The outbox's sealing key (derived from the installation's secret). */
  key: Buffer
  /** The dashboard's URL of a path below it: the server's address in every message, and the links' base. */
  appUrl: (path: string) => string
}

/**
 * The mail concern: the outbox (messages written in the commit that caused them), the sender (the
 * chores run its passes where writes are made), and the server as the messages name it.
 */
export class Mail {
  readonly outbox: Outbox
  readonly sender: MailSender
  readonly #transport: MailTransport | null
  readonly #appUrl: (path: string) => string

  constructor(readonly options: MailOptions) {
    const { config } = options
    this.#appUrl = options.appUrl
    const host = () => new URL(this.#appUrl('')).hostname
    this.#transport = config.smtp === null ? null : smtpTransport(config.smtp, config.dkim, () => this.from(host()))
    this.outbox = new Outbox(options.store, options.clock, options.key, config.limits, config.smtp !== null, host)
    this.sender = new MailSender(options.store, this.outbox, this.#transport, options.clock, options.log)
  }

  /** A relay is configured (PLINTH_SMTP_URL): messages are sent; without one they wait for the operator. */
  get sending(): boolean {
    return this.#transport !== null
  }

  /** The From of every message: PLINTH_MAIL_FROM, or no-reply at the server's host. */
  from(host: string): string {
    return this.options.config.from ?? `Plinth <no-reply@${host}>`
  }

  /** The address From names (for the operator's test message). */
  get fromAddress(): string | null {
    return fromAddress(this.from(new URL(this.#appUrl('')).hostname))
  }

  /** The server as its messages name it (its dashboard's address and host). */
  server(): Server {
    const app = this.#appUrl('')
    return { app, host: new URL(app).host }
  }

  /** A link to a page of the dashboard. */
  link(path: string): string {
    return this.#appUrl(path)
  }

  /** A message due now (`plinth mail retry`), or why it cannot be. */
  retryNow(id: string): Promise<MailMessageRecord | string> {
    return this.options.store.commit(() => this.outbox.retryNow(id))
  }

  /**
   * Queues a message and hands it to the relay at once (`plinth mail test`); resolves with what
   * happened, in words: the relay's answer, or where the message waits.
   */
  async sendNow(to: string, composed: Composed): Promise<string> {
    this.outbox.checkLimits([to], null)
    const queued = await this.options.store.commit(() => this.outbox.queue({ kind: 'test', organizationId: null, to, ...composed }))
    if (!this.sending)
      return `No relay is configured (PLINTH_SMTP_URL): message ${queued.id} to ${queued.to} is held in the outbox; plinth mail show ${queued.id} prints it.`
    const after = await this.sender.sendOne(queued)
    const answer = after.attempts.at(-1)?.answer ?? 'no answer'
    if (after.state === 'sent') return `Sent message ${after.id} to ${after.to} from ${this.fromAddress}: the relay answered ${answer}`
    if (after.state === 'failed') return `The relay refused message ${after.id} to ${after.to} for good: ${answer}`
    return `Message ${after.id} to ${after.to} was not sent yet: ${answer}. It is retried at ${new Date(after.nextAttemptAt ?? 0).toISOString()} (plinth mail list shows it).`
  }

  /**
   * One message to each address, in one commit, for an organization (its limits and each address's
   * checked first: past them nothing is queued and `mail_limit` names the limit).
   */
  queueEach(kind: MailKind, organizationId: string, to: readonly string[], composed: Composed): Promise<MailMessageRecord[]> {
    this.outbox.checkLimits(to, organizationId)
    return this.options.store.commit(() => to.map((address) => this.outbox.queue({ kind, organizationId, to: address, ...composed })))
  }

  /** Drops what the outbox kept past 30 days; returns how many messages went. */
  sweep(): Promise<number> {
    return this.options.store.commit(() => this.outbox.sweep())
  }

  close(): void {
    this.#transport?.close()
  }
}
