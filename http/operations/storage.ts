import { Type } from '@sinclair/typebox'
import { folderOf } from '../../actors/files/storage-names.js'
import { iso } from '../../core/clock.js'
import { ApiError } from '../../core/errors.js'
import { pageByKey, pageByOffset } from '../../core/cursor.js'
import { LIST_LIMIT_DEFAULT, STORAGE_UPLOADS_PER_BEGIN } from '../../core/limits.js'
import { ListQuery, Page } from '../../core/schemas/common.js'
import { defineOperation, WebsitePathParams, type OperationContext } from '../operation.js'
import { setFolderPassword } from './passwords.js'
import { receiveChunk } from './storage-chunks.js'
import {
  Begin,
  BeginResult,
  begunFile,
  beginFiles,
  ChunkResult,
  Finalize,
  finalizedFile,
  FinalizeResult,
  folderLinks,
  objectView,
  pathInFolder,
  ResumeResult,
  resumeView,
  StorageObject,
  UPLOAD_BODY,
  Upload,
  uploadView,
} from './storage-shapes.js'

export { receiveChunk } from './storage-chunks.js'

const tag = 'Storage'

const ObjectParams = Type.Object(
  { websiteId: Type.String({ description: 'Website id (`ws_…`)' }), objectId: Type.String({ description: 'Shared file id (`obj_…`)' }) },
  { additionalProperties: false },
)
const UploadParams = Type.Object(
  {
    websiteId: Type.String({ description: 'Website id (`ws_…`)' }),
    objectId: Type.String({ description: 'The upload id (`upl_…`) begin answered' }),
  },
  { additionalProperties: false },
)
const FolderParams = Type.Object(
  {
    websiteId: Type.String({ description: 'Website id (`ws_…`)' }),
    folder: Type.String({ minLength: 1, maxLength: 1500, description: 'Folder path, URL-encoded (`photos%2F2026`)' }),
  },
  { additionalProperties: false },
)

function storageSite(ctx: OperationContext) {
  const record = ctx.website!.record
  if (record.kind !== 'storage')
    throw new ApiError(
      'conflict',
      `Website ${record.id} is a ${record.kind} site; files are shared from a storage website (POST /v1/websites with kind: "storage")`,
      { reason: 'wrong_kind' },
    )
  return record
}

