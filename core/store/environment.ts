// Opening the LMDB environment of a data directory: durable writes, and files only the owner may read.
import { chmodSync, existsSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { open, type RootDatabase } from 'lmdb'

/** The LMDB environment under `{dataDir}/db` (msgpackr encoding), its directory 0700 and its files 0600. */
export function openEnvironment(dataDir: string): RootDatabase {
  const path = join(dataDir, 'db')
  mkdirSync(path, { recursive: true, mode: 0o700 })
  // Durable by default: no noSync, no useWritemap (child transactions need it off).
  const env = open({ path, encoding: 'msgpack', compression: false, maxDbs: 128 })
  // Secrets' hashes live here: the owner's alone, also for files an older version made 0644.
  chmodSync(path, 0o700)
  for (const file of ['data.mdb', 'lock.mdb']) if (existsSync(join(path, file))) chmodSync(join(path, file), 0o600)
  return env
}
