/**
 * Process-wide counters the metrics endpoint (http/metrics.ts) reads when it is scraped. Where they
 * are counted it is one increment (or one add) into memory set up at start: no labels hashed, no
 * objects made, nothing awaited. prom-client turns them into the text format at scrape time only.
 */

/** Where a request entered: the label `door` of plinth_http_responses_total. */
export const DOORS = ['other', 'hosting', 'api', 'anonymous', 'mcp', 'oauth', 'app', 'docs', 'metrics', 'forms'] as const
export type DoorName = (typeof DOORS)[number]
export const DOOR: { readonly [K in DoorName]: number } = Object.fromEntries(DOORS.map((d, i) => [d, i])) as never

/** Status classes 1xx-5xx, at `door * 6 + class`; slot 0 of each door is unused. */
export const STATUS_CLASSES = 6

export const traffic = {
  /** Responses by door and status class. */
  responses: new Float64Array(DOORS.length * STATUS_CLASSES),
  /** Body bytes written, by door (streamed bodies as they are written). */
  bytes: new Float64Array(DOORS.length),
}

/** Upper bounds (seconds) of the response-time histogram's buckets: 0.5 ms to 10 s, and +Inf after them. */
export const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] as const
/** Slots per door and status class: one per bucket, and one for answers over the last bound. */
export const LATENCY_SLOTS = LATENCY_BUCKETS.length + 1

/**
 * How long answers took, from the request's dispatch to its last byte, by door and status class:
 * every answer of the API, MCP, OAuth, dashboard, docs and form doors, and a hosted site's asynchronous
 * ones (streamed files, a cold site's first request). A hosted site's prepared files are answered
 * synchronously in microseconds and not timed (bench:serve measures them). Recorded from the first
 * request on, whether or not anyone has scraped yet.
 */
export const latency = {
  /** Answers by door, status class and slot, at `(door * STATUS_CLASSES + class) * LATENCY_SLOTS + slot` (not cumulative). */
  counts: new Float64Array(DOORS.length * STATUS_CLASSES * LATENCY_SLOTS),
  /** Seconds summed by door and status class, at `door * STATUS_CLASSES + class`. */
  sums: new Float64Array(DOORS.length * STATUS_CLASSES),
}

/** Records one answer's latency (seconds) under its door and status class (1-5). */
export function observeLatency(door: number, statusClass: number, seconds: number): void {
  let slot = 0
  while (slot < LATENCY_BUCKETS.length && seconds > LATENCY_BUCKETS[slot]!) slot++
  const at = door * STATUS_CLASSES + statusClass
  latency.counts[at * LATENCY_SLOTS + slot]!++
  latency.sums[at]! += seconds
}

/** Other counters of the process, each bumped where it happens. */
export const counters = {
  /** Commands queued or running in every mailbox. */
  mailboxQueued: 0,
  /** Outbound requests made for users (the SSRF guard), and those that failed or were refused. */
  outboundRequests: 0,
  outboundFailures: 0,
  /** Requests a cluster's replica handed to the primary, by outcome (answered, unreachable, abandoned: the primary changed under it, no_primary). */
  forwarded: new Map<string, number>(),
  /**
   * Sites' functions, by the class of site (static, framework): invocations by outcome (ok, exception,
   * or the limit: cpu, memory, wall, restarted, load; keyed `class outcome`), CPU seconds, cold starts.
   */
  functionInvocations: new Map<string, number>(),
  functionCpuSeconds: new Map<string, number>(),
  functionColdStarts: new Map<string, number>(),
  /** Quality-gate steps: runs, seconds spent, and runs that ran past a budget, by step. */
  gateSteps: new Map<string, { runs: number; seconds: number; overBudget: number }>(),
}

function gateStep(step: string) {
  let entry = counters.gateSteps.get(step)
  if (entry === undefined) counters.gateSteps.set(step, (entry = { runs: 0, seconds: 0, overBudget: 0 }))
  return entry
}

/** Records one gate step's run. */
export function observeGateStep(step: string, seconds: number): void {
  const entry = gateStep(step)
  entry.runs++
  entry.seconds += seconds
}

/** Records a gate step that ran past its budget. */
export function gateStepOverBudget(step: string): void {
  gateStep(step).overBudget++
}

/** Records one invocation of a site's functions (`site`: the class of site, static or framework). */
export function observeFunction(site: 'static' | 'framework', outcome: string, cpuMs: number, cold: boolean): void {
  const key = `${site} ${outcome}`
  counters.functionInvocations.set(key, (counters.functionInvocations.get(key) ?? 0) + 1)
  counters.functionCpuSeconds.set(site, (counters.functionCpuSeconds.get(site) ?? 0) + cpuMs / 1000)
  if (cold) counters.functionColdStarts.set(site, (counters.functionColdStarts.get(site) ?? 0) + 1)
}
