// A cluster's node at its door: the site files it holds are answered here; everything else goes to the primary,
// signed, and only to a primary that proved it is one.
import { request } from 'node:http'
import { isIP } from 'node:net'
import { randomBytes } from 'node:crypto'
import type { ClusterNode } from '../cluster/node.js'
import type { Holder } from '../cluster/lease.js'
import type { Registry } from '../actors/registry.js'
import type { Logger } from '../core/log.js'
import { ApiError } from '../core/errors.js'
import { sendError } from '../http/respond.js'
import { CLUSTER_FORWARD_HEADER, CLUSTER_PEER_HEADER, Forwarder, type ForwardTarget } from '../http/forward.js'
import { FORWARD_PEER_HEADER, FORWARD_SECRET_HEADER, type Exchange } from '../http/uws.js'
import { METRICS_PATH } from '../http/metrics.js'
import { HEALTH_PATH } from '../http/server.js'

/** A replica gives up a new connection to the primary after this long (one that is cut off answers no SYN). */
const CONNECT_MS = 2000
/** Where a replica asks the address the lease names to prove that it is the primary. */
export const CHALLENGE_PATH = '/_platform/cluster/challenge'
const CHALLENGE_HEADER = 'x-plinth-challenge'
/** How long a replica waits for the answer to its challenge. */
const CHALLENGE_MS = 2000

/**
 * The primary's check of every request (plinth/start.ts gives it to each listener): one that carries a
 * replica's signature for exactly this method, host, path and client, made within seconds and never
 * seen before, comes from a node, and its client is the one named; anything else (no signature, a
 * bad or old one, a replay, or any node but the primary) is a client's own request, counted.
 */
export function clusterPeer(cluster: ClusterNode, log: Logger): (exchange: Exchange) => void {
  const warned = new Set<string>()
  return (exchange) => {
    const proof = exchange.header(CLUSTER_FORWARD_HEADER)
    if (proof === '') return
    const peer = exchange.header(CLUSTER_PEER_HEADER)
    const query = exchange.query
    const verdict =
      cluster.role !== 'primary'
        ? 'not-primary'
        : isIP(peer) === 0
          ? 'bad'
          : cluster.trust.checkForward(
              {
                method: exchange.method,
                host: exchange.header('host'),
                target: query === '' ? exchange.path : `${exchange.path}?${query}`,
                peer,
              },
              proof,
              Date.now(),
            )
    if (verdict === 'ok') return exchange.forwardedFor(peer)
    cluster.refused('forward')
    if (warned.has(verdict)) return
    warned.add(verdict)
    log.warn(
      verdict === 'old'
        ? "a request handed on by another node was signed too long ago (over 10 s): the nodes' clocks are apart (run NTP), or it is a replay; it is treated as the client's own"
        : `a request claiming to come from another node was treated as the client's own (${verdict === 'not-primary' ? 'only the primary takes them' : verdict === 'replayed' ? 'its signature was used before' : 'its signature does not hold'})`,
      { path: exchange.path },
    )
  }
}

/**
 * The door of a cluster's node. While it leads, every request is the application's. As a replica it
 * answers, from its own database, a GET or HEAD of a site's host (published, draft, custom domain, a
 * version's own address, a storage website's shared files; a password page and its cookie check are
 * reads too), its health check and its metrics; everything else (the API, MCP, the dashboard,
 * form posts, the tracker, password posts, the platform's routes) is handed to the primary the lease
 * names, signed with the client's address, once that address proved it is the primary (a challenge
 * only a node holding the installation's secret answers), and its answer streams back (503 with
 * Retry-After while nobody leads or the primary is not proven yet). Every node answers the challenge
 * (a primary with its proof, any other node 503).
 */
