// GET /metrics: Prometheus' text format (prom-client, loaded at the first scrape), for an admin key or the addresses the operator allows.
import type { ArchiveStatus, LastBackup } from '../core/backup/status.js'
import type { NodeStatus } from './metrics-registry.js'
import { BlockList, isIP } from 'node:net'
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks'
import type { Registry } from '../actors/registry.js'
import { NO_SERVING_THREADS, type ServingThreads } from './serve-thread-protocol.js'
import { blockListOf } from '../core/config-values.js'
import { ApiError } from '../core/errors.js'
import type { Principal } from '../core/principal.js'
import type { Exchange } from './uws.js'

const WHO_MAY_SCRAPE =
  "an API key of the installation's organization with the admin or owner role (Authorization: Bearer wb_…), or a scraper from an address in PLINTH_METRICS_ALLOW"

/**
 * The main thread's event-loop delay, measured from the server's start (a timer every 20 ms) so that the
 * first scrape has figures: a property of the process, one for every server it runs.
 */
let loopDelay: IntervalHistogram | undefined

/** Where Prometheus scrapes, on the API origin. */
export const METRICS_PATH = '/metrics'

/**
 * The scrape's door: who may read the metrics, and the text format from the process's counters
 * (http/metrics-registry.ts, imported at the first scrape so a server nobody scrapes never loads
 * prom-client).
 */
export class MetricsEndpoint {
  readonly #allowed: BlockList
  #metrics: Promise<import('./metrics-registry.js').Metrics> | null = null

  constructor(
    private readonly plinth: Registry,
    allow: readonly string[],
    /** The serving threads, asked for their counts before each scrape. */
    private readonly threads: ServingThreads = NO_SERVING_THREADS,
    /** The data directory's last successful backup, read at each scrape. */
    private readonly lastBackup: () => LastBackup | null = () => null,
    /** This node of a cluster, read at each scrape (null: the embedded single server). */
    private readonly clusterNode: () => NodeStatus | null = () => null,
    /** The continuous archive, read at each scrape (null: none). */
    private readonly backupArchive: () => ArchiveStatus | null = () => null,
  ) {
    this.#allowed = blockListOf(allow)
    loopDelay ??= monitorEventLoopDelay({ resolution: 20 })
    loopDelay.enable()
  }

  /**
   * The scrape: from an allowed address with no credential, else with an API key of the
   * installation's own organization in the admin or owner role (401 without one, 403 for another).
   */
  handle(exchange: Exchange, clientAddress: string, authenticate: () => Principal): void {
    if (exchange.method !== 'GET' && exchange.method !== 'HEAD')
      throw new ApiError(
        'method_not_allowed',
        `${exchange.method} is not allowed on ${METRICS_PATH}; allowed: GET`,
        { allowed: ['GET'] },
        { allow: 'GET' },
      )
    const family = isIP(clientAddress) === 6 ? 'ipv6' : 'ipv4'
    if (!(isIP(clientAddress) !== 0 && this.#allowed.check(clientAddress, family))) {
      // Without a credential, the API's own hint (sign in at the dashboard) does not hold: a person's session cannot scrape.
      if (exchange.header('authorization') === '') throw new ApiError('unauthorized', `${METRICS_PATH} needs ${WHO_MAY_SCRAPE}`)
      const principal = authenticate()
      const installation = this.plinth.reads.meta.get('installation')
      if (
        principal.kind !== 'api_key' ||
        principal.orgId !== installation?.orgId ||
        (principal.access.role !== 'owner' && principal.access.role !== 'admin')
      )
        throw new ApiError('forbidden', `${METRICS_PATH} is for the operator: it needs ${WHO_MAY_SCRAPE}`)
    }
    exchange.detach()
    this.#metrics ??= import('./metrics-registry.js').then(
      ({ Metrics }) =>
        new Metrics(
          this.plinth,
          () => this.threads.stats(),
          () => this.threads.mainListening(),
          loopDelay!,
          this.lastBackup,
          this.clusterNode,
          this.backupArchive,
        ),
    )
    // The serving threads' traffic so far, gathered first (their reports come once a second otherwise).
    Promise.all([this.#metrics, this.threads.gather()])
      .then(async ([metrics]) =>
        exchange.send(200, { 'content-type': metrics.contentType, 'cache-control': 'no-store' }, await metrics.text()),
      )
      .catch((error: unknown) =>
        exchange.send(500, { 'content-type': 'text/plain; charset=utf-8' }, `metrics failed: ${(error as Error)?.message ?? error}\n`),
      )
  }
}
