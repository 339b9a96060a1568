// Verifying a backup: every file against its manifest, the database walked, every blob it names present.
import { existsSync, rmSync, statSync } from 'node:fs'
import { basename, join } from 'node:path'
import { namedFiles, openReadOnly, walkTables } from './database.js'
import { sha256File } from '../content.js'
import { DATABASE_FILE, MANIFEST_FILE, manifestSignature, readManifest, type BackupManifest } from './manifest.js'
import { blobPath, resolveBackup, rootOf } from './root.js'

export interface Verification {
  dir: string
  manifest: BackupManifest
  /** Entries of each table, as walked (empty when the database copy itself is damaged). */
  tables: Record<string, number>
  /** Each missing, changed or unreadable thing, by name; empty when the backup is sound. */
  problems: string[]
  /** Whether the installation's secret signed the manifest (`unchecked`: no secret was given). */
  signature: 'ok' | 'unsigned' | 'forged' | 'unchecked'
}

/**
 * Checks a backup (a backup directory, or a root's newest complete one) as restore would need it: the
 * database copy's size and SHA-256, then (only if those hold: a truncated file is never opened) every
 * table read through and every record checked against its schema, the counts against the manifest's,
 * every blob file the records name listed in the manifest, and every listed blob present with its
 * size and SHA-256. Refuses (BackupError) a path that is not a complete backup of a format it reads.
 */
export async function verifyBackup(path: string, secret: Buffer | null): Promise<Verification> {
  const dir = resolveBackup(path)
  const manifest = readManifest(dir)
  const problems: string[] = []
  const signature = secret === null ? 'unchecked' : manifestSignature(manifest, secret)
  if (manifest.id !== basename(dir))
    problems.push(`${MANIFEST_FILE}: it names the backup ${manifest.id}, and its directory is ${basename(dir)} (copied or renamed)`)
  if (signature === 'forged')
    problems.push(
      `${MANIFEST_FILE}: its signature does not match the installation's secret (changed after the backup was taken, or another installation's backup)`,
    )
  let tables: Record<string, number> = {}
  const database = join(dir, DATABASE_FILE)
  if (!existsSync(database)) problems.push(`${DATABASE_FILE} is missing`)
  else {
    const found = await sha256File(database)
    if (found.size !== manifest.database.size)
      problems.push(`${DATABASE_FILE} is ${found.size} bytes, the manifest says ${manifest.database.size} (truncated or changed)`)
    else if (found.sha256 !== manifest.database.sha256)
      problems.push(`${DATABASE_FILE} has SHA-256 ${found.sha256}, the manifest says ${manifest.database.sha256} (changed)`)
    else {
      const env = openReadOnly(join(dir, 'db'))
      try {
        const walked = walkTables(env)
        tables = walked.counts
        problems.push(...walked.problems.map((p) => `${DATABASE_FILE}: ${p}`))
        for (const name of new Set([...Object.keys(manifest.tables), ...Object.keys(tables)]))
          if ((manifest.tables[name] ?? 0) !== (tables[name] ?? 0))
            problems.push(`table ${name} has ${tables[name] ?? 0} entries, the manifest says ${manifest.tables[name] ?? 0}`)
        const listed = new Set(manifest.blobs.map((b) => b.sha256))
        for (const sha256 of namedFiles(env))
          if (!listed.has(sha256)) problems.push(`blob ${sha256}, named by the database, is not in the manifest`)
      } finally {
        await env.close()
        rmSync(join(dir, 'db', 'lock.mdb'), { force: true })
      }
    }
  }
  const root = rootOf(dir)
  for (const blob of manifest.blobs) {
    const file = blobPath(root, blob.sha256)
    if (!existsSync(file)) {
      problems.push(`blob ${blob.sha256} is missing (${file})`)
      continue
    }
    if (statSync(file).size !== blob.size) {
      problems.push(`blob ${blob.sha256} is ${statSync(file).size} bytes, the manifest says ${blob.size} (${file})`)
      continue
    }
    const found = await sha256File(file)
    if (found.sha256 !== blob.sha256) problems.push(`blob ${blob.sha256} has SHA-256 ${found.sha256} (changed: ${file})`)
  }
  return { dir, manifest, tables, problems, signature }
}
