// The continuous archive wired to a running server (PLINTH_BACKUP_ARCHIVE): its writer, and the base backup it begins with.
import { ArchiveWriter } from '../core/backup/archive-writer.js'
import { recordBackup } from '../core/backup/status.js'
import { takeBackup } from '../core/backup/take.js'
import type { Logger } from '../core/log.js'
import type { Store } from '../core/store/store.js'
import { serverSource } from './backup.js'

/**
 * Once the installation's secret is known: the archive reads its tail and goes on (or begins anew),
 * blob files are copied into the root as they are placed, and when the root has no base to replay the
 * archive from, the server takes one there (in the background: it goes on serving).
 */
export function startArchive(
  archive: ArchiveWriter,
  store: Store,
  dataDir: string,
  secret: Buffer,
  log: Logger,
  /** `mirror`: blob files are copied as they are placed (the embedded server; a cluster node's come with the entries it takes). */
  options: { takeBase: boolean; mirror: boolean },
): { base: Promise<void> | null } {
  if (options.mirror) store.blobs.mirror = (hash, path) => archive.mirror(hash, path)
  const started = archive.unlock(secret)
  log.info(started.continued ? 'the backup archive goes on' : 'the backup archive begins', {
    root: archive.root,
    at: store.replication?.position()?.seq ?? 0,
  })
  if (!started.needsBase || !options.takeBase) return { base: null }
  const base = takeBackup(archive.root, serverSource(store), { secret }).then(
    async (taken) => {
      await recordBackup(dataDir, taken.dir, taken.manifest)
      log.info("took the backup archive's base: a restore to any point from here replays the archive from it", {
        backup: taken.dir,
        at: store.replication?.position()?.seq ?? 0,
      })
    },
    (error: unknown) =>
      log.error(
        `could not take the backup archive's base (no restore to a point in time until one is taken: plinth backup ${archive.root})`,
        {
          error: String(error),
        },
      ),
  )
  return { base }
}
