// The registry's settings, as the composition root (plinth/services.ts) passes them: the store, clock and pools, and each service's.
import type { Clock } from '../core/clock.js'
import type { BillingConfig } from '../core/config.js'
import type { MailConfig } from '../core/config-mail.js'
import type { Logger } from '../core/log.js'
import type { Store } from '../core/store/store.js'
import type { Gate } from '../render/gate.js'
import type { ToolPool } from '../render/tool-pool.js'
import type { DomainSettings } from './domains/domains.js'
import type { FunctionSettings } from './functions/functions.js'

/** What the registry is built from: the store, clock and pools, and each service's settings. */
export interface RegistryOptions {
  store: Store
  clock: Clock
  log: Logger
  /** Sites live at `{label}.{siteDomain}` and `draft--{label}.{siteDomain}`. */
  siteDomain: string
  /** Labels no website may take (the API host's label when it sits under the site domain). */
  reservedLabels: ReadonlySet<string>
  /** Worker pools for formatting, AST edits and search of framework files. */
  tools: ToolPool
  /** The quality gate (lint, bundle, render in isolates); absent in the offline operator CLI. */
  gate?: Gate
  /** The published origin of a label, for canonical URLs in built documents. */
  siteOrigin(label: string): string
  /** Budget of served content kept in memory (default CACHE_BYTES_DEFAULT). */
  cacheBytes?: number
  /** Cache nodes in front (PLINTH_PURGE_URLS): published responses carry surrogate keys and may be kept by them; changes purge them. */
  purgeUrls?: readonly string[]
  /**
   * A website actor nothing asked for during one sweep period is evicted at the next sweep (so after
   * one to two periods of idleness); default ACTOR_IDLE_MS. 0 turns the timer off (sweeps only when
   * `evictIdle` is called).
   */
  actorIdleMs?: number
  /** Plans and website slots (default: billing off, no limits). */
  billing?: BillingConfig
  /** Renames of a namespace and of each vanity label with billing off (PLINTH_NAMESPACE_RENAMES). */
  namespaceRenames?: number
  /** The installation's secret that webhook signing secrets derive from (random per process when absent). */
  signingKey?: Buffer
  /** Bytes of form-submission files each website keeps (PLINTH_FORM_FILES_BYTES). */
  formFilesBytes?: number
  /** PLINTH_IMAGE_VARIANTS_PER_SITE. */
  imageVariantsPerSite?: number
  /** The edge beacon's settings (PLINTH_ANALYTICS_BEACON, PLINTH_COUNTRY_HEADER). */
  analytics?: { beacon: boolean; countryHeader: string; regionHeader?: string; cityHeader?: string; retentionDays: number }
  /** How often the beacon writes its buffer (0: only when asked; the offline CLI). */
  beaconFlushMs?: number
  /** Custom-domain settings (PLINTH_DOMAIN_TARGET, PLINTH_DOMAIN_ADDRESSES, PLINTH_DNS_SERVERS). */
  domainSettings?: DomainSettings
  /** The scheme of the site URLs (`http:` or `https:`), for redirects to a primary domain. */
  siteScheme?: string
  /** The platform's own hostnames (the API's), which no custom domain may be. */
  platformHosts?: ReadonlySet<string>
  /** Addresses webhooks may reach despite the SSRF guard (PLINTH_OUTBOUND_ALLOW). */
  outboundAllow?: readonly string[]
  /** How often the webhook outbox is looked at (0: never; the offline CLI). */
  webhookPollMs?: number
  /** The anonymous sweeper's period (0: none; tests sweep by hand). */
  anonymousSweepMs?: number
  /** A dashboard URL for a path below it (where people upgrade, where Stripe sends them back, the links of mail). */
  appUrl?: (path: string) => string
  /** Outgoing mail (PLINTH_SMTP_URL, PLINTH_MAIL_FROM, PLINTH_DKIM_*, PLINTH_MAIL_LIMITS); absent: no relay, messages held for the operator. */
  mail?: MailConfig
  /** Sites' functions: their limits per request (PLINTH_FUNCTION_*). */
  functions?: FunctionSettings
  /** How often the mail outbox is looked at (0: never; the offline CLI). */
  mailPollMs?: number
}
