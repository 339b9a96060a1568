/** The shared files' API shapes, used by the storage operations and the anonymous endpoints alike: schemas and views of files and uploads. */

import { Type, type Static } from '@sinclair/typebox'
import type { FinalizeOutcome } from '../../actors/files/storage.js'
import { missingParts, partRange, type BeginFile } from '../../actors/files/storage-uploads.js'
import { iso } from '../../core/clock.js'
import {
  SITE_PASSWORD_MAX_CHARS,
  SITE_PASSWORD_MIN_CHARS,
  STORAGE_FILE_MAX_BYTES,
  STORAGE_NEW_FOLDER_MAX_CHARS,
  STORAGE_UPLOADS_PER_BEGIN,
} from '../../core/limits.js'
import { Timestamp, named } from '../../core/schemas/common.js'
import type { StorageObjectRecord, StorageUploadRecord } from '../../core/schemas/storage.js'
import type { OperationContext } from '../operation.js'

export const StorageObject = named(
  'StorageObject',
  Type.Object({
    id: Type.String(),
    folder: Type.String({ description: "'' for the top level" }),
    folderLabel: Type.Union([Type.String(), Type.Null()], { description: 'The name the folder is shown under (label_folder), or null' }),
    name: Type.String({ description: 'The name in its link' }),
    label: Type.String({ description: 'The name it is shown under (rename_object); its name unless renamed' }),
    size: Type.Integer(),
    contentType: Type.String(),
    url: Type.String({ description: 'The shareable link (opens in the browser: media play, with Range); an archive: its folder page' }),
    downloadUrl: Type.String({ description: 'The same file as a download (Content-Disposition: attachment)' }),
    folderUrl: Type.String({ description: "The folder's page: its files, sizes and a download-all zip" }),
    expiresAt: Type.Union([Timestamp, Type.Null()], { description: 'When the link stops working and the file is deleted; null: kept' }),
    createdAt: Timestamp,
    archive: Type.Optional(
      Type.Object(
        { files: Type.Integer({ description: 'Files inside (list_archive_entries lists them)' }) },
        { description: 'A zip served as its folder (read-only): one item, whatever it holds' },
      ),
    ),
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

export function objectView(
  ctx: { urls: OperationContext['urls'] },
  subdomain: string,
  object: StorageObjectRecord,
  folderLabel: string | null = null,
) {
  const origin = ctx.urls.published(subdomain)
  // An archive is its folder: the folder page is its link, and the zip itself is Download all.
  const url = object.archive === true ? `${origin}/${encodePath(object.folder)}/` : `${origin}/${encodePath(object.folder, object.name)}`
  return {
    id: object.id,
    folder: object.folder,
    folderLabel,
    name: object.name,
    label: object.label ?? object.name,
    size: object.size,
    contentType: object.contentType,
    url,
    downloadUrl: object.archive === true ? `${url}?zip` : `${url}?download`,
    ...(object.archive === true ? { archive: { files: object.archiveFiles ?? 0 } } : {}),
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
const UploadTarget = Type.Object(
  {
    url: Type.String({ description: "PUT the file's bytes here" }),
    headers: Type.Record(Type.String(), Type.String(), {
      description:
        'Send exactly these headers with the PUT (the anonymous endpoints also want Authorization: Bearer <token>). Without Content-Range the body is the whole file; with one, a chunk from the offset stored',
    }),
  },
  { additionalProperties: false },
)
const Command = Type.String({
  description:
    'A ready shell command that uploads the whole file: run it after FILE=./path; (a separate statement, so the shell sees FILE). Holds an upload token for this file only, for an hour',
})

const PartTarget = Type.Object({
  partNumber: Type.Integer({ minimum: 1 }),
  size: Type.Integer({ description: 'Bytes of this part: the file from (partNumber - 1) * partSize' }),
  url: Type.String({ description: "PUT this part's bytes here" }),
  headers: Type.Record(Type.String(), Type.String(), {
    description: 'Send exactly these (and the anonymous token, on the anonymous endpoints)',
  }),
  command: Type.Optional(
    Type.String({ description: 'A ready shell command that sends this part, run after FILE=./path; (signed-in uploads)' }),
  ),
})
const Parts = Type.Array(PartTarget, {
  description:
    'A file over 100 MiB goes in parts, each its own PUT, in any order (two at a time is fine); resume answers only the missing ones',
})

export const ResumeResult = Type.Object({
  uploadId: Type.String(),
  offset: Type.Integer({ description: 'Bytes stored so far' }),
  size: Type.Integer(),
  complete: Type.Boolean({ description: 'All bytes arrived: finalize it' }),
  uploadUrl: Type.String(),
  upload: Type.Optional(UploadTarget),
  command: Type.Optional(Command),
  parts: Type.Optional(Parts),
  partSize: Type.Optional(Type.Integer()),
})

const BeginFile = Type.Object(
  {
    name: Type.String({
      minLength: 1,
      maxLength: 1000,
      description: "The file's path inside the folder: subfolders (`src/main.cpp`) and hidden files (`.gitignore`) are kept",
    }),
    byteSize: Type.Integer({ minimum: 0, description: `Exact bytes (at most ${STORAGE_FILE_MAX_BYTES}, 100 MiB)` }),
    mimeType: Type.Optional(
      Type.String({ minLength: 1, maxLength: 200, pattern: '^[\\w.+-]+/[\\w.+-]+', description: 'Default: from the name' }),
    ),
    archive: Type.Optional(
      Type.Boolean({
        description:
          "One .zip alone: it becomes a folder served from inside the zip (its folder page, subfolders, every file's link; Download all is the zip itself), read-only",
      }),
    ),
  },
  { additionalProperties: false },
)

const folderField = Type.Optional(
  Type.String({
    maxLength: STORAGE_NEW_FOLDER_MAX_CHARS,
    description:
      'The folder an earlier call returned, to add files to it; otherwise a name for a new folder (it gets an unguessable suffix). Default: a new folder',
  }),
)
const filesField = Type.Array(BeginFile, { minItems: 1, maxItems: STORAGE_UPLOADS_PER_BEGIN })

/** The body of a begin, signed in: the anonymous one has no `expiresInDays`. */
export const Begin = Type.Object(
  {
    folder: folderField,
    files: filesField,
    expiresInDays: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 3650,
        description: "Link lifetime; default the plan's (7 days on free with billing on, kept otherwise)",
      }),
    ),
    password: Type.Optional(
      Type.String({
        minLength: SITE_PASSWORD_MIN_CHARS,
        maxLength: SITE_PASSWORD_MAX_CHARS,
        description: 'Protects the folder (as set_folder_password); only when the person asks. Paid plans with billing on',
      }),
    ),
  },
  { additionalProperties: false },
)
export const AnonymousBegin = Type.Object({ folder: folderField, files: filesField }, { additionalProperties: false })

/** Announced files as the actor takes them (size and type under their stored names). */
export function beginFiles(files: Static<typeof BeginFile>[]): BeginFile[] {
  return files.map((f) => ({
    name: f.name,
    size: f.byteSize,
    // The agent helper sends application/octet-stream for any type it does not know: the name says more.
    ...(f.mimeType === undefined || /^application\/octet-stream\b/i.test(f.mimeType)
      ? {}
      : { contentType: f.mimeType.split(';')[0]!.trim() }),
    ...(f.archive === true ? { archive: true } : {}),
  }))
}

const BegunFile = Type.Object({
  id: Type.String({ description: 'The upload id (`upl_…`): finalize takes these' }),
  name: Type.String({ description: 'The path inside the folder, as announced' }),
  size: Type.Integer(),
  upload: Type.Optional(UploadTarget),
  parts: Type.Optional(Parts),
  partSize: Type.Optional(Type.Integer()),
  resumeUrl: Type.String({ description: 'POST here after an interrupted PUT: answers the offset stored' }),
  command: Type.Optional(Command),
})

export const BeginResult = Type.Object({
  folder: Type.String({ description: 'The folder the files went to: pass it to the next begin to add more' }),
  folderUrl: Type.String({ description: "The folder's page: its files and subfolders, and Download all" }),
  zipUrl: Type.String({ description: 'The whole folder as one zip' }),
  expiresAt: Type.Union([Timestamp, Type.Null()], { description: 'When the links stop working; null: kept' }),
  files: Type.Array(BegunFile),
  next: Type.String(),
})

export const Finalize = Type.Object(
  {
    ids: Type.Array(Type.String({ minLength: 1, maxLength: 40 }), {
      minItems: 1,
      maxItems: STORAGE_UPLOADS_PER_BEGIN,
      description: 'Upload ids from begin',
    }),
  },
  { additionalProperties: false },
)

export const FinalizeResult = Type.Object({
  files: Type.Array(
    Type.Object({
      id: Type.String({ description: 'The upload id' }),
      ok: Type.Boolean(),
      objectId: Type.Optional(Type.String({ description: 'The shared file (`obj_…`) it became' })),
      path: Type.String({ description: '/<folder>/<path inside the folder>' }),
      name: Type.String(),
      url: Type.Optional(Type.String({ description: "The file's link" })),
      size: Type.Integer(),
      error: Type.Optional(Type.String({ description: 'Why it did not go live (the upload stays; send its bytes and finalize again)' })),
    }),
  ),
  next: Type.String(),
})

/** A folder's links on the storage site's host. */
export function folderLinks(ctx: { urls: OperationContext['urls'] }, subdomain: string, folder: string) {
  const folderUrl = `${ctx.urls.published(subdomain)}/${encodePath(folder)}/`
  return { folderUrl, zipUrl: `${folderUrl}?zip` }
}

/** An upload's path inside the folder a begin made or joined (`src/main.cpp`). */
export function pathInFolder(upload: StorageUploadRecord, folder: string): string {
  return upload.folder === folder ? upload.name : `${upload.folder.slice(folder.length + 1)}/${upload.name}`
}

/** One upload as begin answers it; `base`: the API URL of the upload (`…/objects/{uploadId}`). */
export function begunFile(upload: StorageUploadRecord, path: string, base: string, token: string | null) {
  const url = `${base}/upload`
  const headers: Record<string, string> = {
    'Content-Type': 'application/octet-stream',
    ...(token === null ? {} : { Authorization: `Bearer ${token}` }),
  }
  const quoted = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`
  const flags = Object.entries(headers)
    .map(([k, v]) => `-H ${quoted(`${k}: ${v}`)}`)
    .join(' ')
  if (upload.partSize !== undefined) {
    // A file sent in parts: each part's bytes cut from the file and sent with their exact length.
    const parts = missingParts(upload).map((partNumber) => {
      const { start, length } = partRange(upload, partNumber)
      const partUrl = `${base}/parts/${partNumber}`
      return {
        partNumber,
        size: length,
        url: partUrl,
        headers,
        ...(token === null
          ? {}
          : {
              // --data-binary @- reads the part whole and sends its length (-T - would send it chunked).
              command: `tail -c +${start + 1} "$FILE" | head -c ${length} | curl -sS --fail-with-body -X PUT --data-binary @- ${flags} ${quoted(partUrl)}`,
            }),
      }
    })
    return { id: upload.id, name: path, size: upload.size, parts, partSize: upload.partSize, resumeUrl: `${base}/resume` }
  }
  const command = token === null ? undefined : `curl -sS --fail-with-body -T "$FILE" ${flags} ${quoted(url)}`
  return {
    id: upload.id,
    name: path,
    size: upload.size,
    upload: { url, headers },
    resumeUrl: `${base}/resume`,
    ...(command === undefined ? {} : { command }),
  }
}

/** What resume answers: what landed, and how to send the rest (the file again, or only the missing parts). */
export function resumeView(upload: StorageUploadRecord, offset: number, base: string, again: ReturnType<typeof begunFile>) {
  const complete = upload.partSize === undefined ? offset === upload.size : missingParts(upload).length === 0
  return {
    uploadId: upload.id,
    offset,
    size: upload.size,
    complete,
    uploadUrl: `${base}/upload`,
    ...('parts' in again ? { parts: again.parts, partSize: again.partSize } : { upload: again.upload, command: again.command }),
  }
}

/** One finalize outcome as answered. */
export function finalizedFile(ctx: { urls: OperationContext['urls'] }, subdomain: string, outcome: FinalizeOutcome) {
  const record = outcome.object ?? outcome.upload
  const path = record === undefined ? '' : `/${record.folder === '' ? '' : `${record.folder}/`}${record.name}`
  if (outcome.object !== undefined)
    return {
      id: outcome.id,
      ok: true,
      objectId: outcome.object.id,
      path,
      name: outcome.object.name,
      url: objectView(ctx, subdomain, outcome.object).url,
      size: outcome.object.size,
    }
  return { id: outcome.id, ok: false, path, name: record?.name ?? '', size: record?.size ?? 0, error: outcome.error ?? 'Not finalized' }
}
