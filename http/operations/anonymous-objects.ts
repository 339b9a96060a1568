// Shared files of an anonymous storage site: announce, send, resume, finalize and delete uploads and files.
import { Type } from '@sinclair/typebox'
import { StringEnum } from '../../core/schemas/common.js'
import { folderOf } from '../../actors/files/storage.js'
import { randomToken } from '../../core/ids.js'
import { defineAnonymousOperation } from '../operation.js'
import { SiteParams } from './anonymous-sites.js'
import { Begin, ChunkResult, objectView, receiveChunk, ResumeResult, StorageObject, UPLOAD_BODY, Upload, uploadView } from './storage.js'

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
    rateLimits: ['credentialEdits', 'networkEdits'],
    anonymous: 'token',
    public: true,
    rateClass: 'standard',
    tool: null,
    tag,
    summary: 'Announce files to share from the anonymous storage site',
    description:
      "The same body as the signed-in endpoint. Each call is its own folder (its link lists these files). PUT each file's bytes to its uploadUrl with Content-Range, then POST …/objects/finalize. Files stay live until the storage site's 24 hours end; the credential's 500 MiB budget counts them (413 anonymous_storage_limit).",
    params: SiteParams,
    body: Begin,
    status: 201,
    response: Type.Object({ uploads: Type.Array(Upload), folderUrl: Type.String(), next: Type.String() }),
    async handle(ctx, { params, body }) {
      const credential = ctx.registry.anonymous.usable(ctx.credential!)
      ctx.limit('credentialEdits')
      ctx.limit('networkEdits')
      const site = ctx.registry.anonymous.storageSite(credential, params.id)
      // Each upload its own folder: an unguessable name, with the caller's folder under it.
      const folder = [randomToken(10), folderOf(body.folder, 'body.folder')].filter((f) => f !== '').join('/')
      const uploads = await ctx.registry.anonymous.beginUploads(credential.id, site.id, body.files, folder)
      const base = (id: string) => ctx.urls.api(`/public/v1/anonymous/sites/${site.id}/objects/${id}`)
      return {
        uploads: uploads.map((u) => uploadView(ctx, u, base(u.id))),
        folderUrl: `${ctx.urls.published(site.subdomain)}/${folder.split('/').map(encodeURIComponent).join('/')}/`,
        next:
          "PUT each file's bytes to its uploadUrl with Authorization: Bearer <token> and Content-Range: bytes 0-<size-1>/<size>, then POST /public/v1/anonymous/sites/" +
          site.id +
          '/objects/finalize {uploadIds}',
      }
    },
  }),
  defineAnonymousOperation({
    method: 'PUT',
    path: '/public/v1/anonymous/sites/{id}/objects/{objectId}/upload',
    operationId: 'anonymous.uploadBytes',
    anonymous: 'token',
    public: true,
    rateClass: 'standard',
    tool: null,
    tag,
    summary: 'Send the bytes of an anonymous upload (resumable)',
    description: 'As the signed-in endpoint: Content-Range: bytes <start>-<end>/<size> from the offset stored; streamed to disk.',
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
    public: true,
    rateClass: 'standard',
    tool: null,
    tag,
    summary: 'The offset an interrupted anonymous upload continues from',
    description: 'Every byte stored so far counts: send the rest from offset.',
    params: AnonymousUploadParams,
    response: ResumeResult,
    async handle(ctx, { params }) {
      const credential = ctx.registry.anonymous.usable(ctx.credential!)
      const site = ctx.registry.anonymous.storageSite(credential, params.id)
      const { upload, offset } = await ctx.registry.files.resume(site.id, params.objectId)
      return {
        uploadId: upload.id,
        offset,
        size: upload.size,
        uploadUrl: ctx.urls.api(`/public/v1/anonymous/sites/${site.id}/objects/${upload.id}/upload`),
      }
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
      "The same body as the signed-in endpoint: the files go live until the storage site's 24 hours end, and their bytes are charged to the credential's budget.",
    params: SiteParams,
    body: Type.Object(
      { uploadIds: Type.Array(Type.String({ minLength: 1, maxLength: 40 }), { minItems: 1, maxItems: 100 }) },
      { additionalProperties: false },
    ),
    response: Type.Object({ objects: Type.Array(StorageObject) }),
    async handle(ctx, { params, body }) {
      const credential = ctx.registry.anonymous.usable(ctx.credential!)
      const site = ctx.registry.anonymous.storageSite(credential, params.id)
      const objects = await ctx.registry.anonymous.finalizeUploads(credential.id, site.id, body.uploadIds)
      return { objects: objects.map((o) => objectView(ctx, site.subdomain, o)) }
    },
  }),
  defineAnonymousOperation({
    method: 'DELETE',
    path: '/public/v1/anonymous/sites/{id}/objects/{objectId}',
    operationId: 'anonymous.deleteFile',
    anonymous: 'token',
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
