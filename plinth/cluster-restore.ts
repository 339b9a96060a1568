// A cluster's node that cannot join with the data directory it has restores the newest backup of PLINTH_CLUSTER_BACKUPS
// first; the primary trims the log to what those backups make unnecessary.
import { mkdirSync, renameSync, rmSync } from 'node:fs'
import { basename, dirname, join } from 'node:path'
import { restoreBackup } from '../core/backup/restore.js'
import { listBackups } from '../core/backup/root.js'
import { DATABASE_FILE, manifestSignature, readManifest } from '../core/backup/manifest.js'
import { sha256File } from '../core/content.js'
import { openReadOnly } from '../core/backup/database.js'
import type { LogPosition } from '../core/store/write-set.js'
import type { Logger } from '../core/log.js'
import { Store } from '../core/store/store.js'
import { DivergedError, type ClusterNode } from '../cluster/node.js'

/**
 * Before a node joins: a data directory that is new (nothing applied, a log to replay), behind the
 * log's first entry, or off the log (writes it never acknowledged; the embedded server's) is replaced
 * by the newest complete backup under `backups`, which then replays only the log after its position.
 * What was there is moved aside to `<data dir>.diverged-<time>` (never deleted: the unacknowledged
 * writes are the operator's to look at). Returns the store to join with (the one given, or the
 * restored one). Without `backups`, a new node replays the whole log and any other state is refused.
 */
export async function restoreForCluster(
  store: Store,
  dataDir: string,
  backups: string | null,
  secret: Buffer,
  cluster: ClusterNode,
  log: Logger,
): Promise<Store> {
  const state = await cluster.assess(store)
  if (state.kind === 'ok' || (state.kind === 'new' && backups === null)) return store
  const newest = backups === null ? undefined : signedBackups(backups, secret, log).at(-1)
  if (newest === undefined) {
    if (state.kind === 'new') {
      log.warn('PLINTH_CLUSTER_BACKUPS holds no complete backup signed by this installation yet: this new node replays the whole log', {
        backups,
      })
      return store
    }
    // join() refuses it, saying why and what to do.
    if (backups === null) return store
    throw new DivergedError(
      `${state.message}; and ${backups} (PLINTH_CLUSTER_BACKUPS) holds no complete backup signed by this installation's secret to restore: take one from a running node (plinth backup ${backups}) and start this node again`,
    )
  }
  await store.close()
  if (state.kind === 'new') {
    // What Store.open made in an empty directory: nothing but an empty database.
    rmSync(join(dataDir, 'db'), { recursive: true, force: true })
    rmSync(join(dataDir, 'files'), { recursive: true, force: true })
  } else {
    const aside = join(dirname(dataDir), `${basename(dataDir)}.diverged-${new Date().toISOString().replace(/[-:.]/g, '')}`)
    mkdirSync(aside, { mode: 0o700 })
    for (const name of ['db', 'files']) renameSync(join(dataDir, name), join(aside, name))
    log.warn("this node's data directory cannot join the cluster as it is: moved aside, the newest backup restored in its place", {
      reason: state.message,
      aside,
    })
  }
  const restored = await restoreBackup(newest.dir, dataDir, { secret, force: true, locked: true })
  const reopened = await Store.open(dataDir, { replicated: true })
  const again = await cluster.assess(reopened)
  const { last } = await cluster.bounds()
  if ('message' in again) {
    await reopened.close()
    throw new DivergedError(
      `the newest backup of PLINTH_CLUSTER_BACKUPS (${newest.dir}) cannot join either: ${again.message}; take a new backup from a running node and start this node again`,
    )
  }
  log.info('restored the newest backup; replaying the log from its position', {
    backup: newest.dir,
    ms: restored.ms,
    position: reopened.replication!.position()?.seq ?? 0,
    log: last,
  })
  return reopened
}

/**
 * The complete backups under `backups` whose manifest the installation's secret signed, oldest first: a
 * node restores nothing else (a backup root is storage others may write to). Each one refused is logged.
 */
