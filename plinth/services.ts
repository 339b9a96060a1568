import { clusterOrigin, ensureInstallation, runMigrations, installationSecret, type Installation } from '../actors/installation.js'
import { ArchiveWriter } from '../core/backup/archive-writer.js'
import { startArchive } from './archive.js'
import { Registry } from '../actors/registry.js'
import { systemClock, type Clock } from '../core/clock.js'
import { ConfigError, type Config } from '../core/config.js'
import { ApiError } from '../core/errors.js'
import { reservedLabels, type PublicUrls } from '../core/hostnames.js'
import { stderrLogger, type Logger } from '../core/log.js'
import { lockDataDir } from '../core/store/lock.js'
import { readSecretFile } from '../core/installation-secret.js'
import { CLUSTER_NODE_STOPPED, Store } from '../core/store/store.js'
import { Gate } from '../render/gate.js'
import { RenderPool } from '../render/render-pool.js'
import { ToolPool, type ToolLimitOptions } from '../render/tool-pool.js'
import type { ClusterNode } from '../cluster/node.js'

export interface ServiceOptions {
  config: Config
  clock?: Clock
  log?: Logger
  /** How long an idle render process lives (default 60 s; tests shorten it). */
  renderIdleMs?: number
  /** Each page's render CPU budget (default 5 s; tests of looping pages shorten it). */
  renderCpuBudgetMs?: number
  /** Budgets of the tool steps (defaults in render/tool-pool.ts; tests shrink them). */
  toolLimits?: ToolLimitOptions
  /** The operator CLI on a stopped server: no quality gate, no render processes. */
  offline?: boolean
  /** Idle website actors are evicted after one to two of these periods (default ACTOR_IDLE_MS; tests and benchmarks shorten it). */
  actorIdleMs?: number
  /** The anonymous sweeper's period (default ANON_SWEEP_MS; tests shorten it to watch deadlines pass). */
  anonymousSweepMs?: number
  /** How often the webhook outbox is looked at (default WEBHOOK_POLL_MS). */
  webhookPollMs?: number
  /** How often the mail outbox is looked at (tests make it quick). */
  mailPollMs?: number
  /**
   * A cluster's node that cannot go on with the log: the process should stop (its data directory fell
   * off the log: a restart restores a backup; or `upgrade`: the log goes on in a newer Plinth's format).
   */
  onLost?: (reason: string, upgrade: boolean) => void
}

/** Everything below the HTTP layer, built in order, closed in reverse. */
export interface Services {
  readonly config: Config
  readonly clock: Clock
  readonly log: Logger
  readonly store: Store
  /** The first-start installation (null offline: the operator CLI never creates one). */
  readonly installation: Installation | null
  /** The installation's secret (PLINTH_SECRET_FILE): every key the server signs with derives from it. */
  readonly secret: Buffer
  readonly registry: Registry
  /** This node of a cluster (PLINTH_CLUSTER_NATS), or null: the embedded single server. */
  readonly cluster: ClusterNode | null
  /** The continuous archive (PLINTH_BACKUP_ARCHIVE), or null. */
  readonly archive: ArchiveWriter | null
  /** Waits until the serving threads serve the last change (start.ts sets it once the threads run): a replica tells the primary after it. */
  servingSettled: () => Promise<void> | null
  /** Stops builds, drains every actor, closes the pools and the database, releases the data directory. */
  close(): Promise<void>
  /** After an uncaught exception: closes pools and the database at once, without draining. */
  halt(): Promise<void>
}

/**
 * The composition root below HTTP: takes the data directory, opens the store, starts the worker
 * pools and the gate, makes the first-start installation, and hands the registry of actors what each
 * part needs. `urls` gives published origins for canonical URLs in built documents; the server knows
 * them once it listens, before any request can reach an actor.
 */
