// One node of a cluster: connects to NATS, catches up with the log, then leads (holds the lease) or follows.
import { connect, headers as natsHeaders, type Msg, type NatsConnection } from '@nats-io/transport-node'
import { Packr } from 'msgpackr'
import { Kvm, type KV } from '@nats-io/kv'
import type { Logger } from '../core/log.js'
import { ApiError } from '../core/errors.js'
import type { Replication } from '../core/store/replication.js'
import type { Store } from '../core/store/store.js'
import { packEntry, type CommitLog, type Entry, type LogPosition } from '../core/store/write-set.js'
import { Appender, DeposedError } from './appender.js'
import { ClusterBlobs } from './blobs.js'
import { natsOptions, type NatsAccess } from './connection.js'
import { EntryReader, LogGapError, NatsLog, type LogEntry, type SkipReason } from './log.js'
import { Lease, newer, type Holder, type LeaseState } from './lease.js'
import { chainDigest, ClusterTrust, GENESIS, NODE_NAME } from './trust.js'

/** How a node joins (core/config.ts reads these from PLINTH_CLUSTER_NATS, PLINTH_NODE_NAME and PLINTH_NODE_URL). */
export interface ClusterSettings extends NatsAccess {
  servers: readonly string[]
  node: string
  /** Where the other nodes reach this one's HTTP port (replicas forward the API there when it leads). */
  url: string
  /** How long a lease lives without renewal (the longest a cluster goes without a primary after one dies). */
  leaseMs: number
}

/** A cluster node's store as opened for it (`{ replicated: true }`): its side of the log. */
function replicationOf(store: Store): Replication {
  if (store.replication === null) throw new Error('a cluster node needs its store opened replicated')
  return store.replication
}

/** What the rest of the server is told. */
export interface ClusterEvents {
  /**
   * A replica applied an entry (the store announced its writes to the caches of the tables they touch,
   * `Store.changes`); the promise (if any) resolves when every serving thread serves it (then the
   * primary is told).
   */
  applied(): Promise<void> | null | void
  /** This node became the primary (its background work may write now). */
  leading(): void
  /**
   * This node stepped down from leading and its data directory holds an entry the log never
   * acknowledged: it cannot serve or follow as it is, and stops (a restart restores a backup).
   */
  lost(reason: string): void
}

/** Page views of a second, as a replica sends them (typed arrays kept). */
const views = new Packr({ useRecords: false, moreTypes: true })
const VIEWS_SUBJECT = 'plinth.views'
/** Replicas say how far they applied the log: after each entry their threads serve, and every third of a lease. */
const APPLIED_SUBJECT = 'plinth.applied'
/** A node says a backup of it ended (the primary then looks at PLINTH_CLUSTER_BACKUPS to trim the log). */
const BACKUP_SUBJECT = 'plinth.backup'
/**
 * The primary says it renewed its lease (its record's node, address, epoch and renewal), signed: replicas
 * hear every renewal, however often a NATS client writes over the record between their looks at it.
 */
const PRIMARY_SUBJECT = 'plinth.primary'
/** The longest a write's answer waits for the replicas. */
const REPLICATED_WAIT_MS = 2000

/** A primary stops trusting its lease this far into it without a renewal (the server ends it at 1). */
const LEASE_TRUST = 0.8
/** How long an append is tried again while the stream does not acknowledge it (an election, a server restarting). */
const APPEND_TRIES_MS = 20_000
/** A replica whose position has not moved this long while the log's has makes its consumer again. */
const STALL_MS = 5000

/** The oldest nats-server the cluster runs on (JetStream clustering, KV with compare-and-set). */
const MIN_SERVER = [2, 9, 0]
/** How far a message between nodes (how far a replica applied) may be from this node's clock and still count. */
const MESSAGE_WINDOW_MS = 30_000

/** Skipped log messages are logged at most once in this long (plinth_cluster_refused_total counts each). */
const SKIP_LOG_MS = 10_000

/** What a node refused from the cluster, counted in /metrics (plinth_cluster_refused_total). */
export type Refusal = `log_${SkipReason}` | 'lease' | 'message' | 'forward'

/** How a data directory stands against the log (`assess`). */
export type Standing =
  | { kind: 'ok' }
  | { kind: 'new' }
  | { kind: 'embedded'; message: string }
  | { kind: 'diverged'; message: string }
  | { kind: 'behind'; message: string }

/** A data directory ahead of the log or off it: its last entries were never acknowledged by the cluster. */
export class DivergedError extends Error {}

