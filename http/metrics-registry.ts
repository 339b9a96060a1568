// The metrics of the process as prom-client objects: loaded at the first scrape only (prom-client costs ~50 ms of start-up).
import { collectDefaultMetrics, Counter, Gauge, Registry as MetricsRegistry, type Metric } from 'prom-client'
import type { Registry } from '../actors/registry.js'
import type { IntervalHistogram } from 'node:perf_hooks'
import type { ArchiveStatus, LastBackup } from '../core/backup/status.js'
import type { ThreadStats } from './serve-thread-protocol.js'
import { counters, DOOR, DOORS, latency, LATENCY_BUCKETS, LATENCY_SLOTS, STATUS_CLASSES, traffic } from '../core/metrics.js'

/** A cluster's node as a scrape sees it: its name, whether it leads, and how far its database reached in the log. */
export interface NodeStatus {
  node: string
  primary: boolean
  position: number
  /** On the primary: the replicas heard from within two leases, whose applying a write's answer waits for (0 on a replica). */
  liveReplicas: number
  /** What the node refused from the cluster, by kind (log messages no node signed, forged lease records, messages, forwards). */
  refused: ReadonlyMap<string, number>
  /** A replica's keeping up: entries behind when the last was delivered, its delay after the append, when it was applied (ms). */
  progress: { behind: number; lagMs: number; appliedAt: number | null }
  /** The lease as this node last saw it: its holder and epoch (the KV revision that made it). */
  lease: { holder: string; epoch: number } | null
}

/**
 * The metrics of the process, read when scraped: responses by door and status class, bytes sent,
 * how long answers took, the content cache's hits and reads from LMDB, the gate's
 * steps, mailbox depth, LMDB's size and free list, outbound requests, the beacon's page views and
 * drops, anonymous credentials, and Node's own (event-loop delay, memory, GC) from prom-client's
 * defaults. Counting happens where the event is (core/metrics.ts); nothing here runs per request.
 */
export class Metrics {
  readonly #registry = new MetricsRegistry()

  /** Reads (and starts afresh) the event-loop delay measured since the scrape before. */
  readonly #beforeScrape: () => void

