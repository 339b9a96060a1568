// Shared files of an anonymous storage site: announce, send, resume, finalize and delete uploads and files.
import { Type } from '@sinclair/typebox'
import { StringEnum } from '../../core/schemas/common.js'
import { iso } from '../../core/clock.js'
import { defineAnonymousOperation } from '../operation.js'
import { SiteParams } from './anonymous-sites.js'
import { receiveChunk } from './storage-chunks.js'
import {
  AnonymousBegin,
  BeginResult,
  begunFile,
  beginFiles,
  ChunkResult,
  Finalize,
  finalizedFile,
  FinalizeResult,
  folderLinks,
  pathInFolder,
  ResumeResult,
  resumeView,
  UPLOAD_BODY,
} from './storage-shapes.js'

const tag = 'Anonymous'

const AnonymousUploadParams = Type.Object(
  {
    id: Type.String({ description: 'The storage site id, or `storage`' }),
    objectId: Type.String({ description: 'An upload id (`upl_…`) or a shared file id (`obj_…`)' }),
  },
  { additionalProperties: false },
)

/** The storage object operations, in the order of the operation table. */
export const anonymousObjectOperations = [
  defineAnonymousOperation({
    method: 'POST',
    path: '/public/v1/anonymous/sites/{id}/objects/uploads',
    operationId: 'anonymous.beginUploads',
    anonymous: 'token',
    public: true,
    rateClass: 'standard',
    tool: null,
    tag,
    summary: 'Announce files to share from the anonymous storage site',
    description:
      "Up to 1,000 files, each by its path inside the folder (subfolders and hidden files kept) and exact byteSize. Without folder (or with a folder this site does not hold) the call makes a new folder whose name ends in an unguessable suffix; with the folder an earlier call returned, the files join it. PUT each file's bytes to upload.url with upload.headers and Authorization: Bearer <token>, then POST …/objects/finalize {ids}. Not a website edit: it spends no edit allowance. Files stay live until the storage site's 24 hours end; the credential's 500 MiB budget counts them with the website (413 anonymous_storage_limit).",
    params: SiteParams,
    body: AnonymousBegin,
    status: 201,
    response: BeginResult,
    async handle(ctx, { params, body }) {
      const credential = ctx.registry.anonymous.usable(ctx.credential!)
      const { site, folder, uploads } = await ctx.registry.anonymous.beginUploads(
        credential.id,
        params.id,
        beginFiles(body.files),
        body.folder,
      )
      return {
        folder,
        ...folderLinks(ctx, site.subdomain, folder),
        expiresAt: credential.storageUntil === null ? null : iso(credential.storageUntil),
        files: uploads.map((u) =>
          begunFile(u, pathInFolder(u, folder), ctx.urls.api(`/public/v1/anonymous/sites/${site.id}/objects/${u.id}`), null),
        ),
        next: `PUT each file's bytes to its upload.url with upload.headers and Authorization: Bearer <token> (the whole file; no Content-Range needed), then POST /public/v1/anonymous/sites/${site.id}/objects/finalize {ids}. Unfinished uploads are dropped after an hour without activity.`,
      }
    },
  }),
  defineAnonymousOperation({
    method: 'PUT',
    path: '/public/v1/anonymous/sites/{id}/objects/{objectId}/upload',
    operationId: 'anonymous.uploadBytes',
    anonymous: 'token',
    credentialBucket: 'uploadBytes',
    public: true,
    rateClass: 'standard',
    tool: null,
    tag,
    summary: 'Send the bytes of an anonymous upload (resumable)',
    description:
      'As the signed-in endpoint: the whole file without Content-Range, or a chunk with Content-Range: bytes <start>-<end>/<size> from the offset stored; streamed to disk. Byte requests draw from their own bucket (2,000, then 1,000 a minute), not the 120-request burst.',
    params: AnonymousUploadParams,
    streamsBody: UPLOAD_BODY,
    response: ChunkResult,
    async handle(ctx, { params, stream }) {
      const credential = ctx.registry.anonymous.usable(ctx.credential!)
      const site = ctx.registry.anonymous.storageSite(credential, params.id)
      return receiveChunk(ctx.registry.files, site.id, params.objectId, stream!)
    },
  }),
  defineAnonymousOperation({
    method: 'POST',
    path: '/public/v1/anonymous/sites/{id}/objects/{objectId}/resume',
    operationId: 'anonymous.resumeUpload',
    anonymous: 'token',
    credentialBucket: 'uploadBytes',
    public: true,
    rateClass: 'standard',
    tool: null,
    tag,
    summary: 'What an interrupted anonymous upload already holds',
    description: 'offset is every byte stored so far: send the rest from there with Content-Range, or the whole file again without it.',
    params: AnonymousUploadParams,
    response: ResumeResult,
    async handle(ctx, { params }) {
      const credential = ctx.registry.anonymous.usable(ctx.credential!)
      const site = ctx.registry.anonymous.storageSite(credential, params.id)
      const { upload, offset } = await ctx.registry.files.resume(site.id, params.objectId)
      const base = ctx.urls.api(`/public/v1/anonymous/sites/${site.id}/objects/${upload.id}`)
      return resumeView(upload, offset, base, begunFile(upload, upload.name, base, null))
    },
  }),
  defineAnonymousOperation({
    method: 'POST',
    path: '/public/v1/anonymous/sites/{id}/objects/finalize',
    operationId: 'anonymous.finalize',
    anonymous: 'token',
    public: true,
    rateClass: 'standard',
    tool: null,
    tag,
    summary: 'Make complete anonymous uploads shared files',
    description:
      "Each upload answered on its own (ok: false with the error for one whose bytes did not all arrive; it stays, and DELETE …/objects/{id} cancels it). The files go live until the storage site's 24 hours end, and their bytes are charged to the credential's budget.",
    params: SiteParams,
    body: Finalize,
    response: FinalizeResult,
    async handle(ctx, { params, body }) {
      const credential = ctx.registry.anonymous.usable(ctx.credential!)
      const { site, outcomes } = await ctx.registry.anonymous.finalizeUploads(credential.id, params.id, body.ids)
      const files = outcomes.map((o) => finalizedFile(ctx, site.subdomain, o))
      const failed = files.filter((f) => !f.ok).length
      return {
        files,
        next:
          failed === 0
            ? `Live until ${credential.storageUntil === null ? 'the storage site ends' : iso(credential.storageUntil)}. To keep the files, a person claims them with the website (claimPage).`
            : `${failed} file${failed === 1 ? '' : 's'} did not go live: send their bytes again and finalize those ids, or DELETE /public/v1/anonymous/sites/${site.id}/objects/{id} to cancel.`,
      }
    },
  }),
  defineAnonymousOperation({
    method: 'DELETE',
    path: '/public/v1/anonymous/sites/{id}/objects/{objectId}',
    operationId: 'anonymous.deleteFile',
    anonymous: 'token',
    credentialBucket: 'uploadBytes',
    public: true,
    rateClass: 'standard',
    tool: null,
    tag,
    summary: 'Delete an anonymous shared file, or cancel an unfinished upload',
    description:
      'A file id: its link stops working at once. An upload id (upl_…, from objects/uploads): cancels that upload, failed or unfinished, and drops the bytes it received, freeing room in the in-progress allowance. Deleting does not refund the byte budget.',
    params: AnonymousUploadParams,
    response: Type.Object({
      deleted: Type.Boolean(),
      kind: StringEnum(['file', 'upload'] as const, { description: 'file: a shared file was deleted; upload: an upload was cancelled' }),
    }),
    async handle(ctx, { params }) {
      const credential = ctx.registry.anonymous.usable(ctx.credential!)
      const site = ctx.registry.anonymous.storageSite(credential, params.id)
      if (params.objectId.startsWith('upl_')) {
        // Spec: "DELETE /public/v1/anonymous/sites/{id}/objects/{objectId} … cancels a failed upload".
        ctx.registry.files.upload(site.id, params.objectId)
        await ctx.registry.files.abort(site.orgId, params.objectId)
        return { deleted: true, kind: 'upload' as const }
      }
      await ctx.registry.files.delete(site, params.objectId)
      return { deleted: true, kind: 'file' as const }
    },
  }),
]
