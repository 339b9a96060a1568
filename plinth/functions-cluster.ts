// Sites' functions on a cluster: a replica hands the writes they make to their key-value stores to the primary,
// which commits them, and every node keeps the log lines of every node's functions.
import type { KvWrite } from '../actors/functions/kv.js'
import type { SharedLogEntry } from '../actors/functions/logs.js'
import type { Registry } from '../actors/registry.js'
import type { Logger } from '../core/log.js'
import type { ClusterNode } from '../cluster/node.js'
import { ApiError } from '../core/errors.js'

/** How long a replica's function waits for the primary's answer to a key-value write (well within its 30 s). */
const PRIMARY_ANSWER_MS = 10_000
/** A node's log lines travel together, at most this long after the first of them… */
const LOGS_BATCH_MS = 100
/** …or as soon as there are this many, or this many bytes (well under NATS's 1 MiB message, sealing included). */
const LOGS_BATCH_LINES = 200
const LOGS_BATCH_BYTES = 256 * 1024

/** Wires a site's functions into the cluster (nothing on a single server). */
export function functionsOnCluster(registry: Registry, cluster: ClusterNode | null, log: Logger): void {
  if (cluster === null) return
  forwardKvWrites(registry, cluster)
  shareLogs(registry, cluster, log)
}

/**
 * A function runs on whichever node serves its request; a replica's store takes no commit, so `env.KV`'s
 * writes there go to the primary (sealed, as an operator's command does), which commits them in the
 * website's lane and answers once the live replicas applied them: the function that wrote reads its
 * write back on its own node. Reads stay local (eventually consistent, as Cloudflare KV says of itself).
 */
function forwardKvWrites(registry: Registry, cluster: ClusterNode): void {
  const kv = registry.functions.kv
  cluster.exchange.onKv(async (write) => {
    await kv.apply(write as KvWrite)
    await cluster.replicated()
    return {}
  })
  kv.forward = async (write) => {
    if (cluster.leader === null)
      throw new ApiError(
        'unavailable',
        'KV write failed: no node leads the cluster right now (an election is under way); nothing was written: try again in a few seconds',
      )
    const answer = await cluster.exchange.askPrimaryKv(write, PRIMARY_ANSWER_MS)
    if (answer === null)
      throw new ApiError(
        'unavailable',
        `KV write failed: the cluster's primary did not answer within ${PRIMARY_ANSWER_MS / 1000} s; the write may or may not have been made: read the key before writing it again`,
      )
    if (!answer.ok) throw new ApiError(answer.error!.kind, answer.error!.message, answer.error!.details)
  }
}

type SharedLine = [websiteId: string, entry: SharedLogEntry]

/**
 * A request's lines are logged on the node that ran it, and the logs API may be answered by another (the
 * primary answers a replica's API calls): each node tells the others its lines, batched (sealed, on plain
 * NATS: a line lost while a node restarts is lost, as Cloudflare's real-time logs are), and keeps theirs.
 */
function shareLogs(registry: Registry, cluster: ClusterNode, log: Logger): void {
  const logs = registry.functions.logs
  logs.node = cluster.settings.node
  let batch: SharedLine[] = []
  let bytes = 0
  let timer: NodeJS.Timeout | null = null
  const send = () => {
    if (timer !== null) clearTimeout(timer)
    timer = null
    const lines = batch
    batch = []
    bytes = 0
    if (lines.length === 0) return
    try {
      cluster.exchange.sendFunctionLogs(lines)
    } catch (error) {
      // A site's lines never stop the node: what NATS refused is dropped (the lines stay on this node).
      log.warn("a batch of function log lines could not be sent to the cluster's other nodes", {
        lines: lines.length,
        error: String(error),
      })
    }
  }
  logs.shared = (websiteId, entry) => {
    // A line's size in the batch's JSON (a control character takes six bytes there).
    const size = Buffer.byteLength(JSON.stringify(entry))
    if (bytes + size > LOGS_BATCH_BYTES) send()
    batch.push([websiteId, entry])
    bytes += size
    if (batch.length >= LOGS_BATCH_LINES) send()
    else timer ??= setTimeout(send, LOGS_BATCH_MS).unref()
  }
  cluster.exchange.onFunctionLogs((_node, said) => {
    if (!Array.isArray(said)) return
    for (const line of said as SharedLine[])
      if (Array.isArray(line) && typeof line[0] === 'string' && typeof line[1]?.at === 'number') logs.take(line[0], line[1])
  })
}
