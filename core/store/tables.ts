// The kinds of table a store holds (typed records validated when read, index entries, counters) and the keys they take.
import type { Database } from 'lmdb'
import type { TSchema } from '@sinclair/typebox'
import { validator } from '../validation.js'

/** A table key: a string, or an array of strings and numbers (LMDB's ordered keys). */
export type Key = string | (string | number)[]

/**
 * LMDB refuses keys over 1,978 bytes with an exception. Lookup keys can come from a request (an id
 * in a path); one too long to fit names nothing, so it reads as absent (a 404), never a crash.
 */
const LOOKUP_KEY_MAX_BYTES = 1_000

function keyFits(key: Key): boolean {
  if (typeof key === 'string') return key.length <= LOOKUP_KEY_MAX_BYTES / 3 || Buffer.byteLength(key) <= LOOKUP_KEY_MAX_BYTES
  let bytes = 0
  for (const part of key) bytes += typeof part === 'string' ? Buffer.byteLength(part) : 9
  return bytes <= LOOKUP_KEY_MAX_BYTES
}

/** A record read from disk that does not match its schema: never guessed at, always refused. */
export class CorruptRecordError extends Error {
  constructor(table: string, key: unknown, reason: string) {
    super(`record ${table}/${JSON.stringify(key)} cannot be read: ${reason}`)
    this.name = 'CorruptRecordError'
  }
}

/** A table of typed records, validated when read (records from disk are a boundary). */
export class RecordTable<T extends { v: number }> {
  constructor(
    readonly name: string,
    readonly db: Database<unknown, Key>,
    private readonly schema: TSchema,
  ) {}

  get(key: Key): T | undefined {
    if (!keyFits(key)) return undefined
    const value = this.db.get(key)
    return value === undefined ? undefined : this.check(key, value)
  }

  put(key: Key, record: T): void {
    void this.db.put(key, record)
  }

  remove(key: Key): void {
    void this.db.remove(key)
  }

  /** Records in key order between `start` (inclusive) and `end` (exclusive). */
  *range(options: { start: Key; end: Key; reverse?: boolean }): Generator<{ key: Key; value: T }> {
    for (const { key, value } of this.db.getRange(options)) yield { key, value: this.check(key, value) }
  }

  private check(key: Key, value: unknown): T {
    const version = (value as { v?: unknown } | null)?.v
    if (version !== (this.schema as unknown as { properties: { v: { const: number } } }).properties.v.const) {
      throw new CorruptRecordError(this.name, key, `schema version ${String(version)} is not one this build reads`)
    }
    const validate = validator(this.schema)
    if (!validate(value)) throw new CorruptRecordError(this.name, key, JSON.stringify(validate.errors?.[0]))
    return value as T
  }
}

/** A table of plain index entries (key to id). */
export class IndexTable {
  constructor(readonly db: Database<string, Key>) {}

  get(key: Key): string | undefined {
    return keyFits(key) ? this.db.get(key) : undefined
  }

  put(key: Key, id: string): void {
    void this.db.put(key, id)
  }

  remove(key: Key): void {
    void this.db.remove(key)
  }

  *range(options: { start: Key; end: Key; reverse?: boolean }): Generator<{ key: Key; value: string }> {
    for (const { key, value } of this.db.getRange(options)) yield { key: key as Key, value }
  }
}

/** A table of counters (rollups): key to a number, added to inside a commit. */
export class CounterTable {
  constructor(readonly db: Database<number, Key>) {}

  get(key: Key): number {
    return keyFits(key) ? (this.db.get(key) ?? 0) : 0
  }

  /** Adds `n` to the counter; only inside `commit`. A key too long for LMDB is skipped, never thrown. */
  add(key: Key, n: number): void {
    if (!keyFits(key)) return
    void this.db.put(key, (this.db.get(key) ?? 0) + n)
  }

  *range(options: { start: Key; end: Key }): Generator<{ key: Key; value: number }> {
    for (const { key, value } of this.db.getRange(options)) yield { key: key as Key, value }
  }
}
