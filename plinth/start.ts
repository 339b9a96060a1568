import type { Store } from '../core/store/store.js'
import type { Installation } from '../actors/installation.js'
import type { Registry } from '../actors/registry.js'
import { hostUnder, PublicUrls, sharesCookieScope } from '../core/hostnames.js'
import type { Logger } from '../core/log.js'
import { SHUTDOWN_DRAIN_MS } from '../core/limits.js'
import { PACKAGE_VERSIONS } from '../render/packages.js'
import { httpApp } from '../http/server.js'
import { assertPortFree, freePort } from '../http/port.js'
import { listen, type Exchange, type HttpServer } from '../http/uws.js'
import { operatorRunner, startControlSocket } from './control.js'
import { functionsOnCluster } from './functions-cluster.js'
import { backupHost } from './backup.js'
import { lastBackup } from '../core/backup/status.js'
import { openServices, type ServiceOptions } from './services.js'
import { ServeThreads } from './serve-threads.js'
import { clusterPeer, replicaDoor } from './replica-door.js'

export interface PlinthOptions extends Omit<ServiceOptions, 'offline'> {
  /** Check every handler result against its response schema (tests). */
  validateResponses?: boolean
  /** Told of every API answer whose status GET /openapi.json does not declare for its operation (tests). */
  onUndeclaredStatus?: (what: string) => void
}

export interface Plinth {
  readonly port: number
  readonly urls: PublicUrls
  readonly installation: Installation
  readonly registry: Registry
  /**
   * The writable store, for whoever started the server in-process (tests seed fixtures with it). The
   * HTTP layer never receives it: handlers read through `registry.reads` and write through actors.
   */
  readonly store: Store
  /** Threads on the port when the start finished, the main thread included (every one of PLINTH_SERVE_THREADS, or the start failed). */
  readonly listening: number
  /** This node of a cluster as its start-up banner says it (null: the embedded single server). */
  readonly cluster: { node: string; primary: boolean; leader: string | null; applied: number } | null
  /** Stops accepting, drains in-flight requests and actor mailboxes, closes the database. */
  close(): Promise<void>
  /**
   * After an uncaught exception: drops every connection and closes the database at once, without
   * draining (nothing unanswered was acknowledged, and a commit is all or nothing).
   */
  halt(): Promise<void>
}

/**
 * Hosted sites run anyone's script: on a host that shares a parent domain with the dashboard, a site can
 * set cookies the dashboard receives. Sessions are guarded (`__Host-` over https, two session cookies
 * sign a request out), but a separate registrable domain for sites (as github.io, netlify.app and
 * vercel.app are) closes the door whole.
 */
function warnOfSharedCookieScope(urls: PublicUrls, log: Logger): void {
  for (const [what, origin] of [
    ['API', urls.apiOrigin],
    ['dashboard', urls.appOrigin],
  ] as const) {
    const host = new URL(origin).hostname
    if (!sharesCookieScope(host, urls.siteDomain) && hostUnder(host, urls.siteDomain) === null) continue
    log.warn(
      `the ${what} host ${host} shares a parent domain with the sites (*.${urls.siteDomain}): a hosted site's script can set cookies ${host} receives. Serve sites from a separate registrable domain (PLINTH_SITE_DOMAIN, as github.io or netlify.app are); see the README, "Sites on their own domain"`,
    )
    return
  }
}

/**
 * The composition root: services (store, pools, gate, actors), then the serving threads, ready to
 * listen, then the port, opened on every thread at once, then the HTTP application over them, then the
 * operator's control socket. The public URLs depend on the port the socket got; they are fixed before
 * the first request can arrive: nothing awaits between the main thread's listen, the threads joining
 * the port and the application being in place, so the event loop accepts nothing in between.
 */
