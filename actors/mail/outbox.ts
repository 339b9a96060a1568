// The mail outbox: a message is written in the commit of what caused it, sealed, and sent after (sender.ts).
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto'
import type { Clock } from '../../core/clock.js'
import type { MailLimits } from '../../core/config-mail.js'
import { ApiError } from '../../core/errors.js'
import { newId } from '../../core/ids.js'
import type { MailKind, MailMessageRecord, MailState } from '../../core/schemas/mail.js'
import type { MailStore } from './tables.js'

const HOUR_MS = 3_600_000
const DAY_MS = 24 * HOUR_MS
/** Sent and failed messages are kept this long (their state and the relay's answers), then swept. */
export const MAIL_KEPT_MS = 30 * DAY_MS

/** What a message says: built by the server from its own templates (templates.ts), never from a user's HTML. */
export interface MailContent {
  text: string
  html: string
  /** Extra headers: Reply-To, Auto-Submitted, List-Unsubscribe. */
  headers: Record<string, string>
}

export interface NewMessage extends MailContent {
  kind: MailKind
  organizationId: string | null
  to: string
  subject: string
}

/** An address as the limits and indexes count it: one mailbox whatever the case of its domain. */
export function normalAddress(address: string): string {
  return address.trim().toLowerCase()
}

/**
 * The outbox's messages: queued inside the caller's commit (`queue`, the same transaction as the
 * invitation, the reset request or the submission that caused it, so neither exists without the
 * other), sealed with AES-256-GCM under a key derived from the installation's secret, listed and shown
 * to the operator, and moved along by the sender. Each concern that sends mail calls `queue` in its
 * own commit; only this folder writes the outbox's tables.
 */
export class Outbox {
  constructor(
    private readonly store: MailStore,
    private readonly clock: Clock,
    /** The sealing key (deriveKey(secret, 'mail outbox')): a backup or a copy of the database shows no link a message holds. */
    private readonly key: Buffer,
    private readonly limits: MailLimits,
    /** A relay is configured: new messages are queued to be sent; without one they are held for the operator. */
    private readonly relay: boolean,
    /** The host of Message-IDs (the dashboard's). */
    private readonly host: () => string,
  ) {}

