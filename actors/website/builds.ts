import type { Clock } from '../../core/clock.js'
import { compressVariants, sha256 } from '../../core/content.js'
import type { BuildRecord, VersionRecord } from '../../core/schemas/records.js'
import type { WebsiteStore } from './tables.js'
import type { GateResult } from '../../core/schemas/code.js'
import type { Gate, SiteContent } from '../../render/gate.js'
import type { Manifest } from './versions.js'

/** Built content to store with a build record: bytes and precompressed variants. */
export interface BuildBlob {
  hash: string
  bytes: Buffer
  gzip: Buffer | null
  br: Buffer | null
}

export type BuildStatus = 'building' | 'ready' | 'failed'

export interface BuildState {
  status: BuildStatus
  result: GateResult | null
  record: BuildRecord | null
}

export interface BuildHost {
  readonly id: string
  version(number: number): VersionRecord | undefined
  /** The typed source files of a version, path to text. */
  sourceTexts(version: VersionRecord): Map<string, string>
  /** The published origin of the site, for canonical and og: URLs. */
  origin(): string
  /** The CMS content page code reads (`cms` of @platform) and its generated types. */
  cmsData(phase: 'check' | 'build'): SiteContent
  /**
   * Commits a finished build through the actor's mailbox, in one transaction with its content, and
   * moves the draft host: the actor stays the only writer of its website.
   */
  commitBuild(record: BuildRecord, blobs: BuildBlob[]): Promise<void>
}

/**
 * Background builds of one framework website. Every commit asks for a build of the new head; a
 * burst coalesces (only the newest head is built, a build in flight for an older head is aborted,
 * which stops its worker). Results and documents are stored, so a restart keeps every build.
 */
export class FrameworkBuilds {
  #running: { version: number; controller: AbortController; done: Promise<void> } | null = null
  #wanted: number | null = null
  #stopped = false
  readonly #superseded = new Set<number>()
  /** Versions built again because the CMS content changed: a failure keeps the ready build. */
  readonly #contentRerenders = new Set<number>()
  readonly #waiters = new Map<number, (() => void)[]>()

  constructor(
    private readonly host: BuildHost,
    private readonly deps: {
      store: WebsiteStore
      clock: Clock
      gate: Gate | undefined
      log?: { error(message: string, fields?: Record<string, unknown>): void }
    },
  ) {}

  /** The stored build of a version, if it finished. */
  record(version: number): BuildRecord | undefined {
    return this.deps.store.builds.get([this.host.id, version])
  }

  /**
   * The quality gate's result for a version, changing nothing (code.check). While the build of that
   * version runs, its result is the answer: the same steps would run again beside it otherwise (one
   * site's tasks run one at a time, so the check would wait for it anyway).
   */
  async check(version: VersionRecord): Promise<GateResult> {
    const gate = this.deps.gate
    if (gate === undefined) throw new Error('the quality gate is not available in this process')
    const built = await this.running(version.version)
    if (built !== undefined) return built.result
    return gate.check(version.version, this.host.sourceTexts(version), this.host.id, this.host.cmsData('check'))
  }

  /**
   * The build of `version` when it is running now: resolves to its stored record once it ends
   * (undefined when it was aborted, or when no build of that version runs).
   */
  running(version: number): Promise<BuildRecord | undefined> {
    const running = this.#running
    if (running === null || running.version !== version) return Promise.resolve(undefined)
    return running.done.then(() => this.record(version))
  }

