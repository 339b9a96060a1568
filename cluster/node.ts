// One node of a cluster: connects to NATS, catches up with the log, then leads (holds the lease) or follows.
import { connect, type NatsConnection } from '@nats-io/transport-node'
import { Packr } from 'msgpackr'
import { Kvm, type KV } from '@nats-io/kv'
import type { Logger } from '../core/log.js'
import { ApiError } from '../core/errors.js'
import type { Store } from '../core/store/store.js'
import { digestOf, packEntry, websitesTouched, type CommitLog, type Entry, type LogPosition } from '../core/store/write-set.js'
import { ClusterBlobs } from './blobs.js'
import { isDeposed, NatsLog, type LogEntry } from './log.js'
import { Lease, type Holder } from './lease.js'

/** How a node joins (core/config.ts reads these from PLINTH_CLUSTER_NATS, PLINTH_NODE_NAME and PLINTH_NODE_URL). */
export interface ClusterSettings {
  servers: readonly string[]
  node: string
  /** Where the other nodes reach this one's HTTP port (replicas forward the API there when it leads). */
  url: string
  /** How long a lease lives without renewal (the longest a cluster goes without a primary after one dies). */
  leaseMs: number
}

/** What the rest of the server is told. */
export interface ClusterEvents {
  /**
   * A replica applied entries touching these websites: what they serve must be read again; the promise
   * (if any) resolves when every serving thread serves it (then the primary is told).
   */
  applied(websites: ReadonlySet<string>): Promise<void> | null | void
  /** This node became the primary (its background work may write now). */
  leading(): void
  /** This node stopped being the primary without meaning to (lease lost, log refused an append): it stops. */
  lost(reason: string): void
}

/** Page views of a second, as a replica sends them (typed arrays kept). */
const views = new Packr({ useRecords: false, moreTypes: true })
const VIEWS_SUBJECT = 'plinth.views'
/** Replicas say how far they applied the log: after each entry their threads serve, and every third of a lease. */
const APPLIED_SUBJECT = 'plinth.applied'
/** The longest a write's answer waits for the replicas. */
const REPLICATED_WAIT_MS = 2000

/** The oldest nats-server the cluster runs on (JetStream clustering, KV with compare-and-set). */
const MIN_SERVER = [2, 9, 0]

/** A data directory ahead of the log or off it: its last entries were never acknowledged by the cluster. */
export class DivergedError extends Error {}

export class ClusterNode {
  readonly settings: ClusterSettings
  readonly #nc: NatsConnection
  readonly #log: NatsLog
  readonly #lease: Lease
  readonly #nodes: KV
  readonly #blobs: ClusterBlobs
  readonly #logger: Logger
  #store: Store | null = null
  #events: ClusterEvents | null = null
  #role: 'starting' | 'primary' | 'replica' | 'stopped' = 'starting'
  #epoch = 0
  /** The log's last sequence as this primary knows it (every append expects it). */
  #tail = 0
  #following: AbortController | null = null
  #timer: NodeJS.Timeout | null = null
  #nodeRevision = 0
  /** The primary as this node last saw the lease (a replica forwards there; null: none right now). */
  #leader: Holder | null = null
  /** What each replica said it applied, and when it last said so (the primary's view). */
  readonly #replicas = new Map<string, { seq: number; at: number }>()
  /** How far this replica's serving threads serve the log (what it tells the primary). */
  #served = 0
  /** Answers waiting for the replicas (`replicated`). */
  #waiting: { target: number; check: () => void }[] = []
  /** Entries applied one after another (a replica), so the position only moves forward. */
  #applying: Promise<void> = Promise.resolve()

  private constructor(
    settings: ClusterSettings,
    nc: NatsConnection,
    log: NatsLog,
    lease: Lease,
    nodes: KV,
    blobs: ClusterBlobs,
    logger: Logger,
  ) {
    this.settings = settings
    this.#nc = nc
    this.#log = log
    this.#lease = lease
    this.#nodes = nodes
    this.#blobs = blobs
    this.#logger = logger
  }

