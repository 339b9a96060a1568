// One node of a cluster: connects to NATS, catches up with the log, then leads (holds the lease) or follows.
import type { NatsConnection } from '@nats-io/transport-node'
import { Kvm, type KV } from '@nats-io/kv'
import type { Logger } from '../core/log.js'
import type { Replication } from '../core/store/replication.js'
import type { Store } from '../core/store/store.js'
import type { LogPosition } from '../core/store/write-set.js'
import { Appender } from './appender.js'
import { Follower, type ReplicaProgress } from './follower.js'
import { PrimaryLog } from './primary-log.js'
import { ClusterBlobs } from './blobs.js'
import { checkServer, connectToNats, retryElection } from './connection.js'
import type { ClusterEvents, ClusterSettings } from './settings.js'
import { NatsLog } from './log.js'
import { Lease, newer, type Holder, type LeaseState } from './lease.js'
import { LeaseView } from './lease-view.js'
import { APPLIED_SUBJECT, NodeMessages, PRIMARY_SUBJECT } from './messages.js'
import { NodeExchange } from './node-exchange.js'
import { NodeName } from './node-name.js'
import { Refusals, type Refusal } from './refusals.js'
import { ReplicaWatch } from './replica-watch.js'
import { assess, DivergedError, replicationOf, type Standing } from './standing.js'
import { ClusterTrust, GENESIS } from './trust.js'

export type { ClusterEvents, ClusterSettings } from './settings.js'

/** A primary stops trusting its lease this far into it without a renewal (the server ends it at 1). */
const LEASE_TRUST = 0.8
/** How long an append is tried again while the stream does not acknowledge it (an election, a server restarting). */
const APPEND_TRIES_MS = 20_000

export type { Refusal } from './refusals.js'

export { DivergedError, type Standing } from './standing.js'

