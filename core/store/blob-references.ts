// Blob reference counts: the version, build and submission writes that keep them, and the blob that leaves with its last one.
import type { Database } from 'lmdb'
import type { SubmissionRecord } from '../schemas/forms.js'
import type { BuildRecord, VersionRecord } from '../schemas/records.js'
import type { RecordTable } from './tables.js'

/**
 * Every version and build names its blobs by hash; a blob no manifest names any more (its last
 * website purged) leaves the store with its variants, in the same transaction. The store's
 * `putVersion`, `putBuild`, `putSubmission` and their removals write through here.
 */
export class BlobReferences {
  /** hash to the number of manifest entries (of versions and builds) that name the blob. */
  readonly #blobRefs: Database<number, string>
  readonly #blobs: Database<Buffer, string>
  readonly #variants: Database<Buffer, [string, string]>
  readonly #versions: RecordTable<VersionRecord>
  readonly #builds: RecordTable<BuildRecord>
  readonly #submissions: RecordTable<SubmissionRecord>

  constructor(
    blobRefs: Database<number, string>,
    blobs: Database<Buffer, string>,
    variants: Database<Buffer, [string, string]>,
    tables: { versions: RecordTable<VersionRecord>; builds: RecordTable<BuildRecord>; submissions: RecordTable<SubmissionRecord> },
  ) {
    this.#blobRefs = blobRefs
    this.#blobs = blobs
    this.#variants = variants
    this.#versions = tables.versions
    this.#builds = tables.builds
    this.#submissions = tables.submissions
  }

  /** Stores a version (append-only); its blobs gain a reference. Only inside `commit`. */
  putVersion(key: [string, number], record: VersionRecord): void {
    const previous = this.#versions.get(key)
    this.#reference(record.files, 1)
    if (previous !== undefined) this.#reference(previous.files, -1)
    this.#versions.put(key, record)
  }

  /** Removes a version (a purge); blobs nothing else names go. Only inside `commit`. */
  removeVersion(key: [string, number]): void {
    const previous = this.#versions.get(key)
    if (previous === undefined) return
    this.#versions.remove(key)
    this.#reference(previous.files, -1)
  }

  /** Stores a build (a rebuild replaces the version's previous one). Only inside `commit`. */
  putBuild(key: [string, number], record: BuildRecord): void {
    const previous = this.#builds.get(key)
    this.#reference(record.files, 1)
    if (previous !== undefined) this.#reference(previous.files, -1)
    this.#builds.put(key, record)
  }

  removeBuild(key: [string, number]): void {
    const previous = this.#builds.get(key)
    if (previous === undefined) return
    this.#builds.remove(key)
    this.#reference(previous.files, -1)
  }

  /** Stores a form submission; its files' blobs gain a reference. Only inside `commit`. */
  putSubmission(record: SubmissionRecord): void {
    const previous = this.#submissions.get(record.id)
    this.#reference(Object.fromEntries(record.files.map((f, i) => [String(i), f])), 1)
    if (previous !== undefined) this.#reference(Object.fromEntries(previous.files.map((f, i) => [String(i), f])), -1)
    this.#submissions.put(record.id, record)
  }

  /** Removes a submission; blobs nothing else names go. Only inside `commit`. */
  removeSubmission(id: string): void {
    const previous = this.#submissions.get(id)
    if (previous === undefined) return
    this.#submissions.remove(id)
    this.#reference(Object.fromEntries(previous.files.map((f, i) => [String(i), f])), -1)
  }

  /** How many manifest entries name the blob (0: none, and it is gone or about to be). */
  count(hash: string): number {
    return this.#blobRefs.get(hash) ?? 0
  }

  /** Counts every manifest's references anew (a data directory from before counting). Only inside `commit`. */
  recount(): void {
    for (const { key } of this.#blobRefs.getRange({})) void this.#blobRefs.remove(key)
    const counts = new Map<string, number>()
    const add = (files: Readonly<Record<string, { hash: string }>>) => {
      for (const { hash } of Object.values(files)) counts.set(hash, (counts.get(hash) ?? 0) + 1)
    }
    for (const { value } of this.#versions.range({ start: [''], end: ['\uffff'] })) add(value.files)
    for (const { value } of this.#builds.range({ start: [''], end: ['\uffff'] })) add(value.files)
    for (const { value } of this.#submissions.range({ start: '', end: '\uffff' }))
      add(Object.fromEntries(value.files.map((f, i) => [String(i), f])))
    for (const [hash, count] of counts) void this.#blobRefs.put(hash, count)
  }

  #reference(files: Readonly<Record<string, { hash: string }>>, delta: 1 | -1): void {
    for (const { hash } of Object.values(files)) {
      const count = (this.#blobRefs.get(hash) ?? 0) + delta
      if (count > 0) {
        void this.#blobRefs.put(hash, count)
        continue
      }
      void this.#blobRefs.remove(hash)
      void this.#blobs.remove(hash)
      for (const encoding of ['gzip', 'br']) void this.#variants.remove([hash, encoding])
    }
  }
}
