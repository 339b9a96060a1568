// A cluster's replica hands the writes its sites' functions make to their key-value stores to the primary, which commits them.
import type { KvWrite } from '../actors/functions/kv.js'
import type { Registry } from '../actors/registry.js'
import type { ClusterNode } from '../cluster/node.js'
import { ApiError } from '../core/errors.js'

/** How long a replica's function waits for the primary's answer to a key-value write (well within its 30 s). */
const PRIMARY_ANSWER_MS = 10_000

/**
 * A function runs on whichever node serves its request; a replica's store takes no commit, so `env.KV`'s
 * writes there go to the primary (sealed, as an operator's command does), which commits them in the
 * website's lane and answers once the live replicas applied them: the function that wrote reads its
 * write back on its own node. Reads stay local (eventually consistent, as Cloudflare KV says of itself).
 */
export function forwardKvWrites(registry: Registry, cluster: ClusterNode | null): void {
  if (cluster === null) return
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
