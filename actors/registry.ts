import { randomBytes } from 'node:crypto'
import type { Clock } from '../core/clock.js'
import type { Logger } from '../core/log.js'
import { deriveKey } from '../core/installation-secret.js'
import { ApiError } from '../core/errors.js'
import type { WebsiteRecord } from '../core/schemas/records.js'
import { storeStats, type Store, type StoreStats } from '../core/store/store.js'
import { Background } from './background.js'
import { Chores } from './chores.js'
import { ContentCache } from './content-cache.js'
import { OrganizationActor } from './organization/organization.js'
import type { Gate } from '../render/gate.js'
import type { ToolPool } from '../render/tool-pool.js'
import type { Channel } from './website/snapshot.js'
import { WebsiteActor } from './website/actor.js'
import { HostnameTable } from './domains/hostnames.js'
import {
  ACTOR_IDLE_MS,
  FREE_STORAGE_BYTES,
  PLAN_WEBSITES_DEFAULT,
  TRACKER_RETENTION_DAYS_DEFAULT,
  NAMESPACE_RENAMES_DEFAULT,
} from '../core/limits.js'
import type { AuditActorValue } from '../core/schemas/audit.js'
import { People } from './identity/people.js'
import { Teams } from './identity/teams.js'
import { OAuth } from './identity/oauth.js'
import { AnonymousCredentials } from './anonymous/credentials.js'
import { StripeBilling } from './billing/billing.js'
import { Forms } from './forms/forms.js'
import { Beacon } from './analytics/beacon.js'
import { Tracker } from './analytics/tracker.js'
import { SharedFiles } from './files/storage.js'
import { Assets } from './files/assets.js'
import { Images } from './files/images.js'
import { Cms } from './cms/cms.js'
import { Blog } from './cms/blog.js'
import { AnalyticsShares } from './analytics/share.js'
import { Domains } from './domains/domains.js'
import { Namespaces } from './domains/namespaces.js'
import { dnsResolver, OutboundGuard } from './outbound.js'
import { SiteFunctions } from './functions/functions.js'
import { WebhookDeliverer } from './forms/webhooks.js'
import { Mail, MAIL_OFF } from './mail/mail.js'
import { PasswordResets } from './identity/resets.js'
import { FormNotifications } from './forms/notifications.js'
import { Account } from './identity/account.js'
import { Plans } from './billing/plans.js'
import { Transfers } from './organization/transfers.js'
import type { BillingConfig } from '../core/config.js'
import type { StoreReader } from '../core/store/reader.js'
import { LegacyPages } from './cms/legacy-pages.js'
import { Feedback } from './organization/feedback.js'
import { Mailboxes } from './mailboxes.js'
import { ActorMap } from './actor-map.js'
import type { RegistryOptions } from './registry-options.js'
import { CachePurge } from './cache-purge.js'
import { LargeFiles } from './files/large-files.js'
import { Purges } from './website/purge.js'
import { UploadTokens } from './files/upload-tokens.js'
import { DeployTickets } from './website/deploy-tickets.js'
import { SitePasswords } from './website/passwords.js'

export type { RegistryOptions } from './registry-options.js'

const BILLING_OFF: BillingConfig = {
  enabled: false,
  websiteSlots: PLAN_WEBSITES_DEFAULT,
  freeStorageBytes: FREE_STORAGE_BYTES,
  stripe: null,
}

/**
 * Maps ids to actors and hostnames to channels. Nothing is activated at start: an actor is made on
 * its website's first command, or on the first request to one of its hosts (synchronously, from
 * LMDB's memory map: the label names the website, the actor prepares its snapshots), so start-up
 * costs the same for ten sites or a hundred thousand, and after a restart each site serves exactly
 * what it served before without a warm-up request. Organizations activate lazily too.
 */
