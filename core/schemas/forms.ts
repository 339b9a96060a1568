import { Type, type Static } from '@sinclair/typebox'
import { Ms, NullableMs } from './records.js'

/** A file sent with a submission: stored as a content-addressed blob, listed with its submission. */
export const SubmissionFile = Type.Object({
  field: Type.String(),
  filename: Type.String(),
  contentType: Type.String(),
  size: Type.Integer({ minimum: 0 }),
  hash: Type.String(),
})
export type SubmissionFile = Static<typeof SubmissionFile>

/** One webhook delivery attempt of a submission. */
export const DeliveryAttempt = Type.Object({
  at: Ms,
  /** The receiver's HTTP status; null when no answer came (refused, timed out, blocked). */
  status: Type.Union([Type.Integer(), Type.Null()]),
  error: Type.Union([Type.String(), Type.Null()]),
})
export type DeliveryAttempt = Static<typeof DeliveryAttempt>

export const SubmissionRecord = Type.Object({
  v: Type.Literal(1),
  id: Type.String(),
  websiteId: Type.String(),
  form: Type.String(),
  seq: Type.Integer(),
  data: Type.Record(Type.String(), Type.Union([Type.String(), Type.Array(Type.String())])),
  files: Type.Array(SubmissionFile),
  spam: Type.Boolean(),
  read: Type.Boolean(),
  /** Posted on the draft host. */
  draft: Type.Boolean(),
  createdAt: Ms,
  /** The webhook's state for this submission: none configured, pending (retries left), delivered or failed for good. */
  webhook: Type.Union([Type.Literal('none'), Type.Literal('pending'), Type.Literal('delivered'), Type.Literal('failed')]),
  deliveries: Type.Array(DeliveryAttempt),
})
export type SubmissionRecord = Static<typeof SubmissionRecord>

/** Counts per form of a website (kept with each submission, so listing forms reads no submissions). */
export const FormStatsRecord = Type.Object({
  v: Type.Literal(1),
  websiteId: Type.String(),
  form: Type.String(),
  submissions: Type.Integer({ minimum: 0 }),
  spam: Type.Integer({ minimum: 0 }),
  lastSubmissionAt: NullableMs,
})
export type FormStatsRecord = Static<typeof FormStatsRecord>

/** A webhook delivery in the durable outbox: retried with backoff until delivered or its 24 hours end. */
export const WebhookDeliveryRecord = Type.Object({
  v: Type.Literal(1),
  id: Type.String(),
  submissionId: Type.String(),
  websiteId: Type.String(),
  url: Type.String(),
  /** The JSON body sent, fixed at submission time (retries send the same bytes). */
  body: Type.String(),
  createdAt: Ms,
  attempts: Type.Integer({ minimum: 0 }),
  nextAttemptAt: Ms,
})
export type WebhookDeliveryRecord = Static<typeof WebhookDeliveryRecord>

/** The generation of a website's webhook signing secret (the secret is derived from it, never stored). */
export const WebhookSecretRecord = Type.Object({
  v: Type.Literal(1),
  websiteId: Type.String(),
  generation: Type.Integer({ minimum: 0 }),
  rotatedAt: Ms,
})
export type WebhookSecretRecord = Static<typeof WebhookSecretRecord>

/** One address a form's submissions are mailed to: active, or pending until a link sent to it is opened. */
export const NotifyRecipient = Type.Object({
  email: Type.String(),
  /** active: mailed each submission; pending: a confirmation link went to the address (not a member's). */
  state: Type.Union([Type.Literal('active'), Type.Literal('pending')]),
  /** pending: the hash of the confirmation link's token. */
  tokenHash: Type.Union([Type.String(), Type.Null()]),
  /** pending: until when the link works. */
  expiresAt: NullableMs,
  addedAt: Ms,
})
export type NotifyRecipient = Static<typeof NotifyRecipient>

/**
 * `[websiteId, form]` to who is mailed the form's submissions, and the minute's count: past the
 * per-minute number, submissions wait for one digest at the minute's end instead of a mail each.
 */
export const FormNotifyRecord = Type.Object({
  v: Type.Literal(1),
  websiteId: Type.String(),
  form: Type.String(),
  recipients: Type.Array(NotifyRecipient),
  /** The current minute: when it began, and how many submissions were mailed one by one in it. */
  windowStart: Ms,
  mailed: Type.Integer({ minimum: 0 }),
  /** Submissions waiting for the digest, and when it is due (null: none waiting). */
  held: Type.Integer({ minimum: 0 }),
  digestAt: NullableMs,
})
export type FormNotifyRecord = Static<typeof FormNotifyRecord>
