import { Type, type Static } from '@sinclair/typebox'
import { Ms, NullableMs } from './records.js'

/**
 * A shared file of a storage website: its place (folder and name, which make its link), its bytes
 * (by hash, in the blob directory) and its expiry.
 */
export const StorageObjectRecord = Type.Object({
  v: Type.Literal(1),
  id: Type.String(),
  websiteId: Type.String(),
  /** '' for the top level, else segments joined by `/` (no leading or trailing slash). */
  folder: Type.String(),
  name: Type.String(),
  size: Type.Integer({ minimum: 0 }),
  contentType: Type.String(),
  /** sha256 hex of the bytes: the file under the blob directory. */
  hash: Type.String(),
  createdAt: Ms,
  /** When the link stops working and the file is deleted; null: kept. */
  expiresAt: NullableMs,
  /** A zip sent with `archive: true`: its folder is served from inside it (read-only). */
  archive: Type.Optional(Type.Boolean()),
  /** An archive's files (read at finalize). */
  archiveFiles: Type.Optional(Type.Integer({ minimum: 0 })),
  /** The name shown (rename_object); the link keeps `name`. */
  label: Type.Optional(Type.String()),
})
export type StorageObjectRecord = Static<typeof StorageObjectRecord>

/** An upload in progress: where its bytes are written and how many arrived. */
export const StorageUploadRecord = Type.Object({
  v: Type.Literal(1),
  id: Type.String(),
  orgId: Type.String(),
  websiteId: Type.String(),
  folder: Type.String(),
  name: Type.String(),
  size: Type.Integer({ minimum: 0 }),
  contentType: Type.String(),
  /** Bytes stored so far (the file's length after the last chunk was synced). */
  received: Type.Integer({ minimum: 0 }),
  /** Requested expiry of the finished file (ms from finalize), null: the plan's default. */
  expiresInMs: NullableMs,
  createdAt: Ms,
  /** An upload not finalized by then is dropped with its bytes (moved on by every chunk received). */
  abandonAt: Ms,
  /** A zip to serve as its folder (checked against the archive bounds at finalize). */
  archive: Type.Optional(Type.Boolean()),
  /** A file over STORAGE_PART_BYTES is sent in parts of this size; `parts` lists those received. */
  partSize: Type.Optional(Type.Integer({ minimum: 1 })),
  parts: Type.Optional(Type.Array(Type.Integer({ minimum: 1 }))),
})
export type StorageUploadRecord = Static<typeof StorageUploadRecord>