  /**
   * Refuses a message past a limit (429 naming it). Call it before the commit that queues, for every
   * recipient: within one commit, `queue` counts again and the caller's refusal stands.
   */
  checkLimits(to: readonly string[], organizationId: string | null): void {
    const now = this.clock.now()
    const counted = new Map<string, number>()
    for (const address of to.map(normalAddress)) counted.set(address, (counted.get(address) ?? 0) + 1)
    for (const [address, extra] of counted) {
      const hour = this.#count(this.store.mailByAddress, address, now - HOUR_MS)
      const day = this.#count(this.store.mailByAddress, address, now - DAY_MS)
      if (hour + extra > this.limits.perAddressHour)
        throw this.#refusal(
          `${address} was sent ${hour} messages in the last hour, the most this server sends one address (${this.limits.perAddressHour} an hour)`,
          HOUR_MS,
        )
      if (day + extra > this.limits.perAddressDay)
        throw this.#refusal(
          `${address} was sent ${day} messages in the last day, the most this server sends one address (${this.limits.perAddressDay} a day)`,
          DAY_MS,
        )
    }
    if (organizationId === null) return
    const hour = this.#count(this.store.mailByOrganization, organizationId, now - HOUR_MS)
    const day = this.#count(this.store.mailByOrganization, organizationId, now - DAY_MS)
    if (hour + to.length > this.limits.perOrganizationHour)
      throw this.#refusal(
        `this workspace sent ${hour} messages in the last hour; it may send ${this.limits.perOrganizationHour} an hour`,
        HOUR_MS,
      )
    if (day + to.length > this.limits.perOrganizationDay)
      throw this.#refusal(
        `this workspace sent ${day} messages in the last day; it may send ${this.limits.perOrganizationDay} a day`,
        DAY_MS,
      )
  }

  #count(index: MailStore['mailByAddress'], key: string, since: number): number {
    let n = 0
    for (const _ of index.range({ start: [key, since, ''], end: [key, Number.MAX_SAFE_INTEGER, ''] })) n++
    return n
  }

  #refusal(what: string, windowMs: number): ApiError {
    return new ApiError(
      'rate_limited',
      `No message was sent: ${what}. Try again later; the limits are the server's (PLINTH_MAIL_LIMITS).`,
      { reason: 'mail_limit' },
      { 'retry-after': String(Math.ceil(windowMs / 1000 / 12)) },
    )
  }

  /** Writes a message to the outbox. Call it inside the commit of what caused it. */
  queue(message: NewMessage): MailMessageRecord {
    const now = this.clock.now()
    const id = newId('msg')
    const to = normalAddress(message.to)
    const record: MailMessageRecord = {
      v: 1,
      id,
      kind: message.kind,
      organizationId: message.organizationId,
      to,
      subject: message.subject,
      messageId: `${id}@${this.host()}`,
      sealed: this.#seal({ text: message.text, html: message.html, headers: message.headers }),
      state: this.relay ? 'queued' : 'held',
      createdAt: now,
      nextAttemptAt: this.relay ? now : null,
      attempts: [],
      sentAt: null,
    }
    this.store.mailMessages.put(id, record)
    if (record.nextAttemptAt !== null) this.store.mailDue.put([record.nextAttemptAt, id], id)
    this.store.mailByTime.put([now, id], id)
    this.store.mailByAddress.put([to, now, id], id)
    if (record.organizationId !== null) this.store.mailByOrganization.put([record.organizationId, now, id], id)
    return record
  }

  get(id: string): MailMessageRecord | undefined {
    return this.store.mailMessages.get(id)
  }

  /** What a message says, while it is kept (until it is sent or failed); null after. */
  content(record: MailMessageRecord): MailContent | null {
    if (record.sealed === null) return null
    const bytes = Buffer.from(record.sealed, 'base64url')
    const decipher = createDecipheriv('aes-256-gcm', this.key, bytes.subarray(0, 12))
    decipher.setAuthTag(bytes.subarray(12, 28))
    return JSON.parse(Buffer.concat([decipher.update(bytes.subarray(28)), decipher.final()]).toString('utf8')) as MailContent
  }

  #seal(content: MailContent): string {
    const iv = randomBytes(12)
    const cipher = createCipheriv('aes-256-gcm', this.key, iv)
    const body = Buffer.concat([cipher.update(JSON.stringify(content), 'utf8'), cipher.final()])
    return Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url')
  }

  /** The newest messages first, optionally of one state. */
  *list(options: { state?: MailState; limit: number }): Generator<MailMessageRecord> {
    let n = 0
    for (const { value } of this.store.mailByTime.range({ start: [Number.MAX_SAFE_INTEGER, ''], end: [0, ''], reverse: true })) {
      const record = this.store.mailMessages.get(value)
      if (record === undefined || (options.state !== undefined && record.state !== options.state)) continue
      yield record
      if (++n >= options.limit) return
    }
  }

  /** Messages due to be sent now (oldest due first). */
  *due(now: number, limit: number): Generator<MailMessageRecord> {
    let n = 0
    for (const { value } of this.store.mailDue.range({ start: [0, ''], end: [now + 1, ''] })) {
      const record = this.store.mailMessages.get(value)
      if (record === undefined) continue
      yield record
      if (++n >= limit) return
    }
  }

  /** The messages waiting to be sent (queued or retrying) and when the oldest was queued (null: none), in one pass for the metrics. */
  waiting(): { count: number; oldestCreatedAt: number | null } {
    let count = 0
    let oldestCreatedAt: number | null = null
    for (const { value } of this.store.mailDue.range({ start: [0, ''], end: [Number.MAX_SAFE_INTEGER, ''] })) {
      const record = this.store.mailMessages.get(value)
      if (record === undefined) continue
      count++
      if (oldestCreatedAt === null || record.createdAt < oldestCreatedAt) oldestCreatedAt = record.createdAt
    }
    return { count, oldestCreatedAt }
  }

  /** Records an attempt's outcome (inside a commit): sent, retried at `next`, or failed for good. */
  recordAttempt(
    record: MailMessageRecord,
    outcome: { answer: string; code: number | null; at: number },
    next: number | null,
    sent: boolean,
  ): MailMessageRecord {
    if (record.nextAttemptAt !== null) this.store.mailDue.remove([record.nextAttemptAt, record.id])
    const done = sent || next === null
    const updated: MailMessageRecord = {
      ...record,
      state: sent ? 'sent' : next === null ? 'failed' : 'retrying',
      attempts: [...record.attempts, outcome].slice(-20),
      nextAttemptAt: done ? null : next,
      sentAt: sent ? outcome.at : null,
      // The content (a link, a submission's fields) goes once it has been handed over or given up on.
      sealed: done ? null : record.sealed,
    }
    this.store.mailMessages.put(record.id, updated)
    if (updated.nextAttemptAt !== null) this.store.mailDue.put([updated.nextAttemptAt, record.id], record.id)
    return updated
  }

  /** A retrying message due now (`plinth mail retry`); a held one too once a relay is configured. Returns the record, or a reason it cannot be. */
  retryNow(id: string): MailMessageRecord | string {
    const record = this.store.mailMessages.get(id)
    if (record === undefined) return `no message ${id} in the outbox (plinth mail list shows them)`
    if (record.sealed === null) return `message ${id} is ${record.state}: its content was dropped, nothing is left to send`
    if (!this.relay) return 'no relay is configured (PLINTH_SMTP_URL): nothing can be sent from this server'
    const now = this.clock.now()
    if (record.nextAttemptAt !== null) this.store.mailDue.remove([record.nextAttemptAt, id])
    const updated: MailMessageRecord = { ...record, state: record.state === 'held' ? 'queued' : record.state, nextAttemptAt: now }
    this.store.mailMessages.put(id, updated)
    this.store.mailDue.put([now, id], id)
    return updated
  }

  /** Drops messages older than 30 days whatever their state (inside a commit); returns how many went. */
  sweep(limit = 1000): number {
    const before = this.clock.now() - MAIL_KEPT_MS
    const old = [...this.store.mailByTime.range({ start: [0, ''], end: [before, ''] })].slice(0, limit)
    for (const { key, value } of old) {
      const record = this.store.mailMessages.get(value)
      this.store.mailByTime.remove(key)
      if (record === undefined) continue
      this.store.mailMessages.remove(record.id)
      if (record.nextAttemptAt !== null) this.store.mailDue.remove([record.nextAttemptAt, record.id])
      this.store.mailByAddress.remove([record.to, record.createdAt, record.id])
      if (record.organizationId !== null) this.store.mailByOrganization.remove([record.organizationId, record.createdAt, record.id])
    }
    return old.length
  }
}
