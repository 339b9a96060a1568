import { Type, type Static } from '@sinclair/typebox'
import { Ms, NullableMs } from './records.js'

export const ASSET_KINDS = ['image', 'video', 'audio', 'document', 'other'] as const

/** An asset of a website's library: its bytes (by hash, in the blob directory) and what they are. */
export const AssetRecord = Type.Object({
  v: Type.Literal(1),
  id: Type.String(),
  websiteId: Type.String(),
  kind: Type.Union(ASSET_KINDS.map((k) => Type.Literal(k))),
  filename: Type.String(),
  contentType: Type.String(),
  bytes: Type.Integer({ minimum: 0 }),
  width: Type.Union([Type.Integer(), Type.Null()]),
  height: Type.Union([Type.Integer(), Type.Null()]),
  altText: Type.String(),
  /** sha256 hex of the bytes; null while a two-step upload is pending. */
  hash: Type.Union([Type.String(), Type.Null()]),
  status: Type.Union([Type.Literal('pending'), Type.Literal('ready')]),
  createdAt: Ms,
  /** A pending upload's signed URL stops working then (and the pending asset is dropped). */
  uploadExpiresAt: NullableMs,
  /** Archived by delete_asset without `permanent`: its link keeps working and it counts toward storage; lists leave it out. */
  archivedAt: Type.Optional(Ms),
})
export type AssetRecord = Static<typeof AssetRecord>
