/**
 * Roles and the capabilities they grant (spec: Authentication, roles are additive:
 * content_editor within full_editor within admin). This table is the only place that says which
 * role may do what; operations name a capability and the pipeline checks it here.
 */

export const ROLES = ['content_editor', 'full_editor', 'admin'] as const
export type Role = (typeof ROLES)[number]

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

export const ROLE_CAPABILITIES: Readonly<Record<Role, ReadonlySet<Capability>>> = Object.freeze({
  content_editor: new Set<Capability>(CONTENT_EDITOR),
  full_editor: new Set<Capability>(FULL_EDITOR),
  admin: new Set<Capability>(ADMIN),
})

/** True when `role` grants `capability`. */
export function roleGrants(role: Role, capability: Capability): boolean {
  return ROLE_CAPABILITIES[role].has(capability)
}

/** The capabilities of a role, in the stable order of CAPABILITIES. */
export function capabilitiesOf(role: Role): Capability[] {
  return CAPABILITIES.filter((c) => ROLE_CAPABILITIES[role].has(c))
}
