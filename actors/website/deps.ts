// What the registry hands a website actor: the store and pools it works with, and the callbacks that keep the rest in step.
import type { Clock } from '../../core/clock.js'
import type { WebsiteRecord } from '../../core/schemas/records.js'
import type { WebsiteStore } from './tables.js'
import type { Gate, SiteContent } from '../../render/gate.js'
import type { ToolPool } from '../../render/tool-pool.js'
import type { ContentCache } from '../content-cache.js'
import type { HostnameTable } from '../domains/hostnames.js'
import type { Lane } from '../mailbox.js'

/** Callbacks the registry gives an actor so that hostname tables follow committed state. */
export interface WebsiteObserver {
  websiteChanged(previous: WebsiteRecord | null, next: WebsiteRecord): void
  /** What the published host serves changed (a cache tier in front is purged). */
  publishedChanged(websiteId: string): void
}

export interface WebsiteActorDeps {
  /** The website's one lane: its commands queue there with those of its domains, CMS and settings. */
  lane: Lane
  store: WebsiteStore
  clock: Clock
  observer: WebsiteObserver
  /** The one owner of labels: a rename claims the new one and frees the old inside its commit. */
  hostnames: HostnameTable
  cache: ContentCache
  /** Worker pools for formatting, AST edits and search of framework files. */
  tools: ToolPool
  /** The quality gate that builds framework versions (absent in the offline CLI). */
  gate?: Gate
  /** The published origin of a label, for canonical URLs in built documents. */
  siteOrigin(label: string): string
  /** A static site's pages generated from its CMS (the managed blog): path to HTML; none without a blog. */
  generatedPages?(websiteId: string, origin: string): { path: string; html: string }[]
  /** The website's CMS content as page code reads it (published items to build, placeholders to check), with its types. */
  cmsData?(websiteId: string, origin: string, phase: 'check' | 'build'): SiteContent
  log?: { error(message: string, fields?: Record<string, unknown>): void }
  /** 402 `plan_limit` when the organization's plan has no room for one more website of a kind (restore); inside the commit. */
  assertRoom?(orgId: string, kind: string): void
}
