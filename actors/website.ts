import { randomBytes } from 'node:crypto'
import type { Clock } from '../core/clock.js'
import { sha256, type Variants } from '../core/content.js'
import { ApiError } from '../core/errors.js'
import { hashSecret, secretMatches } from '../core/ids.js'
import { STATIC_FILE_MAX_BYTES, STATIC_FILES_MAX } from '../core/limits.js'
import { fileContentType, fileLabel, filePath, formatterOf, type FileId } from '../core/typed-files.js'
import type { FormatResult } from '../render/source.worker.js'
import type { SourcePool } from '../render/pool.js'
import type { AuditActorValue, AuditEventType } from '../core/schemas/audit.js'
import type { LeaseRecord, VersionRecord, WebsiteRecord } from '../core/schemas/records.js'
import type { UpdateWebsiteInput } from '../core/schemas/website.js'
import type { Store } from '../core/store/store.js'
import { appendAudit } from './audit.js'
import type { ContentCache } from './content-cache.js'
import { Mailbox } from './mailbox.js'
import { assertUsableLabel } from './names.js'
import { Channel, Snapshot } from './snapshot.js'
import { applyEdits, type Edit, type Problem } from './str-replace.js'
import { firstVersion, makeVersion, type Manifest } from './versions.js'

/** Callbacks the registry gives an actor so that hostname tables follow committed state. */
export interface WebsiteObserver {
  websiteChanged(previous: WebsiteRecord | null, next: WebsiteRecord): void
}

export interface WebsiteActorDeps {
  store: Store
  clock: Clock
  observer: WebsiteObserver
  reservedLabels: ReadonlySet<string>
  cache: ContentCache
  /** Worker pool for formatting and AST edits of framework source. */
  source: SourcePool
}

/** A file to commit: path already normalised, content already hashed and compressed. */
export interface Upload {
  path: string
  bytes: Buffer
  hash: string
  contentType: string
  /** False when the store already held this content (its variants were not computed again). */
  fresh: boolean
  /** Precompressed variants to store with the content; null: none (source that is never served). */
  variants: Variants | null
}

export interface DeployInput {
  uploads: Upload[]
  deletes: string[]
  replace: boolean
  expectedHeadVersion?: number
  message?: string
}

export interface CommitResult {
  version: number
  changed: boolean
}

/** What one command decided; applied in one transaction, then in memory. */
interface Outcome {
  record: WebsiteRecord
  head?: VersionRecord
  published?: VersionRecord | null
  uploads?: Upload[]
  audit?: { eventType: AuditEventType; metadata?: Record<string, unknown> }
}

/**
 * The only writer of one website: its record, its append-only versions and its two channels (the
 * draft host serves the head, the live host the published version). Commands run through the
 * mailbox; each is one LMDB transaction, and memory and channels move only after it is durable.
 */
export class WebsiteActor {
  readonly #mailbox = new Mailbox()
  readonly draft = new Channel('draft')
  readonly published = new Channel('published')
  #record: WebsiteRecord
  #head: VersionRecord
  #publishedVersion: VersionRecord | null
  #lease: LeaseRecord | null

  constructor(
    record: WebsiteRecord,
    private readonly deps: WebsiteActorDeps,
  ) {
    this.#record = record
    this.#head = deps.store.versions.get([record.id, record.headVersion]) ?? firstVersion(record.id, null, record.createdAt)
    this.#publishedVersion = record.publishedVersion === null ? null : this.#requireVersion(record.publishedVersion)
    this.#lease = deps.store.leases.get(record.id) ?? null
    this.#refreshChannels()
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

  drained(): Promise<void> {
    return this.#mailbox.drained()
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
          throw new ApiError('conflict', `slug "${input.slug}" is taken by another website of this organization; choose another`, { field: 'body.slug' })
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
        store.websitesByOrg.remove([current.orgId, 'trash', current.seq])
        store.websitesByOrg.put([current.orgId, 'live', current.seq], current.id)
        return { record: { ...current, deletedAt: null, updatedAt: now }, audit: { eventType: 'website.restored' } }
      },
      { allowDeleted: true },
    ).then(() => this.#record)
  }

  /** Moves the site to a new label; the old label is free for anyone at once. */
  renameSubdomain(actor: AuditActorValue, label: string): Promise<WebsiteRecord> {
    return this.#run(actor, (current, now) => {
      if (label === current.subdomain) return { record: current }
      assertUsableLabel(label, this.deps.reservedLabels, 'body.label')
      const { store } = this.deps
      if (store.labels.get(label) !== undefined) {
        throw new ApiError('conflict', `subdomain "${label}" is taken; choose another label`, { field: 'body.label' })
      }
      store.labels.remove(current.subdomain)
      store.labels.put(label, current.id)
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
          : { record: { ...current, suspendedAt: null, suspendedReason: null, updatedAt: now }, audit: { eventType: 'website.unsuspended' } },
      { allowDeleted: true },
    ).then(() => this.#record)
  }

