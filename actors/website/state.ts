// A website's committed state in memory (record, head, published version, generated pages) and the one transaction every command ends in.
import { compressVariants, manifestDigest, sha256 } from '../../core/content.js'
import { ApiError } from '../../core/errors.js'
import type { AuditActorValue } from '../../core/schemas/audit.js'
import type { BuildRecord, GeneratedPagesRecord, VersionRecord, WebsiteRecord } from '../../core/schemas/records.js'
import type { Mailbox } from '../mailbox.js'
import { appendAudit } from '../organization/audit.js'
import type { BuildBlob } from './builds.js'
import type { Outcome } from './commits.js'
import type { WebsiteActorDeps } from './deps.js'
import { deletedError } from './rules.js'
import { firstVersion, type Manifest } from './versions.js'

/**
 * What a website actor has committed, kept in step with the store: every change goes through `run`
 * (or `commitBuild`, `regenerate`) inside the actor's mailbox, and memory moves only after the
 * transaction is durable; then `refresh` points the channels at the new state.
 */
export class WebsiteState {
  #record: WebsiteRecord
  /** Removed for good (purge): every later command refuses. */
  #purged = false
  #head: VersionRecord
  #publishedVersion: VersionRecord | null
  /** Pages a static site serves beside its deployed files (its blog), as stored. */
  #generated: GeneratedPagesRecord | null

  constructor(
    record: WebsiteRecord,
    private readonly mailbox: Mailbox,
    private readonly deps: WebsiteActorDeps,
    /** Points the channels at the committed state (after every change). */
    private readonly refresh: () => void,
  ) {
    this.#record = record
    this.#head = deps.store.versions.get([record.id, record.headVersion]) ?? firstVersion(record.id, null, record.createdAt)
    // Usually the published version is the head: read and check it once.
    this.#publishedVersion =
      record.publishedVersion === null
        ? null
        : record.publishedVersion === this.#head.version
          ? this.#head
          : this.#requireVersion(record.publishedVersion)
    this.#generated = record.kind === 'static' ? (deps.store.generatedPages.get(record.id) ?? null) : null
  }

  /** The committed record. */
  get record(): WebsiteRecord {
    return this.#record
  }

  get head(): VersionRecord {
    return this.#head
  }

  get publishedVersion(): VersionRecord | null {
    return this.#publishedVersion
  }

  get generated(): GeneratedPagesRecord | null {
    return this.#generated
  }

  /** A version of this website, or undefined. */
  version(number: number): VersionRecord | undefined {
    if (number === this.#head.version) return this.#head
    return this.deps.store.versions.get([this.#record.id, number])
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

  #requireVersion(number: number): VersionRecord {
    const version = this.version(number)
    if (version === undefined) throw new Error(`website ${this.#record.id} lacks its version ${number}`)
    return version
  }

  /**
   * One command: optional async preparation (formatting, AST edits; the mailbox keeps every other
   * command of this website out meanwhile), then one transaction, then memory and channels.
   */
  run<P = undefined>(
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
          if (upload.onDisk !== true && (upload.fresh || !store.hasBlob(upload.hash)))
            store.putContent(upload.hash, upload.bytes, upload.variants)
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
      this.refresh()
      return outcome
    })
  }

  /** A finished build, committed as a command of this actor with its content; the draft host moves. */
  commitBuild(record: BuildRecord, blobs: BuildBlob[]): Promise<void> {
    return this.mailbox.run(async () => {
      if (this.#purged) return
      const { store } = this.deps
      await store.commit(() => {
        for (const blob of blobs) store.putContent(blob.hash, blob.bytes, blob)
        store.putBuild([record.websiteId, record.version], record)
      })
      this.refresh()
    })
  }

  /** A static site's generated pages, made again from its CMS and stored; the hosts swap to them. */
  regenerate(): Promise<void> {
    return this.mailbox.run(async () => {
      if (this.#record.kind !== 'static' || this.deps.generatedPages === undefined) return
      const pages = this.deps.generatedPages(this.#record.id, this.deps.siteOrigin(this.#record.subdomain))
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
        if (record === null) store.generatedPages.remove(this.#record.id)
        else store.generatedPages.put(this.#record.id, record)
      })
      this.#generated = record
      this.refresh()
    })
  }

  /** The purge is committed: commands queued behind it find nothing to write to. */
  markPurged(): void {
    this.#purged = true
  }
}
