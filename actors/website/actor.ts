import type { Clock } from '../../core/clock.js'
import { compressVariants, manifestDigest, sha256 } from '../../core/content.js'
import { ApiError } from '../../core/errors.js'
import { SLUG_MAX_CHARS, STATIC_FILES_MAX } from '../../core/limits.js'
import type { AuditActorValue } from '../../core/schemas/audit.js'
import type { GateResult } from '../../core/schemas/code.js'
import type { BuildRecord, GeneratedPagesRecord, VersionRecord, WebsiteRecord } from '../../core/schemas/records.js'
import type { UpdateWebsiteInput } from '../../core/schemas/website.js'
import type { Store } from '../../core/store/store.js'
import { fileIdOf, filePath, type FileId } from '../../core/typed-files.js'
import { isServing } from '../../core/website-state.js'
import { NO_CONTENT, type Gate, type SiteContent } from '../../render/gate.js'
import type { ToolPool } from '../../render/tool-pool.js'
import { appendAudit } from '../audit.js'
import type { ContentCache } from '../content-cache.js'
import { Mailbox } from '../mailbox.js'
import { crashPoint } from '../../core/crash.js'
import type { HostnameTable } from '../hostnames.js'
import { assertUsableLabel, freeName } from '../names.js'
import { FrameworkBuilds, type BuildBlob } from './builds.js'
import { tooManyFiles, type CommitResult, type DeployInput, type Outcome, type SourcePlan } from './commits.js'
import { FrameworkFiles } from './framework-files.js'
import { planPublish, planRollback, planUnpublish, type PublishingState } from './publishing.js'
import {
  assertNotHeld,
  checkExpectedHead,
  deletedError,
  missingPath,
  missingVersion,
  refuseStorage,
  requireFramework,
  requireStatic,
} from './rules.js'
import { Channel, type ServedFiles } from './snapshot.js'
import { firstVersion, makeVersion, type Manifest } from './versions.js'

/** Callbacks the registry gives an actor so that hostname tables follow committed state. */
export interface WebsiteObserver {
  websiteChanged(previous: WebsiteRecord | null, next: WebsiteRecord): void
}

export interface WebsiteActorDeps {
  store: Store
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

/**
 * The only writer of one website: its record, its append-only versions and its two channels (the
 * draft host serves the head, the live host the published version). Commands run through the
 * mailbox; each is one LMDB transaction, and memory and channels move only after it is durable.
 */
export class WebsiteActor {
  /** Commands one at a time; its holds and `touched` flag say whether the registry may evict this actor. */
  readonly mailbox = new Mailbox()
  readonly draft: Channel
  readonly published: Channel
  #record: WebsiteRecord
  /** Removed for good (purge): every later command refuses. */
  #purged = false
  #head: VersionRecord
  #publishedVersion: VersionRecord | null
  /** The edit lease and typed writes of framework source. */
  readonly framework: FrameworkFiles
  /** Background builds; framework websites only. */
  readonly builds: FrameworkBuilds | null
  /** Pages a static site serves beside its deployed files (its blog), as stored. */
  #generated: GeneratedPagesRecord | null