export class ClusterNode {
  readonly settings: ClusterSettings
  readonly #nc: NatsConnection
  readonly #log: NatsLog
  readonly #lease: Lease
  readonly #nodes: KV
  readonly #blobs: ClusterBlobs
  readonly #trust: ClusterTrust
  readonly #logger: Logger
  #store: Store | null = null
  /** The joined store's side of the log (its commits sealed here, entries applied). */
  get #replication(): Replication {
    return replicationOf(this.#store!)
  }
  #events: ClusterEvents | null = null
  #role: 'starting' | 'primary' | 'replica' | 'stopped' = 'starting'
  #epoch = 0
  /** The primary's appends (null while it does not lead). */
  #appender: Appender | null = null
  /** The chained digest of the last entry this primary sealed (the next one's `prev`). */
  #chain = GENESIS
  #following: AbortController | null = null
  #timer: NodeJS.Timeout | null = null
  #nodeRevision = 0
  /** The primary as this node last saw the lease (a replica forwards there; null: none right now). */
  #leader: Holder | null = null
  /** The latest signed lease record this node saw (epoch, then renewal: a live primary's count up), and when it first saw it. */
  #leaseSeen: { holder: Holder | null; at: number } = { holder: null, at: 0 }
  /** This primary's renewals in its epoch (each record it writes counts one up). */
  #renewal = 0
  /** What each replica said it applied, when it last said so (this node's clock) and when it says it said it (the replica's). */
  readonly #replicas = new Map<string, { seq: number; at: number; said: number }>()
  /** How far this replica's serving threads serve the log (what it tells the primary). */
  #served = 0
  /** Answers waiting for the replicas (`replicated`). */
  #waiting: { check: () => void }[] = []
  /** Entries applied one after another (a replica), so the position only moves forward. */
  #applying: Promise<void> = Promise.resolve()
  /** When this primary last asked for a renewal of its lease that the server then stored. */
  #renewedAt = 0
  #renewing = false
  /** Appends not yet acknowledged (a primary that steps down waits for them before checking its position). */
  readonly #appending = new Set<Promise<unknown>>()
  /** The position a replica's stall watch last saw move, and when. */
  #stalled = { applied: 0, since: 0 }
  /** The last log sequence skipped and counted (a following made again reads the same messages again). */
  #skippedUpTo = 0
  /** What this node refused from the cluster, by kind (`/metrics`). */
  readonly refusals = new Map<Refusal, number>()
  #closed = false

  private constructor(
    settings: ClusterSettings,
    nc: NatsConnection,
    log: NatsLog,
    lease: Lease,
    nodes: KV,
    blobs: ClusterBlobs,
    trust: ClusterTrust,
    logger: Logger,
  ) {
    this.settings = settings
    this.#nc = nc
    this.#log = log
    this.#lease = lease
    this.#nodes = nodes
    this.#blobs = blobs
    this.#trust = trust
    this.#logger = logger
  }