  /**
   * Connects to NATS (retrying, with a line naming the servers each time, until one answers), checks the
   * server (a version the cluster runs on, JetStream on) and that no live node has this node's name.
   */
  static async connect(settings: ClusterSettings, logger: Logger): Promise<ClusterNode> {
    let nc: NatsConnection | undefined
    for (let attempt = 1; nc === undefined; attempt++) {
      try {
        nc = await connect({ servers: [...settings.servers], name: `plinth ${settings.node}`, maxReconnectAttempts: -1, timeout: 2000 })
      } catch (error) {
        logger.warn('cannot reach NATS (PLINTH_CLUSTER_NATS); trying again in 1 s', {
          servers: settings.servers.join(','),
          attempt,
          error: String(error),
        })
        await new Promise((resolve) => setTimeout(resolve, 1000))
      }
    }
    try {
      const info = nc.info!
      const version = info.version.split('.').map(Number)
      const older = MIN_SERVER.findIndex((part, i) => (version[i] ?? 0) !== part)
      if (older !== -1 && (version[older] ?? 0) < MIN_SERVER[older]!)
        throw new Error(
          `nats-server ${info.version} at ${nc.getServer()} is older than ${MIN_SERVER.join('.')}, which Plinth's cluster needs`,
        )
      if (info.jetstream !== true)
        throw new Error(
          `nats-server ${info.version} at ${nc.getServer()} runs without JetStream; start it with \`jetstream {}\` in its configuration (-js)`,
        )
      // R3 on a cluster of three or more servers; a lone server (development) holds one copy.
      const replicas = Math.min(3, Math.max(1, new Set(info.connect_urls ?? []).size))
      const log = await retryElection(() => NatsLog.open(nc, replicas), logger)
      const lease = await retryElection(() => Lease.open(nc, settings.leaseMs, replicas), logger)
      const nodes = await retryElection(
        () => new Kvm(nc).create('plinth-nodes', { ttl: settings.leaseMs * 2, history: 1, replicas }),
        logger,
      )
      const blobs = await retryElection(() => ClusterBlobs.open(nc, replicas), logger)
      const node = new ClusterNode(settings, nc, log, lease, nodes, blobs, logger)
      await node.#register()
      node.#listenForReplicas()
      return node
    } catch (error) {
      await nc.close()
      throw error
    }
  }

  get role(): 'starting' | 'primary' | 'replica' | 'stopped' {
    return this.#role
  }

  /** The store's position in the log (0 before any entry). */
  get applied(): number {
    return this.#store?.position()?.seq ?? 0
  }

  /** Who leads, as this node last read the lease (every half lease on a replica); null: nobody, for a moment. */
  get leader(): Holder | null {
    return this.#leader
  }

  /**
   * Catches the store up with the log, then leads if nobody does, or follows. Resolves with the role
   * taken; a replica keeps following (and takes the lease when it falls free) until `close`.
   */
  async join(store: Store, events: ClusterEvents): Promise<'primary' | 'replica'> {
    this.#store = store
    this.#events = events
    if (store.position() === null && store.meta.get('installation') !== undefined)
      throw new DivergedError(
        `this data directory holds an installation made outside the cluster (the embedded server's), which the cluster's log does not have: start a cluster's first node on an empty PLINTH_DATA_DIR (moving an existing installation into a cluster is not built yet)`,
      )
    await this.#checkPosition()
    await this.#catchUp()
    if (await this.#tryLead()) return 'primary'
    this.#leader = await this.#lease.holder()
    this.#follow()
    return 'replica'
  }

  /**
   * Page views counted on this replica (one message a second, on plain NATS: not the log; lost if no
   * primary is up to take them, as a page view is while a single server restarts).
   */
  sendViews(report: unknown): void {
    this.#nc.publish(VIEWS_SUBJECT, views.pack(report))
  }

  /** Hands the replicas' page views to `fold` while this node leads. */
  onViews(fold: (report: unknown) => void): void {
    const subscription = this.#nc.subscribe(VIEWS_SUBJECT)
    void (async () => {
      for await (const message of subscription) {
        if (this.#role !== 'primary') continue
        try {
          fold(views.unpack(message.data))
        } catch (error) {
          this.#logger.warn("a replica's page views could not be read", { error: String(error) })
        }
      }
    })()
  }

  /** Stops following or leading, gives up the lease when held, and closes the connection. */
  async close(): Promise<void> {
    const was = this.#role
    this.#role = 'stopped'
    if (this.#timer !== null) clearInterval(this.#timer)
    this.#following?.abort()
    await this.#applying.catch(() => undefined)
    if (was === 'primary') {
      this.#store?.useLog(null)
      await this.#lease.release()
    }
    await this.#nodes.delete(this.settings.node, { previousSeq: this.#nodeRevision }).catch(() => undefined)
    await this.#nc.drain().catch(() => undefined)
  }

  async #register(): Promise<void> {
    const value = JSON.stringify({ url: this.settings.url, at: Date.now() })
    try {
      this.#nodeRevision = await this.#nodes.create(this.settings.node, value)
    } catch {
      const seen = await this.#nodes.get(this.settings.node)
      throw new Error(
        `another node named "${this.settings.node}" is running (${seen?.json<{ url: string }>().url ?? 'address unknown'}); give each node its own PLINTH_NODE_NAME`,
      )
    }
  }

  /** A data directory whose last entry is not the log's entry at that sequence holds writes the cluster never acknowledged. */
  async #checkPosition(): Promise<void> {
    const position = this.#store!.position()
    if (position === null) return
    const { last } = await this.#log.bounds()
    const digest = position.seq > last ? null : await this.#log.digestAt(position.seq)
    if (digest !== position.digest)
      throw new DivergedError(
        `this node's data directory reached log entry ${position.seq} (epoch ${position.epoch}), which the cluster's log ${position.seq > last ? `does not have (it ends at ${last})` : 'holds with other writes'}: its last writes were never acknowledged. Restore it from a backup (plinth restore) and start it again`,
      )
  }

  async #catchUp(): Promise<void> {
    const from = this.applied + 1
    const { first, last } = await this.#log.bounds()
    if (last < from) return
    if (from < first)
      throw new Error(
        `the log starts at entry ${first} and this node's data directory is at ${from - 1}: restore the newest backup (plinth restore) and start again`,
      )
    await this.#log.read(from, last, (entry) => this.#apply(entry))
  }

