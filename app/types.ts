/**
 * The shapes of the API answers the dashboard reads, as GET /openapi.json describes them (only the
 * fields the screens use). The dashboard is a client of the public API like any other.
 */

// The formatter the server's own pages use too (shared folders), so sizes read the same everywhere.
export { formatBytes } from '../core/text.js'

export interface Website {
  id: string
  name: string
  kind: 'framework' | 'static' | 'storage'
  slug: string
  subdomain: string
  description: string | null
  headVersion: number
  publishedVersion: number | null
  hasUnpublishedChanges: boolean
  urls: { draft: string | null; published: string | null }
  suspendedAt: string | null
  suspendedReason: string | null
  buildStatus: 'building' | 'ready' | 'failed' | null
  claimHeld: boolean
  passwordProtected: boolean
  analytics: { provider: 'beacon' | 'tracker'; tracking: boolean; trackerId: string; snippet: string; dashboardUrl: string | null }
  deletedAt: string | null
  createdAt: string
  updatedAt: string
}

/** What a website is, in one word a person reads at a glance. */
export function websiteStatus(w: Website): string {
  if (w.deletedAt !== null) return 'in trash'
  if (w.suspendedAt !== null) return 'suspended'
  if (w.claimHeld) return 'held'
  if (w.kind === 'storage') return 'sharing'
  if (w.publishedVersion !== null) return 'live'
  if (w.buildStatus === 'building' || w.buildStatus === 'failed') return w.buildStatus
  return 'draft only'
}

export interface Actor {
  kind: string
  id: string
  name: string | null
}

export interface Version {
  version: number
  isHead: boolean
  isPublished: boolean
  source: string
  message: string | null
  fileCount: number
  totalBytes: number
  createdAt: string
  createdBy: Actor | null
  /** This version served exactly as it is (`v{N}--{subdomain}`); null when there is nothing to show. */
  urls: { preview: string | null }
}

/** A bad line of a static site's _redirects or _headers, named by a deploy's answer. */
export interface RuleWarning {
  file: string
  line: number
  message: string
}

/** A file that differs between two versions (source/changes). */
export interface Change {
  path: string
  change: 'added' | 'removed' | 'modified'
  fromSize: number | null
  toSize: number | null
}

export interface Diagnostic {
  step: string
  severity: 'error' | 'warning'
  file?: string
  line?: number
  column?: number
  message: string
}

export interface Deployment {
  version: number
  status: 'building' | 'ready' | 'failed'
  canPublish: boolean
  diagnostics: Diagnostic[]
  createdAt: string
}

export interface ApiKey {
  id: string
  name: string | null
  access: { kind: 'organization' | 'websites'; role: string; websiteIds?: string[] }
  status: 'active' | 'expired' | 'revoked'
  secretHint: string
  createdAt: string
  expiresAt: string | null
  revokedAt: string | null
  rotatedAt: string | null
  /** Only in the answers to create and rotate: shown once. */
  secret?: string
}

export interface DnsRecord {
  type: string
  name: string
  value: string
}

export interface Domain {
  id: string
  hostname: string
  state: 'pending' | 'verified' | 'active' | 'failed'
  reason: string | null
  primary: boolean
  dnsRecords: DnsRecord[]
  url: string | null
  next: { message: string; checkAgainSeconds: number | null }
  checkedAt: string | null
  activatedAt: string | null
}

export interface FormSummary {
  name: string
  declared: boolean
  config: { redirect?: string; webhook?: string; fields?: string[] } | null
  submissions: number
  spam: number
  lastSubmissionAt: string | null
  endpoint: string
}

export interface Submission {
  id: string
  form: string
  createdAt: string
  spam: boolean
  read: boolean
  data: Record<string, string | string[]>
  files: { field: string; filename: string; contentType: string; size: number }[]
  webhook?: { state: string; attempts: { at: string; status: number | null; error: string | null }[] }
}

export interface StorageObject {
  id: string
  name: string
  folder: string
  size: number
  contentType: string
  url: string
  downloadUrl: string
  folderUrl: string
  expiresAt: string | null
  createdAt: string
  archive?: { files: number }
  label?: string
  folderLabel?: string | null
}

export interface Upload {
  uploadId: string
  name: string
  size: number
  received: number
  uploadUrl: string
  resumeUrl: string
}

/** A file as begin answers it: where its bytes go. */
export interface BegunFile {
  id: string
  name: string
  size: number
  upload: { url: string; headers: Record<string, string> }
  resumeUrl: string
}

export interface Member {
  userId: string
  email: string | null
  name: string
  role: string
  joinedAt: string
}

export interface Invitation {
  id: string
  kind: 'member' | 'collaborator'
  email: string
  role: string
  websiteId: string | null
  status: string
  createdAt: string
  expiresAt: string
  acceptUrl?: string
  /** With acceptUrl: whether the link also went to the address by email. */
  emailed?: boolean
}

export interface AuditEntry {
  id: string
  at: string
  eventType: string
  resourceType: string
  resourceId: string
  websiteId: string | null
  actor: Actor & { agent?: string }
  metadata?: Record<string, unknown>
}

export function actorName(actor: Actor | null | undefined): string {
  if (actor == null) return 'the platform'
  return actor.name ?? `${actor.kind} ${actor.id}`
}

export interface FunctionRoute {
  route: string
  methods: string[]
  file: string
  middleware: boolean
}

export interface FunctionVariable {
  name: string
  secret: boolean
  value: string | null
  updatedAt: string
}

export interface FunctionTypeProblem {
  file: string
  line: number
  column: number
  message: string
}

export interface FunctionsOfVersion {
  version: number
  routes: FunctionRoute[]
  typeProblems: FunctionTypeProblem[]
}

export interface FunctionsSummary {
  head: FunctionsOfVersion
  published: FunctionsOfVersion | null
  variables: FunctionVariable[]
  kv: { keys: number; bytes: number }
}

export interface FunctionLogLine {
  at: string
  type: 'console' | 'exception' | 'invocation'
  level: string
  message: string
  requestId: string
  method: string
  path: string
  status?: number
  durationMs?: number
  cpuMs?: number
  cold?: boolean
  limit?: string
  node?: string
}
