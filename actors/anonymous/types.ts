// What flows into and out of anonymous credential commands: their dependencies, files, sites and claim outcomes.
import type { AnonymousCredentialRecord } from '../../core/schemas/anonymous.js'
import type { AuditActorValue } from '../../core/schemas/audit.js'
import type { OrganizationRecord, WebsiteRecord } from '../../core/schemas/records.js'
import type { Clock } from '../../core/clock.js'
import type { AnonymousStore } from './tables.js'
import type { FileId } from '../../core/typed-files.js'
import type { Logger } from '../../core/log.js'
import type { OrganizationActor } from '../organization/organization.js'
import type { Plans } from '../billing/plans.js'
import type { People } from '../identity/people.js'
import type { WebsiteActor } from '../website/actor.js'
import type { SharedFiles } from '../files/storage.js'
import type { RawFile } from '../website/static-files.js'

export interface AnonymousDeps {
  store: AnonymousStore
  clock: Clock
  log: Logger
  people: People
  plans: Plans
  organization(id: string): OrganizationActor | undefined
  website(id: string): WebsiteActor | undefined
  /** Removes a website for good and forgets its actor. */
  purgeWebsite(id: string, actor: AuditActorValue): Promise<void>
  /** Shared files (the storage site's uploads). */
  files: SharedFiles
}

/** A deadline row: when, what kind of thing, its id. */
export type Key = [number, string, string]

/** What a create or update writes: static files (decoded), framework files, or nothing (storage). */
export type AnonymousFiles =
  { kind: 'static'; files: RawFile[] } | { kind: 'framework'; files: { file: FileId; content: string }[] } | { kind: 'storage' }

/** What a create asks for; `charge` takes the rate-limit buckets once the create passed its checks. */
export interface AnonymousCreateInput {
  name: string
  files: AnonymousFiles
  replace: boolean
  bytes: number
  network: string
  charge?: () => void
}

/** What an update asks for: the whole tree, guarded by the expected head version. */
export interface AnonymousUpdateInput {
  files: AnonymousFiles
  expectedHeadVersion: number
  bytes: number
}

/** A credential with one of its sites (the website, or the storage site). */
export interface AnonymousSite {
  credential: AnonymousCredentialRecord
  website: WebsiteActor
}

/** What a claim answers. */
export interface ClaimOutcome {
  website: WebsiteRecord | null
  storage: WebsiteRecord | null
  workspace: OrganizationRecord
  alreadyClaimed: boolean
}
