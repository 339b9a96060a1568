/** The shared files' API shapes, used by the storage operations and the anonymous endpoints alike: schemas and views of files and uploads. */

import { Type } from '@sinclair/typebox'
import { iso } from '../../core/clock.js'
import { STORAGE_FILE_MAX_BYTES, STORAGE_UPLOADS_PER_BEGIN } from '../../core/limits.js'
import { Timestamp, named } from '../../core/schemas/common.js'
import type { StorageObjectRecord, StorageUploadRecord } from '../../core/schemas/storage.js'
import type { OperationContext } from '../operation.js'

export const StorageObject = named(
  'StorageObject',
  Type.Object({
    id: Type.String(),
    folder: Type.String({ description: "'' for the top level" }),
    name: Type.String(),
    size: Type.Integer(),
    contentType: Type.String(),
    url: Type.String({ description: 'The shareable link (opens in the browser: media play, with Range)' }),
    downloadUrl: Type.String({ description: 'The same file as a download (Content-Disposition: attachment)' }),
    folderUrl: Type.String({ description: "The folder's page: its files, sizes and a download-all zip" }),
    expiresAt: Type.Union([Timestamp, Type.Null()], { description: 'When the link stops working and the file is deleted; null: kept' }),
    createdAt: Timestamp,
  }),
)

export const Upload = named(
  'StorageUpload',
  Type.Object({
    uploadId: Type.String(),
    websiteId: Type.String(),
    folder: Type.String(),
    name: Type.String(),
    size: Type.Integer(),
    received: Type.Integer({ description: 'Bytes stored so far' }),
    uploadUrl: Type.String({
      description: 'PUT the bytes here with Content-Range: bytes <start>-<end>/<size> (one request, or chunks in order)',
    }),
    resumeUrl: Type.String({ description: 'POST here after an interrupted PUT: answers the offset to send from' }),
    createdAt: Timestamp,
    abandonAt: Timestamp,
  }),
)

const encodePath = (folder: string, name?: string) =>
  [...(folder === '' ? [] : folder.split('/')), ...(name === undefined ? [] : [name])].map(encodeURIComponent).join('/')

export function objectView(ctx: { urls: OperationContext['urls'] }, subdomain: string, object: StorageObjectRecord) {
  const origin = ctx.urls.published(subdomain)
  const url = `${origin}/${encodePath(object.folder, object.name)}`
  return {
    id: object.id,
    folder: object.folder,
    name: object.name,
    size: object.size,
    contentType: object.contentType,
    url,
    downloadUrl: `${url}?download`,
    folderUrl: `${origin}/${object.folder === '' ? '' : `${encodePath(object.folder)}/`}`,
    expiresAt: object.expiresAt === null ? null : iso(object.expiresAt),
    createdAt: iso(object.createdAt),
  }
}

/** An upload as the API shows it; `base`: where its bytes go (the anonymous endpoints have their own). */
export function uploadView(
  ctx: { urls: OperationContext['urls'] },
  upload: StorageUploadRecord,
  base = ctx.urls.api(`/v1/websites/${upload.websiteId}/objects/${upload.id}`),
) {
  return {
    uploadId: upload.id,
    websiteId: upload.websiteId,
    folder: upload.folder,
    name: upload.name,
    size: upload.size,
    received: upload.received,
    uploadUrl: `${base}/upload`,
    resumeUrl: `${base}/resume`,
    createdAt: iso(upload.createdAt),
    abandonAt: iso(upload.abandonAt),
  }
}

/** What a PUT of upload bytes declares and answers (signed-in and anonymous alike). */
export const UPLOAD_BODY = { type: 'application/octet-stream', description: 'The bytes of the range Content-Range names' }
export const ChunkResult = Type.Object({ uploadId: Type.String(), offset: Type.Integer(), size: Type.Integer(), complete: Type.Boolean() })
export const ResumeResult = Type.Object({ uploadId: Type.String(), offset: Type.Integer(), size: Type.Integer(), uploadUrl: Type.String() })

export const Begin = Type.Object(
  {
    files: Type.Array(
      Type.Object(
        {
          name: Type.String({ minLength: 1, maxLength: 255 }),
          size: Type.Integer({ minimum: 0, description: `Bytes (at most ${STORAGE_FILE_MAX_BYTES}, 100 MiB)` }),
          contentType: Type.Optional(Type.String({ minLength: 1, maxLength: 200, pattern: '^[\\w.+-]+/[\\w.+-]+$' })),
          folder: Type.Optional(Type.String({ maxLength: 500, description: "Under the call's folder" })),
        },
        { additionalProperties: false },
      ),
      { minItems: 1, maxItems: STORAGE_UPLOADS_PER_BEGIN },
    ),
    folder: Type.Optional(Type.String({ maxLength: 500, description: 'Folder of every file (`photos/2026`); default the top level' })),
    expiresInDays: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 3650,
        description: "Link lifetime; default the plan's (7 days on free with billing on, kept otherwise)",
      }),
    ),
  },
  { additionalProperties: false },
)