  constructor(
    record: WebsiteRecord,
    private readonly deps: WebsiteActorDeps,
  ) {
    this.#record = record
    this.draft = new Channel('draft', record.id)
    this.published = new Channel('published', record.id)
    this.#head = deps.store.versions.get([record.id, record.headVersion]) ?? firstVersion(record.id, null, record.createdAt)
    // Usually the published version is the head: read and check it once.
    this.#publishedVersion =
      record.publishedVersion === null
        ? null
        : record.publishedVersion === this.#head.version
          ? this.#head
          : this.#requireVersion(record.publishedVersion)
    this.#generated = record.kind === 'static' ? (deps.store.generatedPages.get(record.id) ?? null) : null
    this.framework = new FrameworkFiles(this, deps)
    this.builds =
      record.kind === 'framework'
        ? new FrameworkBuilds(
            {
              id: record.id,
              version: (n) => this.version(n),
              sourceTexts: (version) => this.sourceTexts(version),
              origin: () => deps.siteOrigin(this.#record.subdomain),
              cmsData: (phase) => deps.cmsData?.(record.id, deps.siteOrigin(this.#record.subdomain), phase) ?? NO_CONTENT,
              commitBuild: (built, blobs) => this.#commitBuild(built, blobs),
            },
            { store: deps.store, clock: deps.clock, gate: deps.gate, log: deps.log },
          )
        : null
    this.#refreshChannels()
    if (this.builds !== null && record.deletedAt === null && this.#head.fileCount > 0) void this.ensureBuilt(this.#head.version)
  }

  /**
   * Builds a version (framework) and resolves once it is stored; static versions are ready when
   * committed. Never rejects: a platform fault in a build is logged.
   */
  ensureBuilt(version: number, force = false): Promise<void> {
    const builds = this.builds
    if (builds === null) return Promise.resolve()
    return builds.request(version, force).catch((error: unknown) => {
      this.deps.log?.error('build failed unexpectedly', { websiteId: this.id, version, error: (error as Error)?.stack ?? String(error) })
    })
  }

  /**
   * The CMS content changed: the published version and the head (when another) render again, one
   * after the other. The live host swaps to the new rendering when it is stored; a failure keeps it.
   */
  async rerenderContent(): Promise<void> {
    const builds = this.builds
    if (this.#record.deletedAt !== null) return
    if (builds === null) return this.#regenerate()
    const published = this.#publishedVersion?.version ?? null
    const head = this.#head.version
    try {
      if (published !== null) await builds.rerender(published)
      if (head !== published && this.#head.fileCount > 0) await builds.rerender(head)
    } catch (error) {
      this.deps.log?.error('re-rendering after a CMS change failed', {
        websiteId: this.id,
        error: (error as Error)?.stack ?? String(error),
      })
    }
  }

  /** A static site's generated pages, made again from its CMS and stored; the hosts swap to them. */
  #regenerate(): Promise<void> {
    return this.mailbox.run(async () => {
      if (this.#record.kind !== 'static' || this.deps.generatedPages === undefined) return
      const pages = this.deps.generatedPages(this.id, this.deps.siteOrigin(this.#record.subdomain))
      const files: Manifest = {}
      const blobs: BuildBlob[] = []
      for (const { path, html } of pages) {
        const bytes = Buffer.from(html, 'utf8')
        const hash = sha256(bytes)
        const variants = this.deps.store.hasBlob(hash)
          ? { gzip: null, br: null }
          : await compressVariants(bytes, 'text/html; charset=utf-8')
        blobs.push({ hash, bytes, gzip: variants.gzip, br: variants.br })
        files[path] = { hash, size: bytes.length, contentType: 'text/html; charset=utf-8' }
      }
      const record: GeneratedPagesRecord | null = pages.length === 0 ? null : { v: 1, key: manifestDigest(files), files }
      if (record?.key === this.#generated?.key) return
      const { store } = this.deps
      await store.commit(() => {
        for (const blob of blobs) store.putContent(blob.hash, blob.bytes, blob)
        if (record === null) store.generatedPages.remove(this.id)
        else store.generatedPages.put(this.id, record)
      })
      this.#generated = record
      this.#refreshChannels()
    })
  }

  /** Nothing holds the actor: no request, no queued or running command, no build. */
  get idle(): boolean {
    return this.mailbox.idle && !(this.builds?.busy ?? false)
  }

  /**
   * Lets the actor go (the registry evicts it when idle): its channels let go of their snapshots and
   * its mailbox refuses every later command, so a stale reference can never become a second writer.
   * The next request or command makes a new actor from the store.
   */
  retire(): void {
    this.mailbox.close(`website ${this.id}: this actor was evicted while idle; commands go to the registry's current actor`)
    this.draft.point(null, this.deps.cache)
    this.published.point(null, this.deps.cache)
  }

  get id(): string {
    return this.#record.id
  }

  /** The committed state. */
  get record(): WebsiteRecord {
    return this.#record
  }

  get head(): VersionRecord {
    return this.#head
  }

  get publishedVersionRecord(): VersionRecord | null {
    return this.#publishedVersion
  }

  /** Head content differs from what is live (or, never published, the head has files). */
  get hasUnpublishedChanges(): boolean {
    return this.#publishedVersion === null ? this.#head.fileCount > 0 : this.#publishedVersion.digest !== this.#head.digest
  }

  /** A version of this website, or undefined. */
  version(number: number): VersionRecord | undefined {
    if (number === this.#head.version) return this.#head
    return this.deps.store.versions.get([this.id, number])
  }

  /**
   * The two versions a comparison reads: `to` (default the head) and `from` (default the published
   * version; 0, or nothing published, is the empty state, null).
   */
  compareVersions(query: { from?: number; to?: number }): { from: VersionRecord | null; fromNumber: number; to: VersionRecord } {
    const to = query.to === undefined ? this.#head : this.selectVersion({ version: query.to })
    const fromNumber = query.from ?? this.#record.publishedVersion ?? 0
    return { from: fromNumber === 0 ? null : this.selectVersion({ version: fromNumber }), fromNumber, to }
  }

  /** The version named by `target` or `version` (default: head); 404 when it does not exist. */
  selectVersion(selector: { target?: 'head' | 'published'; version?: number }): VersionRecord {
    if (selector.target !== undefined && selector.version !== undefined) {
      throw new ApiError('validation', 'Give target or version, not both', { field: 'version' })
    }
    if (selector.version !== undefined) {
      const found = this.version(selector.version)
      if (found === undefined)
        throw new ApiError('not_found', `Version ${selector.version} does not exist; the head is version ${this.#head.version}`)
      return found
    }
    if (selector.target === 'published') {
      const published = this.#publishedVersion
      if (published === null) throw new ApiError('not_found', 'Nothing is published yet; read target=head or a version number')
      return published
    }
    return this.#head
  }

  drained(): Promise<void> {
    return this.mailbox.drained()
  }

  // Website record

  /** Name, slug and description; hostnames are unaffected (spec: websites.update). */
  update(actor: AuditActorValue, input: UpdateWebsiteInput): Promise<WebsiteRecord> {
    return this.#run(actor, (current, now) => {
      const { store } = this.deps
      const next: WebsiteRecord = { ...current, updatedAt: now }
      const changed: string[] = []
      if (input.name !== undefined && input.name !== current.name) {
        next.name = input.name
        changed.push('name')
      }
      if (input.description !== undefined && input.description !== current.description) {
        next.description = input.description
        changed.push('description')
      }
      if (input.slug !== undefined && input.slug !== current.slug) {
        const owner = store.slugs.get([current.orgId, input.slug])
        if (owner !== undefined && owner !== current.id) {
          throw new ApiError('conflict', `slug "${input.slug}" is taken by another website of this organization; choose another`, {
            field: 'body.slug',
          })
        }
        store.slugs.remove([current.orgId, current.slug])
        store.slugs.put([current.orgId, input.slug], current.id)
        next.slug = input.slug
        changed.push('slug')
      }
      if (changed.length === 0) return { record: current }
      return { record: next, audit: { eventType: 'website.updated', metadata: { changed } } }
    }).then(() => this.#record)
  }

  /** Soft delete: off every hostname, listed with `scope=trash`, restorable. */
  delete(actor: AuditActorValue): Promise<WebsiteRecord> {
    return this.#run(
      actor,
      (current, now) => {
        if (current.deletedAt !== null) return { record: current }
        const { store } = this.deps
        store.websitesByOrg.remove([current.orgId, 'live', current.seq])
        store.websitesByOrg.put([current.orgId, 'trash', current.seq], current.id)
        return { record: { ...current, deletedAt: now, updatedAt: now }, audit: { eventType: 'website.deleted' } }
      },
      { allowDeleted: true },
    ).then(() => this.#record)
  }

  restore(actor: AuditActorValue): Promise<WebsiteRecord> {
    return this.#run(
      actor,
      (current, now) => {
        if (current.deletedAt === null) return { record: current }
        const { store } = this.deps
        this.deps.assertRoom?.(current.orgId, current.kind)
        store.websitesByOrg.remove([current.orgId, 'trash', current.seq])
        store.websitesByOrg.put([current.orgId, 'live', current.seq], current.id)
        return { record: { ...current, deletedAt: null, updatedAt: now }, audit: { eventType: 'website.restored' } }
      },
      { allowDeleted: true },
    ).then(() => this.#record)
  }

  /**
   * Moves the website, with its whole history, builds and published version, to another
   * organization (a transfer accepted): its indexes move, a slug taken there gets a suffix, the edit
   * lease is dropped, and `within` writes the rest of the move (the transfer, collaborators, the
   * receiving organization's audit entry) in the same transaction. Hostnames and channels do not
   * change, so the live site serves throughout.
   */
  moveTo(
    actor: AuditActorValue,
    toOrgId: string,
    within: (current: WebsiteRecord, now: number) => void,
    as: {
      eventType: 'website.transfer_accepted' | 'website.claimed'
      change?: (current: WebsiteRecord, now: number) => Partial<WebsiteRecord>
    } = { eventType: 'website.transfer_accepted' },
  ): Promise<WebsiteRecord> {
    return this.#run(
      actor,
      (current, now) => {
        const { store } = this.deps
        const scope = current.deletedAt === null ? 'live' : 'trash'
        store.websitesByOrg.remove([current.orgId, scope, current.seq])
        store.websitesByOrg.put([toOrgId, scope, current.seq], current.id)
        store.slugs.remove([current.orgId, current.slug])
        const slug =
          store.slugs.get([toOrgId, current.slug]) === undefined
            ? current.slug
            : freeName(current.slug, SLUG_MAX_CHARS, (s) => store.slugs.get([toOrgId, s]) === undefined)
        store.slugs.put([toOrgId, slug], current.id)
        store.leases.remove(current.id)
        within(current, now)
        return {
          record: { ...current, ...as.change?.(current, now), orgId: toOrgId, slug, updatedAt: now },
          audit: { eventType: as.eventType, metadata: { from: current.orgId, to: toOrgId } },
        }
      },
      { allowDeleted: true },
    ).then((outcome) => {
      this.framework.leaseDropped()
      return outcome.record
    })
  }

  /**
   * Whether the website serves, and how a claimed anonymous site is held: an anonymous preview that
   * ended goes offline, a held claim goes offline after its preview, an activated one serves again.
   * History, hostnames and the published version stay as they are.
   */
  setAvailability(
    actor: AuditActorValue,
    change: Pick<Partial<WebsiteRecord>, 'offline' | 'held' | 'previewUntil'>,
    audit?: { eventType: 'website.activated'; metadata?: Record<string, unknown> },
    /** Checked inside the transaction (a plan's room), so two activations cannot take one slot. */
    guard?: (current: WebsiteRecord) => void,
  ): Promise<WebsiteRecord> {
    return this.#run(
      actor,
      (current, now) => {
        guard?.(current)
        const next = { ...current, ...change }
        const same = (['offline', 'held', 'previewUntil'] as const).every((field) => (next[field] ?? null) === (current[field] ?? null))
        return same ? { record: current } : { record: { ...next, updatedAt: now }, audit }
      },
      { allowDeleted: true },
    ).then(() => this.#record)
  }

  /**
   * Removes the website for good (an anonymous site replaced, or unclaimed at its deadline): its
   * record, versions, builds and lease leave the store and its label is free at once. The registry
   * drops the actor afterwards (Registry.purgeWebsite).
   */
  async purge(actor: AuditActorValue, within?: () => void): Promise<void> {
    // Outside the mailbox: a finishing build commits through it.
    await this.builds?.stop()
    return this.mailbox.run(async () => {
      const current = this.#record
      const { store, clock, hostnames } = this.deps
      crashPoint('purge:before')
      await store.commit(() => {
        // First, while the website's record is still readable to what `within` removes.
        within?.()
        // The rest of the purge (shared files, CMS, assets) finishes from this record, at once or at the next start.
        store.purges.put(current.id, { v: 1, websiteId: current.id, orgId: current.orgId, at: clock.now() })
        for (const { key } of store.versions.range({ start: [current.id, 0], end: [current.id, Number.MAX_SAFE_INTEGER] }))
          store.removeVersion(key as [string, number])
        for (const { key } of store.builds.range({ start: [current.id, 0], end: [current.id, Number.MAX_SAFE_INTEGER] }))
          store.removeBuild(key as [string, number])
        store.leases.remove(current.id)
        store.websitesByOrg.remove([current.orgId, current.deletedAt === null ? 'live' : 'trash', current.seq])
        store.slugs.remove([current.orgId, current.slug])
        hostnames.free(current.subdomain, current.id)
        store.websites.remove(current.id)
        store.generatedPages.remove(current.id)
        appendAudit(store, current.orgId, actor, clock.now(), {
          eventType: 'website.deleted',
          resourceType: 'website',
          resourceId: current.id,
          websiteId: current.id,
          metadata: { purged: true },
        })
      })
      // Commands queued behind this one find nothing to write to.
      this.#purged = true
      this.mailbox.close(`website ${current.id} was purged`)
    })
  }

  /** Moves the site to a new label; the old label is free for anyone at once. */
  renameSubdomain(actor: AuditActorValue, label: string): Promise<WebsiteRecord> {
    return this.#run(actor, (current, now) => {
      if (label === current.subdomain) return { record: current }
      const { hostnames } = this.deps
      assertUsableLabel(label, hostnames.reservedLabels, 'body.label')
      hostnames.claim(label, current.id, 'body.label', 'choose another label')
      hostnames.free(current.subdomain, current.id)
      return {
        record: { ...current, subdomain: label, updatedAt: now },
        audit: { eventType: 'website.subdomain_renamed', metadata: { from: current.subdomain, to: label } },
      }
    }).then(() => this.#record)
  }

  /** Platform takedown (operator CLI only): nothing serves on any hostname and publishing fails. */
  suspend(actor: AuditActorValue, reason: string): Promise<WebsiteRecord> {
    return this.#run(
      actor,
      (current, now) => ({
        record: { ...current, suspendedAt: current.suspendedAt ?? now, suspendedReason: reason, updatedAt: now },
        audit: { eventType: 'website.suspended', metadata: { reason } },
      }),
      { allowDeleted: true },
    ).then(() => this.#record)
  }

  /** Lifts a takedown (operator CLI only; never through the API). */
  unsuspend(actor: AuditActorValue): Promise<WebsiteRecord> {
    return this.#run(
      actor,
      (current, now) =>
        current.suspendedAt === null
          ? { record: current }
          : {
              record: { ...current, suspendedAt: null, suspendedReason: null, updatedAt: now },
              audit: { eventType: 'website.unsuspended' },
            },
      { allowDeleted: true },
    ).then(() => this.#record)
  }

  // Source

  /**
   * The cheap preconditions of a deploy (kind, expected head version), for the caller to check before
   * hashing and compressing what it will send; the command checks them again in its turn.
   */
  checkDeploy(expectedHeadVersion: number | undefined): void {
    if (this.#record.deletedAt !== null) throw deletedError(this.id)
    requireStatic(this.#record, 'deploy')
    checkExpectedHead(expectedHeadVersion, this.#head.version)
  }

  /** Static deploy: merge (or replace) files into a new head version; identical content is a no-op. */
  deploy(actor: AuditActorValue, input: DeployInput): Promise<CommitResult> {
    return this.#commitSource(actor, 'deploy', input.message ?? null, input.expectedHeadVersion, (head) => {
      requireStatic(this.#record, 'deploy')
      const files: Manifest = input.replace ? {} : { ...head.files }
      for (const path of input.deletes) {
        if (files[path] === undefined) throw missingPath(path, head.version, 'body.deletes')
        delete files[path]
      }
      for (const upload of input.uploads)
        files[upload.path] = { hash: upload.hash, size: upload.bytes.length, contentType: upload.contentType }
      return { files, uploads: input.uploads }
    })
  }

  /** Removes paths from the head as a new version. */
  deleteFiles(
    actor: AuditActorValue,
    paths: string[],
    expectedHeadVersion: number | undefined,
    message: string | undefined,
  ): Promise<CommitResult> {
    return this.#commitSource(actor, 'delete', message ?? null, expectedHeadVersion, (head) => {
      requireStatic(this.#record, 'deleteFiles')
      const files: Manifest = { ...head.files }
      for (const path of paths) {
        if (files[path] === undefined) throw missingPath(path, head.version, 'body.paths')
        delete files[path]
      }
      return { files }
    })
  }

  /** A new head copying the published version or version `to`; nothing is published. */
  restoreHead(actor: AuditActorValue, to: 'published' | number): Promise<CommitResult> {
    return this.#commitSource(actor, 'restore', null, undefined, () => {
      refuseStorage(this.#record, 'head/restore')
      const source = to === 'published' ? this.#publishedVersion : this.version(to)
      if (source === null)
        throw new ApiError('validation', 'Nothing is published, so there is no published state to restore; pass a version number as to', {
          field: 'body.to',
        })
      if (source === undefined) throw missingVersion(to as number, this.#head.version)
      return { files: source.files, message: `Restore of version ${source.version}` }
    })
  }

  // Framework source: the edit lease and typed writes live in FrameworkFiles (framework-files.ts)

  /** The text of a typed file in a version, or undefined. */
  readText(version: VersionRecord, file: FileId): string | undefined {
    return this.#readPath(version, filePath(file))
  }

  /** Every typed source file of a version, manifest path to text: what the quality gate takes. */
  sourceTexts(version: VersionRecord): Map<string, string> {
    const texts = new Map<string, string>()
    for (const path of Object.keys(version.files)) if (fileIdOf(path) !== null) texts.set(path, this.#readPath(version, path)!)
    return texts
  }

  #readPath(version: VersionRecord, path: string): string | undefined {
    const entry = version.files[path]
    if (entry === undefined) return undefined
    const bytes = this.deps.store.getBlob(entry.hash)
    if (bytes === undefined) throw new Error(`blob ${entry.hash} of ${this.id} is missing`)
    return bytes.toString('utf8')
  }

  /** Refuses (400 naming what to use instead) unless this is a framework website. */
  requireFramework(operation: string): void {
    requireFramework(this.#record, operation)
  }

  /** The quality gate's result for the head, changing nothing (framework websites). */
  check(): Promise<GateResult> {
    const builds = this.builds
    if (builds === null) throw new Error(`website ${this.id} has no builds`)
    return builds.check(this.#head)
  }

  /** Runs `fn` as a command of this actor: nothing else of this website runs meanwhile. */
  exclusive<T>(fn: () => Promise<T>): Promise<T> {
    return this.mailbox.run(async () => {
      if (this.#record.deletedAt !== null) throw deletedError(this.id)
      return fn()
    })
  }

  /** Commits a source change through this actor (see #commitSource); for FrameworkFiles. */
  commitSource(
    actor: AuditActorValue,
    message: string | null,
    build: (head: VersionRecord) => Promise<SourcePlan>,
    guard: () => void,
    expectedHeadVersion?: number,
  ): Promise<CommitResult> {
    return this.#commitSource(actor, 'write', message, expectedHeadVersion, build, guard)
  }

  // Publishing

  /**
   * Publishes the head. An empty head or a failed build is a 400 with diagnostics, a build still
   * running a 409; the live site never changes on failure.
   */
  publish(actor: AuditActorValue): Promise<WebsiteRecord> {
    return this.#run(actor, (current, now) => {
      assertNotHeld(current, now)
      return planPublish(this.#publishing(current), now)
    }).then(() => this.#record)
  }

  /** Takes the site offline; head and history stay as they are. */
  unpublish(actor: AuditActorValue): Promise<WebsiteRecord> {
    return this.#run(actor, (current, now) => planUnpublish(current, now)).then(() => this.#record)
  }

  /** Commits version `number` as a new head (unless the head already has its content), then publishes it. */
  rollback(actor: AuditActorValue, number: number): Promise<WebsiteRecord> {
    return this.#run(actor, (current, now) => {
      assertNotHeld(current, now)
      return planRollback(this.#publishing(current), number, actor, now)
    }).then(() => this.#record)
  }

  /**
   * Prepares a version's serving output again: framework versions are built again (re-rendered);
   * static snapshots are prepared again from stored content (e.g. after an upgrade changed headers).
   */
  async rebuild(version: number): Promise<void> {
    if (this.builds !== null) return this.ensureBuilt(version, true)
    return this.mailbox.run(() => {
      this.draft.point(null, this.deps.cache)
      this.published.point(null, this.deps.cache)
      this.#refreshChannels()
    })
  }

  // Internals

  /** A finished build, committed as a command of this actor with its content; the draft host moves. */
  #commitBuild(record: BuildRecord, blobs: BuildBlob[]): Promise<void> {
    return this.mailbox.run(async () => {
      if (this.#purged) return
      const { store } = this.deps
      await store.commit(() => {
        for (const blob of blobs) store.putContent(blob.hash, blob.bytes, blob)
        store.putBuild([record.websiteId, record.version], record)
      })
      this.#refreshChannels()
    })
  }

  /** What publishing decides from: the committed state and the builds. */
  #publishing(current: WebsiteRecord): PublishingState {
    return {
      record: current,
      head: this.#head,
      published: this.#publishedVersion,
      version: (n) => this.version(n),
      readyBuild: (v) => this.#requireReadyBuild(v),
    }
  }

  /** A framework version's ready build (null for static sites); 409 while building, 400 when it failed. */
  #requireReadyBuild(version: number): BuildRecord | null {
    const builds = this.builds
    if (builds === null) return null
    const state = builds.status(version)
    if (state === null || state.status === 'building') {
      if (state === null) void this.ensureBuilt(version)
      throw new ApiError(
        'conflict',
        `Version ${version} is still building; poll GET /v1/websites/${this.id}/deployments/status (MCP: get_deployment_status) and publish when it is ready`,
      )
    }
    if (state.status === 'failed') {
      const result = state.result!
      throw new ApiError(
        'validation',
        `Version ${version} did not pass the quality gate${result.message ? `: ${result.message}` : ''}; fix the diagnostics and render failures, then publish again`,
        {
          diagnostics: result.diagnostics,
          renderFailures: result.renderFailures,
        },
      )
    }
    return state.record!
  }

  #requireVersion(number: number): VersionRecord {
    const version = this.version(number)
    if (version === undefined) throw new Error(`website ${this.id} lacks its version ${number}`)
    return version
  }

  /** A source change: a new head version unless the content equals the head's. */
  #commitSource(
    actor: AuditActorValue,
    source: VersionRecord['source'],
    message: string | null,
    expectedHeadVersion: number | undefined,
    build: (head: VersionRecord) => SourcePlan | Promise<SourcePlan>,
    guard?: () => void,
  ): Promise<CommitResult> {
    let result: CommitResult = { version: this.#head.version, changed: false }
    const prepare = async (): Promise<SourcePlan> => {
      guard?.()
      const head = this.#head
      checkExpectedHead(expectedHeadVersion, head.version)
      return build(head)
    }
    return this.#run<SourcePlan>(
      actor,
      (current, now, plan) => {
        assertNotHeld(current, now)
        const head = this.#head
        const count = Object.keys(plan.files).length
        if (count > STATIC_FILES_MAX) throw tooManyFiles(`this change would leave ${count}`)
        const next = makeVersion(current.id, head.version + 1, plan.files, source, plan.message ?? message, actor, now)
        if (next.digest === head.digest) {
          result = { version: head.version, changed: false }
          return { record: current }
        }
        result = { version: next.version, changed: true }
        return {
          record: { ...current, headVersion: next.version, updatedAt: now },
          head: next,
          uploads: plan.uploads,
          audit: {
            eventType: 'website.version_created',
            metadata: { version: next.version, source, message: next.message, fileCount: next.fileCount },
          },
        }
      },
      { prepare },
    ).then(() => {
      if (result.changed) void this.ensureBuilt(result.version)
      return result
    })
  }

  /**
   * One command: optional async preparation (formatting, AST edits; the mailbox keeps every other
   * command of this website out meanwhile), then one transaction, then memory and channels.
   */
  #run<P = undefined>(
    actor: AuditActorValue,
    decide: (current: WebsiteRecord, now: number, prepared: P) => Outcome,
    options: { allowDeleted?: boolean; prepare?: (current: WebsiteRecord) => Promise<P> } = {},
  ): Promise<Outcome> {
    return this.mailbox.run(async () => {
      const current = this.#record
      if (this.#purged) throw new ApiError('not_found', `Website ${current.id} not found (it was deleted for good)`)
      if (current.deletedAt !== null && options.allowDeleted !== true) throw deletedError(current.id)
      const prepared = (options.prepare === undefined ? undefined : await options.prepare(current)) as P
      const { store, clock } = this.deps
      const now = clock.now()
      const outcome = await store.commit(() => {
        const decided = decide(current, now, prepared)
        for (const upload of decided.uploads ?? []) {
          // Content seen stored before the command may have left since (its last website purged).
          if (upload.fresh || !store.hasBlob(upload.hash)) store.putContent(upload.hash, upload.bytes, upload.variants)
        }
        if (decided.head !== undefined) store.putVersion([current.id, decided.head.version], decided.head)
        if (decided.build !== undefined) store.putBuild([current.id, decided.build.version], decided.build)
        if (decided.record !== current) store.websites.put(current.id, decided.record)
        if (decided.audit !== undefined) {
          appendAudit(store, current.orgId, actor, now, {
            ...decided.audit,
            resourceType: 'website',
            resourceId: current.id,
            websiteId: current.id,
          })
        }
        return decided
      })
      if (outcome.head !== undefined) this.#head = outcome.head
      if (outcome.published !== undefined) this.#publishedVersion = outcome.published
      if (outcome.record !== current) {
        this.#record = outcome.record
        this.deps.observer.websiteChanged(current, outcome.record)
      }
      this.#refreshChannels()
      return outcome
    })
  }

  /**
   * Points both channels at the committed state; a site that is not live serves nothing. Static
   * sites serve their files; framework sites serve build output only (never their source): the
   * draft host the newest ready build up to the head, the live host the published version's build.
   */
  #refreshChannels(): void {
    const record = this.#record
    const live = isServing(record)
    const { cache } = this.deps
    const want = (channel: Channel, served: ServedFiles | null) => channel.point(live ? served : null, cache)
    // A live site's draft host says why it shows nothing: no files yet, or no build ready yet.
    this.draft.waiting = !live ? null : this.#head.fileCount === 0 ? 'empty' : this.builds !== null ? 'building' : null
    const builds = this.builds
    if (builds === null) {
      // A static site's generated pages (its blog) are served beside its files; its own files win.
      const generated = this.#generated
      const asServed = (v: VersionRecord | null): ServedFiles | null =>
        v === null
          ? null
          : generated === null
            ? { version: v.version, key: `v${v.version}`, files: v.files }
            : { version: v.version, key: `v${v.version}:g${generated.key}`, files: { ...generated.files, ...v.files } }
      want(this.draft, this.#head.fileCount === 0 ? null : asServed(this.#head))
      want(this.published, asServed(this.#publishedVersion))
      return
    }
    // Keyed by what is served, not when it was built: a rebuild that renders different bytes (or
    // routing) swaps the snapshot, one that renders the same keeps it.
    const fromBuild = (b: BuildRecord | undefined): ServedFiles | null =>
      b === undefined
        ? null
        : {
            version: b.version,
            key: `b${b.version}:${manifestDigest(b.files)}:${JSON.stringify(b.routing ?? null)}`,
            files: b.files,
            routing: b.routing,
          }
    want(this.draft, fromBuild(builds.newestReady(this.#head.version)))
    const published = this.#publishedVersion === null ? undefined : builds.record(this.#publishedVersion.version)
    want(this.published, fromBuild(published?.status === 'ready' ? published : undefined))
  }
}
