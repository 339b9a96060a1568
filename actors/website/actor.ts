import type { AuditActorValue } from '../../core/schemas/audit.js'
import type { GateResult } from '../../core/schemas/code.js'
import type { VersionRecord, WebsiteRecord } from '../../core/schemas/records.js'
import type { UpdateWebsiteInput } from '../../core/schemas/website.js'
import { filePath, type FileId } from '../../core/typed-files.js'
import { NO_CONTENT } from '../../render/gate.js'
import { Mailbox } from '../mailbox.js'
import { crashPoint } from '../../core/crash.js'
import { isServing } from '../../core/website-state.js'
import type { RuleProblem } from '../../core/site-rules.js'
import { FrameworkBuilds } from './builds.js'
import { pointChannels, versionServed } from './channels.js'
import type { CommitResult, DeployInput, SourcePlan } from './commits.js'
import type { WebsiteActorDeps } from './deps.js'
import { FrameworkFiles } from './framework-files.js'
import { planPublish, planRollback, planUnpublish, type PublishingState } from './publishing.js'
import { requireReadyBuild } from './ready-build.js'
import {
  decideAvailability,
  decideDelete,
  decideMove,
  decideRename,
  decideRestore,
  decideSuspend,
  decideUnsuspend,
  decideUpdate,
  writePurge,
  type MoveAs,
} from './record.js'
import { assertNotHeld, checkExpectedHead, deletedError, requireFramework, requireStatic } from './rules.js'
import { Channel } from './snapshot.js'
import { decideSource, planDeleteFiles, planDeploy, planRestoreHead } from './source-plans.js'
import { WebsiteState } from './state.js'
import { functionsManifest, ruleProblems, sourceTexts, versionText } from './version-files.js'
import { withFunctions } from './functions-build.js'

export type { WebsiteActorDeps, WebsiteObserver } from './deps.js'

/** How many versions' own addresses one website keeps prepared at once. */
const VERSION_CHANNELS = 4

/**
 * The only writer of one website: its record, its append-only versions and its two channels (the
 * draft host serves the head, the live host the published version). Commands run through the
 * mailbox; each is one LMDB transaction, and memory and channels move only after it is durable.
 */
export class WebsiteActor {
  /** Commands one at a time, in the website's lane (with its domains, CMS, settings); its holds say whether it may be evicted. */
  readonly mailbox: Mailbox
  readonly draft: Channel
  readonly published: Channel
  /** The committed state in memory, and the one transaction every command ends in. */
  readonly #state: WebsiteState
  /** The edit lease and typed writes of framework source. */
  readonly framework: FrameworkFiles
  /** Background builds; framework websites only. */
  readonly builds: FrameworkBuilds | null