  /** One entry: its blob files fetched first (a version goes live here only with all its bytes), then its writes. */
  async #apply(entry: LogEntry): Promise<void> {
    const store = this.#store!
    const position = store.position()
    if (position !== null && entry.position.seq <= position.seq) return
    await store.applyEntry(entry, entry.position, (hash, into) => this.#blobs.fetch(hash, into))
    const served = this.#events!.applied(websitesTouched(entry.writes))
    const seq = entry.position.seq
    if (served) void served.then(() => this.#sayApplied(seq))
    else this.#sayApplied(seq)
  }

  /** A replica tells the primary how far it applied the log and its serving threads serve it (never further). */
  #sayApplied(seq: number): void {
    this.#served = Math.max(this.#served, seq)
    if (this.#role !== 'replica') return
    this.#nc.publish(APPLIED_SUBJECT, JSON.stringify({ node: this.settings.node, seq: this.#served }))
  }

  #listenForReplicas(): void {
    const subscription = this.#nc.subscribe(APPLIED_SUBJECT)
    void (async () => {
      for await (const message of subscription) {
        let said: { node?: unknown; seq?: unknown }
        try {
          said = message.json()
        } catch {
          continue
        }
        if (typeof said.node !== 'string' || typeof said.seq !== 'number' || said.node === this.settings.node) continue
        const known = this.#replicas.get(said.node)
        this.#replicas.set(said.node, { seq: Math.max(said.seq, known?.seq ?? 0), at: Date.now() })
        for (const waiter of this.#waiting) waiter.check()
      }
    })()
  }

  /**
   * On the primary: resolves when every live replica (heard from within two leases) applied the log up
   * to this node's position, or after REPLICATED_WAIT_MS with the names of those that had not; null when
   * there is nothing to wait for.
   */
  replicated(): Promise<string[]> | null {
    if (this.#role !== 'primary') return null
    const target = this.applied
    const lagging = (): string[] => {
      const live = Date.now() - 2 * this.settings.leaseMs
      return [...this.#replicas].filter(([, r]) => r.at >= live && r.seq < target).map(([node]) => node)
    }
    if (lagging().length === 0) return null
    return new Promise((resolve) => {
      const waiter = {
        target,
        check: () => {
          if (lagging().length > 0) return
          clearTimeout(timer)
          this.#waiting = this.#waiting.filter((w) => w !== waiter)
          resolve([])
        },
      }
      const timer = setTimeout(() => {
        this.#waiting = this.#waiting.filter((w) => w !== waiter)
        const late = lagging()
        this.#logger.warn('replicas had not applied a change when its answer went', { lagging: late.join(','), seq: target })
        resolve(late)
      }, REPLICATED_WAIT_MS)
      this.#waiting.push(waiter)
    })
  }

  /** Takes the lease if it is free; then this node's commits go to the log. */
  async #tryLead(): Promise<boolean> {
    const epoch = await this.#lease.take(this.settings.node, this.settings.url)
    if (epoch === null) return false
    // Entries appended after the catch-up, by a primary whose lease just ended, are read first.
    await this.#catchUp()
    this.#epoch = epoch
    this.#tail = (await this.#log.bounds()).last
    this.#role = 'primary'
    this.#leader = { node: this.settings.node, url: this.settings.url, epoch }
    // Every file placed from now on is in the cluster's blob store before the entry that lists it.
    this.#store!.blobs.mirror = (hash, path) => this.#blobs.put(hash, path)
    this.#store!.useLog(this.#commitLog())
    this.#logger.info('this node leads the cluster', { node: this.settings.node, epoch, log: this.#tail })
    this.#timer = setInterval(() => void this.#renew(), Math.max(200, Math.floor(this.settings.leaseMs / 3)))
    this.#timer.unref()
    this.#events!.leading()
    return true
  }

  #commitLog(): CommitLog {
    return {
      seal: (entry: Entry) => {
        if (this.#role !== 'primary')
          throw new ApiError('unavailable', 'This node stopped leading the cluster: nothing was changed; try again in a few seconds')
        const bytes = packEntry(entry)
        const after = this.#tail
        this.#tail += this.#log.partsOf(bytes)
        const position: LogPosition = { seq: this.#tail, epoch: this.#epoch, digest: digestOf(bytes) }
        const sealed = this.#log.append(bytes, after, this.#epoch, this.settings.node).catch((error: unknown) => {
          this.#stepDown(
            isDeposed(error) ? 'another primary appended to the log' : `the log did not acknowledge an entry: ${String(error)}`,
          )
          throw new ApiError(
            'unavailable',
            'The cluster did not acknowledge this write (this node stopped leading it): its outcome is unknown; read the resource again before retrying',
          )
        })
        return { position, sealed }
      },
    }
  }

