// A cluster's replica: the site files it holds are answered here; everything else goes to the primary.
import type { ClusterNode } from '../cluster/node.js'
import type { Registry } from '../actors/registry.js'
import type { Logger } from '../core/log.js'
import { ApiError } from '../core/errors.js'
import { sendError } from '../http/respond.js'
import { Forwarder, type ForwardTarget } from '../http/forward.js'
import type { Exchange } from '../http/uws.js'
import { METRICS_PATH } from '../http/metrics.js'
import { HEALTH_PATH } from '../http/server.js'

/** A replica gives up a new connection to the primary after this long (one that is cut off answers no SYN). */
const CONNECT_MS = 2000

/**
 * The door of a cluster's node. While it leads, every request is the application's. As a replica it
 * answers, from its own database, a GET or HEAD of a site's host (published, draft, custom domain; a
 * password page and its cookie check are reads too); everything else (the API, MCP, the dashboard,
 * form posts, the tracker, password posts, the platform's routes) is handed to the primary the lease names, with the client's address and the
 * cluster's secret, and its answer streams back (503 with Retry-After while nobody leads).
 */
export function replicaDoor(
  cluster: ClusterNode,
  registry: Registry,
  app: (exchange: Exchange) => void,
  secret: string,
  log: Logger,
): { dispatch: (exchange: Exchange) => void; close(): void } {
  // A refusal says when to try again: by then the lease of a primary that died has ended.
  const retryAfter = { 'retry-after': String(Math.max(1, Math.ceil(cluster.settings.leaseMs / 1000))) }
  let known: { url: string; target: ForwardTarget } | null = null
  const target = (): ForwardTarget | null => {
    const leader = cluster.leader
    if (leader === null || leader.node === cluster.settings.node) return null
    if (known?.url !== leader.url) {
      const url = new URL(leader.url)
      known = {
        url: leader.url,
        target: {
          host: url.hostname,
          port: Number(url.port || (url.protocol === 'https:' ? 443 : 80)),
          secret,
          unreachable: `a replica could not reach the primary (${leader.node} at ${leader.url})`,
          // The primary may be dying: its lease ends and another node leads within PLINTH_CLUSTER_LEASE_MS.
          failure: new ApiError(
            'unavailable',
            `The cluster's primary (${leader.node}) does not answer; another node takes over within seconds: try again`,
            undefined,
            retryAfter,
          ),
          connectMs: CONNECT_MS,
        },
      }
    }
    return known.target
  }
  const forwarder = new Forwarder(target, log)
  // When the lease names another primary (or none), requests still waiting on the old one are answered:
  // it may have been cut off, and nothing it does now can be acknowledged.
  const watch = setInterval(() => {
    if (known === null) return
    const leader = cluster.leader
    if (leader !== null && leader.url === known.url) return
    const gone = known
    known = null
    forwarder.abandon(
      gone.target,
      new ApiError(
        'unavailable',
        "The cluster's primary changed while this request waited for it: its outcome is unknown; read the resource again before retrying",
        undefined,
        { 'retry-after': '1' },
      ),
    )
  }, 250)
  watch.unref()
  const local = (exchange: Exchange): boolean => {
    if (exchange.method !== 'GET' && exchange.method !== 'HEAD') return false
    // Each node's own metrics (a scrape of every node, each saying how far it applied the log).
    if (exchange.path === METRICS_PATH || exchange.path === HEALTH_PATH) return true
    if (exchange.path.startsWith('/_platform/') && !exchange.path.startsWith('/_platform/assets/')) return false
    // A site's host (a storage website's shared files too: their bytes arrive before the entry naming them).
    return registry.hostnames.channel(exchange.host) !== undefined || registry.hostnames.websiteOfHost(exchange.host) !== undefined
  }
  return {
    dispatch: (exchange) => {
      if (cluster.role === 'primary' || local(exchange)) return app(exchange)
      // A node that stepped down and has not rejoined yet (cut off from NATS, most likely) knows no primary to hand on to.
      if (cluster.role === 'stopped' || cluster.role === 'starting')
        return sendError(
          exchange,
          new ApiError(
            'unavailable',
            `This node (${cluster.settings.node}) has lost touch with the cluster (it cannot reach NATS) and takes no writes: nothing was changed; try again in a few seconds, or at another node`,
            undefined,
            retryAfter,
          ),
          log,
        )
      forwarder.forward(exchange)
    },
    close: () => {
      clearInterval(watch)
      forwarder.close()
    },
  }
}