  constructor(
    record: WebsiteRecord,
    private readonly deps: WebsiteActorDeps,
  ) {
    this.mailbox = new Mailbox(deps.lane)
    this.draft = new Channel('draft', record.id)
    this.published = new Channel('published', record.id)
    this.#state = new WebsiteState(record, this.mailbox, deps, () => this.#refreshChannels())
    this.framework = new FrameworkFiles(this, deps)
    this.builds =
      record.kind === 'framework'
        ? new FrameworkBuilds(
            {
              id: record.id,
              version: (n) => this.version(n),
              sourceTexts: (version) => this.sourceTexts(version),
              origin: () => deps.siteOrigin(this.#state.record.subdomain),
              cmsData: (phase) => deps.cmsData?.(record.id, deps.siteOrigin(this.#state.record.subdomain), phase) ?? NO_CONTENT,
              commitBuild: (built, blobs) => this.#state.commitBuild(built, blobs),
            },
            { store: deps.store, clock: deps.clock, gate: deps.gate, log: deps.log },
          )
        : null
    this.#refreshChannels()
    if (this.builds !== null && record.deletedAt === null && this.#state.head.fileCount > 0) void this.ensureBuilt(this.#state.head.version)
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
    if (this.#state.record.deletedAt !== null) return
    if (builds === null) return this.#state.regenerate()
    const published = this.#state.publishedVersion?.version ?? null
    const head = this.#state.head.version
    try {
      if (published !== null) await builds.rerender(published)
      if (head !== published && this.#state.head.fileCount > 0) await builds.rerender(head)
    } catch (error) {
      this.deps.log?.error('re-rendering after a CMS change failed', {
        websiteId: this.id,
        error: (error as Error)?.stack ?? String(error),
      })
    }
  }

  /** Nothing holds the actor: no request, no queued or running command, no build. */
  get idle(): boolean {
    return this.mailbox.idle && !(this.builds?.busy ?? false)
  }

  /**
   * Lets the actor go (evicted when idle): its channels let go of their snapshots and its mailbox refuses
   * every later command (a stale reference never becomes a second writer); the next request makes a new one.
   */
  retire(): void {
    this.mailbox.close(`website ${this.id}: this actor was evicted while idle; commands go to the registry's current actor`)
    this.draft.point(null, this.deps.cache)
    this.published.point(null, this.deps.cache)
    for (const channel of this.#versionChannels.values()) channel.point(null, this.deps.cache)
    this.#versionChannels.clear()
  }

  /** Whether version `n`'s own address serves now (read only: Caddy's TLS ask may call it for any name). */
  hasVersionAddress(n: number): boolean {
    return isServing(this.#state.record) && this.#state.version(n) !== undefined
  }

  /** Channels of the `v{N}--` hosts asked for lately, by version (the least recently asked let go past VERSION_CHANNELS). */
  readonly #versionChannels = new Map<number, Channel>()

  /**
   * The channel of version `n`'s own address, served as a draft host (never indexed or cached, no page views, the
   * password applies); undefined when the site serves nothing now (`isServing`; storage never) or lacks the version.
   */
  versionChannel(n: number): Channel | undefined {
    // (Not hasVersionAddress: the version is read once, on every request for its address.)
    if (!isServing(this.#state.record)) return undefined
    const version = this.#state.version(n)
    if (version === undefined) return undefined
    let channel = this.#versionChannels.get(n)
    if (channel === undefined) channel = new Channel('draft', this.id)
    this.#versionChannels.delete(n)
    this.#versionChannels.set(n, channel)
    if (this.#versionChannels.size > VERSION_CHANNELS) {
      const [oldest, evicted] = this.#versionChannels.entries().next().value as [number, Channel]
      this.#versionChannels.delete(oldest)
      evicted.point(null, this.deps.cache)
    }
    // Pointed at each request: a framework version's build may have become ready (or been rendered again) since.
    const served = versionServed(version, this.builds)
    channel.point(served, this.deps.cache)
    channel.waiting = served !== null ? null : version.fileCount === 0 ? 'empty' : 'building'
    return channel
  }

  get id(): string {
    return this.#state.record.id
  }

  /** The committed state. */
  get record(): WebsiteRecord {
    return this.#state.record
  }

  get head(): VersionRecord {
    return this.#state.head
  }

  get publishedVersionRecord(): VersionRecord | null {
    return this.#state.publishedVersion
  }

  /** Head content differs from what is live (or, never published, the head has files). */
  get hasUnpublishedChanges(): boolean {
    return this.#state.publishedVersion === null
      ? this.#state.head.fileCount > 0
      : this.#state.publishedVersion.digest !== this.#state.head.digest
  }

  /** A version of this website, or undefined. */
  version(number: number): VersionRecord | undefined {
    return this.#state.version(number)
  }

  /** The two versions a comparison reads: `to` (default the head) and `from` (default the published version). */
  compareVersions(query: { from?: number; to?: number }): { from: VersionRecord | null; fromNumber: number; to: VersionRecord } {
    return this.#state.compareVersions(query)
  }

  /** The version named by `target` or `version` (default: head); 404 when it does not exist. */
  selectVersion(selector: { target?: 'head' | 'published'; version?: number }): VersionRecord {
    return this.#state.selectVersion(selector)
  }

  drained(): Promise<void> {
    return this.mailbox.drained()
  }

  // Website record

  /** Name, slug and description; hostnames are unaffected (spec: websites.update). */
  update(actor: AuditActorValue, input: UpdateWebsiteInput): Promise<WebsiteRecord> {
    return this.#state.run(actor, (current, now) => decideUpdate(this.deps.store, current, now, input)).then(() => this.#state.record)
  }

  /** Soft delete: off every hostname, listed with `scope=trash`, restorable. */
  delete(actor: AuditActorValue): Promise<WebsiteRecord> {
    return this.#state
      .run(actor, (current, now) => decideDelete(this.deps.store, current, now), { allowDeleted: true })
      .then(() => this.#state.record)
  }

  /** Back from the trash (402 `plan_limit` when the plan has no room for it). */
  restore(actor: AuditActorValue): Promise<WebsiteRecord> {
    return this.#state
      .run(actor, (current, now) => decideRestore(this.deps, current, now), {
        allowDeleted: true,
      })
      .then(() => this.#state.record)
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
    as: MoveAs = { eventType: 'website.transfer_accepted' },
  ): Promise<WebsiteRecord> {
    return this.#state
      .run(actor, (current, now) => decideMove(this.deps.store, current, now, toOrgId, within, as), { allowDeleted: true })
      .then((outcome) => {
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
    return this.#state
      .run(actor, (current, now) => decideAvailability(current, now, change, audit, guard), { allowDeleted: true })
      .then(() => this.#state.record)
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
      const current = this.#state.record
      crashPoint('purge:before')
      await this.deps.store.commit(() => writePurge(this.deps, current, actor, within))
      // Commands queued behind this one find nothing to write to.
      this.#state.markPurged()
      this.mailbox.close(`website ${current.id} was purged`)
    })
  }

  /** Moves the site to a new label; the old label is free for anyone at once. */
  renameSubdomain(actor: AuditActorValue, label: string): Promise<WebsiteRecord> {
    return this.#state.run(actor, (current, now) => decideRename(this.deps.hostnames, current, now, label)).then(() => this.#state.record)
  }

  /** Platform takedown (operator CLI only): nothing serves on any hostname and publishing fails. */
  suspend(actor: AuditActorValue, reason: string): Promise<WebsiteRecord> {
    return this.#state
      .run(actor, (current, now) => decideSuspend(current, now, reason), { allowDeleted: true })
      .then(() => this.#state.record)
  }

  /** Lifts a takedown (operator CLI only; never through the API). */
  unsuspend(actor: AuditActorValue): Promise<WebsiteRecord> {
    return this.#state.run(actor, (current, now) => decideUnsuspend(current, now), { allowDeleted: true }).then(() => this.#state.record)
  }

  // Source

  /**
   * The cheap preconditions of a deploy (kind, expected head version), for the caller to check before
   * hashing and compressing what it will send; the command checks them again in its turn.
   */
  checkDeploy(expectedHeadVersion: number | undefined): void {
    if (this.#state.record.deletedAt !== null) throw deletedError(this.id)
    requireStatic(this.#state.record, 'deploy')
    checkExpectedHead(expectedHeadVersion, this.#state.head.version)
  }

  /** Static deploy: merge (or replace) files into a new head version; identical content is a no-op. */
  deploy(actor: AuditActorValue, input: DeployInput): Promise<CommitResult> {
    return this.#commitSource(actor, 'deploy', input.message ?? null, input.expectedHeadVersion, (head) =>
      planDeploy(this.#state.record, head, input),
    )
  }

  /** Removes paths from the head as a new version. */
  deleteFiles(
    actor: AuditActorValue,
    paths: string[],
    expectedHeadVersion: number | undefined,
    message: string | undefined,
  ): Promise<CommitResult> {
    return this.#commitSource(actor, 'delete', message ?? null, expectedHeadVersion, (head) =>
      planDeleteFiles(this.#state.record, head, paths),
    )
  }

  /** A new head copying the published version or version `to`; nothing is published. */
  restoreHead(actor: AuditActorValue, to: 'published' | number): Promise<CommitResult> {
    return this.#commitSource(actor, 'restore', null, undefined, () =>
      planRestoreHead(this.#state.record, to, this.#state.publishedVersion, (n) => this.version(n), this.#state.head.version),
    )
  }

  // Framework source: the edit lease and typed writes live in FrameworkFiles (framework-files.ts)

  /** The text of a typed file in a version, or undefined. */
  readText(version: VersionRecord, file: FileId): string | undefined {
    return versionText(this.deps.store, this.id, version, filePath(file))
  }

  /** Every typed source file of a version, manifest path to text: what the quality gate takes. */
  sourceTexts(version: VersionRecord): Map<string, string> {
    return sourceTexts(this.deps.store, this.id, version)
  }

  /** The bad lines of a static version's `_redirects` and `_headers` (version-files.ts). */
  ruleProblems(version: VersionRecord): RuleProblem[] {
    return this.#state.record.kind === 'static' ? ruleProblems(this.deps.store, this.id, version) : []
  }

  /** A version's functions (their routes, a static deploy's type problems); null: it has none. */
  functionsManifest = (version: VersionRecord) => functionsManifest(this.deps.store, this.#state.record, version)

  /** Refuses (400 naming what to use instead) unless this is a framework website. */
  requireFramework(operation: string): void {
    requireFramework(this.#state.record, operation)
  }

  /** The quality gate's result for the head, changing nothing (framework websites). */
  check(): Promise<GateResult> {
    const builds = this.builds
    if (builds === null) throw new Error(`website ${this.id} has no builds`)
    return builds.check(this.#state.head)
  }

  /** Runs `fn` as a command of this actor: nothing else of this website runs meanwhile. */
  exclusive<T>(fn: () => Promise<T>): Promise<T> {
    return this.mailbox.run(async () => {
      if (this.#state.record.deletedAt !== null) throw deletedError(this.id)
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
    return this.#state
      .run(actor, (current, now) => {
        assertNotHeld(current, now)
        return planPublish(this.#publishing(current), now)
      })
      .then(() => this.#state.record)
  }

  /** Takes the site offline; head and history stay as they are. */
  unpublish(actor: AuditActorValue): Promise<WebsiteRecord> {
    return this.#state.run(actor, (current, now) => planUnpublish(current, now)).then(() => this.#state.record)
  }

  /** Commits version `number` as a new head (unless the head already has its content), then publishes it. */
  rollback(actor: AuditActorValue, number: number): Promise<WebsiteRecord> {
    return this.#state
      .run(actor, (current, now) => {
        assertNotHeld(current, now)
        return planRollback(this.#publishing(current), number, actor, now)
      })
      .then(() => this.#state.record)
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

  /** What publishing decides from: the committed state and the builds. */
  #publishing(current: WebsiteRecord): PublishingState {
    return {
      record: current,
      head: this.#state.head,
      published: this.#state.publishedVersion,
      version: (n) => this.version(n),
      readyBuild: (v) => requireReadyBuild(this.builds, this.id, v, (n) => this.ensureBuilt(n)),
    }
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
    let result: CommitResult = { version: this.#state.head.version, changed: false }
    const prepare = async (): Promise<SourcePlan> => {
      guard?.()
      const head = this.#state.head
      checkExpectedHead(expectedHeadVersion, head.version)
      const plan = await build(head)
      // A static version carries its functions compiled (a framework version's source has none).
      return this.#state.record.kind === 'static' ? withFunctions(plan, this.deps.store, this.id, this.deps.gate) : plan
    }
    return this.#state
      .run<SourcePlan>(
        actor,
        (current, now, plan) => {
          const decided = decideSource(current, now, this.#state.head, plan, source, message, actor)
          result = decided.result
          return decided.outcome
        },
        { prepare },
      )
      .then(() => {
        if (result.changed) void this.ensureBuilt(result.version)
        return result
      })
  }

  /** Points both channels at the committed state (channels.ts). */
  #refreshChannels(): void {
    const before = this.published.key
    pointChannels(this, this.#state, this.builds, this.deps.cache)
    this.deps.hostnames.serving(this.id)
    // What the live host serves changed (a publish, rollback, unpublish, suspension, a deletion, a
    // re-render): a cache tier in front lets go of the old. Not when the actor is only being loaded.
    if (this.#loaded && this.published.key !== before) this.deps.observer.publishedChanged(this.id)
    this.#loaded = true
  }

  /** Set after the first pointing of the channels (loading the actor changes nothing anyone cached). */
  #loaded = false
}