  async #renew(): Promise<void> {
    if (this.#role !== 'primary') return
    const kept = await this.#lease
      .renew({ node: this.settings.node, url: this.settings.url, epoch: this.#epoch })
      .catch((error: unknown) => (this.#logger.warn('could not renew the lease', { error: String(error) }), null))
    if (kept === false) this.#stepDown('the lease was taken by another node')
    await this.#nodes
      .update(this.settings.node, JSON.stringify({ url: this.settings.url, at: Date.now(), seq: this.applied }), this.#nodeRevision)
      .then(
        (revision) => (this.#nodeRevision = revision),
        () => undefined,
      )
  }

  /** A primary that can no longer append commits nothing more and says why (it rejoins as a replica after a restart). */
  #stepDown(reason: string): void {
    if (this.#role !== 'primary') return
    this.#role = 'stopped'
    this.#leader = null
    this.#store!.useLog(null)
    this.#store!.blobs.mirror = null
    if (this.#timer !== null) clearInterval(this.#timer)
    this.#logger.error('this node stopped leading the cluster', { node: this.settings.node, reason })
    this.#events!.lost(reason)
  }

  /**
   * Follows the log from the store's position (a following that fails, a fetch of a blob file that
   * fails or a consumer the server lost, starts again from the position a second later); takes the
   * lease when it falls free.
   */
  #follow(): void {
    this.#role = 'replica'
    const controller = new AbortController()
    this.#following = controller
    const run = (): void => {
      void this.#log
        .follow(this.applied + 1, (entry) => (this.#applying = this.#apply(entry)), controller.signal)
        .then(
          () => 'the consumer ended',
          (error: unknown) => String(error),
        )
        .then((why) => {
          if (controller.signal.aborted) return
          this.#logger.error("following the log stopped; starting again from this node's position in 1 s", { position: this.applied, why })
          setTimeout(() => !controller.signal.aborted && run(), 1000).unref()
        })
    }
    run()
    this.#timer = setInterval(() => void this.#watchLease(), Math.max(200, Math.floor(this.settings.leaseMs / 2)))
    this.#timer.unref()
    void this.#renewNode()
  }

  async #renewNode(): Promise<void> {
    while (this.#role === 'replica') {
      this.#sayApplied(this.#served)
      await this.#nodes
        .update(this.settings.node, JSON.stringify({ url: this.settings.url, at: Date.now(), seq: this.applied }), this.#nodeRevision)
        .then(
          (revision) => (this.#nodeRevision = revision),
          () => undefined,
        )
      await new Promise((resolve) => setTimeout(resolve, Math.max(200, Math.floor(this.settings.leaseMs / 3))).unref())
    }
  }

  async #watchLease(): Promise<void> {
    if (this.#role !== 'replica') return
    const holder = await this.#lease.holder().catch(() => undefined)
    if (holder === undefined) return
    this.#leader = holder
    if (holder !== null) return
    clearInterval(this.#timer!)
    this.#following?.abort()
    await this.#applying.catch(() => undefined)
    if (this.#role !== 'replica') return
    const leads = await this.#tryLead().catch(
      (error: unknown) => (this.#logger.warn('could not take the lease', { error: String(error) }), false),
    )
    if (!leads) this.#follow()
  }
}

/** "JetStream is not enabled" or a timeout while the servers elect a leader: tried again for up to 30 s. */
async function retryElection<T>(fn: () => Promise<T>, logger: Logger): Promise<T> {
  const deadline = Date.now() + 30_000
  for (;;) {
    try {
      return await fn()
    } catch (error) {
      if (Date.now() > deadline || !/not enabled|timeout|no responders|leader/i.test(String(error))) throw error
      logger.warn('NATS JetStream is electing a leader; trying again', { error: String(error) })
      await new Promise((resolve) => setTimeout(resolve, 500))
    }
  }
}
