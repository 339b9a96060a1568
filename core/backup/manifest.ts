// A backup's manifest: what it holds, each file's size and SHA-256, written last.
import { Type, type Static } from '@sinclair/typebox'
import { createHmac, timingSafeEqual } from 'node:crypto'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { deriveKey } from '../installation-secret.js'
import { validator } from '../validation.js'
import { schemaVersions } from '../store/store.js'
import { PLINTH_VERSION } from '../version.js'
import { BackupError } from './errors.js'
import { writeFileDurably } from './files.js'

/**
 * The layout and manifest this build writes; a backup of a higher format is refused. Format 2 is
 * format 1 with the manifest signed (`signature`) and no installation secret in the database copy.
 */
export const BACKUP_FORMAT = 2
/** The manifest's name inside a backup: its presence is what makes a backup complete. */
export const MANIFEST_FILE = 'manifest.json'
/** The database copy inside a backup (LMDB's data file, compacted). */
export const DATABASE_FILE = 'db/data.mdb'

const Sha256 = Type.String({ pattern: '^[0-9a-f]{64}$' })

export const BackupManifest = Type.Object({
  format: Type.Integer({ minimum: 1 }),
  plinth: Type.String(),
  /** The schema version of each record table (core/store/store.ts RECORD_SCHEMAS) as the writer knew them. */
  schemas: Type.Record(Type.String(), Type.Integer()),
  /** The backup's directory name under its root. */
  id: Type.String(),
  /** Where it was taken from: a running server (through its control socket) or a stopped data directory. */
  source: Type.Union([Type.Literal('running server'), Type.Literal('stopped data directory')]),
  /** When the database copy's read transaction began, and when the manifest was written. */
  startedAt: Type.String(),
  finishedAt: Type.String(),
  durationMs: Type.Integer({ minimum: 0 }),
  /** LMDB's transaction id of the copy: every commit up to it is in, none after. */
  txnId: Type.Integer({ minimum: 0 }),
  database: Type.Object({ path: Type.Literal(DATABASE_FILE), size: Type.Integer({ minimum: 0 }), sha256: Sha256 }),
  /** Blob files the database names, in the root's content-addressed store (`blobs/ab/cdef…`). */
  blobs: Type.Array(Type.Object({ sha256: Sha256, size: Type.Integer({ minimum: 0 }) })),
  /** Entries of each table of the copy. */
  tables: Type.Record(Type.String(), Type.Integer({ minimum: 0 })),
  totals: Type.Object({
    files: Type.Integer({ minimum: 0 }),
    bytes: Type.Integer({ minimum: 0 }),
    /** Bytes this backup wrote (the database, and blobs the root did not hold yet). */
    copiedBytes: Type.Integer({ minimum: 0 }),
    newBlobs: Type.Integer({ minimum: 0 }),
  }),
  /**
   * HMAC-SHA256 (hex) of every other field, under a key derived from the installation's secret
   * (`signManifest`): the database's and every blob's SHA-256 are in the manifest, so the signature
   * vouches for every byte. Absent from format 1 (Plinth before signed backups).
   */
  signature: Type.Optional(Type.String({ pattern: '^[0-9a-f]{64}$' })),
})
export type BackupManifest = Static<typeof BackupManifest>

/** The fields of a manifest that do not depend on what was copied. */
export function manifestHeader(): Pick<BackupManifest, 'format' | 'plinth' | 'schemas'> {
  return { format: BACKUP_FORMAT, plinth: PLINTH_VERSION, schemas: schemaVersions() }
}

/**
 * Reads a backup's manifest, refusing what cannot be restored: no manifest (incomplete, or not a
 * backup), one that does not parse, a newer format, or record tables of newer schema versions than
 * this build reads.
 */
export function readManifest(dir: string): BackupManifest {
  const path = join(dir, MANIFEST_FILE)
  if (!existsSync(path)) {
    throw new BackupError(
      existsSync(join(dir, DATABASE_FILE))
        ? `${dir} is an incomplete backup: it has no ${MANIFEST_FILE} (the backup was stopped before it finished), so it is never restored; take a new one`
        : `${dir} is not a Plinth backup: it has no ${MANIFEST_FILE}. Give a backup directory (ROOT/<id>) or a backup root`,
    )
  }
  let value: unknown
  try {
    value = JSON.parse(readFileSync(path, 'utf8'))
  } catch {
    throw new BackupError(`${path} is not valid JSON: the manifest was changed or damaged`)
  }
  const format = (value as { format?: unknown } | null)?.format
  if (typeof format === 'number' && format > BACKUP_FORMAT) {
    throw new BackupError(
      `${dir} is a backup of format ${format} (written by Plinth ${String((value as { plinth?: unknown }).plinth)}); this Plinth ${PLINTH_VERSION} reads format ${BACKUP_FORMAT} and older. Restore it with that Plinth or a newer one`,
    )
  }
  const validate = validator(BackupManifest)
  if (!validate(value)) throw new BackupError(`${path} is not a manifest this Plinth reads: ${JSON.stringify(validate.errors?.[0])}`)
  const manifest = value as BackupManifest
  const known = schemaVersions()
  for (const [table, version] of Object.entries(manifest.schemas)) {
    if (known[table] !== undefined && version > known[table])
      throw new BackupError(
        `${dir} holds table ${table} at schema version ${version} (Plinth ${manifest.plinth}); this Plinth ${PLINTH_VERSION} reads version ${known[table]}. Restore it with that Plinth or a newer one`,
      )
  }
  return manifest
}

/** The manifest's fields as the signature covers them: every field but the signature, keys sorted at every depth. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`
  if (value !== null && typeof value === 'object')
    return `{${Object.keys(value)
      .filter((key) => (value as Record<string, unknown>)[key] !== undefined)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonical((value as Record<string, unknown>)[key])}`)
      .join(',')}}`
  return JSON.stringify(value)
}

function signatureOf(manifest: BackupManifest, secret: Buffer): string {
  const { signature: _, ...signed } = manifest
  return createHmac('sha256', deriveKey(secret, 'backup manifests')).update(canonical(signed)).digest('hex')
}

/** The manifest with its signature, under the installation's secret. */
export function signManifest(manifest: BackupManifest, secret: Buffer): BackupManifest {
  return { ...manifest, signature: signatureOf(manifest, secret) }
}

/**
 * Whether the installation's secret signed this manifest: `ok`, `unsigned` (a backup taken before
 * backups were signed: nothing proves it unchanged) or `forged` (changed since, or another
 * installation's backup).
 */
export function manifestSignature(manifest: BackupManifest, secret: Buffer): 'ok' | 'unsigned' | 'forged' {
  // A manifest of the signed format without its signature had it taken off.
  if (manifest.signature === undefined) return manifest.format >= 2 ? 'forged' : 'unsigned'
  const expected = Buffer.from(signatureOf(manifest, secret), 'hex')
  const given = Buffer.from(manifest.signature, 'hex')
  return expected.length === given.length && timingSafeEqual(expected, given) ? 'ok' : 'forged'
}

/** Writes the manifest last, durably: a temporary file fsynced, renamed over, the directory fsynced. */
export async function writeManifest(dir: string, manifest: BackupManifest): Promise<void> {
  await writeFileDurably(join(dir, MANIFEST_FILE), JSON.stringify(manifest, null, 2) + '\n')
}
