// A database copy read as a backup reads it: opened read-only, its tables counted or walked, the blob files it names.
import { open, type Database, type Key, type RootDatabase } from 'lmdb'
import { validator } from '../validation.js'
import { BINARY_TABLES, RECORD_SCHEMAS } from '../store/store.js'

/** Opens the LMDB environment in `dbDir` (a backup's `db/`, or a data directory's) read-only. */
export function openReadOnly(dbDir: string): RootDatabase {
  return open({ path: dbDir, encoding: 'msgpack', compression: false, maxDbs: 128, readOnly: true })
}

/** The names of the environment's tables (the keys of LMDB's main database). */
export function tableNames(env: RootDatabase): string[] {
  return [...env.getKeys()].map((key) => String(key)).sort()
}

function table(env: RootDatabase, name: string): Database<unknown, Key> {
  return env.openDB<unknown, Key>({ name, encoding: BINARY_TABLES.has(name) ? 'binary' : 'msgpack' })
}

/** Entries of each table, from LMDB's own statistics (no walk). */
export function tableCounts(env: RootDatabase): Record<string, number> {
  const counts: Record<string, number> = {}
  for (const name of tableNames(env)) counts[name] = (table(env, name).getStats() as { entryCount: number }).entryCount
  return counts
}

/**
 * Reads every entry of every table: each value decodes, and each record of a record table has the
 * schema version this build reads and passes its schema. Returns the entries counted and the first
 * few problems (a table name and key, and what is wrong).
 */
export function walkTables(env: RootDatabase): { counts: Record<string, number>; problems: string[] } {
  const counts: Record<string, number> = {}
  const problems: string[] = []
  for (const name of tableNames(env)) {
    const schema = (RECORD_SCHEMAS as Record<string, (typeof RECORD_SCHEMAS)[keyof typeof RECORD_SCHEMAS]>)[name]
    const version = (schema as unknown as { properties?: { v?: { const?: number } } } | undefined)?.properties?.v?.const
    const validate = schema === undefined ? null : validator(schema)
    let count = 0
    try {
      for (const { key, value } of table(env, name).getRange({})) {
        count++
        if (validate === null || problems.length >= 20) continue
        const found = (value as { v?: unknown } | null)?.v
        if (found !== version) problems.push(`table ${name}, key ${JSON.stringify(key)}: schema version ${String(found)}, not ${version}`)
        else if (!validate(value)) problems.push(`table ${name}, key ${JSON.stringify(key)}: ${JSON.stringify(validate.errors?.[0])}`)
      }
    } catch (error) {
      problems.push(`table ${name} cannot be read after ${count} entries: ${(error as Error).message}`)
    }
    counts[name] = count
  }
  return { counts, problems }
}

/**
 * The blob files the database names: hashes a shared file, an asset, an image variant or an
 * organization's large file counts (`file-refs`), or a version, build or submission manifest names
 * (`blob-refs`), whose bytes are not in the database itself (`blobs`).
 */
export function namedFiles(env: RootDatabase): string[] {
  const names = new Set(tableNames(env))
  const referenced = new Set<string>()
  for (const name of ['file-refs', 'blob-refs']) {
    if (!names.has(name)) continue
    for (const { key, value } of table(env, name).getRange({})) if (typeof key === 'string' && (value as number) > 0) referenced.add(key)
  }
  if (names.has('blobs')) {
    const blobs = table(env, 'blobs')
    for (const hash of referenced) if (blobs.doesExist(hash)) referenced.delete(hash)
  }
  return [...referenced].filter((hash) => /^[0-9a-f]{64}$/.test(hash)).sort()
}

/** Which records name a blob (for an error that says so): its counts in `file-refs` and `blob-refs`. */
export function referencesOf(env: RootDatabase, sha256: string): string {
  const names = new Set(tableNames(env))
  const count = (name: string) => (names.has(name) ? Number(table(env, name).get(sha256) ?? 0) : 0)
  return `${count('file-refs')} shared-file, asset or large-file references and ${count('blob-refs')} version, build or submission references`
}