  // Source

  /** Static deploy: merge (or replace) files into a new head version; identical content is a no-op. */
  deploy(actor: AuditActorValue, input: DeployInput): Promise<CommitResult> {
    return this.#commitSource(actor, 'deploy', input.message ?? null, input.expectedHeadVersion, (head) => {
      this.#requireKind('static', 'deploy')
      const files: Manifest = input.replace ? {} : { ...head.files }
      for (const path of input.deletes) {
        if (files[path] === undefined) throw missingPath(path, head.version, 'body.deletes')
        delete files[path]
      }
      for (const upload of input.uploads) files[upload.path] = { hash: upload.hash, size: upload.bytes.length, contentType: upload.contentType }
      return { files, uploads: input.uploads }
    })
  }

  /** Removes paths from the head as a new version. */
  deleteFiles(actor: AuditActorValue, paths: string[], expectedHeadVersion: number | undefined, message: string | undefined): Promise<CommitResult> {
    return this.#commitSource(actor, 'delete', message ?? null, expectedHeadVersion, (head) => {
      this.#requireKind('static', 'deleteFiles')
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
      this.#refuseStorage('head/restore')
      const source = to === 'published' ? this.#publishedVersion : this.version(to)
      if (source === null) throw new ApiError('validation', 'Nothing is published, so there is no published state to restore; pass a version number as to', { field: 'body.to' })
      if (source === undefined) throw missingVersion(to as number, this.#head.version)
      return { files: source.files, message: `Restore of version ${source.version}` }
    })
  }

  // Framework source: typed files under an edit lease

  /** A new edit lease, replacing any previous one: the old token stops working at once. */
  acquireLease(actor: AuditActorValue): Promise<{ leaseToken: string; headVersion: number }> {
    const token = `wl_${randomBytes(32).toString('base64url')}`
    return this.#mailbox.run(async () => {
      this.requireFramework('acquireLease')
      if (this.#record.deletedAt !== null) throw deletedError(this.id)
      const lease: LeaseRecord = { v: 1, websiteId: this.id, tokenHash: hashSecret(token), acquiredAt: this.deps.clock.now(), acquiredBy: actor }
      await this.deps.store.commit(() => this.deps.store.leases.put(this.id, lease))
      this.#lease = lease
      return { leaseToken: token, headVersion: this.#head.version }
    })
  }

  /** The text of a typed file in a version, or undefined. */
  readText(version: VersionRecord, file: FileId): string | undefined {
    const entry = version.files[filePath(file)]
    if (entry === undefined) return undefined
    const bytes = this.deps.store.getBlob(entry.hash)
    if (bytes === undefined) throw new Error(`blob ${entry.hash} of ${this.id} is missing`)
    return bytes.toString('utf8')
  }

  /** Writes one typed file (formatted first); 201-style result when it made a new version. */
  putSource(actor: AuditActorValue, leaseToken: string, file: FileId, content: string, message: string | undefined): Promise<TypedWriteResult> {
    let formatting: FormatResult | null = null
    return this.#commitSource(
      actor,
      'write',
      message ?? null,
      undefined,
      async (head) => {
        formatting = await this.#format(file, content)
        return this.#typedPlan(head, [{ file, content: formatting.content }])
      },
      () => this.#checkLease(leaseToken),
    ).then((result) => ({ ...result, formatted: formatting?.formatted ?? false, formatError: formatting?.formatError }))
  }

  /** Removes one typed file as a new version; a file that is not in the head is a 404. */
  deleteSource(actor: AuditActorValue, leaseToken: string, file: FileId): Promise<CommitResult> {
    return this.#commitSource(
      actor,
      'write',
      `Delete ${fileLabel(file)}`,
      undefined,
      (head) => {
        if (head.files[filePath(file)] === undefined) throw missingFile(file, head.version)
        return this.#typedPlan(head, [{ file, content: null }])
      },
      () => this.#checkLease(leaseToken),
    )
  }

  /**
   * Atomic multi-file edit: every edit must apply, or nothing is written (400 with `problems`).
   * `dryRun` checks the edits against the head without a lease and writes nothing.
   */
  strReplace(actor: AuditActorValue, leaseToken: string | undefined, files: { file: FileId; edits: Edit[] }[], dryRun: boolean): Promise<StrReplaceResult> {
    const apply = async (head: VersionRecord) => {
      const problems: Problem[] = []
      const writes: { file: FileId; content: string }[] = []
      let index = 0
      for (const { file, edits } of files) {
        const text = this.readText(head, file)
        if (text === undefined) {
          problems.push({ file: fileLabel(file), edit: index, reason: 'not_found', message: `${fileLabel(file)} is not a file of the head version ${head.version}` })
        } else {
          const applied = applyEdits(fileLabel(file), text, edits, index)
          problems.push(...applied.problems)
          writes.push({ file, content: applied.text })
        }
        index += edits.length
      }
      if (problems.length > 0) {
        throw new ApiError('validation', `${problems.length} of the edits cannot apply, so nothing was written; see details.problems`, { problems })
      }
      return writes
    }
    if (dryRun) {
      return this.#mailbox.run(async () => {
        this.requireFramework('strReplace')
        await apply(this.#head)
        return { version: this.#head.version, changed: false, dryRun: true, files: [] }
      })
    }
    const reports: StrReplaceResult['files'] = []
    return this.#commitSource(
      actor,
      'write',
      `str-replace in ${files.map((f) => fileLabel(f.file)).join(', ')}`,
      undefined,
      async (head) => {
        const writes = await apply(head)
        const formatted = []
        for (const write of writes) {
          const result = await this.#format(write.file, write.content)
          reports.push({ file: write.file, formatted: result.formatted, ...(result.formatError ? { formatError: result.formatError } : {}) })
          formatted.push({ file: write.file, content: result.content })
        }
        return this.#typedPlan(head, formatted)
      },
      () => this.#checkLease(leaseToken),
    ).then((result) => ({ ...result, dryRun: false, files: reports }))
  }

  /**
   * Sets one property of a page's definition (or of website_config) by editing the TypeScript AST,
   * so the rest of the file keeps its bytes; the result is formatted like any write.
   */
  editDefinition(
    actor: AuditActorValue,
    leaseToken: string,
    file: FileId,
    property: 'route' | 'metadata',
    expression: string,
    createWith: string | null,
  ): Promise<TypedWriteResult> {
    let formatting: FormatResult | null = null
    return this.#commitSource(
      actor,
      'write',
      `Set ${property} of ${fileLabel(file)}`,
      undefined,
      async (head) => {
        const text = this.readText(head, file)
        let content: string
        if (text === undefined) {
          if (createWith === null) throw missingFile(file, head.version)
          content = createWith
        } else {
          const edited = await this.deps.source.editDefinition({ content: text, filepath: filePath(file), property, expression })
          if (!edited.ok) throw new ApiError('validation', `${fileLabel(file)}: ${edited.message}`, { file })
          content = edited.content
        }
        formatting = await this.#format(file, content)
        return this.#typedPlan(head, [{ file, content: formatting.content }])
      },
      () => this.#checkLease(leaseToken),
    ).then((result) => ({ ...result, formatted: formatting?.formatted ?? false, formatError: formatting?.formatError }))
  }

  /** Refuses (400 naming what to use instead) unless this is a framework website. */
  requireFramework(operation: string): void {
    const kind = this.#record.kind
    if (kind === 'framework') return
    throw new ApiError(
      'validation',
      kind === 'static'
        ? `${operation} is for framework websites; this is a static website: deploy files with POST /v1/websites/${this.id}/deploy/json (MCP: deploy_files)`
        : `${operation} does not apply to storage websites: they share files; upload with POST /v1/websites/${this.id}/objects/uploads`,
      { kind },
    )
  }

  /** The lease check runs inside the same mailbox turn as the write it guards. */
  #checkLease(token: string | undefined): void {
    this.requireFramework('this write')
    if (token === undefined || this.#lease === null || !secretMatches(token, this.#lease.tokenHash)) {
      throw new ApiError('conflict', 'Invalid edit lease', {
        hint: `Acquire a new lease (POST /v1/websites/${this.id}/source/lease, MCP: acquire_edit_lease), re-read the files you are editing, then retry.`,
      })
    }
  }

  async #format(file: FileId, content: string): Promise<FormatResult> {
    const parser = formatterOf(file)
    if (parser === null) return { content, formatted: false }
    return this.deps.source.format({ content, parser, filepath: filePath(file) })
  }

  /** Uploads and manifest changes for typed writes (`content: null` deletes). */
  #typedPlan(head: VersionRecord, writes: { file: FileId; content: string | null }[]): SourcePlan {
    {
      const files: Manifest = { ...head.files }
      const uploads: Upload[] = []
      for (const { file, content } of writes) {
        const path = filePath(file)
        if (content === null) {
          delete files[path]
          continue
        }
        const bytes = Buffer.from(content, 'utf8')
        if (bytes.length > STATIC_FILE_MAX_BYTES) {
          throw new ApiError('payload_too_large', `${fileLabel(file)} is ${bytes.length} bytes; a source file may be at most ${STATIC_FILE_MAX_BYTES} bytes`, {
            limit: 'file size',
            limitBytes: STATIC_FILE_MAX_BYTES,
          })
        }
        const hash = sha256(bytes)
        const contentType = fileContentType(file)
        files[path] = { hash, size: bytes.length, contentType }
        uploads.push({ path, bytes, hash, contentType, fresh: !this.deps.store.hasBlob(hash), variants: null })
      }
      return { files, uploads }
    }
  }

  // Publishing

  /** Publishes the head. An empty head is a 400 with diagnostics; the live site never changes on failure. */
  publish(actor: AuditActorValue): Promise<WebsiteRecord> {
    return this.#run(actor, (current, now) => {
      this.#checkPublishable('publish')
      const head = this.#head
      if (head.fileCount === 0) throw emptyError(head.version)
      if (this.#publishedVersion?.version === head.version) return { record: current }
      return {
        record: { ...current, publishedVersion: head.version, updatedAt: now },
        published: head,
        audit: { eventType: 'website.published', metadata: { version: head.version } },
      }
    }).then(() => this.#record)
  }

  /** Takes the site offline; head and history stay as they are. */
  unpublish(actor: AuditActorValue): Promise<WebsiteRecord> {
    return this.#run(actor, (current, now) => {
      this.#refuseStorage('unpublish')
      if (current.publishedVersion === null) return { record: current }
      return {
        record: { ...current, publishedVersion: null, updatedAt: now },
        published: null,
        audit: { eventType: 'website.unpublished', metadata: { version: current.publishedVersion } },
      }
    }).then(() => this.#record)
  }

  /** Commits version `number` as a new head (unless the head already has its content), then publishes it. */
  rollback(actor: AuditActorValue, number: number): Promise<WebsiteRecord> {
    return this.#run(actor, (current, now) => {
      this.#checkPublishable('rollback')
      const target = this.version(number)
      if (target === undefined) throw missingVersion(number, this.#head.version)
      if (target.fileCount === 0) throw emptyError(target.version)
      const head =
        target.digest === this.#head.digest
          ? this.#head
          : makeVersion(current.id, this.#head.version + 1, target.files, 'rollback', `Rollback to version ${number}`, actor, now)
      return {
        record: { ...current, headVersion: head.version, publishedVersion: head.version, updatedAt: now },
        head: head === this.#head ? undefined : head,
        published: head,
        audit: { eventType: 'website.rolled_back', metadata: { to: number, version: head.version } },
      }
    }).then(() => this.#record)
  }

  /** Prepares the serving snapshots again from stored content (e.g. after an upgrade changed headers). */
  rebuild(): Promise<void> {
    return this.#mailbox.run(() => {
      this.draft.swap(null)
      this.published.swap(null)
      this.#refreshChannels()
    })
  }

  // Internals

  #requireKind(kind: 'static', operation: string): void {
    const current = this.#record.kind
    if (current === kind) return
    if (current === 'framework') {
      throw new ApiError(
        'validation',
        `${operation} is for static websites; this is a framework website: acquire a lease (POST /v1/websites/${this.id}/source/lease) and write typed files with PUT /v1/websites/${this.id}/source/file (MCP: acquire_edit_lease, put_source_file)`,
        { kind: current },
      )
    }
    this.#refuseStorage(operation)
  }

  #refuseStorage(operation: string): void {
    if (this.#record.kind === 'storage') {
      throw new ApiError(
        'validation',
        `${operation} does not apply to storage websites: they share files, are live at once and have no source, build or publish; upload with POST /v1/websites/${this.id}/objects/uploads`,
        { kind: 'storage' },
      )
    }
  }

  #checkPublishable(operation: string): void {
    this.#refuseStorage(operation)
    if (this.#record.kind === 'framework') {
      const message = 'Framework websites are published from a build that passed the quality gate; this server does not build framework sites yet, so nothing can be published'
      throw new ApiError('validation', message, { diagnostics: [{ step: 'build', severity: 'error', message }], renderFailures: [] })
    }
    if (this.#record.suspendedAt !== null) {
      throw new ApiError('forbidden', `This website was taken down by the platform (${this.#record.suspendedReason ?? 'no reason given'}); it cannot be published`, {
        reason: 'suspended',
      })
    }
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
      if (expectedHeadVersion !== undefined && expectedHeadVersion !== head.version) {
        throw new ApiError('conflict', `expectedHeadVersion is ${expectedHeadVersion} but the head is version ${head.version}; read the head again and retry`, {
          headVersion: head.version,
        })
      }
      return build(head)
    }
    return this.#run<SourcePlan>(actor, (current, now, prepared) => {
      const head = this.#head
      const plan = prepared
      const count = Object.keys(plan.files).length
      if (count > STATIC_FILES_MAX) {
        throw new ApiError('payload_too_large', `A website holds at most ${STATIC_FILES_MAX} files; this change would leave ${count}`, {
          limit: 'files per website',
          limitFiles: STATIC_FILES_MAX,
        })
      }
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
        audit: { eventType: 'website.version_created', metadata: { version: next.version, source, message: next.message, fileCount: next.fileCount } },
      }
    }, { prepare }).then(() => result)
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
    return this.#mailbox.run(async () => {
      const current = this.#record
      if (current.deletedAt !== null && options.allowDeleted !== true) throw deletedError(current.id)
      const prepared = (options.prepare === undefined ? undefined : await options.prepare(current)) as P
      const { store, clock, cache } = this.deps
      const now = clock.now()
      const outcome = await store.commit(() => {
        const decided = decide(current, now, prepared)
        for (const upload of decided.uploads ?? []) {
          if (!upload.fresh) continue
          store.putBlob(upload.hash, upload.bytes)
          if (upload.variants?.gzip) store.putVariant(upload.hash, 'gzip', upload.variants.gzip)
          if (upload.variants?.br) store.putVariant(upload.hash, 'br', upload.variants.br)
        }
        if (decided.head !== undefined) store.versions.put([current.id, decided.head.version], decided.head)
        if (decided.record !== current) store.websites.put(current.id, decided.record)
        if (decided.audit !== undefined) {
          appendAudit(store, current.orgId, actor, now, { ...decided.audit, resourceType: 'website', resourceId: current.id, websiteId: current.id })
        }
        return decided
      })
      for (const upload of outcome.uploads ?? []) if (upload.fresh && upload.variants !== null) cache.seed(upload.hash, upload.bytes, upload.variants)
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

  /** Points both channels at the committed state; a site that is not live serves nothing. */
  #refreshChannels(): void {
    const record = this.#record
    // Only static files are served as they are; framework source is served only through its build.
    const live = record.deletedAt === null && record.suspendedAt === null && record.kind === 'static'
    const { cache } = this.deps
    const want = (channel: Channel, version: VersionRecord | null) => {
      if (!live || version === null) channel.swap(null)
      else if (channel.snapshot?.version !== version.version) channel.swap(new Snapshot(version, channel.kind, cache))
    }
    want(this.draft, this.#head)
    want(this.published, this.#publishedVersion)
  }
}

