import type { StoreFor } from '../../core/store/reader.js'

/** The tables this concern owns: form submissions, their counts and files, webhook secrets and the webhook outbox, notifications by mail. */
export type FormsStoreOwn =
  | 'formDigestsDue'
  | 'formFileBytes'
  | 'formNotify'
  | 'formNotifyTokens'
  | 'formStats'
  | 'formSubmissions'
  | 'submissionsByForm'
  | 'submissionsBySpam'
  | 'webhookDeliveries'
  | 'webhookSecrets'
  | 'webhooksDue'
  | 'putBlob'
  | 'putSubmission'
  | 'removeSubmission'
  | 'nextSeq'

/** The store as this concern holds it: its own tables writable, every other table read-only. */
export type FormsStore = StoreFor<FormsStoreOwn>