function signedBackups(backups: string, secret: Buffer, log: Logger): { id: string; dir: string }[] {
  const signed: { id: string; dir: string }[] = []
  for (const backup of listBackups(backups)) {
    if (!backup.complete) continue
    let refused: string
    try {
      const manifest = readManifest(backup.dir)
      const signature = manifest.id !== backup.id ? 'renamed' : manifestSignature(manifest, secret)
      if (signature === 'ok') {
        signed.push(backup)
        continue
      }
      refused =
        signature === 'renamed'
          ? `its manifest names it ${manifest.id} (copied or renamed)`
          : signature === 'unsigned'
            ? 'it is not signed (taken before backups were signed)'
            : "its manifest's signature does not match this installation's secret (changed since, or another installation's)"
    } catch (error) {
      refused = (error as Error).message
    }
    warnOnce(log, backup.dir, `a backup of PLINTH_CLUSTER_BACKUPS is not restored by a node: ${refused}`)
  }
  return signed
}

const warned = new Set<string>()
function warnOnce(log: Logger, dir: string, message: string): void {
  if (warned.has(dir)) return
  warned.add(dir)
  log.warn(message, { backup: dir })
}

/** Backups whose database copy was checked against their signed manifest (a copy is never changed afterwards). */
const checkedCopies = new Set<string>()

/**
 * The log position a backup's database reached (null: a backup of an embedded server, or older than
 * positions), once its database is the one its signed manifest names (read whole once per backup).
 */
async function backupPosition(dir: string, log: Logger): Promise<LogPosition | null> {
  if (!checkedCopies.has(dir)) {
    const manifest = readManifest(dir)
    const found = await sha256File(join(dir, DATABASE_FILE))
    if (found.sha256 !== manifest.database.sha256 || found.size !== manifest.database.size) {
      warnOnce(log, dir, 'a backup of PLINTH_CLUSTER_BACKUPS does not hold the database its manifest names: the log is not trimmed to it')
      return null
    }
    checkedCopies.add(dir)
  }
  const env = openReadOnly(join(dir, 'db'))
  try {
    return (
      (env.openDB<LogPosition, string>({ name: 'replication', encoding: 'msgpack' }).get('position') as LogPosition | undefined) ?? null
    )
  } catch {
    return null
  } finally {
    void env.close()
  }
}

/**
 * The log keeps every entry after the second-newest complete backup of `backups`: a node that is
 * further behind restores one of the two newest (the newest, or the one before it if the newest
 * fails), and a node down for less than the time between two backups catches up from the log alone.
 * Run by the primary when a node says a backup ended, when it starts leading, and every few minutes.
 */
export async function trimLogToBackups(backups: string, secret: Buffer, cluster: ClusterNode, log: Logger): Promise<void> {
  // Only backups a node would restore count: one that is not signed must not make the log forget what a node needs.
  const kept = signedBackups(backups, secret, log).at(-2)
  if (kept === undefined) return
  const position = await backupPosition(kept.dir, log)
  if (position === null) {
    log.warn(
      "the log is not trimmed: the second-newest backup of PLINTH_CLUSTER_BACKUPS holds no log position (it is not of this cluster's nodes)",
      {
        backup: kept.dir,
      },
    )
    return
  }
  const trimmed = await cluster.trimLog(position)
  if (trimmed === 'not-ours')
    log.warn(
      "the log is not trimmed: the second-newest backup of PLINTH_CLUSTER_BACKUPS is not of this cluster (its last entry is not the log's)",
      {
        backup: kept.dir,
        position: position.seq,
      },
    )
  else if (trimmed !== null) {
    log.info("trimmed the log: the entries before the second-newest backup's position are removed", {
      backup: kept.dir,
      removed: trimmed.removed,
      first: trimmed.first,
    })
    // Files only the removed entries listed, and no record names, leave the cluster's blob store.
    const files = await cluster.sweepBlobs()
    log.info("swept the cluster's blob store: files no record names and no entry left in the log lists are removed", files)
  }
}
