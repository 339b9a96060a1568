import { Type, type Static } from '@sinclair/typebox'
import { PERSON_ROLES, ROLES } from '../roles.js'
import { AuditActor } from './audit.js'
import { StringEnum } from './common.js'
import { Ms, NullableMs } from './records.js'

/**
 * Stored records of people and what they hold: persons, memberships, collaborations, invitations,
 * dashboard sessions, one-time codes, OAuth clients, grants and tokens, transfers, plans, feedback.
 * Secrets appear only as sha256 hashes (`…Hash`); times are epoch milliseconds.
 */

const NullableString = Type.Union([Type.String(), Type.Null()])
const PersonRoleSchema = StringEnum(PERSON_ROLES)
const KeyRoleSchema = StringEnum(ROLES)

export const PersonRecord = Type.Object({
  v: Type.Literal(1),
  id: Type.String(),
  /** As given; null until the owner of the first start sets it. */
  email: NullableString,
  name: Type.String(),
  /** scrypt: `scrypt$N$r$p$salt$hash` (base64url); null until set. */
  passwordHash: NullableString,
  /** The organization made for this person, whose owner they are. */
  personalOrgId: Type.String(),
  createdAt: Ms,
  updatedAt: Ms,
  /**
   * An email change asked for and not yet confirmed (the link went to the new address); the email
   * above stays until it is. A new request replaces it, and the older link stops working.
   */
  pendingEmail: Type.Optional(Type.Object({ email: Type.String(), tokenHash: Type.String(), expiresAt: Ms })),
  /** The workspace the person last acted in on the dashboard (a sign-in lands there); absent: their own. */
  lastWorkspaceId: Type.Optional(Type.String()),
})
export type PersonRecord = Static<typeof PersonRecord>

/** `[orgId, personId]`: a person's role in an organization. */
export const MembershipRecord = Type.Object({
  v: Type.Literal(1),
  orgId: Type.String(),
  personId: Type.String(),
  role: PersonRoleSchema,
  seq: Type.Integer(),
  createdAt: Ms,
})
export type MembershipRecord = Static<typeof MembershipRecord>

/** `[websiteId, personId]`: a person outside the organization with a role on one website. */
export const CollaboratorRecord = Type.Object({
  v: Type.Literal(1),
  websiteId: Type.String(),
  orgId: Type.String(),
  personId: Type.String(),
  role: StringEnum(['full_editor', 'content_editor'] as const),
  seq: Type.Integer(),
  createdAt: Ms,
})
export type CollaboratorRecord = Static<typeof CollaboratorRecord>

/** An invitation to an organization (`member`) or one of its websites (`collaborator`). */
export const InvitationRecord = Type.Object({
  v: Type.Literal(1),
  id: Type.String(),
  kind: StringEnum(['member', 'collaborator'] as const),
  orgId: Type.String(),
  websiteId: NullableString,
  email: Type.String(),
  role: KeyRoleSchema,
  codeHash: Type.String(),
  seq: Type.Integer(),
  createdAt: Ms,
  expiresAt: Ms,
  acceptedAt: NullableMs,
  acceptedBy: NullableString,
  revokedAt: NullableMs,
  invitedBy: AuditActor,
})
export type InvitationRecord = Static<typeof InvitationRecord>

/** A dashboard session, keyed by the hash of its cookie value. */
export const SessionRecord = Type.Object({
  v: Type.Literal(1),
  personId: Type.String(),
  createdAt: Ms,
  /** Last use, written at most every SESSION_TOUCH_MS (the idle expiry counts from it). */
  seenAt: Ms,
  /** Absolute expiry. */
  expiresAt: Ms,
  /** The browser and system it was signed in from ("Chrome 131 on Linux"), for the account screen. */
  device: Type.Optional(Type.String()),
})
export type SessionRecord = Static<typeof SessionRecord>

/** A one-time code, keyed by its hash: the owner's setup link. */
export const OneTimeRecord = Type.Object({
  v: Type.Literal(1),
  /**
   * setup: the owner's first sign-in (plinth user reset-password too); reset: a password reset link
   * sent by mail; email: the confirmation of an email change, sent to the new address.
   */
  kind: Type.Union([Type.Literal('setup'), Type.Literal('reset'), Type.Literal('email')]),
  personId: Type.String(),
  expiresAt: Ms,
})
export type OneTimeRecord = Static<typeof OneTimeRecord>

/** A dynamically registered OAuth client (RFC 7591); public, PKCE only. */
export const OAuthClientRecord = Type.Object({
  v: Type.Literal(1),
  id: Type.String(),
  name: Type.String(),
  redirectUris: Type.Array(Type.String()),
  /** The client metadata as registered (RFC 7591 section 3.2.1 echoes it). */
  metadata: Type.Record(Type.String(), Type.Unknown()),
  createdAt: Ms,
})
export type OAuthClientRecord = Static<typeof OAuthClientRecord>

/** What a person consented to: one client, one organization, one scope; its tokens hang off it. */
export const OAuthGrantRecord = Type.Object({
  v: Type.Literal(1),
  id: Type.String(),
  clientId: Type.String(),
  personId: Type.String(),
  orgId: Type.String(),
  scope: Type.String(),
  /** The resource (RFC 8707) the tokens are bound to. */
  resource: Type.String(),
  createdAt: Ms,
  revokedAt: NullableMs,
})
export type OAuthGrantRecord = Static<typeof OAuthGrantRecord>

/** An authorization code, keyed by its hash: single use, minutes long. */
export const OAuthCodeRecord = Type.Object({
  v: Type.Literal(1),
  grantId: Type.String(),
  clientId: Type.String(),
  redirectUri: Type.String(),
  codeChallenge: Type.String(),
  expiresAt: Ms,
  usedAt: NullableMs,
})
export type OAuthCodeRecord = Static<typeof OAuthCodeRecord>

/** An access or refresh token, keyed by its hash. A used refresh token stays, so a reuse is recognised. */
export const OAuthTokenRecord = Type.Object({
  v: Type.Literal(1),
  kind: StringEnum(['access', 'refresh'] as const),
  grantId: Type.String(),
  expiresAt: Ms,
  usedAt: NullableMs,
})
export type OAuthTokenRecord = Static<typeof OAuthTokenRecord>

/** A website transfer between organizations. */
export const TransferRecord = Type.Object({
  v: Type.Literal(1),
  id: Type.String(),
  websiteId: Type.String(),
  fromOrgId: Type.String(),
  toOrgId: NullableString,
  codeHash: Type.String(),
  status: StringEnum(['pending', 'cancelled', 'accepted'] as const),
  createdAt: Ms,
  expiresAt: Ms,
  endedAt: NullableMs,
})
export type TransferRecord = Static<typeof TransferRecord>

/** An organization's plan (billing on). */
export const PlanRecord = Type.Object({
  v: Type.Literal(1),
  orgId: Type.String(),
  plan: StringEnum(['free', 'base', 'max'] as const),
  comped: Type.Boolean(),
  stripeCustomerId: NullableString,
  stripeSubscriptionId: NullableString,
  updatedAt: Ms,
})
export type PlanRecord = Static<typeof PlanRecord>

export const FeedbackRecord = Type.Object({
  v: Type.Literal(1),
  id: Type.String(),
  orgId: Type.String(),
  actor: AuditActor,
  message: Type.String(),
  context: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()]),
  createdAt: Ms,
})
export type FeedbackRecord = Static<typeof FeedbackRecord>