export async function openServices(options: ServiceOptions, urls: () => PublicUrls): Promise<Services> {
  const { config } = options
  const clock = options.clock ?? systemClock
  const log = options.log ?? stderrLogger
  // A cluster's node reads the installation's secret first: everything nodes say to each other is signed with keys derived from it.
  const clusterSecret = config.cluster === null || options.offline === true ? null : readSecretFile(config.secretFile)
  const unlock = lockDataDir(config.dataDir)
  // The NATS client loads only for a cluster's node: the embedded server never reads it.
  const cluster =
    clusterSecret === null
      ? null
      : await (async () => {
          const [{ ClusterNode }, { homeOf }] = await Promise.all([import('../cluster/node.js'), import('../cluster/node-name.js')])
          // The data directory is locked: a name held by an entry of this data directory is this node's own, from before a restart.
          return ClusterNode.connect({ ...config.cluster!, home: homeOf(config.dataDir) }, clusterSecret, log)
        })().catch((error: unknown) => {
          unlock()
          throw error
        })
  // The continuous archive (PLINTH_BACKUP_ARCHIVE): every commit is sealed into it from the store's opening on.
  const archive = config.backupArchive === null ? null : new ArchiveWriter(config.backupArchive, log)
  let store = await Store.open(config.dataDir, { replicated: cluster !== null, archive: archive ?? undefined })
  if (store.clusterNodeAlone) {
    // A cluster node's data directory, opened without the cluster: whatever wrote here would be outside the log.
    await store.close()
    unlock()
    if (options.offline === true) throw new ApiError('unavailable', CLUSTER_NODE_STOPPED)
    throw new ConfigError(
      'PLINTH_CLUSTER_NATS',
      "is not set, and this data directory is a cluster node's (it applied the cluster's log): start it with the cluster's settings (PLINTH_CLUSTER_NATS, PLINTH_NODE_NAME, PLINTH_NODE_URL, PLINTH_SECRET_FILE); a single server on it would write outside the log and the node could not rejoin",
    )
  }
  if (cluster !== null)
    store = await (
      await import('./cluster-restore.js')
    )
      .restoreForCluster(store, config.dataDir, config.cluster!.backups, clusterSecret!, cluster, log)
      .catch(async (error: unknown) => {
        await store.close().catch(() => undefined)
        await cluster.close()
        unlock()
        throw error
      })
  // A cluster's node archives the entries its store applies, and those it seals while it leads, as the log chains them.
  if (archive !== null && cluster !== null) {
    archive.begin(store.replication!.position())
    archive.useFiles(store.files)
    store.replication!.archive = archive
  }
  const tools = new ToolPool({ limits: options.toolLimits, warmSites: config.warmSites })
  const renderer =
    options.offline === true ? null : new RenderPool({ idleMs: options.renderIdleMs, cpuBudgetMs: options.renderCpuBudgetMs })
  const gate = renderer === null ? undefined : new Gate(tools, renderer, log, config.warmSites)
  // The primary trims the log to the backups (PLINTH_CLUSTER_BACKUPS): when a node says a backup ended, when it starts leading, and every few minutes.
  const trim =
    cluster === null || config.cluster!.backups === null ? null : logTrimmer(config.cluster!.backups, clusterSecret!, cluster, log)
  // Halting (after an uncaught exception) skips the warm bundlers: the process exits right after.
  let archiveBase: Promise<void> | null = null
  const shutDown = async (drain: boolean) => {
    trim?.stop()
    await cluster?.close()
    await Promise.allSettled([tools.close(), renderer?.close(), drain ? gate?.close() : undefined])
    await archiveBase?.catch(() => undefined)
    await archive?.close()
    await store.close()
    unlock()
  }
  try {
    // The serving threads start after the services: start.ts fills this in.
    let servingSettled: () => Promise<void> | null = () => null
    // A cluster's node catches up with the log first, then leads or follows (the registry, made below, is told of both).
    let registry: Registry | null = null
    // One run of the migrations at a time (a start that leads asks twice: when it takes the lease, and once the installation is there).
    let migrating: Promise<void> | null = null
    const migrate = (): Promise<void> =>
      (migrating ??= runMigrations(store, clock, log)
        .catch((error: unknown) =>
          log.error('a schema migration failed; it runs again at the next start (a cluster node: when it next starts leading)', {
            error: String(error),
          }),
        )
        .finally(() => (migrating = null)))
    const role =
      cluster === null
        ? null
        : await cluster.join(store, {
            // The caches took the entry's writes as the store announced them (Store.changes): the serving threads follow.
            applied: () => servingSettled(),
            // A replica that leads now: its caches are current (they took each entry); the work a crash interrupted resumes.
            leading: () => {
              void migrate()
              void registry?.resumePurges()
              trim?.run()
            },
            lost: (reason, upgrade = false) => {
              log.error("this node stops: it cannot go on with the cluster's log", { reason })
              options.onLost?.(reason, upgrade)
            },
          })
    if (role === 'replica') await installationFromLog(store, log)
    const installation = options.offline === true ? null : await ensureInstallation(store, clock, config.adminKey)
    if (role !== null) {
      const recorded = await clusterOrigin(store, config.apiOrigin!, role === 'primary')
      if (recorded !== config.apiOrigin)
        throw new ConfigError(
          'PLINTH_API_ORIGIN',
          `is ${config.apiOrigin} on this node, and the cluster serves its API at ${recorded} (recorded by the first node that led it): give every node PLINTH_API_ORIGIN=${recorded}, the address clients reach the cluster at`,
        )
    }
    // The schema migrations of this build that the installation lacks, once, where this process writes (a replica: by the primary).
    if (store.writable) await migrate()
    const secret = await installationSecret(store, config.secretFile, log)
    if (archive !== null)
      archiveBase = startArchive(archive, store, config.dataDir, secret, log, {
        takeBase: options.offline !== true,
        mirror: cluster === null,
      }).base
    registry = new Registry({
      store,
      clock,
      log,
      siteDomain: config.siteDomain,
      reservedLabels: reservedLabels([config.apiOrigin, config.appUrl], config.siteDomain),
      tools,
      gate,
      siteOrigin: (label) => urls().published(label),
      // Each serving thread keeps its own share: together they hold PLINTH_CACHE_BYTES, not a copy each.
      cacheBytes: Math.floor(config.cacheBytes / config.serveThreads),
      purgeUrls: config.purgeUrls,
      actorIdleMs: options.offline === true ? 0 : options.actorIdleMs,
      anonymousSweepMs: options.offline === true ? 0 : options.anonymousSweepMs,
      signingKey: secret,
      outboundAllow: config.outboundAllow,
      domainSettings: config.domains,
      analytics: config.analytics,
      formFilesBytes: config.formFilesBytes,
      functions: config.functions,
      imageVariantsPerSite: config.imageVariantsPerSite,
      beaconFlushMs: options.offline === true ? 0 : undefined,
      platformHosts: new Set([new URL(config.apiOrigin ?? 'http://localhost').hostname]),
      siteScheme: new URL(config.apiOrigin ?? 'http://localhost').protocol,
      webhookPollMs: options.offline === true ? 0 : options.webhookPollMs,
      mail: config.mail,
      mailPollMs: options.offline === true ? 0 : options.mailPollMs,
      billing: config.billing,
      namespaceRenames: config.namespaceRenames,
      appUrl: (path) => urls().app(path),
    })
    if (cluster !== null) {
      const beacon = registry.beacon
      // The beacon's sink: this node's counts while it makes writes, else the primary's.
      beacon.sendViews = () => (store.writable ? null : (views) => cluster.exchange.sendViews(views))
      cluster.exchange.onViews((report) => {
        const views = report as ReturnType<typeof beacon.take>
        beacon.merge(views.tallies, views.raw)
      })
    }
    const resumed = store.writable ? await registry.resumePurges() : 0
    if (resumed > 0) log.info('finished the purges a crash interrupted', { websites: resumed })
    let closing: Promise<void> | undefined
    return {
      config,
      clock,
      log,
      store,
      installation,
      secret,
      registry,
      cluster,
      archive,
      get servingSettled() {
        return servingSettled
      },
      set servingSettled(settled) {
        servingSettled = settled
      },
      close: () =>
        (closing ??= (async () => {
          registry.close()
          await registry.stopBuilds()
          await registry.drained()
          await shutDown(true)
        })()),
      halt: () => {
        registry.close()
        return shutDown(false)
      },
    }
  } catch (error) {
    await shutDown(true)
    throw error
  }
}