  /**
   * Connects to NATS (retrying, with a line naming the servers each time, until one answers), checks the
   * server (a version the cluster runs on, JetStream on) and that no live node has this node's name.
   * `secret` is the installation's: every key the nodes prove themselves with derives from it.
   */
  static async connect(settings: ClusterSettings, secret: Buffer, logger: Logger): Promise<ClusterNode> {
    const trust = new ClusterTrust(secret)
    let nc: NatsConnection | undefined
    for (let attempt = 1; nc === undefined; attempt++) {
      try {
        nc = await connect({
          ...natsOptions(settings),
          servers: [...settings.servers],
          name: `plinth ${settings.node}`,
          maxReconnectAttempts: -1,
          timeout: 2000,
          // Only the servers given: one the cluster announces might be reached without TLS or credentials.
          ignoreClusterUpdates: true,
        })
      } catch (error) {
        // Refused credentials or a certificate that does not verify will not mend by waiting.
        if (/authorization|authentication|certificate|self.signed|unable to verify|tls/i.test(String(error)))
          throw new Error(
            `NATS (PLINTH_CLUSTER_NATS ${settings.servers.join(',')}) refused this node: ${String(error)}. Check PLINTH_CLUSTER_NATS_CREDS and PLINTH_CLUSTER_NATS_CA against the servers' configuration`,
          )
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
      const log = await retryElection(() => NatsLog.open(nc, replicas, trust), logger)
      const lease = await retryElection(() => Lease.open(nc, settings.leaseMs, replicas, trust), logger)
      const nodes = await retryElection(
        () => new Kvm(nc).create('plinth-nodes', { ttl: settings.leaseMs * 2, history: 1, replicas }),
        logger,
      )
      const blobs = await retryElection(() => ClusterBlobs.open(nc, replicas), logger)
      const node = new ClusterNode(settings, nc, log, lease, nodes, blobs, trust, logger)
      await retryElection(() => node.#register(), logger)
      node.#listenForReplicas()
      node.#listenForPrimary()
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
    return this.#store?.replication?.position()?.seq ?? 0
  }

  /** The log's first and last sequence now. */
  bounds(): Promise<{ first: number; last: number }> {
    return this.#log.bounds()
  }

  /** Who leads, as this node last read the lease (every half lease on a replica); null: nobody, for a moment. */
  get leader(): Holder | null {
    return this.#leader
  }

  /** The keys this node proves itself with (forwards, challenges). */
  get trust(): ClusterTrust {
    return this.#trust
  }

  /** Counts one thing refused from the cluster (logged where it was refused). */
  refused(what: Refusal): void {
    this.refusals.set(what, (this.refusals.get(what) ?? 0) + 1)
  }

  /**
   * The answer to a replica's challenge (`GET /_platform/cluster/challenge`): proof, under a key only
   * the cluster's nodes hold, that this address is the primary of its epoch. Null on any other node.
   */
  answerChallenge(nonce: string): { node: string; epoch: number; proof: string } | null {
    if (this.#role !== 'primary') return null
    return {
      node: this.settings.node,
      epoch: this.#epoch,
      proof: this.#trust.challengeProof(nonce, this.settings.node, this.#epoch, this.settings.url),
    }
  }

  /**
   * How this node's data directory stands against the log: `ok` (empty log, or a position the log
   * holds), `new` (nothing applied yet, and the log has entries to replay), or a state it cannot
   * join in: `embedded` (an installation made outside the cluster), `diverged` (its last entry is not
   * the log's: writes the cluster never acknowledged) or `behind` (the log no longer has the entries
   * after its position). A backup (PLINTH_CLUSTER_BACKUPS) repairs the last three and spares `new` the replay.
   */
  async assess(store: Store): Promise<Standing> {
    const position = replicationOf(store).position()
    const { first, last } = await this.#log.bounds()
    if (position === null) {
      if (store.meta.get('installation') !== undefined)
        return {
          kind: 'embedded',
          message:
            "this data directory holds an installation made outside the cluster (the embedded server's), which the cluster's log does not have: start a cluster's first node on an empty PLINTH_DATA_DIR (moving an existing installation into a cluster is not built yet)",
        }
      return last === 0 ? { kind: 'ok' } : { kind: 'new' }
    }
    // Entries sealed after the last one known in (a primary's appends in flight when it stopped): the log
    // holds them only if a reader applies them after it, wherever they landed.
    const acked = replicationOf(store).acked() ?? position
    if (acked.digest !== position.digest) {
      const settled = await this.#settle(store, acked, position, first, last)
      if (settled !== null) return settled
      return this.assess(store)
    }
    const digest = position.seq > last ? null : await this.#log.digestAt(position.seq)
    if (digest !== position.digest) {
      if (position.seq < first && position.seq <= last) return this.#behind(position.seq, first)
      return this.#diverged(position, last)
    }
    return position.seq + 1 < first ? this.#behind(position.seq, first) : { kind: 'ok' }
  }

  #diverged(position: LogPosition, last: number): Standing {
    return {
      kind: 'diverged',
      message: `this node's data directory reached log entry ${position.seq} (epoch ${position.epoch}), which the cluster's log ${position.seq > last ? `does not have (it ends at ${last})` : 'holds with other writes'}: its last writes were never acknowledged`,
    }
  }

  /**
   * A primary's entries after the last one it knew to be in: read from there as every reader reads the
   * log. When a reader applies this node's last entry (after its own earlier ones), the position is the
   * log's (recorded where it was applied, and null is returned); when it applies another node's entry
   * first, or none, the data directory holds writes the cluster never took.
   */
  async #settle(store: Store, acked: LogPosition, position: LogPosition, first: number, last: number): Promise<Standing | null> {
    if (acked.seq > 0 && acked.seq < first) return this.#behind(acked.seq, first)
    // Nothing after the last entry known in: the later ones were never taken.
    if (acked.seq >= last) return this.#diverged(position, last)
    if (acked.seq > 0 && (await this.#log.digestAt(acked.seq)) !== acked.digest) return this.#diverged(acked, last)
    let applied: LogPosition | null = null
    const done = new Error('read as far as needed')
    await this.#log
      .read(
        acked.seq + 1,
        last,
        this.#log.reader(
          acked,
          (entry) => replicationOf(store).checkEntry(entry),
          () => undefined,
        ),
        async (entry) => {
          if (entry.position.digest === position.digest) applied = entry.position
          // Another node's entry is what every reader applied instead: this node's own are off the log.
          if (applied !== null || entry.node !== this.settings.node || entry.position.epoch !== position.epoch) throw done
        },
      )
      .catch((error: unknown) => {
        if (error !== done) throw error
      })
    if (applied === null)
      return {
        kind: 'diverged',
        message: `this node's data directory holds entries after log entry ${acked.seq} (up to its own ${position.seq}, epoch ${position.epoch}) that no node applies from the cluster's log: its last writes were never acknowledged`,
      }
    const found: LogPosition = applied
    await replicationOf(store).confirmPosition(found)
    if (found.seq !== position.seq)
      this.#logger.info(
        "this node's last entry is in the log where every reader applies it, not where it was sealed: its position is moved there",
        {
          sealed: position.seq,
          found: found.seq,
        },
      )
    return null
  }

  #behind(seq: number, first: number): Standing {
    return {
      kind: 'behind',
      message: `the log starts at entry ${first} and this node's data directory is at ${seq}: the entries between are no longer in the log`,
    }
  }

  /**
   * Catches the store up with the log, then leads if nobody does, or follows. Resolves with the role
   * taken; a replica keeps following (and takes the lease when it falls free) until `close`. A data
   * directory the node cannot join in (`assess`) is refused with DivergedError.
   */
  async join(store: Store, events: ClusterEvents): Promise<'primary' | 'replica'> {
    this.#store = store
    this.#events = events
    const state = await this.assess(store)
    if ('message' in state)
      throw new DivergedError(
        `${state.message}. Set PLINTH_CLUSTER_BACKUPS to a backup root and start it again (it restores the newest backup and replays the log from there), or restore one yourself (plinth restore)`,
      )
    await this.#catchUp()
    const lease = await this.#lease.read()
    // A record no node signed names nobody; this node waits a lease (its primary may write over it) before taking it.
    if (lease.forged) this.#leaseSeen = { holder: null, at: Date.now() }
    if (lease.holder === null && !lease.forged && (await this.#tryLead((now) => now.holder === null && !now.forged))) return 'primary'
    this.#seeLease(lease)
    this.#follow()
    return 'replica'
  }

  /** A publish on plain NATS, signed: the receivers believe only what a node of the cluster said. */
  #say(subject: string, payload: Uint8Array): void {
    const { at, mac } = this.#trust.sealMessage(subject, payload, Date.now())
    const h = natsHeaders()
    h.set('Plinth-At', at)
    h.set('Plinth-Mac', mac)
    this.#nc.publish(subject, payload, { headers: h })
  }

  /**
   * When a node said a message (its clock), or null (and counted) when no node said it, it was said
   * too long ago or too far ahead of this node's clock, or it was heard before (said again: a replay).
   */
  #heard(message: Msg): number | null {
    const mac = message.headers?.get('Plinth-Mac')
    const at = this.#trust.openMessage(message.subject, message.data, message.headers?.get('Plinth-At'), mac)
    const now = Date.now()
    const window = Math.max(MESSAGE_WINDOW_MS, 2 * this.settings.leaseMs)
    const why =
      at === null
        ? 'no node signed it'
        : Math.abs(now - at) > window
          ? 'it was said too long ago'
          : this.#said.has(mac!)
            ? 'it was heard before'
            : null
    if (why !== null) {
      this.refused('message')
      this.#warnOnce(`message ${why}`, `a message on a cluster subject was ignored: ${why}`, { subject: message.subject })
      return null
    }
    if (this.#said.size > 10_000) for (const [seen, until] of this.#said) if (until < now) this.#said.delete(seen)
    this.#said.set(mac!, now + window)
    return at
  }

  /** The messages heard within the window, by MAC (each is believed once). */
  readonly #said = new Map<string, number>()

  /**
   * Page views counted on this replica (one message a second, on plain NATS: not the log; lost if no
   * primary is up to take them, as a page view is while a single server restarts).
   */
  sendViews(report: unknown): void {
    this.#say(VIEWS_SUBJECT, views.pack(report))
  }

  /** Hands the replicas' page views to `fold` while this node leads. */
  onViews(fold: (report: unknown) => void): void {
    const subscription = this.#nc.subscribe(VIEWS_SUBJECT)
    void (async () => {
      for await (const message of subscription) {
        if (this.#role !== 'primary' || this.#heard(message) === null) continue
        try {
          fold(views.unpack(message.data))
        } catch (error) {
          this.#logger.warn("a replica's page views could not be read", { error: String(error) })
        }
      }
    })()
  }

  /** Tells the cluster a backup of this node ended (its primary may trim the log: `trimLog`). */
  announceBackup(): void {
    this.#say(BACKUP_SUBJECT, Buffer.from(this.settings.node))
  }

  /** Calls `then` when any node says a backup of it ended. */
  onBackup(then: () => void): void {
    const subscription = this.#nc.subscribe(BACKUP_SUBJECT)
    void (async () => {
      for await (const message of subscription) if (this.#heard(message) !== null) then()
    })()
  }

  /**
   * The primary removes the log's entries before `position` (a backup's: every node further behind
   * restores that backup or a newer one); on any other node, nothing.
   */
  async trimLog(position: LogPosition): Promise<{ removed: number; first: number } | 'not-ours' | null> {
    if (this.#role !== 'primary') return null
    return this.#log.trimBefore(position)
  }

  /**
   * The primary, after trimming the log: removes from the cluster's blob store each file that no entry
   * left in the log lists (no replica replaying it will fetch it) and no record of this node's store
   * names (checked in the hash's turn, so a file being placed again is kept). Resolves how many went and stayed.
   */
  async sweepBlobs(): Promise<{ removed: number; kept: number }> {
    const swept = { removed: 0, kept: 0 }
    if (this.#role !== 'primary') return swept
    const listed = await this.#log.listedBlobs()
    for (const hash of await this.#blobs.names()) {
      const removed =
        !listed.has(hash) && this.#role === 'primary' && (await this.#store!.blobs.whenUnnamed(hash, () => this.#blobs.remove(hash)))
      swept[removed ? 'removed' : 'kept']++
    }
    return swept
  }

  /** Stops following or leading, gives up the lease when held, and closes the connection. */
  async close(): Promise<void> {
    const was = this.#role
    this.#role = 'stopped'
    this.#closed = true
    if (this.#timer !== null) clearInterval(this.#timer)
    this.#following?.abort()
    await this.#applying.catch(() => undefined)
    if (was === 'primary') {
      this.#store?.replication?.useLog(null)
      await this.#lease.release()
      // Every entry in: the next start has nothing in flight to check.
      const acked = this.#appender?.acked
      if (acked !== undefined && this.#appender!.idle && acked.digest === this.#store?.replication?.position()?.digest)
        await this.#replication.confirmPosition(acked)
    }
    await this.#nodes.delete(this.settings.node, { previousSeq: this.#nodeRevision }).catch(() => undefined)
    await this.#nc.drain().catch(() => undefined)
  }

  /** This node's entry in plinth-nodes (its address, when, how far it applied the log), signed like a message between nodes. */
  #nodeEntry(): string {
    const said = JSON.stringify({ url: this.settings.url, at: Date.now(), seq: this.applied })
    const { at, mac } = this.#trust.sealMessage(`plinth-nodes.${this.settings.node}`, Buffer.from(said), Date.now())
    return JSON.stringify({ said, at, mac })
  }

  async #register(): Promise<void> {
    try {
      this.#nodeRevision = await this.#nodes.create(this.settings.node, this.#nodeEntry())
    } catch (error) {
      // The name is held (the key exists); anything else, an election's answer, is the caller's to retry.
      if (!/wrong last sequence|exists/i.test(String(error))) throw error
      const seen = await this.#nodes.get(this.settings.node)
      let url: string | null = null
      try {
        const entry = seen?.json<{ said?: unknown; at?: unknown; mac?: unknown }>()
        const said = typeof entry?.said === 'string' ? entry.said : ''
        const signed =
          typeof entry?.at === 'string' &&
          typeof entry.mac === 'string' &&
          this.#trust.openMessage(`plinth-nodes.${this.settings.node}`, Buffer.from(said), entry.at, entry.mac) !== null
        const named = signed ? (JSON.parse(said) as { url?: unknown }).url : null
        if (typeof named === 'string') url = named
      } catch {
        // Not an entry a node wrote.
      }
      if (url === null && seen !== null) {
        // An entry no node signed holds the name (a NATS client put it there): written over.
        this.refused('message')
        this.#logger.warn('the name of this node was held in plinth-nodes by an entry no node signed: written over', {
          node: this.settings.node,
        })
        this.#nodeRevision = await this.#nodes.update(this.settings.node, this.#nodeEntry(), seen.revision)
        return
      }
      throw new Error(
        `another node named "${this.settings.node}" is running (${url ?? 'address unknown'}); give each node its own PLINTH_NODE_NAME`,
      )
    }
  }

  /** What reads the log for this node: entries after its position, signed, chained and of the right shape; the rest skipped and counted. */
  #reader(): EntryReader {
    return new EntryReader(
      this.#trust,
      this.#replication.position(),
      (entry) => this.#replication.checkEntry(entry),
      (seq, reason, detail) => this.#skipped(seq, reason, detail),
    )
  }

  /**
   * A message of the log not applied: counted once, however often it is read, and logged (a flood of
   * them is one line every SKIP_LOG_MS, saying how many went unlogged).
   */
  #skipped(seq: number, reason: SkipReason, detail: string): void {
    if (seq <= this.#skippedUpTo) return
    this.#skippedUpTo = seq
    this.refused(`log_${reason}`)
    const now = Date.now()
    if (now - this.#skipLog.at < SKIP_LOG_MS) return void this.#skipLog.unlogged++
    this.#logger.warn('a message of the log was not applied (every node skips it the same way)', {
      seq,
      reason,
      detail,
      ...(this.#skipLog.unlogged > 0 ? { skippedUnlogged: this.#skipLog.unlogged } : {}),
    })
    this.#skipLog = { at: now, unlogged: 0 }
  }

  #skipLog = { at: 0, unlogged: 0 }

  async #catchUp(): Promise<void> {
    const from = this.applied + 1
    const { first, last } = await this.#log.bounds()
    if (last < from) return
    if (from < first)
      throw new Error(
        `the log starts at entry ${first} and this node's data directory is at ${from - 1}: restore the newest backup (plinth restore) and start again`,
      )
    const reader = this.#reader()
    await this.#log.read(from, last, reader, (entry) => this.#apply(entry))
    this.#caughtUpTo = last
  }

  /** The last sequence the catch-up read (a new primary's appends go after it, whatever it skipped). */
  #caughtUpTo = 0

  /** One entry: its blob files fetched first (a version goes live here only with all its bytes), then its writes. */
  async #apply(entry: LogEntry): Promise<void> {
    const replication = this.#replication
    const position = replication.position()
    if (position !== null && entry.position.seq <= position.seq) return
    await replication.applyEntry(entry, entry.position, (hash, into) => this.#blobs.fetch(hash, into))
    const served = this.#events!.applied()
    const seq = entry.position.seq
    if (served) void served.then(() => this.#sayApplied(seq))
    else this.#sayApplied(seq)
  }

  /** A replica tells the primary how far it applied the log and its serving threads serve it (never further). */
  #sayApplied(seq: number): void {
    this.#served = Math.max(this.#served, seq)
    if (this.#role !== 'replica') return
    this.#say(APPLIED_SUBJECT, Buffer.from(JSON.stringify({ node: this.settings.node, seq: this.#served })))
  }

  #listenForReplicas(): void {
    const subscription = this.#nc.subscribe(APPLIED_SUBJECT)
    void (async () => {
      for await (const message of subscription) {
        const at = this.#heard(message)
        if (at === null) continue
        let said: { node?: unknown; seq?: unknown }
        try {
          said = message.json()
        } catch {
          continue
        }
        const { node, seq } = said
        if (typeof node !== 'string' || !NODE_NAME.test(node) || typeof seq !== 'number' || !Number.isSafeInteger(seq)) continue
        if (node === this.settings.node) continue
        const known = this.#replicas.get(node)
        // A message said again (a replay) or out of order tells nothing new.
        if (known !== undefined && at <= known.said) continue
        this.#replicas.set(node, { seq: Math.max(seq, known?.seq ?? 0), at: Date.now(), said: at })
        for (const waiter of this.#waiting) waiter.check()
      }
    })()
  }

  /** On the primary: the replicas heard from within two leases (a write's answer waits for them to apply it); 0 on a replica. */
  get liveReplicas(): number {
    if (this.#role !== 'primary') return 0
    const live = Date.now() - 2 * this.settings.leaseMs
    return [...this.#replicas.values()].filter((replica) => replica.at >= live).length
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
  async #tryLead(free: (now: LeaseState) => boolean): Promise<boolean> {
    const asked = Date.now()
    const epoch = await this.#lease.take(this.settings.node, this.settings.url, free)
    if (epoch === null) return false
    this.#renewal = 1
    this.#renewedAt = asked
    // Entries appended after the catch-up, by a primary whose lease just ended, are read first.
    await this.#catchUp()
    this.#epoch = epoch
    // The next append goes after everything the catch-up read, applied or skipped.
    const tail = Math.max(this.#caughtUpTo, this.applied)
    this.#chain = this.#replication.position()?.digest ?? GENESIS
    const position = this.#replication.position()
    this.#appender = new Appender(this.#log, tail, position ?? { seq: 0, epoch: 0, digest: GENESIS }, {
      triesMs: APPEND_TRIES_MS,
      stopped: () =>
        this.#role !== 'primary' ? 'this node no longer leads' : this.#leaseStale() ? 'its lease was not renewed in time' : null,
      moved: (digest, seq) => void this.#replication.movePosition(digest, seq),
      skipped: (seq, reason, detail) =>
        this.#skipped(seq, reason, `${detail}; found where this primary was to append: the append goes after it`),
      check: (entry) => this.#replication.checkEntry(entry),
    })
    this.#role = 'primary'
    this.#leader = { node: this.settings.node, url: this.settings.url, epoch, renewal: 1 }
    // Every file placed from now on is in the cluster's blob store before the entry that lists it.
    this.#store!.blobs.mirror = (hash, path) => this.#blobs.put(hash, path)
    this.#replication.useLog(this.#commitLog())
    this.#logger.info('this node leads the cluster', { node: this.settings.node, epoch, log: tail })
    this.#timer = setInterval(() => void this.#renew(), Math.max(100, Math.floor(this.settings.leaseMs / 3)))
    this.#timer.unref()
    this.#events!.leading()
    return true
  }

  /**
   * Whether this primary's lease may have ended: its last renewal was asked for more than
   * LEASE_TRUST of a lease ago (counted from the asking, before the server stored it, so the
   * server's TTL runs out after this node stops trusting it). A primary cut off from a NATS quorum
   * stops writing here, before another node can take the lease.
   */
  #leaseStale(): boolean {
    return Date.now() - this.#renewedAt > this.settings.leaseMs * LEASE_TRUST
  }

  #commitLog(): CommitLog {
    return {
      seal: (entry: Entry) => {
        if (this.#role === 'primary' && this.#leaseStale())
          this.#stepDown(`its lease was not renewed for ${Date.now() - this.#renewedAt} ms (NATS has no quorum, or cannot be reached)`)
        if (this.#role !== 'primary' || this.#appender === null)
          throw new ApiError('unavailable', 'This node stopped leading the cluster: nothing was changed; try again in a few seconds')
        // A write whose records do not have their tables' shapes would be skipped by every replica: it is refused here, before it is written.
        const problem = this.#replication.checkEntry(entry)
        if (problem !== null) throw new Error(`a commit's writes do not have their tables' shapes (${problem}); nothing was written`)
        const bytes = packEntry(entry)
        const prev = this.#chain
        const digest = chainDigest(prev, bytes)
        this.#chain = digest
        const { predicted, landed } = this.#appender.add(bytes, { epoch: this.#epoch, node: this.settings.node, prev, digest })
        const position: LogPosition = { seq: predicted, epoch: this.#epoch, digest }
        const acked = this.#appender.acked
        const sealed = landed.then(
          () => undefined,
          (error: unknown) => {
            this.#stepDown(
              error instanceof DeposedError
                ? `another primary appended to the log (${error.message})`
                : `the log did not acknowledge an entry: ${String(error)}`,
            )
            throw new ApiError(
              'unavailable',
              'The cluster did not acknowledge this write (this node stopped leading it): its outcome is unknown; read the resource again before retrying',
            )
          },
        )
        this.#appending.add(sealed)
        void sealed.then(
          () => this.#appending.delete(sealed),
          () => this.#appending.delete(sealed),
        )
        return { position, acked, sealed }
      },
    }
  }

  async #renew(): Promise<void> {
    if (this.#role !== 'primary') return
    if (this.#leaseStale()) {
      this.#stepDown(`its lease was not renewed for ${Date.now() - this.#renewedAt} ms (NATS has no quorum, or cannot be reached)`)
      return
    }
    if (this.#renewing) return
    this.#renewing = true
    const asked = Date.now()
    const kept = await this.#lease
      .renew({ node: this.settings.node, url: this.settings.url, epoch: this.#epoch, renewal: ++this.#renewal })
      .catch((error: unknown) => (this.#logger.warn('could not renew the lease', { error: String(error) }), null))
      .finally(() => (this.#renewing = false))
    if (kept === 'repaired') {
      this.refused('lease')
      this.#warnOnce('lease', 'the lease held a record no node signed (or was deleted): written over, this node still leads', {})
    }
    if ((kept === 'kept' || kept === 'repaired') && this.#role === 'primary') {
      this.#renewedAt = asked
      const said: Holder = { node: this.settings.node, url: this.settings.url, epoch: this.#epoch, renewal: this.#renewal }
      this.#say(PRIMARY_SUBJECT, Buffer.from(JSON.stringify(said)))
    }
    if (kept === 'lost') this.#stepDown('the lease was taken by another node')
    await this.#heartbeat()
  }

  /** This node's entry in plinth-nodes, renewed (it lives two leases): its address and how far it applied the log. */
  async #heartbeat(): Promise<void> {
    await this.#nodes.update(this.settings.node, this.#nodeEntry(), this.#nodeRevision).then(
      (revision) => (this.#nodeRevision = revision),
      () => undefined,
    )
  }

  /**
   * A primary that can no longer append commits nothing more (a commit is refused before its
   * transaction writes anything), gives its lease up if it still can, and rejoins as a replica once
   * its data directory is known to be the log's; if it is not (an entry the log never acknowledged),
   * the node must restart to restore a backup (`lost`).
   */
  #stepDown(reason: string): void {
    if (this.#role !== 'primary') return
    this.#role = 'stopped'
    this.#leader = null
    this.#replication.useLog(null)
    this.#store!.blobs.mirror = null
    this.#appender?.stop(new Error(`this node stepped down: ${reason}`))
    this.#appender = null
    if (this.#timer !== null) clearInterval(this.#timer)
    this.#logger.error('this node stopped leading the cluster; it rejoins as a replica once NATS answers', {
      node: this.settings.node,
      reason,
    })
    void this.#lease.release()
    void this.#rejoin()
  }

  /** After a step-down: waits for the appends in flight, then checks the data directory against the log (retrying while NATS cannot be reached), and follows. */
  async #rejoin(): Promise<void> {
    await Promise.allSettled([...this.#appending])
    for (let attempt = 1; this.#role === 'stopped' && !this.#closed; attempt++) {
      let state: Standing
      try {
        state = await this.assess(this.#store!)
        this.#seeLease(await this.#lease.read())
      } catch (error) {
        if (attempt % 10 === 1) this.#logger.warn('cannot reach the log to rejoin the cluster; trying again', { error: String(error) })
        await new Promise((resolve) => setTimeout(resolve, 1000))
        continue
      }
      if (this.#closed) return
      if (state.kind === 'ok') {
        this.#logger.info("this node's data directory is the log's: it follows the cluster as a replica", { node: this.settings.node })
        this.#follow()
        return
      }
      const message = 'message' in state ? state.message : 'its data directory is not the log'
      this.#logger.error('this node cannot rejoin the cluster as it is', { node: this.settings.node, reason: message })
      this.#events!.lost(
        `${message}. It stops; started again with PLINTH_CLUSTER_BACKUPS set, it restores the newest backup and replays the log`,
      )
      return
    }
  }

  /**
   * Follows the log from the store's position (a following that fails, a fetch of a blob file that
   * fails or a consumer the server lost, starts again from the position a second later); takes the
   * lease when it falls free.
   */
  #follow(): void {
    this.#role = 'replica'
    this.#startFollowing()
    this.#stalled = { applied: this.applied, since: Date.now() }
    this.#timer = setInterval(() => void this.#watchLease(), Math.max(200, Math.floor(this.settings.leaseMs / 2)))
    this.#timer.unref()
    void this.#renewNode()
  }

  #startFollowing(): void {
    this.#following?.abort()
    const controller = new AbortController()
    this.#following = controller
    const run = (): void => {
      // An entry still being applied by the consumer before is finished first (each is applied once, in order).
      void this.#applying
        .catch(() => undefined)
        .then(() => this.#log.follow(this.applied + 1, this.#reader(), (entry) => (this.#applying = this.#apply(entry)), controller.signal))
        .then(
          () => 'the consumer ended',
          (error: unknown) => error,
        )
        .then((why) => {
          if (controller.signal.aborted) return
          // Trimmed past this node: it cannot go on from here (a restart restores a backup).
          if (why instanceof LogGapError) {
            controller.abort()
            return this.#events!.lost(why.message)
          }
          this.#logger.error("following the log stopped; starting again from this node's position in 1 s", {
            position: this.applied,
            why: String(why),
          })
          setTimeout(() => !controller.signal.aborted && run(), 1000).unref()
        })
    }
    run()
  }

  async #renewNode(): Promise<void> {
    while (this.#role === 'replica') {
      this.#sayApplied(this.#served)
      await this.#heartbeat()
      await new Promise((resolve) => setTimeout(resolve, Math.max(200, Math.floor(this.settings.leaseMs / 3))).unref())
    }
  }

  /** Hears the primary's renewals (signed; a replay or an older one tells nothing). */
  #listenForPrimary(): void {
    const subscription = this.#nc.subscribe(PRIMARY_SUBJECT)
    void (async () => {
      for await (const message of subscription) {
        if (this.#role === 'primary' || this.#heard(message) === null) continue
        let said: Partial<Holder>
        try {
          said = message.json()
        } catch {
          continue
        }
        const { node, url, epoch, renewal } = said
        if (typeof node !== 'string' || !NODE_NAME.test(node) || typeof url !== 'string' || !/^https?:\/\/[^/?#\s]+$/.test(url)) continue
        if (typeof epoch !== 'number' || typeof renewal !== 'number' || !Number.isSafeInteger(epoch) || !Number.isSafeInteger(renewal))
          continue
        this.#seeHolder({ node, url, epoch, renewal })
      }
    })()
  }

  /** A signed record of the lease, read or heard: a later one moves the lease on (who leads, and when it was last renewed). */
  #seeHolder(holder: Holder): void {
    if (!newer(holder, this.#leaseSeen.holder)) return
    this.#leaseSeen = { holder, at: Date.now() }
    this.#leader = holder
  }

  /**
   * Notes the lease as read: who leads (the latest signed record, while it was renewed within a lease),
   * and when a signed record last moved on. A record no node signed, and an older record said again,
   * name nobody (counted).
   */
  #seeLease(lease: LeaseState): void {
    const now = Date.now()
    if (lease.holder !== null && newer(lease.holder, this.#leaseSeen.holder)) this.#seeHolder(lease.holder)
    else if (lease.holder !== null && newer(this.#leaseSeen.holder!, lease.holder)) {
      this.refused('lease')
      this.#warnOnce(
        'lease-old',
        'the lease holds an older record than one this node saw (said again by a NATS client): nobody leads by it',
        {},
      )
    }
    if (lease.forged) {
      this.refused('lease')
      this.#warnOnce('lease', 'the lease holds a record no node signed (a NATS client wrote it): nobody leads by it', {})
    }
    this.#leader = this.#leaseSeen.holder !== null && now - this.#leaseSeen.at < this.settings.leaseMs ? this.#leaseSeen.holder : null
  }

  /**
   * A replica looks at the lease every half lease. It takes the lease only when no signed record moved
   * on for a whole lease, writing over what is there then (nothing, a record no node signed, or an old
   * one said again): a live primary renews every third of a lease and writes over a deletion, a forged
   * record or a replayed one at its next renewal, so none of those makes a replica take over.
   */
  async #watchLease(): Promise<void> {
    if (this.#role !== 'replica') return
    const lease = await this.#lease.read().catch(() => undefined)
    if (lease === undefined) return
    this.#seeLease(lease)
    if (Date.now() - this.#leaseSeen.at < this.settings.leaseMs) return void (await this.#watchConsumer())
    clearInterval(this.#timer!)
    this.#following?.abort()
    await this.#applying.catch(() => undefined)
    if (this.#role !== 'replica') return
    const seen = this.#leaseSeen.holder
    const leads = await this.#tryLead((now) => now.holder === null || !newer(now.holder, seen)).catch(
      (error: unknown) => (this.#logger.warn('could not take the lease', { error: String(error) }), false),
    )
    if (!leads) this.#follow()
  }

  /**
   * A consumer that delivers nothing while the log grows (NATS users report watches that hang after a
   * server restart) is made again from this node's position: checked every STALL_MS.
   */
  async #watchConsumer(): Promise<void> {
    const now = Date.now()
    if (this.applied !== this.#stalled.applied) {
      this.#stalled = { applied: this.applied, since: now }
      return
    }
    if (now - this.#stalled.since < STALL_MS) return
    this.#stalled.since = now
    const last = await this.#log.bounds().then(
      (b) => b.last,
      () => 0,
    )
    if (last <= Math.max(this.applied, this.#skippedUpTo) || this.#role !== 'replica') return
    this.#logger.warn('following the log stalled (the log moved on, nothing arrived); making the consumer again', {
      position: this.applied,
      log: last,
    })
    this.#startFollowing()
  }

  readonly #warned = new Set<string>()
  /** A warning said once per kind (each occurrence is counted in /metrics). */
  #warnOnce(kind: string, message: string, fields: Record<string, unknown>): void {
    if (this.#warned.has(kind)) return
    this.#warned.add(kind)
    this.#logger.warn(message, fields)
  }
}

/**
 * "JetStream is not enabled", "JetStream system temporarily unavailable" (10008) or a timeout while the
 * servers elect a leader: tried again for up to 30 s. (CI met the second at a node's start, beside
 * three nats-servers just started, and the node exited 1.)
 */
async function retryElection<T>(fn: () => Promise<T>, logger: Logger): Promise<T> {
  const deadline = Date.now() + 30_000
  for (;;) {
    try {
      return await fn()
    } catch (error) {
      if (Date.now() > deadline || !/not enabled|temporarily unavailable|timeout|no responders|leader/i.test(String(error))) throw error
      logger.warn('NATS JetStream is electing a leader; trying again', { error: String(error) })
      await new Promise((resolve) => setTimeout(resolve, 500))
    }
  }
}