  constructor(
    plinth: Registry,
    threads: () => ThreadStats[],
    mainListening: () => boolean,
    /** The main thread's event-loop delay, measured since the server started. */
    loopDelay: IntervalHistogram,
    lastBackup: () => LastBackup | null = () => null,
    clusterNode: () => NodeStatus | null = () => null,
    backupArchive: () => ArchiveStatus | null = () => null,
  ) {
    const register = [this.#registry]
    collectDefaultMetrics({ register: this.#registry, prefix: 'plinth_', eventLoopMonitoringPrecision: 20 })
    // prom-client's event-loop delay figures start at the first scrape, which then reads a histogram with no
    // sample (a minimum of 9.2e9 s, a mean of NaN), as does any scrape within 20 ms of the one before: these
    // read the delay the server has measured since it started (http/metrics.ts), and are absent while it has none.
    for (const figure of Object.keys(LOOP_DELAY_FIGURES)) this.#registry.removeSingleMetric(`plinth_nodejs_eventloop_lag_${figure}_seconds`)
    let delay: Record<string, number> | null = null
    this.#beforeScrape = () => {
      delay =
        loopDelay.count === 0
          ? null
          : Object.fromEntries(Object.entries(LOOP_DELAY_FIGURES).map(([figure, { read }]) => [figure, read(loopDelay) / 1e9]))
      loopDelay.reset()
    }
    for (const [figure, { help }] of Object.entries(LOOP_DELAY_FIGURES))
      this.#registry.registerMetric(optionalGauge(`plinth_nodejs_eventloop_lag_${figure}_seconds`, help, () => delay?.[figure] ?? null))
    new Counter({
      name: 'plinth_http_responses_total',
      help: 'Responses by the door the request came in by and the status class (2xx, 4xx, ...)',
      labelNames: ['door', 'class'],
      registers: register,
      collect() {
        this.reset()
        for (let door = 0; door < DOORS.length; door++)
          for (let c = 1; c < STATUS_CLASSES; c++) {
            const n = traffic.responses[door * STATUS_CLASSES + c]!
            if (n > 0) this.inc({ door: DOORS[door], class: `${c}xx` }, n)
          }
      },
    })
    new Counter({
      name: 'plinth_http_response_bytes_total',
      help: 'Body bytes sent, by door',
      labelNames: ['door'],
      registers: register,
      collect() {
        this.reset()
        for (let door = 0; door < DOORS.length; door++) if (traffic.bytes[door]! > 0) this.inc({ door: DOORS[door] }, traffic.bytes[door]!)
      },
    })
    new Counter({
      name: 'plinth_serve_thread_responses_total',
      help: 'Site responses by the serving thread that answered them (0: the main thread; PLINTH_SERVE_THREADS); requests a thread hands to the main thread count there',
      labelNames: ['thread'],
      registers: register,
      collect() {
        this.reset()
        const answered = threads().map((t) => t.responses)
        let main = 0
        for (let c = 1; c < STATUS_CLASSES; c++) main += traffic.responses[DOOR.hosting * STATUS_CLASSES + c]!
        for (const n of answered) main -= n
        this.inc({ thread: '0' }, main)
        answered.forEach((n, i) => this.inc({ thread: String(i + 1) }, n))
      },
    })
    new Gauge({
      name: 'plinth_serve_thread_listening',
      help: "1 while the thread's socket is on the server's port, else 0 (thread 0 is the main thread); a serving thread at 0 (ended and being started again, or its listen failed) answers nothing",
      labelNames: ['thread'],
      registers: register,
      collect() {
        this.reset()
        this.set({ thread: '0' }, mainListening() ? 1 : 0)
        threads().forEach((t, i) => this.set({ thread: String(i + 1) }, t.listening ? 1 : 0))
      },
    })
    this.#registry.registerMetric(responseSeconds() as unknown as Metric)
    // The last successful backup (plinth backup), so an alert can fire when backups stop: absent until the first
    // (prom-client's gauge without labels reads 0 when never set, and `absent()` would never fire).
    // A gauge read from a status that may be absent (then so is the gauge).
    const gaugeOf =
      <S>(read: () => S | null) =>
      (name: string, help: string, pick: (status: S) => number | null) =>
        this.#registry.registerMetric(
          optionalGauge(name, help, () => {
            const status = read()
            return status === null ? null : pick(status)
          }),
        )
    const backup = gaugeOf(lastBackup)
    backup(
      'plinth_backup_last_success_timestamp_seconds',
      'When the last successful backup finished (Unix seconds)',
      (b) => b.finishedAt / 1000,
    )
    backup('plinth_backup_last_success_duration_seconds', 'How long the last successful backup took', (b) => b.durationSeconds)
    backup(
      'plinth_backup_last_success_bytes',
      'Bytes the last successful backup holds (its database copy and every blob file it names)',
      (b) => b.bytes,
    )
    backup(
      'plinth_backup_last_success_copied_bytes',
      'Bytes the last successful backup copied (blobs the backup root held already are not copied again)',
      (b) => b.copiedBytes,
    )
    // The continuous archive (PLINTH_BACKUP_ARCHIVE): absent without it.
    const archived = gaugeOf(backupArchive)
    archived(
      'plinth_backup_archive_behind_entries',
      'Commits not appended to the backup archive yet (appended within a second)',
      (a) => a.behind,
    )
    archived('plinth_backup_archive_position', 'The last entry appended to the backup archive (fsynced)', (a) => a.position)
    archived('plinth_backup_archive_appended_timestamp_seconds', 'When the backup archive was last appended to (Unix seconds)', (a) =>
      a.appendedAt === null ? null : a.appendedAt / 1000,
    )
    // A cluster's node: which one leads, and how far each applied the log (absent on the embedded server).
    const node = (name: string, help: string, pick: (n: NodeStatus) => number) =>
      new Gauge({
        name,
        help,
        labelNames: ['node'],
        registers: register,
        collect() {
          this.reset()
          const status = clusterNode()
          if (status !== null) this.set({ node: status.node }, pick(status))
        },
      })
    node('plinth_cluster_primary', '1 while this node leads the cluster (holds the lease and writes), else 0', (n) => (n.primary ? 1 : 0))
    node(
      'plinth_cluster_log_position',
      "The cluster log's entry this node's database reached (a replica behind the primary by this much is that far behind)",
      (n) => n.position,
    )
    node(
      'plinth_cluster_replicas_live',
      "On the primary: the replicas heard from within two leases, whose applying a write's answer waits for (0 on a replica)",
      (n) => n.liveReplicas,
    )
    node(
      'plinth_cluster_replication_lag_entries',
      'On a replica: entries the log held after the last one this node applied, when it was delivered (0 on the primary, which writes them)',
      (n) => (n.primary ? 0 : n.progress.behind),
    )
    node(
      'plinth_cluster_replication_lag_seconds',
      'On a replica: how long after its append to the log the last entry was applied here (0 on the primary)',
      (n) => (n.primary ? 0 : n.progress.lagMs / 1000),
    )
    this.#registry.registerMetric(
      optionalGauge(
        'plinth_cluster_last_applied_timestamp_seconds',
        'On a replica: when it last applied an entry of the log (Unix seconds; absent until the first, and on the primary)',
        () => {
          const status = clusterNode()
          const at = status === null || status.primary ? null : status.progress.appliedAt
          return at === null ? null : { value: at / 1000, labels: { node: status!.node } }
        },
      ),
    )
    new Gauge({
      name: 'plinth_cluster_lease_epoch',
      help: "The lease's epoch as this node last saw it, by holder: the revision of the lease's KV record that made that node primary (it grows with each election, not by one)",
      labelNames: ['node', 'holder'],
      registers: register,
      collect() {
        this.reset()
        const status = clusterNode()
        if (status?.lease) this.set({ node: status.node, holder: status.lease.holder }, status.lease.epoch)
      },
    })
    // What this node counted by kind, from a map (forwards by outcome, refusals by what): labelled with the node.
    const nodeCounter = (
      name: string,
      help: string,
      label: string,
      counts: (status: NonNullable<ReturnType<typeof clusterNode>>) => ReadonlyMap<string, number>,
    ) =>
      new Counter({
        name,
        help,
        labelNames: ['node', label],
        registers: register,
        collect() {
          this.reset()
          const status = clusterNode()
          if (status !== null) for (const [kind, count] of counts(status)) this.inc({ node: status.node, [label]: kind }, count)
        },
      })
    nodeCounter(
      'plinth_cluster_forwarded_total',
      'Requests this node handed to the primary, by outcome: answered (whatever the status), unreachable (no connection or cut off), abandoned (the primary changed while it waited), no_primary (nobody led: 503)',
      'outcome',
      () => counters.forwarded,
    )
    nodeCounter(
      'plinth_cluster_refused_total',
      'What this node refused from the cluster: log messages it skipped (what: log_unsigned, log_stray, log_unchained, log_malformed), lease records no node signed, messages between nodes no node signed, requests claiming to come from another node whose signature did not hold',
      'what',
      (status) => status.refused,
    )
    const cache = plinth.cache
    new Counter({
      name: 'plinth_content_cache_hits_total',
      help: 'Served content found resident in memory',
      registers: register,
      collect() {
        this.reset()
        this.inc(cache.stats().hits + sum(threads(), 'hits'))
      },
    })
    new Counter({
      name: 'plinth_content_cache_misses_total',
      help: 'Served content read from LMDB because it was not resident',
      registers: register,
      collect() {
        this.reset()
        this.inc(cache.stats().reads + sum(threads(), 'reads'))
      },
    })
    new Gauge({
      name: 'plinth_content_cache_resident_bytes',
      help: 'Bytes of served content resident in memory (PLINTH_CACHE_BYTES bounds them)',
      registers: register,
      collect() {
        this.set(cache.stats().residentBytes + sum(threads(), 'residentBytes'))
      },
    })
    const gate = (name: string, help: string, pick: (e: { runs: number; seconds: number; overBudget: number }) => number) =>
      new Counter({
        name,
        help,
        labelNames: ['step'],
        registers: register,
        collect() {
          this.reset()
          for (const [step, entry] of counters.gateSteps) this.inc({ step }, pick(entry))
        },
      })
    gate('plinth_gate_step_runs_total', 'Quality-gate steps run (lint, typecheck, bundle, render)', (e) => e.runs)
    gate('plinth_gate_step_seconds_total', 'Seconds the quality-gate steps took', (e) => e.seconds)
    gate('plinth_gate_step_over_budget_total', 'Quality-gate steps stopped at their budget', (e) => e.overBudget)
    new Gauge({
      name: 'plinth_mailbox_queued',
      help: 'Commands queued or running in every mailbox (one writer per website, organization, credential)',
      registers: register,
      collect() {
        this.set(counters.mailboxQueued)
      },
    })
    const store = (name: string, help: string, pick: (s: ReturnType<Registry['storeStats']>) => number) =>
      new Gauge({
        name,
        help,
        registers: register,
        collect() {
          this.set(pick(plinth.storeStats()))
        },
      })
    store('plinth_lmdb_used_bytes', 'Bytes of the LMDB file in use (its last page)', (s) => s.usedBytes)
    store('plinth_lmdb_map_bytes', "LMDB's map size", (s) => s.mapBytes)
    store('plinth_lmdb_freelist_entries', "Entries of LMDB's free list (freed pages waiting to be reused)", (s) => s.freelistEntries)
    store(
      'plinth_anonymous_credentials',
      'Anonymous credentials stored (live, or kept until their claim window ends)',
      (s) => s.anonymousCredentials,
    )
    const mail = plinth.mail
    new Gauge({
      name: 'plinth_mail_queued',
      help: 'Messages of the mail outbox waiting to be handed to the relay (queued, or retrying after a temporary failure)',
      registers: register,
      collect() {
        this.set(mail.outbox.waiting().count)
      },
    })
    new Gauge({
      name: 'plinth_mail_oldest_queued_seconds',
      help: 'Age of the oldest message waiting to be sent (0 when none waits): an alert on it finds a relay that stopped taking mail',
      registers: register,
      collect() {
        const { oldestCreatedAt } = mail.outbox.waiting()
        this.set(oldestCreatedAt === null ? 0 : Math.max(0, (plinth.clock.now() - oldestCreatedAt) / 1000))
      },
    })
    new Counter({
      name: 'plinth_mail_sent_total',
      help: 'Messages this process handed to the relay, which took them',
      registers: register,
      collect() {
        this.reset()
        this.inc(mail.sender.sent)
      },
    })
    new Counter({
      name: 'plinth_mail_failed_total',
      help: 'Messages this process gave up on (a permanent refusal, or 48 hours of temporary ones)',
      registers: register,
      collect() {
        this.reset()
        this.inc(mail.sender.failed)
      },
    })
    new Counter({
      name: 'plinth_function_invocations_total',
      help: "Requests sites' functions answered, by the class of site (static, framework) and outcome: ok, exception (uncaught), or the limit they went over (cpu, memory, wall, restarted, load)",
      labelNames: ['site', 'outcome'],
      registers: register,
      collect() {
        this.reset()
        for (const [key, count] of counters.functionInvocations) {
          const [site, outcome] = key.split(' ')
          this.inc({ site, outcome }, count)
        }
      },
    })
    new Counter({
      name: 'plinth_function_cpu_seconds_total',
      help: "CPU seconds sites' functions used (their isolates' CPU while requests were in flight), by the class of site",
      labelNames: ['site'],
      registers: register,
      collect() {
        this.reset()
        for (const [site, seconds] of counters.functionCpuSeconds) this.inc({ site }, seconds)
      },
    })
    new Counter({
      name: 'plinth_function_cold_starts_total',
      help: "Requests to sites' functions that started an isolate (the first after a deploy, an eviction or a limit), by the class of site",
      labelNames: ['site'],
      registers: register,
      collect() {
        this.reset()
        for (const [site, count] of counters.functionColdStarts) this.inc({ site }, count)
      },
    })
    new Counter({
      name: 'plinth_outbound_requests_total',
      help: "Requests made for users through the SSRF guard (form webhooks, functions' fetch)",
      registers: register,
      collect() {
        this.reset()
        this.inc(counters.outboundRequests)
      },
    })
    new Counter({
      name: 'plinth_outbound_failures_total',
      help: 'Outbound requests refused by the guard or that got no answer',
      registers: register,
      collect() {
        this.reset()
        this.inc(counters.outboundFailures)
      },
    })
    new Counter({
      name: 'plinth_beacon_events_total',
      help: 'Page views the edge beacon counted',
      registers: register,
      collect() {
        this.reset()
        this.inc(plinth.beacon.stats().events)
      },
    })
    new Counter({
      name: 'plinth_beacon_dropped_total',
      help: 'Page views the edge beacon dropped (its buffer was full between flushes)',
      registers: register,
      collect() {
        this.reset()
        this.inc(plinth.beacon.stats().dropped)
      },
    })
  }

