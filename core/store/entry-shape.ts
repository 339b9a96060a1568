// Whether a log entry's writes are what this build's tables hold: checked before a node applies one.
import type { TSchema } from '@sinclair/typebox'
import { validator } from '../validation.js'
import type { Entry } from './write-set.js'

/** What a table's values are: raw bytes, counts, records of a schema, or anything its decoder reads. */
export type TableShape =
  | { kind: 'binary' }
  | { kind: 'counter'; decoder: { decode(bytes: Uint8Array): unknown } }
  | { kind: 'record'; decoder: { decode(bytes: Uint8Array): unknown }; schema: TSchema }
  | { kind: 'any'; decoder: { decode(bytes: Uint8Array): unknown } }

/** LMDB's longest key, in bytes. */
const KEY_MAX_BYTES = 1978

function keyProblem(key: unknown): string | null {
  const part = (value: unknown) =>
    (typeof value === 'string' && Buffer.byteLength(value) <= KEY_MAX_BYTES) || (typeof value === 'number' && Number.isFinite(value))
  if (part(key)) return null
  if (Array.isArray(key) && key.length > 0 && key.length <= 16 && key.every(part)) {
    const bytes = key.reduce<number>((sum, value) => sum + (typeof value === 'string' ? Buffer.byteLength(value) : 9), 0)
    if (bytes <= KEY_MAX_BYTES) return null
  }
  return `a key that is not a string, a number or a list of them (${JSON.stringify(key)?.slice(0, 80)})`
}

/**
 * The first thing wrong with an entry, or null. `shapeOf` says what a table holds (undefined: this
 * build has no such table). A record must carry its table's schema version and pass its schema.
 */
export function entryProblem(entry: Entry, shapeOf: (table: string) => TableShape | undefined): string | null {
  if (!Array.isArray(entry.blobs) || !entry.blobs.every((hash) => typeof hash === 'string' && /^[0-9a-f]{64}$/.test(hash)))
    return 'its list of blob files holds something other than SHA-256 names'
  if (!Array.isArray(entry.writes)) return 'its writes are not a list'
  for (const write of entry.writes as unknown[]) {
    if (!Array.isArray(write) || write.length !== 3) return 'a write that is not [table, key, value]'
    const [table, key, value] = write as [unknown, unknown, unknown]
    if (typeof table !== 'string') return 'a write without a table name'
    const shape = shapeOf(table)
    if (shape === undefined) return `a write to table "${table.slice(0, 64)}", which this build does not have`
    const bad = keyProblem(key)
    if (bad !== null) return `table ${table}: ${bad}`
    if (value === null) continue
    if (!(value instanceof Uint8Array)) return `table ${table}: a value that is not bytes`
    if (shape.kind === 'binary') continue
    let decoded: unknown
    try {
      decoded = shape.decoder.decode(value)
    } catch (error) {
      return `table ${table}, key ${JSON.stringify(key)}: its bytes do not decode (${(error as Error).message})`
    }
    if (shape.kind === 'counter' && (typeof decoded !== 'number' || !Number.isFinite(decoded)))
      return `table ${table}, key ${JSON.stringify(key)}: a count that is not a number`
    if (shape.kind === 'record') {
      const version = (shape.schema as unknown as { properties: { v: { const: number } } }).properties.v.const
      if ((decoded as { v?: unknown } | null)?.v !== version)
        return `table ${table}, key ${JSON.stringify(key)}: a record that is not schema version ${version}`
      const validate = validator(shape.schema)
      if (!validate(decoded)) return `table ${table}, key ${JSON.stringify(key)}: ${JSON.stringify(validate.errors?.[0])}`
    }
  }
  return null
}