export class ClusterNode {
  readonly settings: ClusterSettings
  readonly #nc: NatsConnection
  readonly #log: NatsLog
  readonly #lease: Lease
  /** This node's name in plinth-nodes, held while it runs. */
  readonly #name: NodeName
  readonly #messages: NodeMessages
  /** On the primary: how far each replica applied the log. */
  readonly #replicaWatch: ReplicaWatch
  /** The cluster's blob files (a seed puts the data directory's there). */
  readonly blobs: ClusterBlobs
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
  /** What this primary's commits are sealed into (null while it does not lead; after a step-down, the last one's, until it settled). */
  #primaryLog: PrimaryLog | null = null
  #timer: NodeJS.Timeout | null = null
  /** This primary's renewals in its epoch (each record it writes counts one up). */
  #renewal = 0
  /** How far this replica's serving threads serve the log (what it tells the primary). */
  #served = 0
  /** When this primary last asked for a renewal of its lease that the server then stored. */
  #renewedAt = 0
  #renewing = false
  /** This node's name was held by its own run before this start (killed: that run has ended). */
  #restarted = false
  /** Reads the log into the store: the catch-up, then the following (a replica). */
  readonly #follower: Follower
  /** Who leads, as this node sees the lease. */
  readonly #leaseView: LeaseView
  /** Page views, backups ended and operators' commands between the nodes (node-exchange.ts). */
  readonly exchange: NodeExchange
  /** What this node refused from the cluster, by kind (`/metrics`), each kind warned of once. */
  readonly refusals: Refusals
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
    this.blobs = blobs
    this.#trust = trust
    this.#logger = logger
    this.refusals = new Refusals(logger)
    this.#name = new NodeName(nodes, trust, settings.node, settings.url, settings.home, logger, () => this.refused('message'))
    this.#messages = new NodeMessages(
      nc,
      trust,
      settings.leaseMs,
      (why, subject) => {
        this.refused('message')
        this.refusals.warnOnce(`message ${why}`, `a message on a cluster subject was ignored: ${why}`, { subject })
      },
      (subject, error) =>
        logger.error(
          `NATS ended this node's subscription to ${subject}: it hears nothing there (give Plinth's NATS user the subject: deploy/cluster/plinth-permissions.conf)`,
          { error: String(error) },
        ),
    )
    this.#replicaWatch = new ReplicaWatch(settings.leaseMs, logger)
    this.exchange = new NodeExchange(this.#messages, trust, settings.node, () => this.#role === 'primary', logger)
    this.#leaseView = new LeaseView(settings.leaseMs, (kind, message) => {
      this.refused('lease')
      this.refusals.warnOnce(kind, message, {})
    })
    this.#follower = new Follower({
      log,
      trust,
      blobs,
      logger,
      replication: () => this.#replication,
      refused: (reason) => this.refused(`log_${reason}`),
      applied: (seq) => {
        const served = this.#events!.applied()
        if (served) void served.then(() => this.#sayApplied(seq))
        else this.#sayApplied(seq)
      },
      lost: (reason, upgrade) => this.#events!.lost(reason, upgrade),
    })
  }

  /**
   * Connects to NATS (retrying, with a line naming the servers each time, until one answers), checks the
   * server (a version the cluster runs on, JetStream on) and that no live node has this node's name.
   * `secret` is the installation's: every key the nodes prove themselves with derives from it.
   */
  static async connect(settings: ClusterSettings, secret: Buffer, logger: Logger): Promise<ClusterNode> {
    const trust = new ClusterTrust(secret)
    const nc = await connectToNats(settings, logger)
    try {
      checkServer(nc)
      // R3 on a cluster of three or more servers; a lone server (development) holds one copy.
      const replicas = Math.min(3, Math.max(1, new Set(nc.info!.connect_urls ?? []).size))
      const log = await retryElection(() => NatsLog.open(nc, replicas, trust), logger)
      const lease = await retryElection(() => Lease.open(nc, settings.leaseMs, replicas, trust), logger)
      const nodes = await retryElection(
        () => new Kvm(nc).create('plinth-nodes', { ttl: settings.leaseMs * 2, history: 1, replicas }),
        logger,
      )
      const blobs = await retryElection(() => ClusterBlobs.open(nc, replicas), logger)
      const node = new ClusterNode(settings, nc, log, lease, nodes, blobs, trust, logger)
      node.#restarted = await retryElection(() => node.#name.take(node.applied), logger)
      node.#replicaWatch.listen(node.#messages, settings.node)
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
    return retryElection(() => this.#log.bounds(), this.#logger)
  }

  /** Who leads, as this node last read the lease (every half lease on a replica); null: nobody, for a moment. */
  get leader(): Holder | null {
    return this.#leaseView.leader
  }

  /** How this node keeps up with the log (/metrics; a primary applies nothing from it). */
  get progress(): ReplicaProgress {
    return this.#follower.progress
  }

  /** Who leads, for the health check: this node, or the primary heard renewing lately (null: none heard, LeaseView.heardLeader). */
  get heardLeader(): string | null {
    return this.#role === 'primary' ? this.settings.node : (this.#leaseView.heardLeader?.node ?? null)
  }

  /** The keys this node proves itself with (forwards, challenges). */
  get trust(): ClusterTrust {
    return this.#trust
  }

  /** Counts one thing refused from the cluster (logged where it was refused). */
  refused(what: Refusal): void {
    this.refusals.count(what)
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

  /** How this node's data directory stands against the log (standing.ts). */
  assess(store: Store): Promise<Standing> {
    return retryElection(() => assess(store, this.#log, this.settings.node, this.#logger), this.#logger)
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
    // Nodes started together meet JetStream's first elections: a read that times out then is asked again.
    await retryElection(() => this.#follower.catchUp(), this.#logger)
    const lease = await retryElection(() => this.#lease.read(), this.#logger)
    // A record no node signed names nobody; this node waits a lease (its primary may write over it) before taking it.
    if (lease.forged) this.#leaseView.forget()
    // A lease held by this node's own run before a restart (a kill leaves it for a lease) is free too: that run has ended.
    const free = (now: LeaseState) => !now.forged && (now.holder === null || (this.#restarted && now.holder.node === this.settings.node))
    const led =
      free(lease) &&
      (await this.#tryLead(free).catch(
        (error: unknown) => (this.#logger.warn('could not take the lease; following meanwhile', { error: String(error) }), false),
      ))
    if (led) return 'primary'
    this.#leaseView.read(lease)
    this.#follow()
    return 'replica'
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
    if (this.#role !== 'primary') return { removed: 0, kept: 0 }
    return this.blobs.sweep(await this.#log.listedBlobs(), this.#store!.blobs, () => this.#role === 'primary')
  }

  /** Leads a new cluster with `store` (an embedded installation's, for `plinth cluster init`: seed.ts); false if a node leads. */
  async leadNew(store: Store): Promise<boolean> {
    this.#store = store
    this.#events = { applied: () => null, leading: () => undefined, lost: () => undefined }
    return this.#tryLead((now) => !now.forged && now.holder === null)
  }

  /** Stops following or leading, gives up the lease when held, and closes the connection. */
  async close(): Promise<void> {
    const was = this.#role
    this.#role = 'stopped'
    this.#closed = true
    if (this.#timer !== null) clearInterval(this.#timer)
    await this.#follower.stop()
    if (was === 'primary') {
      this.#store?.replication?.useLog(null)
      await this.#lease.release()
      // Every entry in: the next start has nothing in flight to check.
      const acked = this.#primaryLog?.acked
      if (acked !== undefined && this.#primaryLog!.idle && acked.digest === this.#store?.replication?.position()?.digest)
        await this.#replication.confirmPosition(acked)
    }
    await this.#name.release()
    await this.#nc.drain().catch(() => undefined)
  }

  /** A replica tells the primary how far it applied the log and its serving threads serve it (never further). */
  #sayApplied(seq: number): void {
    this.#served = Math.max(this.#served, seq)
    if (this.#role !== 'replica') return
    this.#messages.say(APPLIED_SUBJECT, Buffer.from(JSON.stringify({ node: this.settings.node, seq: this.#served })))
  }

  /** On the primary: the replicas heard from within two leases (a write's answer waits for them to apply it); 0 on a replica. */
  get liveReplicas(): number {
    return this.#role === 'primary' ? this.#replicaWatch.live : 0
  }

  /**
   * On the primary: resolves when every live replica (heard from within two leases) applied the log up
   * to this node's position, or after a while with the names of those that had not; null when there is
   * nothing to wait for (or this node does not lead).
   */
  replicated(): Promise<string[]> | null {
    return this.#role === 'primary' ? this.#replicaWatch.replicated(this.applied) : null
  }

  /** Takes the lease if it is free; then this node's commits go to the log. */
  async #tryLead(free: (now: LeaseState) => boolean): Promise<boolean> {
    const asked = Date.now()
    const epoch = await this.#lease.take(this.settings.node, this.settings.url, free)
    if (epoch === null) return false
    this.#renewal = 1
    this.#renewedAt = asked
    // Entries appended after the catch-up, by a primary whose lease just ended, are read first.
    await this.#follower.catchUp()
    this.#epoch = epoch
    // The next append goes after everything the catch-up read, applied or skipped.
    const tail = Math.max(this.#follower.caughtUpTo, this.applied)
    const position = this.#replication.position()
    const appender = new Appender(this.#log, tail, position ?? { seq: 0, epoch: 0, digest: GENESIS }, {
      triesMs: APPEND_TRIES_MS,
      stopped: () =>
        this.#role !== 'primary' ? 'this node no longer leads' : this.#leaseStale() ? 'its lease was not renewed in time' : null,
      moved: (digest, seq) => void this.#replication.movePosition(digest, seq),
      skipped: (seq, reason, detail) =>
        this.#follower.skipped(seq, reason, `${detail}; found where this primary was to append: the append goes after it`),
      check: (entry) => this.#replication.checkEntry(entry),
    })
    this.#primaryLog = new PrimaryLog(appender, position?.digest ?? GENESIS, epoch, this.settings.node, this.#replication, {
      refusal: () => {
        if (this.#role === 'primary' && this.#leaseStale())
          this.#stepDown(`its lease was not renewed for ${Date.now() - this.#renewedAt} ms (NATS has no quorum, or cannot be reached)`)
        return this.#role === 'primary' ? null : 'this node no longer leads'
      },
      stepDown: (reason) => this.#stepDown(reason),
    })
    this.#role = 'primary'
    this.#leaseView.leader = { node: this.settings.node, url: this.settings.url, epoch, renewal: 1 }
    // Every file placed from now on is in the cluster's blob store before the entry that lists it.
    this.#store!.blobs.mirror = (hash, path) => this.blobs.put(hash, path)
    this.#replication.useLog(this.#primaryLog)
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
      this.refusals.warnOnce('lease', 'the lease held a record no node signed (or was deleted): written over, this node still leads', {})
    }
    if ((kept === 'kept' || kept === 'repaired') && this.#role === 'primary') {
      this.#renewedAt = asked
      const said: Holder = { node: this.settings.node, url: this.settings.url, epoch: this.#epoch, renewal: this.#renewal }
      this.#messages.say(PRIMARY_SUBJECT, Buffer.from(JSON.stringify(said)))
    }
    if (kept === 'lost') this.#stepDown('the lease was taken by another node')
    await this.#heartbeat()
  }

  /** This node's entry in plinth-nodes, renewed (it lives two leases): its address and how far it applied the log. */
  async #heartbeat(): Promise<void> {
    await this.#name.renew(this.applied)
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
    this.#leaseView.leader = null
    this.#replication.useLog(null)
    this.#store!.blobs.mirror = null
    this.#primaryLog?.stop(reason)
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
    await this.#primaryLog?.settled()
    this.#primaryLog = null
    for (let attempt = 1; this.#role === 'stopped' && !this.#closed; attempt++) {
      let state: Standing
      try {
        state = await this.assess(this.#store!)
        this.#leaseView.read(await this.#lease.read())
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
    this.#follower.start()
    this.#timer = setInterval(() => void this.#watchLease(), Math.max(200, Math.floor(this.settings.leaseMs / 2)))
    this.#timer.unref()
    void this.#renewNode()
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
    this.#messages.on(PRIMARY_SUBJECT, (message) => this.#role !== 'primary' && this.#leaseView.heard(message))
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
    this.#leaseView.read(lease)
    if (this.#leaseView.live) return void (await this.#follower.watch())
    clearInterval(this.#timer!)
    await this.#follower.stop()
    if (this.#role !== 'replica') return
    const seen = this.#leaseView.holder
    const leads = await this.#tryLead((now) => now.holder === null || !newer(now.holder, seen)).catch(
      (error: unknown) => (this.#logger.warn('could not take the lease', { error: String(error) }), false),
    )
    if (!leads) this.#follow()
  }
}