export async function startPlinth(options: PlinthOptions): Promise<Plinth> {
  const { config } = options
  // Before anything else: a first start on a taken port must not create an installation whose admin key nobody sees.
  await assertPortFree(config.host, config.port)
  let urls: PublicUrls | undefined
  const services = await openServices(options, () => urls!)
  const { registry, log } = services
  let server: HttpServer | undefined
  let threads: ServeThreads | undefined
  try {
    let dispatch: (exchange: Exchange) => void = () => undefined
    // A cluster's primary believes the client a replica names only on a request that replica signed.
    const cluster = services.cluster
    const peer = cluster === null ? undefined : clusterPeer(cluster, log)
    const port = config.port === 0 && config.serveThreads > 1 ? await freePort(config.host) : config.port
    // The threads load and open the database before the port opens (hundreds of milliseconds): a port
    // open on the main thread alone meanwhile kept every connection made then on the main thread (issue 37).
    if (config.serveThreads > 1)
      threads = await ServeThreads.start(registry, log, {
        count: config.serveThreads - 1,
        host: config.host,
        port,
        dataDir: config.dataDir,
        beacon: config.analytics.beacon,
        countryHeader: config.analytics.countryHeader,
        ...(peer === undefined ? {} : { peer }),
        dispatch: (exchange) => dispatch(exchange),
      })
    server = await listen(
      config.host,
      port,
      (exchange) => dispatch(exchange),
      (error) => log.error('request handler failed', { error: String(error) }),
      undefined,
      peer,
    )
    // Every thread joins the port before the event loop runs again, so nothing is accepted or answered
    // until all are on it: the kernel gives a connection to one of the sockets on the port as it arrives,
    // and keeps it there, so a client's keep-alive connections opened while the main thread was alone
    // never reached a thread (issue 37). It throws, and the start fails, when a thread does not listen.
    threads?.listen(server.port)
    urls = new PublicUrls(config.apiOrigin ?? `http://localhost:${server.port}`, config.siteDomain, config.appUrl)
    warnOfSharedCookieScope(urls, log)
    const app = httpApp({
      registry,
      clock: services.clock,
      log,
      urls,
      packages: PACKAGE_VERSIONS,
      validateResponses: options.validateResponses ?? false,
      ...(options.onUndeclaredStatus === undefined ? {} : { onUndeclaredStatus: options.onUndeclaredStatus }),
      config: { billing: config.billing, anonymous: config.anonymous },
      trustedProxies: config.trustedProxies,
      metricsAllow: config.metricsAllow,
      servingSettled: () => threads?.settled() ?? null,
      replicated: () => cluster?.replicated() ?? null,
      serveThreads: {
        mainListening: () => server?.listening ?? false,
        stats: () => threads?.stats() ?? [],
        gather: () => threads?.gather() ?? Promise.resolve(),
      },
      lastBackup: () => lastBackup(config.dataDir),
      backupArchive: () => services.archive?.status() ?? null,
      clusterNode: () =>
        cluster === null
          ? null
          : {
              node: cluster.settings.node,
              primary: cluster.role === 'primary',
              position: cluster.applied,
              liveReplicas: cluster.liveReplicas,
              refused: cluster.refusals,
              progress: cluster.progress,
              lease: cluster.leader === null ? null : { holder: cluster.leader.node, epoch: cluster.leader.epoch },
            },
      clusterLeader: () => cluster?.heardLeader ?? null,
    })
    services.servingSettled = () => threads?.settled() ?? null
    const door = cluster === null ? null : replicaDoor(cluster, registry, app, log)
    dispatch = door?.dispatch ?? app
    const serving = threads
    const listening = server
    functionsOnCluster(registry, cluster, log)
    const control = await startControlSocket(
      config.dataDir,
      operatorRunner(registry, () => threads?.settled() ?? null, cluster),
      backupHost(services.store, () => cluster?.exchange.announceBackup()),
    )

    let closing: Promise<void> | undefined
    const close = () =>
      (closing ??= (async () => {
        listening.stopListening()
        await new Promise((resolve) => control.close(resolve))
        // The threads drain first (what they hand on is answered here meanwhile), and their last page
        // views reach the beacon; one deadline for both drains.
        const deadline = Date.now() + SHUTDOWN_DRAIN_MS
        await serving?.stop(deadline)
        while (listening.inflight > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10))
        listening.closeAll()
        door?.close()
        await services.close()
      })())
    const halt = async () => {
      listening.stopListening()
      listening.closeAll()
      control.close()
      await serving?.halt()
      await services.halt()
    }
    return {
      port: listening.port,
      listening: (listening.listening ? 1 : 0) + (serving?.listening() ?? 0),
      cluster:
        cluster === null
          ? null
          : { node: cluster.settings.node, primary: cluster.role === 'primary', leader: cluster.heardLeader, applied: cluster.applied },
      urls,
      installation: services.installation!,
      registry,
      store: services.store,
      close,
      halt,
    }
  } catch (error) {
    server?.closeAll()
    await threads?.halt()
    await services.close()
    throw error
  }
}
