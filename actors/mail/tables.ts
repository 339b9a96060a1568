import type { StoreFor } from '../../core/store/reader.js'

/** The tables this concern owns: the outbox's messages and their indexes (what is due, by time, by address, by organization). */
export type MailStoreOwn = 'mailMessages' | 'mailDue' | 'mailByTime' | 'mailByAddress' | 'mailByOrganization'

/** The store as this concern holds it: its own tables writable, every other table read-only. */
export type MailStore = StoreFor<MailStoreOwn>
