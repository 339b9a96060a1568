import { Type, type Static } from '@sinclair/typebox'
import { Ms, NullableMs } from './records.js'

/** Why a message was written: each has its own template, and its own words in `plinth mail list`. */
export const MAIL_KINDS = [
  'password_reset',
  'invitation',
  'email_change',
  'email_changed',
  'form_submission',
  'form_digest',
  'form_notify_confirm',
  'link',
  'test',
] as const
export type MailKind = (typeof MAIL_KINDS)[number]

/**
 * Where a message stands: `held` (no relay is configured: it waits for the operator, `plinth mail
 * show`), `queued` (to be sent), `retrying` (a relay answered a temporary failure or none came),
 * `sent` (a relay took it: its answer kept), `failed` (a permanent refusal, or 48 hours of retries).
 */
export const MAIL_STATES = ['held', 'queued', 'retrying', 'sent', 'failed'] as const
export type MailState = (typeof MAIL_STATES)[number]

/** One attempt to hand the message to the relay. */
export const MailAttempt = Type.Object({
  at: Ms,
  /** The relay's answer (`250 2.0.0 Ok: queued as …`), or what went wrong before one came. */
  answer: Type.String(),
  /** The SMTP reply code, or null when no reply came (refused, timed out, TLS failed). */
  code: Type.Union([Type.Integer(), Type.Null()]),
})
export type MailAttempt = Static<typeof MailAttempt>

/**
 * A message of the outbox, written in the same commit as what caused it and sent after. Its content
 * (which may hold a reset or invitation link) is sealed with a key derived from the installation's
 * secret, never in clear in the database or a backup, and dropped once the message is sent or failed:
 * what stays for 30 days is who, what kind, when and the relay's answers.
 */
export const MailMessageRecord = Type.Object({
  v: Type.Literal(1),
  id: Type.String(),
  kind: Type.Union(MAIL_KINDS.map((k) => Type.Literal(k))),
  /** The organization the message is sent for (limits count per organization), or null (a person's own mail). */
  organizationId: Type.Union([Type.String(), Type.Null()]),
  /** The one recipient (a message a person is sent; several recipients are several messages). */
  to: Type.String(),
  subject: Type.String(),
  /** The `Message-ID` header, without its angle brackets. */
  messageId: Type.String(),
  /** AES-256-GCM of the JSON `{text, html, headers}`: iv, tag and ciphertext, base64url; null once sent or failed. */
  sealed: Type.Union([Type.String(), Type.Null()]),
  state: Type.Union(MAIL_STATES.map((s) => Type.Literal(s))),
  createdAt: Ms,
  nextAttemptAt: NullableMs,
  attempts: Type.Array(MailAttempt),
  sentAt: NullableMs,
})
export type MailMessageRecord = Static<typeof MailMessageRecord>