  /** The text format of every metric, read now. */
  text(): Promise<string> {
    this.#beforeScrape()
    return this.#registry.metrics()
  }

  get contentType(): string {
    return this.#registry.contentType
  }
}

/** The event-loop delay's figures, as prom-client names them, read from Node's histogram (nanoseconds). */
const LOOP_DELAY_FIGURES: Record<string, { read: (h: IntervalHistogram) => number; help: string }> = {
  min: { read: (h) => h.min, help: 'The smallest event-loop delay since the last scrape (absent until one was measured)' },
  max: { read: (h) => h.max, help: 'The largest event-loop delay since the last scrape' },
  mean: { read: (h) => h.mean, help: 'The mean event-loop delay since the last scrape' },
  stddev: { read: (h) => h.stddev, help: 'The standard deviation of the event-loop delays since the last scrape' },
  p50: { read: (h) => h.percentile(50), help: 'The median event-loop delay since the last scrape' },
  p90: { read: (h) => h.percentile(90), help: 'The 90th percentile of the event-loop delays since the last scrape' },
  p99: { read: (h) => h.percentile(99), help: 'The 99th percentile of the event-loop delays since the last scrape' },
}

/**
 * A gauge with one value or none: prom-client's own gauge without labels reads 0 when never set, so an
 * alert on `absent()` could never fire.
 */
