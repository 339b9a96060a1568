import type { Database } from 'lmdb'
import type { BlobFiles } from './blob-files.js'
import type { Store } from './store.js'
import type { CounterTable, IndexTable, Key, RecordTable } from './tables.js'

/**
 * What code outside `actors/` may do with the store: read. Every table is seen through one of the
 * narrow interfaces below (get and range, no put, remove, add or commit), so a handler that tries to
 * write does not compile; `test/architecture.test.ts` also fails on any write call outside
 * `actors/`. Writes go through the actor that owns the table, inside its mailbox.
 */
export interface RecordReader<T> {
  get(key: Key): T | undefined
  range(options: { start: Key; end: Key; reverse?: boolean }): Generator<{ key: Key; value: T }>
}

export interface IndexReader {
  get(key: Key): string | undefined
  range(options: { start: Key; end: Key; reverse?: boolean }): Generator<{ key: Key; value: string }>
}

export interface CounterReader {
  get(key: Key): number
  range(options: { start: Key; end: Key }): Generator<{ key: Key; value: number }>
}

/** Where blob files are, and no way to add or remove one. */
export type BlobFilesReader = Pick<BlobFiles, 'path' | 'uploadPath' | 'hashOf' | 'holds'>

type ReadView<V> =
  V extends RecordTable<infer T>
    ? RecordReader<T>
    : V extends IndexTable
      ? IndexReader
      : V extends CounterTable
        ? CounterReader
        : V extends BlobFiles
          ? BlobFilesReader
          : V extends Database<infer T, infer K>
            ? Pick<Database<T, K>, 'get' | 'getRange' | 'doesExist'>
            : never

type TableName = {
  [
    K in keyof Store // eslint-disable-next-line @typescript-eslint/no-explicit-any -- any table, whatever its record
  ]: Store[K] extends RecordTable<any> | IndexTable | CounterTable | BlobFiles | Database<any, any> ? K : never
}[keyof Store]

/** The store as code outside `actors/` sees it: every table read-only, plus the read methods. */
export type StoreReader = { readonly [K in TableName]: ReadView<Store[K]> } & Pick<
  Store,
  'versionsOf' | 'writable' | 'hasBlob' | 'getBlob' | 'hasVariant' | 'getVariant' | 'blobReferences' | 'changes'
>

/**
 * A concern's handle on the store (`actors/<concern>/tables.ts`): every table readable, writable only
 * the tables in `W` (the concern's own, and those an owner's function it calls inside its commit
 * writes, such as the audit log), plus a transaction. The registry hands each concern the store
 * through its handle, so a write to another concern's table does not compile;
 * `test/architecture.test.ts` also checks that each table is written from one folder only.
 */
export type StoreFor<W extends keyof Store> = Omit<StoreReader, W> & Pick<Store, W | 'commit'>
