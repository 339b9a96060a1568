// Which MCP tools a client sees: the tasks an agent does by default, the rest in named toolsets enabled on the URL.
import { ApiError } from '../core/errors.js'
import type { AnyOperation } from './operation.js'

/**
 * The tools every connection lists: what the hosted product's agent skill names (publish, edit over
 * a lease, check, publish, roll back, domains, shared files, billing) and the few reads and writes an
 * agent needs around them. Kept under 50: clients slow down or cut off past a few dozen tools.
 */
export const CORE_TOOLS: ReadonlySet<string> = new Set([
  // Who and what
  'whoami',
  'list_websites',
  'get_website',
  'create_website',
  'update_website',
  'delete_website',
  'create_claim_code',
  'claim_website',
  'set_website_password',
  'set_folder_password',
  'email_link',
  'get_billing',
  // Editing a site
  'acquire_edit_lease',
  'list_source_files',
  'read_source_file',
  'read_source_files',
  'put_source_file',
  'str_replace',
  'delete_source_file',
  'search_source',
  'deploy_files',
  'begin_deploy',
  // The gate and publishing
  'check_head',
  'get_deployment_status',
  'list_versions',
  'publish_website',
  'rollback_website',
  'unpublish_website',
  // Domains
  'list_domains',
  'add_domain',
  'verify_domain',
  'set_primary_domain',
  'connect_domain',
  'get_namespace',
  'check_namespace',
  'rename_namespace',
  'rename_vanity',
  // Shared files
  'begin_object_upload',
  'finalize_object_upload',
  'resume_object_upload',
  'list_objects',
  'rename_object',
  'label_folder',
  'move_object',
  'delete_object',
  'delete_folder',
  'list_archive_entries',
  'list_uploads_in_progress',
  'clear_uploads_in_progress',
  // Forms, analytics, assets at a glance (removing a domain and listing assets are in their toolsets: the list stays under 50)
  'list_form_submissions',
  'get_analytics',
  'delete_asset',
])

/** The toolsets a client may add with `?toolsets=a,b` (or `all`), each with what it holds. */
export const TOOLSETS = {
  sites: 'more on websites and their source: restore, subdomain, deployed files, changes, diffs, routes, metadata, rebuilds, packages',
  files: 'more on shared files: update, folders, single uploads',
  assets: "the asset library's uploads, imports, details and image variants",
  forms: 'forms, one submission, marking and deleting submissions, webhook secrets',
  domains: "every domain of the organization, one domain's details",
  analytics: 'analytics queries, time series, realtime, shared dashboards',
  cms: 'the deprecated CMS, the managed blog and legacy pages (for sites that already use them)',
  team: 'members, collaborators, invitations and transfers',
  admin: 'API keys, the audit log, billing checkout and portal, connected apps, feedback',
  functions: "sites' functions: their logs, variables and secrets, and key-value store",
} as const

export type Toolset = keyof typeof TOOLSETS

/** The toolset an operation's tool belongs to when it is not a core tool: by its resource. */
export function toolsetOf(operation: AnyOperation): Toolset | 'core' {
  if (operation.tool !== null && CORE_TOOLS.has(operation.tool)) return 'core'
  const id = operation.operationId
  const prefix = id.split('.')[0]!
  if (prefix === 'cms' || prefix === 'blog' || prefix === 'pages') return 'cms'
  if (prefix === 'members' || prefix === 'collaborators' || id.startsWith('websites.transfer')) return 'team'
  if (prefix === 'apiKeys' || prefix === 'auditLog' || prefix === 'billing' || prefix === 'feedback' || id.startsWith('me.connections'))
    return 'admin'
  if (prefix === 'analytics') return 'analytics'
  if (prefix === 'assets') return 'assets'
  if (prefix === 'storage') return 'files'
  if (prefix === 'forms') return 'forms'
  if (prefix === 'domains') return 'domains'
  if (prefix === 'functions') return 'functions'
  return 'sites'
}

/**
 * The toolsets a request's `toolsets` query parameter enables (`cms,admin`, or `all`); none when it
 * is absent. An unknown name is a 400 that lists the names there are.
 */
export function enabledToolsets(query: string): ReadonlySet<Toolset> | 'all' {
  const raw = new URLSearchParams(query).getAll('toolsets').flatMap((value) => value.split(','))
  const names = raw.map((name) => name.trim().toLowerCase()).filter((name) => name !== '')
  if (names.includes('all')) return 'all'
  const unknown = names.filter((name) => !Object.hasOwn(TOOLSETS, name))
  if (unknown.length > 0) {
    throw new ApiError(
      'validation',
      `Unknown toolset ${unknown.join(', ')}; the toolsets are ${Object.keys(TOOLSETS).join(', ')} (or all), as /v1/mcp?toolsets=cms,admin`,
      { field: 'query.toolsets' },
    )
  }
  return new Set(names as Toolset[])
}
