import { Type, type Static } from '@sinclair/typebox'
import { Ms, NullableMs } from './records.js'

/** A custom domain of a website: what the owner must put in DNS, and how far it got. */
export const DomainRecord = Type.Object({
  v: Type.Literal(1),
  id: Type.String(),
  websiteId: Type.String(),
  /** Lowercase ASCII (IDNA punycode), no trailing dot. */
  hostname: Type.String(),
  /** The value the TXT record `_platform-challenge.<hostname>` must hold. */
  token: Type.String(),
  state: Type.Union([Type.Literal('pending'), Type.Literal('verified'), Type.Literal('active'), Type.Literal('failed')]),
  /** Why it is not active (what the last check found), or null. */
  reason: Type.Union([Type.String(), Type.Null()]),
  primary: Type.Boolean(),
  /** With `primary`: the platform's own subdomain redirects here too. */
  redirectPlatform: Type.Boolean(),
  createdAt: Ms,
  checkedAt: NullableMs,
  activatedAt: NullableMs,
})
export type DomainRecord = Static<typeof DomainRecord>

/**
 * A workspace's namespace: each of its published sites also answers at `{label}.{name}.{siteDomain}`.
 * Its name shares one name space with the sites' own labels (one cannot take another's).
 */
export const NamespaceRecord = Type.Object({
  v: Type.Literal(1),
  orgId: Type.String(),
  name: Type.String(),
  /** Renames made (taking the first name is none): limited for the workspace's lifetime. */
  renames: Type.Integer({ minimum: 0 }),
  /** When the front (Caddy's on-demand TLS) first asked for a certificate of a host under this name; null since the last rename. */
  certificateAt: NullableMs,
  createdAt: Ms,
  renamedAt: NullableMs,
})
export type NamespaceRecord = Static<typeof NamespaceRecord>
