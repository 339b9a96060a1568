// How a node's data directory stands against the cluster's log, before it joins or after it stepped down.
import type { Logger } from '../core/log.js'
import type { Replication } from '../core/store/replication.js'
import type { Store } from '../core/store/store.js'
import type { LogPosition } from '../core/store/write-set.js'
import type { NatsLog } from './log.js'

/** How a data directory stands against the log (`assess`). */
export type Standing =
  | { kind: 'ok' }
  | { kind: 'new' }
  | { kind: 'embedded'; message: string }
  | { kind: 'diverged'; message: string }
  | { kind: 'behind'; message: string }

/** A data directory ahead of the log or off it: its last entries were never acknowledged by the cluster. */
export class DivergedError extends Error {}

/** A cluster node's store as opened for it (`{ replicated: true }`): its side of the log. */
export function replicationOf(store: Store): Replication {
  if (store.replication === null) throw new Error('a cluster node needs its store opened replicated')
  return store.replication
}

/**
 * How this node's data directory stands against the log: `ok` (empty log, or a position the log
 * holds), `new` (nothing applied yet, and the log has entries to replay), or a state it cannot
 * join in: `embedded` (an installation made outside the cluster), `diverged` (its last entry is not
 * the log's: writes the cluster never acknowledged) or `behind` (the log no longer has the entries
 * after its position). A backup (PLINTH_CLUSTER_BACKUPS) repairs the last three and spares `new` the replay.
 */
export async function assess(store: Store, log: NatsLog, node: string, logger: Logger): Promise<Standing> {
  const replication = replicationOf(store)
  const position = replication.position()
  const { first, last } = await log.bounds()
  if (position === null) {
    if (store.meta.get('installation') !== undefined)
      return {
        kind: 'embedded',
        message:
          "this data directory holds an installation made outside the cluster (the embedded server's), which the cluster's log does not have: start a cluster's first node on an empty PLINTH_DATA_DIR (moving an existing installation into a cluster is not built yet)",
      }
    return last === 0 ? { kind: 'ok' } : { kind: 'new' }
  }
  // Entries sealed after the last one known in (a primary's appends in flight when it stopped): the log
  // holds them only if a reader applies them after it, wherever they landed.
  const acked = replication.acked() ?? position
  if (acked.digest !== position.digest) {
    const settled = await settle(replication, log, node, logger, acked, position, first, last)
    if (settled !== null) return settled
    return assess(store, log, node, logger)
  }
  const digest = position.seq > last ? null : await log.digestAt(position.seq)
  if (digest !== position.digest) {
    if (position.seq < first && position.seq <= last) return behind(position.seq, first)
    return diverged(position, last)
  }
  return position.seq + 1 < first ? behind(position.seq, first) : { kind: 'ok' }
}

function diverged(position: LogPosition, last: number): Standing {
  return {
    kind: 'diverged',
    message: `this node's data directory reached log entry ${position.seq} (epoch ${position.epoch}), which the cluster's log ${position.seq > last ? `does not have (it ends at ${last})` : 'holds with other writes'}: its last writes were never acknowledged`,
  }
}

function behind(seq: number, first: number): Standing {
  return {
    kind: 'behind',
    message: `the log starts at entry ${first} and this node's data directory is at ${seq}: the entries between are no longer in the log`,
  }
}

/**
 * A primary's entries after the last one it knew to be in: read from there as every reader reads the
 * log. When a reader applies this node's last entry (after its own earlier ones), the position is the
 * log's (recorded where it was applied, and null is returned); when it applies another node's entry
 * first, or none, the data directory holds writes the cluster never took.
 */
async function settle(
  replication: Replication,
  log: NatsLog,
  node: string,
  logger: Logger,
  acked: LogPosition,
  position: LogPosition,
  first: number,
  last: number,
): Promise<Standing | null> {
  if (acked.seq > 0 && acked.seq < first) return behind(acked.seq, first)
  // Nothing after the last entry known in: the later ones were never taken.
  if (acked.seq >= last) return diverged(position, last)
  if (acked.seq > 0 && (await log.digestAt(acked.seq)) !== acked.digest) return diverged(acked, last)
  let applied: LogPosition | null = null
  const done = new Error('read as far as needed')
  await log
    .read(
      acked.seq + 1,
      last,
      log.reader(
        acked,
        (entry) => replication.checkEntry(entry),
        () => undefined,
      ),
      async (entry) => {
        if (entry.position.digest === position.digest) applied = entry.position
        // Another node's entry is what every reader applied instead: this node's own are off the log.
        if (applied !== null || entry.node !== node || entry.position.epoch !== position.epoch) throw done
      },
    )
    .catch((error: unknown) => {
      if (error !== done) throw error
    })
  if (applied === null)
    return {
      kind: 'diverged',
      message: `this node's data directory holds entries after log entry ${acked.seq} (up to its own ${position.seq}, epoch ${position.epoch}) that no node applies from the cluster's log: its last writes were never acknowledged`,
    }
  const found: LogPosition = applied
  await replication.confirmPosition(found)
  if (found.seq !== position.seq)
    logger.info(
      "this node's last entry is in the log where every reader applies it, not where it was sealed: its position is moved there",
      {
        sealed: position.seq,
        found: found.seq,
      },
    )
  return null
}