export function replicaDoor(
  cluster: ClusterNode,
  registry: Registry,
  app: (exchange: Exchange) => void,
  log: Logger,
): { dispatch: (exchange: Exchange) => void; close(): void } {
  // A refusal says when to try again: by then the lease of a primary that died has ended.
  const retryAfter = { 'retry-after': String(Math.max(1, Math.ceil(cluster.settings.leaseMs / 1000))) }
  /** The primary the lease named, its target, and whether its address answered the challenge. */
  let known: { holder: Holder; target: ForwardTarget; proven: boolean; asking: Promise<boolean> | null; warned: boolean } | null = null
  const sameHolder = (a: Holder, b: Holder) => a.node === b.node && a.url === b.url && a.epoch === b.epoch
  const current = (): typeof known => {
    const leader = cluster.leader
    if (leader === null || leader.node === cluster.settings.node) return null
    if (known === null || !sameHolder(known.holder, leader)) {
      const url = new URL(leader.url)
      const candidate: NonNullable<typeof known> = {
        holder: leader,
        proven: false,
        asking: null,
        warned: false,
        target: {
          host: url.hostname,
          port: Number(url.port || (url.protocol === 'https:' ? 443 : 80)),
          proof: (request) => ({
            [CLUSTER_FORWARD_HEADER]: cluster.trust.signForward(request, Date.now()),
            [CLUSTER_PEER_HEADER]: request.peer,
          }),
          strip: new Set([CLUSTER_FORWARD_HEADER, CLUSTER_PEER_HEADER, FORWARD_SECRET_HEADER, FORWARD_PEER_HEADER]),
          unreachable: `a replica could not reach the primary (${leader.node} at ${leader.url})`,
          // The primary may be dying: its lease ends and another node leads within PLINTH_CLUSTER_LEASE_MS.
          failure: new ApiError(
            'unavailable',
            `The cluster's primary (${leader.node}) does not answer; another node takes over within seconds: try again`,
            undefined,
            retryAfter,
          ),
          connectMs: CONNECT_MS,
          // A primary the lease names is handed nothing before it proved its address (a request waits for the proof).
          ready: () => candidate.proven || challenge(candidate),
        },
      }
      known = candidate
    }
    return known
  }
  /**
   * Asks the primary's address to prove itself: its answer must be the challenge's proof for its name and
   * epoch. Resolves whether it did (one question at a time; a failed one is asked again next time).
   */
  const challenge = (candidate: NonNullable<typeof known>): Promise<boolean> =>
    (candidate.asking ??= new Promise<boolean>((resolve) => {
      const nonce = randomBytes(16).toString('hex')
      const { node, epoch } = candidate.holder
      const settle = (proven: boolean) => {
        candidate.asking = null
        candidate.proven ||= proven
        resolve(proven)
      }
      const asked = request(
        {
          host: candidate.target.host,
          port: candidate.target.port,
          method: 'GET',
          path: CHALLENGE_PATH,
          headers: { [CHALLENGE_HEADER]: nonce, host: candidate.target.host },
          timeout: CHALLENGE_MS,
        },
        (answer) => {
          let body = ''
          answer.setEncoding('utf8')
          answer.on('data', (chunk: string) => (body = (body + chunk).slice(0, 4096)))
          answer.on('error', () => settle(false))
          answer.on('end', () => {
            try {
              const said = JSON.parse(body) as { node?: unknown; epoch?: unknown; proof?: unknown }
              // A record of epoch 0 is a take under way (its epoch is written next): the node's own epoch stands.
              if (
                answer.statusCode === 200 &&
                said.node === node &&
                typeof said.epoch === 'number' &&
                (said.epoch === epoch || (epoch === 0 && said.epoch > 0)) &&
                typeof said.proof === 'string' &&
                cluster.trust.checkChallenge(nonce, node, said.epoch, candidate.holder.url, said.proof)
              )
                return settle(true)
            } catch {
              // Not the answer a node gives.
            }
            // A node not leading yet (or no longer) answers 503; anything else at that address is not a node of this cluster.
            if (answer.statusCode !== 503 && !candidate.warned) {
              candidate.warned = true
              cluster.refused('lease')
              log.warn("the address the lease names did not prove it is the cluster's primary: nothing is handed to it", {
                node,
                url: candidate.holder.url,
                status: answer.statusCode,
              })
            }
            settle(false)
          })
        },
      )
      asked.on('timeout', () => asked.destroy(new Error('no answer')))
      asked.on('error', () => settle(false))
      asked.end()
    }))
  const forwarder = new Forwarder(() => current()?.target ?? null, log)
  // When the lease names another primary (or none), requests still waiting on the old one are answered:
  // it may have been cut off, and nothing it does now can be acknowledged. A new one is challenged.
  let forwardedTo: ForwardTarget | null = null
  const watch = setInterval(() => {
    const leader = current()
    if (leader !== null && !leader.proven) void challenge(leader)
    const now = leader?.target ?? null
    if (forwardedTo === null || forwardedTo === now) return ((forwardedTo = now), undefined)
    const gone = forwardedTo
    forwardedTo = now
    forwarder.abandon(
      gone,
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
    // A site's host (a storage website's shared files too: their bytes arrive before the entry naming them),
    // and a version's own address (`v{N}--{label}`: every version is in this node's database).
    const hostnames = registry.hostnames
    return (
      hostnames.channel(exchange.host) !== undefined ||
      hostnames.websiteOfHost(exchange.host) !== undefined ||
      hostnames.versionOfHost(exchange.host) !== undefined
    )
  }
  const answerChallenge = (exchange: Exchange) => {
    const nonce = exchange.header(CHALLENGE_HEADER)
    const answer = /^[0-9a-f]{32}$/.test(nonce) ? cluster.answerChallenge(nonce) : null
    if (answer === null)
      return sendError(
        exchange,
        new ApiError('unavailable', `This node (${cluster.settings.node}) does not lead the cluster right now`, undefined, retryAfter),
        log,
      )
    exchange.send(200, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' }, JSON.stringify(answer))
  }
  return {
    dispatch: (exchange) => {
      if (exchange.path === CHALLENGE_PATH && exchange.method === 'GET') return answerChallenge(exchange)
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