export class Registry {
  /** The store with write handles: actors receive it from here; nothing outside `actors/` sees it. */
  readonly #store: Store
  /** The store as code outside `actors/` reads it: every table read-only (core/store/reader.ts). */
  readonly reads: StoreReader
  readonly clock: Clock
  readonly log: Logger
  readonly cache: ContentCache
  /** The website and organization actors in memory. */
  readonly #actors: ActorMap
  /** The one owner of hostnames: labels in the store, hostname to channel in memory. */
  readonly hostnames: HostnameTable
  /** Persons, memberships, collaborations and sessions (the single writer of them, mirrored in memory). */
  readonly people: People
  /** Outgoing mail: the outbox (messages queued in the commit that caused them) and its sender. */
  readonly mail: Mail
  /** Password resets by mail ("Forgot your password?"). */
  readonly resets: PasswordResets
  /** A person's changes to their own account (name, password, email, sessions). */
  readonly account: Account
  /** Members, collaborators and invitations. */
  readonly teams: Teams
  /** The OAuth authorization server's state. */
  readonly oauth: OAuth
  /** Plans and their limits (billing). */
  readonly plans: Plans
  /** Checkout, portal and sync through Stripe; null when billing is off or no Stripe key is set. */
  readonly stripe: StripeBilling | null
  /** Website transfers between organizations. */
  readonly transfers: Transfers
  /** Anonymous credentials, their sites and deadlines, and claims. */
  readonly anonymous: AnonymousCredentials
  /** Form submissions and their webhook outbox. */
  readonly forms: Forms
  /** Shared files of storage websites: uploads, objects, their bytes in the blob directory. */
  readonly files: SharedFiles
  /** Websites' asset libraries, and their images resized on demand. */
  readonly assets: Assets
  readonly images: Images
  /** The CMS (deprecated, still served): collections, fields and items. */
  readonly cms: Cms
  /** Legacy page records (deprecated, never rendered). */
  readonly legacyPages: LegacyPages
  /** Messages people and agents send the operators. */
  readonly feedback: Feedback
  /**
   * Each website's lane: every command on a website, whichever concern it touches (its actor's
   * source, builds, publishing and purge; its domains, CMS, legacy pages, passwords, form settings,
   * analytics sharing, assets and shared files), runs there one at a time; websites never wait on
   * each other.
   */
  readonly #lanes = new Mailboxes((id) =>
    // A command that waited behind its website's purge finds nothing to change (and writes no orphan row).
    this.#store.websites.get(id) === undefined
      ? new ApiError('not_found', `Website ${id} was deleted for good while this waited for its turn; nothing was changed`)
      : null,
  )
  readonly #purges: Purges
  /** The managed blog (deprecated): posts in the CMS, pages scaffolded on framework sites. */
  readonly blog: Blog
  /** Custom domains: records, DNS verification, primary. */
  readonly domains: Domains
  readonly namespaces: Namespaces
  /** The one SSRF guard every request made for a user goes through (webhooks, URL imports, Domain Connect, functions' fetch). */
  readonly outbound: OutboundGuard
  /** Sites' functions: the isolate pool (started on the first request), limits and logs. */
  readonly functions: SiteFunctions
  /** The edge beacon: page views counted off the hot path, flushed as rollups. */
  readonly beacon: Beacon
  /** The first-party tracker: collected page views and events, flushed as raw events and rollups. */
  readonly tracker: Tracker
  /** Shareable analytics dashboards (revocable links). */
  readonly analyticsShares: AnalyticsShares
  /** Deploy tickets (begin_deploy): one deploy of a folder, without a key in the shell. */
  readonly deployTickets: DeployTickets
  /** The cache tier in front (PLINTH_PURGE_URLS), purged when what a website's live host serves changes. */
  readonly cachePurge: CachePurge
  /** Large files of ticket deploys, kept by hash for the organization that sent them. */
  readonly largeFiles: LargeFiles
  readonly uploadTokens: UploadTokens
  /** Website passwords (set_website_password), checked by the hosting plane without awaiting. */
  readonly sitePasswords: SitePasswords
  /** Sends form webhooks from the outbox, through the SSRF guard. */
  readonly webhooks: WebhookDeliverer
  readonly #tools: ToolPool
  readonly #gate: Gate | undefined
  readonly #siteOrigin: (label: string) => string
  readonly #sweeper: NodeJS.Timeout | undefined
  /** Websites waiting to re-render after CMS changes (coalesced). */
  /** The one scheduler of background work that writes (sweeps, flushes, deliveries, scheduled publications). */
  readonly #background: Background
  /** The background work itself: sweeps, publications, deliveries, flushes. */
  readonly #chores: Chores

  constructor(options: RegistryOptions) {
    this.#tools = options.tools
    this.#gate = options.gate
    this.#siteOrigin = options.siteOrigin
    this.#store = options.store
    this.reads = options.store
    this.clock = options.clock
    this.log = options.log
    this.#background = new Background(() => options.store.writable, options.log)
    this.cache = new ContentCache(options.store, options.cacheBytes, (options.purgeUrls ?? []).length > 0)
    this.hostnames = new HostnameTable(options.store, options.siteDomain, options.reservedLabels, options.siteScheme ?? 'https:')
    this.#actors = new ActorMap(options.store, this.hostnames, {
      website: (record) => this.#newWebsite(record),
      organization: (record) =>
        new OrganizationActor(record, {
          store: this.#store,
          clock: this.clock,
          hostnames: this.hostnames,
          websiteCreated: (created) => void this.#actors.activateWebsite(created),
          assertRoom: (orgId, kind) => this.plans.assertRoom(orgId, kind),
        }),
    })
    this.people = new People(options.store, options.clock)
    const signingKey = options.signingKey ?? randomBytes(32)
    this.mail = new Mail({
      store: options.store,
      clock: options.clock,
      log: options.log,
      config: options.mail ?? MAIL_OFF,
      key: deriveKey(signingKey, 'mail outbox'),
      appUrl: options.appUrl ?? ((path: string) => `http://localhost/app${path}`),
    })
    this.resets = new PasswordResets(options.store, options.clock, this.people, this.mail, options.log)
    this.account = new Account(options.store, options.clock, this.people, this.mail)
    this.teams = new Teams(this.people, this.mail)
    this.oauth = new OAuth(this.people)
    const billing = options.billing ?? BILLING_OFF
    const appUrl = options.appUrl ?? ((path: string) => `/app${path}`)
    this.plans = new Plans(options.store, options.clock, billing, () => appUrl('/billing'))
    this.stripe = billing.enabled && billing.stripe !== null ? new StripeBilling(billing.stripe, this.plans, appUrl) : null
    this.forms = new Forms(
      options.store,
      options.clock,
      this.#lanes,
      signingKey,
      new FormNotifications(options.store, options.clock, this.#lanes, this.people, this.mail, signingKey),
      options.formFilesBytes,
    )
    this.files = new SharedFiles(options.store, options.clock, this.#lanes, this.plans, options.log)
    this.outbound = new OutboundGuard(options.outboundAllow ?? [], dnsResolver(options.domainSettings?.dnsServers ?? []))
    this.assets = new Assets(this.#lanes, options.store, options.clock, options.log, this.outbound, deriveKey(signingKey, 'asset uploads'))
    this.images = new Images(options.store, this.assets, options.imageVariantsPerSite)
    this.functions = new SiteFunctions(
      options.store,
      options.clock,
      this.#lanes,
      deriveKey(signingKey, 'function secrets'),
      options.functions,
    )
    this.legacyPages = new LegacyPages(options.store, options.clock, this.#lanes)
    this.feedback = new Feedback(options.store, options.clock)
    this.cms = new Cms(options.store, options.clock, this.#lanes, (websiteId, assetId) => {
      const asset = options.store.assets.get(assetId)
      return asset !== undefined && asset.websiteId === websiteId ? asset : undefined
    })
    this.blog = new Blog(this.cms)
    // Changes that sites can see re-render the website (coalesced by the CMS).
    this.cms.onChange = (websiteId) => void this.website(websiteId)?.rerenderContent()
    this.transfers = new Transfers({
      store: this.#store,
      clock: this.clock,
      people: this.people,
      teams: this.teams,
      plans: this.plans,
      website: (id) => this.website(id),
      files: this.files,
    })
    // What a crash left between a blob file's rename and its commit goes before anything is served.
    const orphans = this.files.sweepOrphans()
    if (orphans > 0) this.log.info('removed files no record names', { files: orphans })
    this.analyticsShares = new AnalyticsShares(options.store, options.clock, this.#lanes, signingKey)
    this.deployTickets = new DeployTickets(deriveKey(signingKey, 'deploy tickets'), options.clock)
    this.uploadTokens = new UploadTokens(deriveKey(signingKey, 'upload tokens'), options.clock)
    this.cachePurge = new CachePurge(options.purgeUrls ?? [], this.log)
    this.largeFiles = new LargeFiles(options.store, options.clock)
    // A password set: public copies a cache tier keeps must go at once.
    this.sitePasswords = new SitePasswords(
      options.store,
      options.clock,
      this.#lanes,
      deriveKey(signingKey, 'site passwords'),
      (websiteId) => {
        this.cachePurge.purge(websiteId)
        this.hostnames.serving(websiteId)
      },
    )
    this.beacon = new Beacon(
      options.store,
      options.clock,
      options.log,
      options.analytics?.countryHeader ?? '',
      options.beaconFlushMs,
      options.analytics?.beacon ?? true,
      options.analytics?.retentionDays ?? TRACKER_RETENTION_DAYS_DEFAULT,
    )
    this.tracker = new Tracker(options.store, options.clock, {
      retentionDays: options.analytics?.retentionDays ?? TRACKER_RETENTION_DAYS_DEFAULT,
      headers: {
        country: options.analytics?.countryHeader ?? '',
        region: options.analytics?.regionHeader ?? '',
        city: options.analytics?.cityHeader ?? '',
      },
    })
    this.domains = new Domains(
      options.store,
      options.clock,
      options.siteDomain,
      options.platformHosts ?? new Set(),
      options.domainSettings ?? { cnameTarget: null, addresses: [], dnsServers: [] },
      (id) => this.reroute(id),
      this.#lanes,
    )
    this.namespaces = new Namespaces(
      options.store,
      options.clock,
      this.hostnames,
      this.plans,
      options.namespaceRenames ?? NAMESPACE_RENAMES_DEFAULT,
      (ids) => {
        for (const id of ids) this.reroute(id)
      },
    )
    this.webhooks = new WebhookDeliverer(options.store, options.clock, this.forms, this.outbound, options.log)
    this.anonymous = new AnonymousCredentials({
      store: this.#store,
      clock: this.clock,
      log: this.log,
      people: this.people,
      plans: this.plans,
      organization: (id) => this.organization(id),
      website: (id) => this.website(id),
      purgeWebsite: (id, actor) => this.purgeWebsite(id, actor),
      files: this.files,
    })
    this.#purges = new Purges({
      store: this.#store,
      website: (id) => this.website(id),
      removeRows: (id) => {
        this.forms.removeWebsite(id)
        this.domains.removeWebsite(id)
        this.namespaces.removeWebsite(id)
        this.sitePasswords.removeWebsite(id)
        this.functions.removeWebsite(id)
      },
      forget: (website, record) => {
        this.hostnames.unroute(website, record)
        this.#actors.forget(website.id, website)
        website.retire()
      },
      removeFiles: (id, orgId) => this.files.removeWebsite(id, orgId),
      removeCms: (id) => this.cms.removeWebsite(id),
      removeAssets: (id) => this.assets.removeWebsite(id),
    })
    this.plans.onPlanChanged = (orgId, actor) => this.activateHeld(orgId, actor)
    // Background work that writes, on one scheduler that runs it only where writes are made (not on a cluster's replicas).
    this.#chores = new Chores(this, this.#background, options)
    // Memory, not writes: idle actors leave on every node.
    const idleMs = options.actorIdleMs ?? ACTOR_IDLE_MS
    if (idleMs > 0) this.#sweeper = setInterval(() => this.evictIdle(), idleMs).unref()
  }

  /** The website's actor, or undefined when no such website exists. */
  website(id: string): WebsiteActor | undefined {
    return this.#actors.website(id)
  }

  /** The organization's actor, or undefined when no such organization exists. */
  organization(id: string): OrganizationActor | undefined {
    return this.#actors.organization(id)
  }

  /**
   * The channel a hostname serves, if any: the hosting plane's one lookup per request for a site in
   * use. A site not active yet is activated here, on its first request, without awaiting anything.
   */
  channelForHost(host: string): Channel | undefined {
    const channel = this.hostnames.channel(host)
    if (channel !== undefined) return channel
    const id = this.hostnames.websiteOfHost(host)
    if (id === undefined) {
      // A version's own address: its website's actor keeps a few such channels (never in the hostname table).
      const named = this.hostnames.versionOfHost(host)
      return named === undefined ? undefined : this.website(named.websiteId)?.versionChannel(named.version)
    }
    if (this.#actors.loaded(id) !== undefined) return undefined
    this.website(id)
    return this.hostnames.channel(host)
  }

  /** Whether `host` is a version's own address (`v{N}--{label}`) that its website serves now (Caddy's TLS ask). */
  servesVersionHost(host: string): boolean {
    const named = this.hostnames.versionOfHost(host)
    return named !== undefined && this.website(named.websiteId)?.hasVersionAddress(named.version) === true
  }

  /** One sweep: evicts every actor nothing holds and nobody asked for since the last (see ActorMap.evictIdle); returns how many. */
  evictIdle(): number {
    return this.#actors.evictIdle()
  }

  /** One sweep of what expired (chores.ts); returns how many records went. */
  sweepExpired(): Promise<number> {
    return this.#chores.sweepExpired()
  }

  /** One pass of the anonymous sweeper (never two at once). */
  sweepAnonymous(): Promise<unknown> {
    return this.#chores.sweepAnonymous()
  }

  /** Routes a website's hostnames again (a custom domain changed); an inactive website routes on its next use. */
  reroute(websiteId: string): void {
    const actor = this.#actors.loaded(websiteId)
    if (actor !== undefined) this.hostnames.route(actor, actor.record, actor.record)
    // A host added or taken away: copies a cache tier keeps under it go.
    this.cachePurge.purge(websiteId)
  }

  /**
   * After an upgrade (or a comped plan): held claims of the organization become active, oldest
   * first, while the plan has room (spec: held → upgrade, comped plan, or POST activate).
   */
  async activateHeld(orgId: string, actor: AuditActorValue): Promise<void> {
    if (this.plans.billing.enabled && this.plans.record(orgId).plan === 'free') return
    const held = [...this.#store.websitesByOrg.range({ start: [orgId, 'live', 0], end: [orgId, 'live', Number.MAX_SAFE_INTEGER] })].filter(
      ({ value }) => this.#store.websites.get(value)?.held === true,
    )
    for (const { value } of held) {
      const full = new Error('no room')
      try {
        // The room is checked inside each activation's transaction.
        await this.website(value)?.setAvailability(
          actor,
          { held: false, offline: null, previewUntil: null },
          { eventType: 'website.activated', metadata: { by: 'plan' } },
          (current) => {
            if (!this.plans.hasRoom(orgId, current.kind)) throw full
          },
        )
      } catch (error) {
        if (error === full) return
        throw error
      }
    }
  }

  /** Removes a website for good, in one transaction and resumable steps (actors/website/purge.ts). */
  purgeWebsite(id: string, actor: AuditActorValue): Promise<void> {
    return this.#purges.purge(id, actor)
  }

  /** Finishes the purges a crash interrupted (start-up, before the first request). */
  resumePurges(): Promise<number> {
    return this.#purges.resume()
  }

  /** Stops the sweepers (shutdown). */
  close(): void {
    clearInterval(this.#sweeper)
    void this.#background.close()
    this.beacon.close()
    this.mail.close()
    this.cms.close()
    void this.functions.close()
  }

  /** The database's size and free list, and the anonymous credentials it holds (for /metrics; read when scraped). */
  storeStats(): StoreStats {
    return storeStats(this.#store)
  }

  /** How many website actors are in memory. */
  get activeWebsites(): number {
    return this.#actors.websiteCount
  }

  /** How many organization actors are in memory. */
  get activeOrganizations(): number {
    return this.#actors.organizationCount
  }

  /** Stops every build and waits for those in flight to wind down (shutdown); an unfinished build runs again when its site is next used after a restart. */
  async stopBuilds(): Promise<void> {
    await Promise.all([...this.#actors.websites()].map((website) => website.builds?.stop()))
  }

  /** Resolves when every command queued on any actor so far has finished. */
  async drained(): Promise<void> {
    await Promise.all([...this.#actors.websites(), ...this.#actors.organizations(), this.people].map((a) => a.mailbox.drained()))
    await this.anonymous.drained()
    await this.#chores.drained()
    await this.webhooks.drained()
    await this.mail.sender.drained()
    await this.#lanes.drained()
    await this.oauth.mailbox.drained()
    await this.plans.mailbox.drained()
    // Page views counted before shutdown are written.
    await this.beacon.flush()
    await this.tracker.flush()
  }

  /** A website's actor, wired to the services it uses; the actor map keeps it and routes its hostnames. */
  #newWebsite(record: WebsiteRecord): WebsiteActor {
    const actor: WebsiteActor = new WebsiteActor(record, {
      lane: this.#lanes.lane(record.id),
      tools: this.#tools,
      gate: this.#gate,
      siteOrigin: this.#siteOrigin,
      cmsData: (websiteId, origin, phase) => this.cms.contentFor(websiteId, origin, phase),
      generatedPages: (websiteId) => this.blog.staticPages(websiteId, this.#store.websites.get(websiteId)?.name ?? 'Blog'),
      log: this.log,
      store: this.#store,
      clock: this.clock,
      hostnames: this.hostnames,
      cache: this.cache,
      observer: {
        websiteChanged: (previous, next): void => this.hostnames.route(actor, previous, next),
        publishedChanged: (websiteId): void => this.cachePurge.purge(websiteId),
      },
      assertRoom: (orgId, kind) => this.plans.assertRoom(orgId, kind),
    })
    return actor
  }
}