  /**
   * building (queued or running), ready, failed; null when never built (superseded before its turn).
   * A version is building until its build is stored and the draft host serves it: the stored record
   * becomes readable a moment before that, and "ready" must mean the draft shows it.
   */
  status(version: number): BuildState | null {
    if (this.#running?.version === version || this.#wanted === version) return { status: 'building', result: null, record: null }
    const record = this.record(version)
    if (record !== undefined) return { status: record.status, result: record.result, record }
    return null
  }

  /** Asks for a build of `version` (the newest wanted wins) and resolves when it is stored; `force` builds again. */
  request(version: number, force = false): Promise<void> {
    if (this.#stopped || (!force && this.record(version) !== undefined) || this.deps.gate === undefined) return Promise.resolve()
    const done = new Promise<void>((resolve) => this.#waiters.set(version, [...(this.#waiters.get(version) ?? []), resolve]))
    if (this.#wanted === null || version >= this.#wanted) this.#wanted = version
    if (this.#running !== null && this.#running.version < version) {
      this.#superseded.add(this.#running.version)
      this.#running.controller.abort()
    }
    if (this.#running === null) void this.#loop()
    return done
  }

  /**
   * Renders a built version again with the CMS content of now (an item changed). A failed re-render
   * keeps the ready build serving and is recorded on it (deployments.status reports it).
   */
  rerender(version: number): Promise<void> {
    if (this.record(version) === undefined) return this.request(version)
    this.#contentRerenders.add(version)
    return this.request(version, true)
  }

  /** Stops the build in flight and takes no more (shutdown); an unfinished build runs again when its site is next used (activated), after a restart. */
  stop(): Promise<void> {
    this.#stopped = true
    this.#wanted = null
    this.#running?.controller.abort()
    return this.idle()
  }

  /** A build is running or queued. */
  get busy(): boolean {
    return this.#running !== null || this.#wanted !== null
  }

  /** Resolves once no build is running or queued. */
  async idle(): Promise<void> {
    while (this.#running !== null) await this.#running.done
  }

  async #loop(): Promise<void> {
    while (this.#wanted !== null) {
      const version = this.#wanted
      this.#wanted = null
      const controller = new AbortController()
      let finish!: () => void
      const done = new Promise<void>((resolve) => (finish = resolve))
      this.#running = { version, controller, done }
      try {
        await this.#build(version, controller.signal)
      } catch (error) {
        // A superseded build is aborted on purpose; anything else is a platform fault, not the site's.
        if (!controller.signal.aborted)
          this.deps.log?.error('build failed', { websiteId: this.host.id, version, error: (error as Error)?.stack ?? String(error) })
      } finally {
        this.#running = null
        finish()
      }
      // Waiters of a superseded version are released too: its status then reads "not built".
      for (const [v, waiters] of this.#waiters) {
        if (v <= version && this.#wanted !== v) {
          this.#waiters.delete(v)
          for (const resolve of waiters) resolve()
        }
      }
    }
  }

  async #build(number: number, signal: AbortSignal): Promise<void> {
    const version = this.host.version(number)
    if (version === undefined || this.deps.gate === undefined) return
    const rerender = this.#contentRerenders.delete(number)
    const output = await this.deps.gate.build(
      number,
      this.host.sourceTexts(version),
      this.host.origin(),
      signal,
      this.host.id,
      this.host.cmsData('build'),
    )
    if (signal.aborted) return
    const kept = this.record(number)
    if (rerender && !output.result.ok && kept?.status === 'ready') {
      const message = output.result.message ?? 'the re-render failed'
      this.deps.log?.error('a re-render after a CMS change failed; the build before it still serves', {
        websiteId: this.host.id,
        version: number,
        message,
      })
      await this.host.commitBuild(
        {
          ...kept,
          rerenderFailure: {
            at: this.deps.clock.now(),
            message: `${message}: ${[...output.result.renderFailures.map((f) => `${f.route ?? f.pageId}: ${f.message}`), ...output.result.diagnostics.filter((d) => d.severity === 'error').map((d) => d.message)].slice(0, 5).join('; ')}`,
          },
        },
        [],
      )
      return
    }
    const manifest: Manifest = {}
    const blobs: BuildBlob[] = []
    for (const [path, { content, contentType }] of output.documents) {
      if (signal.aborted) return
      const bytes = Buffer.from(content, 'utf8')
      const hash = sha256(bytes)
      const variants = this.deps.store.hasBlob(hash) ? { gzip: null, br: null } : await compressVariants(bytes, contentType)
      blobs.push({ hash, bytes, gzip: variants.gzip, br: variants.br })
      manifest[path] = { hash, size: bytes.length, contentType }
    }
    const record: BuildRecord = {
      v: 1,
      websiteId: this.host.id,
      version: number,
      status: output.result.ok ? 'ready' : 'failed',
      result: output.result,
      files: manifest,
      routing: output.routing,
      finishedAt: this.deps.clock.now(),
    }
    if (signal.aborted) return
    await this.host.commitBuild(record, blobs)
  }

  /** The newest ready build at or below `max`, for the draft host. */
  newestReady(max: number): BuildRecord | undefined {
    for (const { value } of this.deps.store.builds.range({ start: [this.host.id, max], end: [this.host.id, 0], reverse: true })) {
      if (value.status === 'ready') return value
    }
    return undefined
  }

  wasSuperseded(version: number): boolean {
    return this.#superseded.has(version)
  }
}
