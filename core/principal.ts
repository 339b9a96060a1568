import type { ActorKind, AuditActorValue } from './schemas/audit.js'
import { capabilitiesOf, roleGrants, type Capability, type PersonRole } from './roles.js'

/** What a principal may reach in its organization: every website, or only some, with one role. */
export interface PrincipalAccess {
  kind: 'organization' | 'websites'
  role: PersonRole
  websiteIds?: string[]
}

/**
 * Who is calling, resolved from the credential before any handler runs: an API key (`api_key`), a
 * person through an OAuth access token (`oauth`) or a dashboard session (`user`). Each acts in one
 * organization with one role, checked against the same capability table.
 */
export interface Principal {
  kind: ActorKind
  /** The API key id, or the person's id for `oauth` and `user`. */
  id: string
  name: string | null
  orgId: string
  access: PrincipalAccess
  /** The OAuth client's name (`metadata.agent` of audit entries); null otherwise. */
  agent: string | null
  /** An OAuth principal only: the grant its token belongs to (a token signed for it dies with the grant). */
  grantId?: string
  /** A dashboard session's principal only: the hash of its cookie (the account screen keeps it through a password change). */
  session?: string
  /** A deploy ticket's principal only: the ticket it spent. */
  ticket?: TicketUse
  /**
   * An API key's principal only: when the key was last rotated (null: never). A token signed for it
   * carries this, and ends when the key is rotated again: a rotation ends what the old secret made.
   */
  keyRotatedAt?: number | null
}

/** What a deploy ticket's principal carries of its ticket. */
export interface TicketUse {
  /** The head version the ticket was issued at (the deploy expects it). */
  headVersion: number
  /** The ticket's nonce: a request that deployed nothing gives the ticket back. */
  nonce: string
  /** When the first ticket of its chain (begin_deploy's) expires: no ticket is renewed from it after that. */
  chainExpiresAt: number
}

/** The person behind an `oauth` or `user` principal; null for an API key. */
export function personOf(principal: Principal): string | null {
  return principal.kind === 'api_key' ? null : principal.id
}

/** True when the principal's scope covers the website (organization scope covers all of its org). */
export function principalCovers(principal: Principal, orgId: string, websiteId: string): boolean {
  if (principal.orgId !== orgId) return false
  return principal.access.kind === 'organization' || (principal.access.websiteIds ?? []).includes(websiteId)
}

export function principalCan(principal: Principal, capability: Capability): boolean {
  return roleGrants(principal.access.role, capability)
}

export function principalCapabilities(principal: Principal): Capability[] {
  return capabilitiesOf(principal.access.role)
}

/** The audit actor for a principal (an OAuth client's name rides along and lands in `metadata.agent`). */
export function actorOf(principal: Principal): AuditActorValue {
  return principal.agent === null
    ? { kind: principal.kind, id: principal.id, name: principal.name }
    : { kind: principal.kind, id: principal.id, name: principal.name, agent: principal.agent }
}

/** Who issued a signed token (a deploy ticket, an upload token), as its claims carry them. */
export interface Issuer {
  kind: Principal['kind']
  id: string
  name: string | null
  agent: string | null
  role: PersonRole
  /** An OAuth issuer's grant: the token stops working when the person disconnects the application. */
  grant?: string
  /** An API key issuer's last rotation when the token was signed (absent: never rotated): a later rotation ends the token. */
  rotatedAt?: number
}

export function issuerOf(principal: Principal): Issuer {
  const by: Issuer = { kind: principal.kind, id: principal.id, name: principal.name, agent: principal.agent, role: principal.access.role }
  if (principal.grantId !== undefined) by.grant = principal.grantId
  if (principal.keyRotatedAt !== undefined && principal.keyRotatedAt !== null) by.rotatedAt = principal.keyRotatedAt
  return by
}

/** The principal a signed token acts as: its issuer, with the issuer's role, on its one website. */
export function issuerOnWebsite(by: Issuer, orgId: string, websiteId: string): Principal {
  const principal: Principal = {
    kind: by.kind,
    id: by.id,
    name: by.name,
    agent: by.agent,
    orgId,
    access: { kind: 'websites', role: by.role, websiteIds: [websiteId] },
  }
  if (by.grant !== undefined) principal.grantId = by.grant
  if (by.kind === 'api_key') principal.keyRotatedAt = by.rotatedAt ?? null
  return principal
}
