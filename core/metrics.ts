/**
 * Process-wide counters the metrics endpoint (http/metrics.ts) reads when it is scraped. Where they
 * are counted it is one increment (or one add) into memory set up at start: no labels hashed, no
 * objects made, nothing awaited. prom-client turns them into the text format at scrape time only.
 */

/** Where a request entered: the label `door` of plinth_http_responses_total. */
export const DOORS = ['other', 'hosting', 'api', 'anonymous', 'mcp', 'oauth', 'app', 'docs', 'metrics'] as const
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

/**
 * Where the latency of asynchronous answers goes (everything not answered inside the request's own
 * handler: API calls, streamed files, a cold site's first request), by door: the metrics endpoint's
 * histogram, when there is one. Synchronous answers (a hosted site's prepared files) finish inside
 * the handler in microseconds and are not timed; bench:serve measures them.
 */
export const latency: { sink: ((door: number, seconds: number) => void) | null } = { sink: null }

/** Records one asynchronous answer's latency (seconds). */
export function observeLatency(door: number, seconds: number): void {
  latency.sink?.(door, seconds)
}

/** Other counters of the process, each bumped where it happens. */
export const counters = {
  /** Commands queued or running in every mailbox. */
  mailboxQueued: 0,
  /** Outbound requests made for users (the SSRF guard), and those that failed or were refused. */
  outboundRequests: 0,
  outboundFailures: 0,
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