export const storageOperations = [
  defineOperation({
    method: 'POST',
    path: '/v1/websites/{websiteId}/objects/uploads',
    operationId: 'storage.beginUploads',
    capability: 'storage.write',
    rateClass: 'standard',
    tool: 'begin_object_upload',
    tag,
    summary: 'Announce files to share',
    description: `Announces 1-${STORAGE_UPLOADS_PER_BEGIN} files of a storage website, each by its path inside the folder (subfolders and hidden files kept) and exact byteSize. Without folder the call makes a new folder with an unguessable name; pass the folder a call returned to add more. Each file answers a ready shell command: run it after FILE=./path; (a separate statement), or PUT the bytes to upload.url with upload.headers. Then finalize_object_upload with the ids. Never put file bytes in a tool call. At most 100 MiB a file on the free plan (billing on), 2 GiB in 100 MiB parts on paid plans and with billing off; the plan's storage and an in-progress allowance (1 GiB on the free plan, 10 GiB otherwise) apply (402 storage_limit). One .zip with archive: true becomes a folder served from inside it.`,
    params: WebsitePathParams,
    body: Begin,
    status: 201,
    response: BeginResult,
    async handle(ctx, { body }) {
      const site = storageSite(ctx)
      const files = ctx.registry.files
      if (body.password !== undefined) ctx.registry.plans.assertPaid(site.orgId, 'A folder password')
      const { folder, uploads } = await files.begin(site, beginFiles(body.files), {
        folder: body.folder,
        expiresInDays: body.expiresInDays,
      })
      if (body.password !== undefined) await setFolderPassword(ctx, folder, body.password)
      const expiresAt = files.expiryFor(site.orgId, body.expiresInDays)
      return {
        folder,
        ...folderLinks(ctx, site.subdomain, folder),
        expiresAt: expiresAt === null ? null : iso(expiresAt),
        files: uploads.map((u) =>
          begunFile(
            u,
            pathInFolder(u, folder),
            ctx.urls.api(`/v1/websites/${site.id}/objects/${u.id}`),
            ctx.registry.uploadTokens.issue(ctx.principal, u),
          ),
        ),
        next: `Run each file's command after FILE=./path; (or PUT its bytes to upload.url with upload.headers), then finalize_object_upload (POST /v1/websites/${site.id}/objects/finalize) with {ids}. Unfinished uploads are dropped after an hour without activity.`,
      }
    },
  }),
  defineOperation({
    method: 'PUT',
    path: '/v1/websites/{websiteId}/objects/{objectId}/upload',
    operationId: 'storage.uploadBytes',
    capability: 'storage.write',
    rateClass: 'standard',
    uploadToken: true,
    tool: null,
    tag,
    summary: 'Send the bytes of an upload (resumable)',
    description:
      'The raw bytes of one announced file: the whole file without Content-Range (a repeat replaces what an earlier try left), or a chunk with Content-Range: bytes <start>-<end>/<size>, where start is the offset already stored (409 offset_mismatch says which). Streamed to disk, never held in memory. Takes the credential of the API, or the upload token of the ready command (that upload only).',
    params: UploadParams,
    streamsBody: UPLOAD_BODY,
    response: ChunkResult,
    async handle(ctx, { params, stream }) {
      storageSite(ctx)
      return receiveChunk(ctx.registry.files, ctx.website!.id, params.objectId, stream!)
    },
  }),
  defineOperation({
    method: 'POST',
    path: '/v1/websites/{websiteId}/objects/{objectId}/resume',
    operationId: 'storage.resumeUpload',
    capability: 'storage.write',
    rateClass: 'standard',
    tool: 'resume_object_upload',
    tag,
    summary: 'What an interrupted upload already holds, and how to send the rest',
    description:
      'offset is every byte stored so far; complete says whether all arrived (then finalize). Otherwise send the rest from offset with Content-Range: bytes <offset>-<size-1>/<size>, or run the fresh command, which sends the whole file again.',
    params: UploadParams,
    response: ResumeResult,
    async handle(ctx, { params }) {
      const site = storageSite(ctx)
      const { upload, offset } = await ctx.registry.files.resume(site.id, params.objectId)
      const base = ctx.urls.api(`/v1/websites/${site.id}/objects/${upload.id}`)
      const again = begunFile(upload, upload.name, base, ctx.registry.uploadTokens.issue(ctx.principal, upload))
      return resumeView(upload, offset, base, again)
    },
  }),
  defineOperation({
    method: 'POST',
    path: '/v1/websites/{websiteId}/objects/finalize',
    operationId: 'storage.finalize',
    capability: 'storage.write',
    rateClass: 'standard',
    tool: 'finalize_object_upload',
    tag,
    summary: 'Make complete uploads shared files',
    description:
      'Each upload is answered on its own: ok with its link, or ok: false with the error (bytes missing, an archive out of bounds), that upload staying as it was. The files go live at their links at once; a file with the same path as an existing one replaces it.',
    params: WebsitePathParams,
    body: Finalize,
    response: FinalizeResult,
    async handle(ctx, { body }) {
      const site = storageSite(ctx)
      const outcomes = await ctx.registry.files.finalize(site, body.ids)
      const files = outcomes.map((o) => finalizedFile(ctx, site.subdomain, o))
      const failed = files.filter((f) => !f.ok).length
      return {
        files,
        next:
          failed === 0
            ? 'Every file is live at its url; share the folder link begin answered, or the file links.'
            : `${failed} file${failed === 1 ? '' : 's'} did not go live: send their bytes again (resume_object_upload), then finalize those ids.`,
      }
    },
  }),
  defineOperation({
    method: 'GET',
    path: '/v1/websites/{websiteId}/objects',
    operationId: 'storage.list',
    capability: 'storage.read',
    rateClass: 'standard',
    tool: 'list_objects',
    tag,
    summary: 'Shared files, across folders or of one folder',
    description:
      "Without folder: every file of the website, by folder and name, each with its folder and folderLabel. With folder: the files directly in it ('' for the top level). A page at a time, with the folders right under the one listed and their labels. An archive is one item (archive: true); list_archive_entries lists its files.",
    params: WebsitePathParams,
    query: Type.Object({ folder: Type.Optional(Type.String({ maxLength: 500 })), ...ListQuery }, { additionalProperties: false }),
    response: Type.Object({
      ...Page(StorageObject).properties,
      folder: Type.Union([Type.String(), Type.Null()], { description: 'The folder listed; null: across folders' }),
      folders: Type.Array(Type.String()),
      folderLabels: Type.Record(Type.String(), Type.String(), { description: 'Folders of `folders` shown under another name' }),
      protectedFolders: Type.Array(Type.String(), { description: 'Folders of `folders` behind a password (set_folder_password)' }),
      folderProtected: Type.Boolean({ description: 'The folder listed is behind a password (its own, or one above it)' }),
      usedBytes: Type.Integer(),
    }),
    handle(ctx, { query }) {
      const site = storageSite(ctx)
      const files = ctx.registry.files
      const folder = query.folder === undefined ? null : folderOf(query.folder, 'query.folder')
      const limit = query.limit ?? LIST_LIMIT_DEFAULT
      const page =
        folder === null
          ? files.listAll(site.id, { limit, cursor: query.cursor })
          : files.list(site.id, folder, { limit, cursor: query.cursor })
      const labels: Record<string, string> = {}
      const locked: string[] = []
      const passwords = ctx.registry.sitePasswords
      for (const sub of page.folders) {
        const path = folder === null || folder === '' ? sub : `${folder}/${sub}`
        const label = files.folderLabel(site.id, path)
        if (label !== null) labels[sub] = label
        if (passwords.lockedFolders(site.id, path.split('/')).length > 0) locked.push(sub)
      }
      return {
        items: page.items.map((o) => objectView(ctx, site.subdomain, o, files.folderLabel(site.id, o.folder))),
        nextCursor: page.next,
        folder,
        folders: page.folders,
        folderLabels: labels,
        protectedFolders: locked,
        folderProtected: folder !== null && folder !== '' && passwords.lockedFolders(site.id, folder.split('/')).length > 0,
        usedBytes: files.usage(site.id),
      }
    },
  }),
  defineOperation({
    method: 'GET',
    path: '/v1/websites/{websiteId}/objects/{objectId}/entries',
    operationId: 'storage.entries',
    capability: 'storage.read',
    rateClass: 'standard',
    tool: 'list_archive_entries',
    tag,
    summary: 'The files inside an uploaded zip',
    description:
      'Read from the archive\'s central directory without unpacking it; each entry is served at the file\'s url + "/" + its path.',
    params: ObjectParams,
    query: Type.Object(ListQuery, { additionalProperties: false }),
    response: Page(Type.Object({ path: Type.String(), size: Type.Integer(), compressedSize: Type.Integer(), url: Type.String() })),
    async handle(ctx, { params, query }) {
      const site = storageSite(ctx)
      const object = ctx.registry.files.object(site.id, params.objectId)
      // A plain zip's entries are under its link; an archive folder's, under the folder.
      const link = objectView(ctx, site.subdomain, object).url
      const base = link.endsWith('/') ? link.slice(0, -1) : link
      const entries = await ctx.registry.files.entries(site.id, params.objectId)
      // In the archive's own order (its central directory), a page at a time.
      const page = pageByOffset(
        (offset, limit) => ({ items: entries.slice(offset, offset + limit), total: entries.length }),
        query.limit ?? LIST_LIMIT_DEFAULT,
        query.cursor,
      )
      return {
        items: page.items.map((e) => ({ ...e, url: `${base}/${e.path.split('/').map(encodeURIComponent).join('/')}` })),
        nextCursor: page.nextCursor,
      }
    },
  }),
  defineOperation({
    method: 'PATCH',
    path: '/v1/websites/{websiteId}/objects/{objectId}',
    operationId: 'storage.update',
    capability: 'storage.write',
    rateClass: 'standard',
    tool: 'rename_object',
    tag,
    summary: 'Rename a shared file (the name shown) or change its expiry',
    description:
      'name changes only the name the file is shown under (folder pages, lists); its link stays the same, so it is always safe (null shows its own name again). To change the link, move_object. expiresAt (ISO time) sets when the link ends, null keeps it (paid plans, or billing off).',
    params: ObjectParams,
    body: Type.Object(
      {
        name: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 255 }), Type.Null()])),
        expiresAt: Type.Optional(Type.Union([Type.String({ format: 'date-time' }), Type.Null()])),
      },
      { additionalProperties: false },
    ),
    response: StorageObject,
    async handle(ctx, { params, body }) {
      const site = storageSite(ctx)
      const files = ctx.registry.files
      let object = files.object(site.id, params.objectId)
      if (body.expiresAt !== undefined)
        object = await files.update(site, params.objectId, {
          expiresAt: body.expiresAt === null ? null : Date.parse(body.expiresAt),
        })
      if (body.name !== undefined) object = await files.label(site, params.objectId, body.name)
      return objectView(ctx, site.subdomain, object, files.folderLabel(site.id, object.folder))
    },
  }),
  defineOperation({
    method: 'DELETE',
    path: '/v1/websites/{websiteId}/objects/{objectId}',
    operationId: 'storage.delete',
    capability: 'storage.write',
    rateClass: 'standard',
    tool: 'delete_object',
    tag,
    summary: 'Delete a shared file',
    description: 'Its link stops working at once; its bytes are removed when no other file has the same content.',
    params: ObjectParams,
    response: Type.Object({ deleted: Type.Boolean() }),
    async handle(ctx, { params }) {
      await ctx.registry.files.delete(storageSite(ctx), params.objectId)
      return { deleted: true }
    },
  }),
  defineOperation({
    method: 'POST',
    path: '/v1/websites/{websiteId}/objects/{objectId}/move',
    operationId: 'storage.move',
    capability: 'storage.write',
    rateClass: 'standard',
    tool: 'move_object',
    tag,
    summary: 'Move a shared file to another folder, or to a link of its own',
    description:
      "folder is the new folder ('' for the top level); without folder the file moves into a new folder of its own, with a new unguessable link. name optionally renames it on the way. Either way its link changes and the old one stops working: share the new url. 409 name_taken when a file is already there.",
    params: ObjectParams,
    body: Type.Object(
      {
        folder: Type.Optional(
          Type.String({
            maxLength: 500,
            description: "The folder to move it into ('' for the top level); leave it out for a new folder of its own",
          }),
        ),
        name: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
      },
      { additionalProperties: false },
    ),
    response: StorageObject,
    async handle(ctx, { params, body }) {
      const site = storageSite(ctx)
      const object = await ctx.registry.files.update(site, params.objectId, { folder: body.folder ?? null, name: body.name })
      return objectView(ctx, site.subdomain, object, ctx.registry.files.folderLabel(site.id, object.folder))
    },
  }),
  defineOperation({
    method: 'PATCH',
    path: '/v1/websites/{websiteId}/objects/folders/{folder}',
    operationId: 'storage.renameFolder',
    capability: 'storage.write',
    rateClass: 'standard',
    tool: 'move_folder',
    tag,
    summary: 'Move a folder to another path (its links change)',
    description:
      'Every file in and below the folder moves to `to` (their links change; the old ones stop working); the target must not hold files. To change only the name shown, label_folder.',
    params: FolderParams,
    body: Type.Object(
      { to: Type.String({ minLength: 1, maxLength: 500, description: 'The new folder path' }) },
      { additionalProperties: false },
    ),
    response: Type.Object({ folder: Type.String(), moved: Type.Integer() }),
    async handle(ctx, { params, body }) {
      const site = storageSite(ctx)
      const from = folderOf(params.folder, 'path.folder')
      const to = folderOf(body.to, 'body.to')
      // Its password (and its subfolders') goes first, so the files are never at the new path without it.
      const passwords = ctx.registry.sitePasswords
      if (from !== '' && to !== '') await passwords.moveFolder(site, from, to)
      try {
        const result = await ctx.registry.files.renameFolder(site, params.folder, body.to)
        return { folder: to, moved: result.moved }
      } catch (error) {
        if (from !== '' && to !== '') await passwords.moveFolder(site, to, from)
        throw error
      }
    },
  }),
  defineOperation({
    method: 'PUT',
    path: '/v1/websites/{websiteId}/objects/folders/{folder}/label',
    operationId: 'storage.labelFolder',
    capability: 'storage.write',
    rateClass: 'standard',
    tool: 'label_folder',
    tag,
    summary: 'Show a folder under another name (its link stays)',
    description:
      'The name its page and lists show; the folder link keeps its own (unguessable) name, so this is always safe. null shows the folder name again.',
    params: FolderParams,
    body: Type.Object({ label: Type.Union([Type.String({ minLength: 1, maxLength: 255 }), Type.Null()]) }, { additionalProperties: false }),
    response: Type.Object({ folder: Type.String(), label: Type.Union([Type.String(), Type.Null()]), folderUrl: Type.String() }),
    async handle(ctx, { params, body }) {
      const site = storageSite(ctx)
      const folder = folderOf(params.folder, 'path.folder')
      const label = await ctx.registry.files.labelFolder(site, folder, body.label)
      return { folder, label, folderUrl: folderLinks(ctx, site.subdomain, folder).folderUrl }
    },
  }),
  defineOperation({
    method: 'DELETE',
    path: '/v1/websites/{websiteId}/objects/folders/{folder}',
    operationId: 'storage.deleteFolder',
    capability: 'storage.write',
    rateClass: 'standard',
    tool: 'delete_folder',
    tag,
    summary: 'Delete a folder and its files',
    description: 'Every file in and below the folder is deleted; their links stop working at once.',
    params: FolderParams,
    response: Type.Object({ deleted: Type.Integer() }),
    async handle(ctx, { params }) {
      const site = storageSite(ctx)
      const deleted = await ctx.registry.files.deleteFolder(site, params.folder)
      // Its passwords go with it: a folder made later under the same name starts open.
      await ctx.registry.sitePasswords.moveFolder(site, folderOf(params.folder, 'path.folder'), null)
      return deleted
    },
  }),
  defineOperation({
    method: 'GET',
    path: '/v1/storage/uploads',
    operationId: 'storage.uploads',
    capability: 'storage.read',
    rateClass: 'standard',
    tool: 'list_uploads_in_progress',
    tag,
    summary: 'Uploads in progress',
    description:
      'Every upload of the organization not finalized yet, with the bytes received, a page at a time; inProgressBytes adds up all of them (the in-progress allowance counts it). One with no activity (no bytes received) for an hour is dropped.',
    query: Type.Object(ListQuery, { additionalProperties: false }),
    response: Type.Object({ ...Page(Upload).properties, inProgressBytes: Type.Integer() }),
    handle(ctx, { query }) {
      const visible = (websiteId: string) =>
        ctx.principal.access.kind !== 'websites' || (ctx.principal.access.websiteIds ?? []).includes(websiteId)
      const uploads = ctx.registry.files.uploads(ctx.org.id).filter((u) => visible(u.websiteId))
      const page = pageByKey(
        uploads.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)),
        (u) => u.id,
        query.limit ?? LIST_LIMIT_DEFAULT,
        query.cursor,
      )
      return {
        items: page.items.map((u) => uploadView(ctx, u)),
        nextCursor: page.nextCursor,
        inProgressBytes: uploads.reduce((sum, u) => sum + u.size, 0),
      }
    },
  }),
  defineOperation({
    method: 'DELETE',
    path: '/v1/storage/uploads',
    operationId: 'storage.abortUpload',
    capability: 'storage.write',
    rateClass: 'standard',
    tool: 'abort_file_upload',
    tag,
    summary: 'Abort an upload in progress',
    description: 'Drops the upload and the bytes it received (uploadId in the query).',
    query: Type.Object({ uploadId: Type.String({ minLength: 1, maxLength: 40 }) }, { additionalProperties: false }),
    response: Type.Object({ aborted: Type.Boolean() }),
    async handle(ctx, { query }) {
      const upload = ctx.registry.files.uploads(ctx.org.id).find((u) => u.id === query.uploadId)
      if (
        upload !== undefined &&
        ctx.principal.access.kind === 'websites' &&
        !(ctx.principal.access.websiteIds ?? []).includes(upload.websiteId)
      )
        throw new ApiError('not_found', `No upload ${query.uploadId} in progress in this organization`)
      await ctx.registry.files.abort(ctx.org.id, query.uploadId)
      return { aborted: true }
    },
  }),
  defineOperation({
    method: 'POST',
    path: '/v1/storage/uploads/clear',
    operationId: 'storage.clearUploads',
    capability: 'storage.write',
    rateClass: 'standard',
    tool: 'clear_uploads_in_progress',
    tag,
    summary: 'Cancel every upload in progress',
    description:
      'Drops every unfinished upload of the organization (of the websites this credential reaches) and the bytes they received, which frees the in-progress allowance. Finished files are not touched. Ask the person first.',
    response: Type.Object({ cleared: Type.Integer(), freedBytes: Type.Integer() }),
    async handle(ctx) {
      const visible = (websiteId: string) =>
        ctx.principal.access.kind !== 'websites' || (ctx.principal.access.websiteIds ?? []).includes(websiteId)
      const uploads = ctx.registry.files.uploads(ctx.org.id).filter((u) => visible(u.websiteId))
      for (const upload of uploads) await ctx.registry.files.abort(ctx.org.id, upload.id)
      return { cleared: uploads.length, freedBytes: uploads.reduce((sum, u) => sum + u.size, 0) }
    },
  }),
]