/** How often a primary looks at PLINTH_CLUSTER_BACKUPS for a backup no node announced (one taken of a stopped data directory). */
const TRIM_CHECK_MS = 10 * 60_000

/** Runs trimLogToBackups on a primary, one at a time: `run` when a node announces a backup, and every TRIM_CHECK_MS. */
function logTrimmer(backups: string, secret: Buffer, cluster: ClusterNode, log: Logger): { run(): void; stop(): void } {
  let running: Promise<void> | null = null
  const run = () => {
    if (running !== null || cluster.role !== 'primary') return
    running = import('./cluster-restore.js')
      .then(({ trimLogToBackups }) => trimLogToBackups(backups, secret, cluster, log))
      .catch((error: unknown) => log.warn('the log could not be trimmed; trying again later', { error: String(error) }))
      .finally(() => (running = null))
  }
  cluster.exchange.onBackup(run)
  const timer = setInterval(run, TRIM_CHECK_MS)
  timer.unref()
  return { run, stop: () => clearInterval(timer) }
}

/** A replica of a cluster whose primary has not made the installation yet waits for it to arrive through the log. */
async function installationFromLog(store: Store, log: Logger): Promise<void> {
  for (let waited = 0; store.meta.get('installation') === undefined; waited += 200) {
    if (waited % 10_000 === 0) log.info('waiting for the primary to make the installation (its first start) and for its entry in the log')
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
}