/** What a source change commits: the new manifest, and content to store. */
type SourcePlan = { files: Manifest; uploads?: Upload[]; message?: string }

export interface TypedWriteResult extends CommitResult {
  formatted: boolean
  formatError?: FormatResult['formatError']
}

export interface StrReplaceResult extends CommitResult {
  dryRun: boolean
  files: { file: FileId; formatted: boolean; formatError?: FormatResult['formatError'] }[]
}

function missingFile(file: FileId, head: number): ApiError {
  return new ApiError('not_found', `${fileLabel(file)} is not a file of the head version ${head}`)
}

/** The error for a command on a website in the trash. */
export function deletedError(id: string): ApiError {
  return new ApiError('conflict', `website ${id} is in the trash; restore it with POST /v1/websites/${id}/restore first`, {
    reason: 'website_deleted',
  })
}

function missingPath(path: string, head: number, field: string): ApiError {
  return new ApiError('validation', `${field}: "${path}" is not a file of the head version ${head}`, { field, path })
}

function missingVersion(number: number, head: number): ApiError {
  return new ApiError('not_found', `Version ${number} does not exist; versions run from 1 to ${head} (list them with GET .../source/versions)`)
}

function emptyError(version: number): ApiError {
  return new ApiError('validation', `Version ${version} has no files, so there is nothing to publish; deploy files first`, {
    diagnostics: [{ step: 'publish', severity: 'error', message: `Version ${version} has no files` }],
    renderFailures: [],
  })
}