function optionalGauge(name: string, help: string, read: () => number | { value: number; labels: Record<string, string> } | null): Metric {
  const get = async () => {
    const now = read()
    const values = now === null ? [] : [typeof now === 'number' ? { value: now, labels: {} } : now]
    return { name, help, type: 'gauge', aggregator: 'sum', values }
  }
  return { name, help, type: 'gauge', aggregator: 'sum', get } as unknown as Metric
}

/** One figure of the serving threads' content caches, added up. */
function sum(threads: readonly ThreadStats[], key: keyof ThreadStats['cache']): number {
  let total = 0
  for (const thread of threads) total += thread.cache[key]
  return total
}

/**
 * `plinth_http_response_seconds`, by door and status class: core/metrics.ts records every answer into
 * fixed buckets from the first request on (no registry needed then); this turns them into prom-client's
 * histogram values at each scrape (its `get()` shape: cumulative `_bucket` with `le`, `_sum`, `_count`).
 */
function responseSeconds() {
  const name = 'plinth_http_response_seconds'
  const help =
    "Time from dispatch to the last byte of every answer of the API, anonymous, MCP, OAuth, dashboard (app), docs, metrics and form doors, and of a hosted site's asynchronous answers (streamed files, a cold site's first request), by door and status class; a hosted site's prepared files are answered synchronously in microseconds and not timed (bench:serve measures them)"
  return {
    name,
    help,
    type: 'histogram',
    aggregator: 'sum',
    get: async () => {
      const values: { metricName: string; labels: Record<string, string | number>; value: number }[] = []
      for (let door = 0; door < DOORS.length; door++)
        for (let c = 1; c < STATUS_CLASSES; c++) {
          const at = door * STATUS_CLASSES + c
          const series = { door: DOORS[door]!, class: `${c}xx` }
          let cumulative = 0
          const buckets = LATENCY_BUCKETS.map((le, slot) => {
            cumulative += latency.counts[at * LATENCY_SLOTS + slot]!
            return { metricName: `${name}_bucket`, labels: { ...series, le }, value: cumulative }
          })
          const count = cumulative + latency.counts[at * LATENCY_SLOTS + LATENCY_BUCKETS.length]!
          if (count === 0) continue
          values.push(
            ...buckets,
            { metricName: `${name}_bucket`, labels: { ...series, le: '+Inf' }, value: count },
            { metricName: `${name}_sum`, labels: series, value: latency.sums[at]! },
            { metricName: `${name}_count`, labels: series, value: count },
          )
        }
      return { name, help, type: 'histogram', values, aggregator: 'sum' }
    },
  }
}
