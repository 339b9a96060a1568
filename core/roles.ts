/**
 * Roles and the capabilities they grant (spec: Authentication, roles are additive:
 * content_editor within full_editor within admin). This table is the only place that says which
 * role may do what; operations name a capability and the pipeline checks it here.
 */

/** Roles a key (or a collaborator, or an OAuth scope) may hold. */
export const ROLES = ['content_editor', 'full_editor', 'admin'] as const
export type Role = (typeof ROLES)[number]

/** Roles a person may hold in an organization: `owner` is a person's role only, never a key's. */
export const PERSON_ROLES = ['owner', ...ROLES] as const
export type PersonRole = (typeof PERSON_ROLES)[number]

/** Weakest first: a person acting through a scope gets the weaker of the two. */
const RANK: Readonly<Record<PersonRole, number>> = { content_editor: 0, full_editor: 1, admin: 2, owner: 3 }

/** The weaker of two roles. */
export function weakerRole(a: PersonRole, b: PersonRole): PersonRole {
  return RANK[a] <= RANK[b] ? a : b
}

/** True when `role` is at least `floor`. */
export function roleAtLeast(role: PersonRole, floor: PersonRole): boolean {
  return RANK[role] >= RANK[floor]
}

/** OAuth scopes and the key roles they map onto (issue 12): never more than the person's own role. */
export const SCOPE_ROLES: Readonly<Record<string, Role>> = {
  'platform:content': 'content_editor',
  'platform:edit': 'full_editor',
  'platform:admin': 'admin',
}
export const SCOPES = Object.keys(SCOPE_ROLES)

/** content_editor: read websites and schema; CMS items; assets; read pages. */
const CONTENT_EDITOR = [
  'websites.read',
  'cms.schema.read',
  'cms.items.read',
  'cms.items.write',
  'assets.read',
  'assets.write',
  'pages.read',
] as const

/** full_editor adds source, deploys, publishing, CMS schema, pages, domains, forms, analytics, storage, reading the plan. */
const FULL_EDITOR = [
  ...CONTENT_EDITOR,
  'source.read',
  'source.write',
  'publishing.manage',
  'cms.schema.write',
  'pages.write',
  'domains.read',
  'domains.manage',
  'analytics.read',
  'forms.read',
  'forms.manage',
  'storage.read',
  'storage.write',
  'billing.read',
] as const

/** admin adds creating, renaming and deleting websites, API keys, the audit log and members. */
const ADMIN = [
  ...FULL_EDITOR,
  'websites.create',
  'websites.manage',
  'apiKeys.manage',
  'auditLog.read',
  'members.manage',
  'billing.manage',
] as const

export type Capability = (typeof ADMIN)[number]

/** Every capability, in a stable order. */
export const CAPABILITIES: readonly Capability[] = ADMIN

/** The owner holds every capability an admin does; what only an owner may do is checked by role, not capability. */
export const ROLE_CAPABILITIES: Readonly<Record<PersonRole, ReadonlySet<Capability>>> = Object.freeze({
  content_editor: new Set<Capability>(CONTENT_EDITOR),
  full_editor: new Set<Capability>(FULL_EDITOR),
  admin: new Set<Capability>(ADMIN),
  owner: new Set<Capability>(ADMIN),
})

/** True when `role` grants `capability`. */
export function roleGrants(role: PersonRole, capability: Capability): boolean {
  return ROLE_CAPABILITIES[role].has(capability)
}

/** The capabilities of a role, in the stable order of CAPABILITIES. */
export function capabilitiesOf(role: PersonRole): Capability[] {
  return CAPABILITIES.filter((c) => ROLE_CAPABILITIES[role].has(c))
}
