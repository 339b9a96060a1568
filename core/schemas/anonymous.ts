import { Type, type Static } from '@sinclair/typebox'
import { Ms, NullableMs } from './records.js'

const NullableString = Type.Union([Type.String(), Type.Null()])

/**
 * An anonymous credential (`wa_…`, stored only as its hash). It owns a hidden organization holding
 * its one website and one storage site until a person claims them, and the deadlines of both.
 */
export const AnonymousCredentialRecord = Type.Object({
  v: Type.Literal(1),
  id: Type.String(),
  tokenHash: Type.String(),
  /** The network it was issued to (an IPv4 address or an IPv6 /64). */
  network: Type.String(),
  createdAt: Ms,
  state: Type.Union([Type.Literal('active'), Type.Literal('claimed'), Type.Literal('expired')]),
  /** The hidden organization of its sites (made with the first site). */
  orgId: NullableString,
  /** Seven days after the first site: claimable until then, purged then. */
  claimUntil: NullableMs,
  /** The current website, and the end of its 24-hour window (never past claimUntil). */
  websiteId: NullableString,
  websiteUntil: NullableMs,
  /** The storage site, and the end of its 24 hours. */
  storageId: NullableString,
  storageUntil: NullableMs,
  /** Decoded bytes sent over every create, update and swap (never refunded). */
  bytesUsed: Type.Integer({ minimum: 0 }),
  claimedBy: NullableString,
  claimedAt: NullableMs,
  /** The personal workspace the sites moved to. */
  claimedInto: NullableString,
})
export type AnonymousCredentialRecord = Static<typeof AnonymousCredentialRecord>

/** A claim code (`wc_…`, stored as its hash): lets the helper claim for the person who made it. */
export const ClaimCodeRecord = Type.Object({
  v: Type.Literal(1),
  personId: Type.String(),
  createdAt: Ms,
  expiresAt: Ms,
})
export type ClaimCodeRecord = Static<typeof ClaimCodeRecord>

/** An operator's invite code for anonymous publishing in invite-only mode (`wv_…`, stored as its hash). */
export const AnonymousInviteRecord = Type.Object({
  v: Type.Literal(1),
  createdAt: Ms,
  expiresAt: NullableMs,
  /** Credentials it may still issue; null: unlimited. */
  usesLeft: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()]),
  note: NullableString,
})
export type AnonymousInviteRecord = Static<typeof AnonymousInviteRecord>
