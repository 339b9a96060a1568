import type { AccessScope } from './schemas/api-key.js'
import type { ActorKind } from './schemas/audit.js'
import { capabilitiesOf, roleGrants, type Capability } from './roles.js'

/** Who is calling: resolved from the credential before any handler runs. */
export interface Principal {
  kind: ActorKind
  /** The API key id (or person id for people). */
  id: string
  name: string | null
  orgId: string
  access: AccessScope
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
