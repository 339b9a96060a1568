import { createWriteStream } from 'node:fs'
import { rm } from 'node:fs/promises'
import { Type } from '@sinclair/typebox'
import type busboy from 'busboy'
import type { WebsiteActor } from '../../actors/website/actor.js'
import { iso } from '../../core/clock.js'
import { ApiError } from '../../core/errors.js'
import { newId } from '../../core/ids.js'
import {
  ASSET_IMPORT_MAX_URLS,
  ASSET_MAX_BYTES,
  IMAGE_MAX_DIMENSION,
  IMAGE_PREGENERATE_MAX,
  LIST_LIMIT_DEFAULT,
} from '../../core/limits.js'
import { ASSET_KINDS, type AssetRecord } from '../../core/schemas/assets.js'
import { ListQuery, Page, StringEnum, Timestamp, named } from '../../core/schemas/common.js'
import { isLive } from '../../core/website-state.js'
import { imageParams } from '../../actors/files/images.js'
import { multipartReader } from '../body.js'
import { defineOperation, WebsitePathParams, type BodyStream, type OperationContext } from '../operation.js'

const tag = 'Assets'

const AssetParams = Type.Object(
  { websiteId: Type.String({ description: 'Website id (`ws_…`)' }), assetId: Type.String({ description: 'Asset id (`ast_…`)' }) },
  { additionalProperties: false },
)

const Asset = named(
  'Asset',
  Type.Object({
    id: Type.String(),
    kind: StringEnum(ASSET_KINDS),
    filename: Type.String(),
    contentType: Type.String({ description: 'As detected from the bytes' }),
    bytes: Type.Integer(),
    width: Type.Optional(Type.Integer({ description: 'Images: as displayed (EXIF orientation applied)' })),
    height: Type.Optional(Type.Integer()),
    altText: Type.String(),
    url: Type.String({ description: "The original bytes, at a stable immutable URL on the site's hosts (/_platform/media/<id>)" }),
    imageUrl: Type.Optional(
      Type.String({ description: 'Images: resized on demand; add ?w=&h=&fit=&fm=&q= (imageUrl() of @platform builds these)' }),
    ),
    status: StringEnum(['pending', 'ready'] as const),
    createdAt: Timestamp,
    archivedAt: Type.Optional(Timestamp),
  }),
)

/** The site's own origin for asset links: the live host once published, the draft host before. */
function originOf(ctx: { urls: OperationContext['urls'] }, website: WebsiteActor): string {
  const record = website.record
  return isLive(record) ? ctx.urls.published(record.subdomain) : ctx.urls.draft(record.subdomain)
}

export function assetView(ctx: { urls: OperationContext['urls'] }, website: WebsiteActor, asset: AssetRecord) {
  const origin = originOf(ctx, website)
  return {
    id: asset.id,
    kind: asset.kind,
    filename: asset.filename,
    contentType: asset.contentType,
    bytes: asset.bytes,
    ...(asset.width === null ? {} : { width: asset.width }),
    ...(asset.height === null ? {} : { height: asset.height }),
    altText: asset.altText,
    url: `${origin}/_platform/media/${asset.id}`,
    ...(asset.kind === 'image' && asset.contentType !== 'image/svg+xml' ? { imageUrl: `${origin}/_platform/img/${asset.id}` } : {}),
    status: asset.status,
    createdAt: iso(asset.createdAt),
    ...(asset.archivedAt === undefined ? {} : { archivedAt: iso(asset.archivedAt) }),
  }
}

/** Streams a request body into a file, at most `limit` bytes (the sink of BodyStream.pipe). */
export function fileSink(path: string) {
  const out = createWriteStream(path)
  let failed: Error | null = null
  out.on('error', (error) => (failed = error))
  return {
    sink: { write: (chunk: Buffer) => out.write(chunk), onceDrained: (resume: () => void) => out.once('drain', resume) },
    close: () =>
      new Promise<void>((resolve, reject) => {
        out.end(() => (failed === null ? resolve() : reject(failed)))
      }),
  }
}

/** A multipart body's one file, streamed to `path` through busboy; its name, type and the alt text field. */
async function readMultipart(stream: BodyStream, path: string): Promise<{ filename: string; contentType: string | null; altText: string }> {
  let parser: busboy.Busboy
  try {
    parser = multipartReader(stream.contentType, { limits: { files: 1, fields: 5, fileSize: ASSET_MAX_BYTES } })
  } catch {
    throw new ApiError('validation', 'Send the file as multipart/form-data (a field named file; altText optional)', { field: 'body' })
  }
  const fields: Record<string, string> = {}
  let file: { filename: string; contentType: string | null } | null = null
  let tooLarge = false
  const written: Promise<void>[] = []
  parser.on('field', (name, value) => (fields[name] = value))
  parser.on('file', (_field, source, info) => {
    file = {
      filename: info.filename ?? 'upload',
      contentType: info.mimeType && info.mimeType !== 'application/octet-stream' ? info.mimeType : null,
    }
    const target = createWriteStream(path)
    source.on('limit', () => (tooLarge = true))
    source.pipe(target)
    written.push(
      new Promise((resolve, reject) => {
        target.on('finish', resolve)
        target.on('error', reject)
      }),
    )
  })
  const done = new Promise<void>((resolve, reject) => {
    parser.on('close', resolve)
    parser.on('error', () => reject(new ApiError('validation', 'The multipart body is malformed', { field: 'body' })))
  })
  await stream.pipe(ASSET_MAX_BYTES + 64 * 1024, {
    write: (chunk) => parser.write(chunk),
    onceDrained: (resume) => parser.once('drain', resume),
  })
  parser.end()
  await done
  await Promise.all(written)
  if (tooLarge)
    throw new ApiError('payload_too_large', `An asset is at most ${ASSET_MAX_BYTES} bytes (50 MiB)`, { limitBytes: ASSET_MAX_BYTES })
  if (file === null)
    throw new ApiError('validation', 'The multipart body has no file part; send the bytes in a field named file', { field: 'body.file' })
  const found = file as { filename: string; contentType: string | null }
  return {
    filename: (fields.filename ?? found.filename).slice(0, 255) || 'upload',
    contentType: found.contentType,
    altText: (fields.altText ?? '').slice(0, 1000),
  }
}

export const assetOperations = [
  defineOperation({
    method: 'POST',
    path: '/v1/websites/{websiteId}/assets',
    operationId: 'assets.upload',
    capability: 'assets.write',
    rateClass: 'standard',
    tool: null,
    tag,
    summary: 'Upload an asset in one request',
    description: `multipart/form-data with the bytes in a field named file (at most 50 MiB) and optionally altText. The type is detected from the bytes; images get width and height. Agents without multipart: assets.beginUpload, or assets.import from a URL.`,
    params: WebsitePathParams,
    streamsBody: { type: 'multipart/form-data', description: 'A field named file with the bytes; altText optional' },
    status: 201,
    response: Asset,
    async handle(ctx, { stream }) {
      const path = ctx.registry.reads.files.uploadPath(newId('upl'))
      try {
        const meta = await readMultipart(stream!, path)
        const asset = await ctx.registry.assets.upload(ctx.website!.id, path, meta)
        return assetView(ctx, ctx.website!, asset)
      } finally {
        await rm(path, { force: true })
      }
    },
  }),
  defineOperation({
    method: 'GET',
    path: '/v1/websites/{websiteId}/assets',
    operationId: 'assets.list',
    capability: 'assets.read',
    rateClass: 'standard',
    tool: 'list_assets',
    tag,
    summary: 'List or search the asset library',
    description:
      'Newest first; search matches filename and alt text; kind filters (image, video, audio, document, other); archived: true lists the archived ones instead.',
    params: WebsitePathParams,
    query: Type.Object(
      {
        ...ListQuery,
        search: Type.Optional(Type.String({ maxLength: 200 })),
        kind: Type.Optional(StringEnum(ASSET_KINDS)),
        archived: Type.Optional(Type.Boolean()),
      },
      { additionalProperties: false },
    ),
    response: Page(Asset),
    handle(ctx, { query }) {
      const page = ctx.registry.assets.list(ctx.website!.id, {
        limit: query.limit ?? LIST_LIMIT_DEFAULT,
        cursor: query.cursor,
        search: query.search,
        kind: query.kind,
        archived: query.archived,
      })
      return { items: page.items.map((a) => assetView(ctx, ctx.website!, a)), nextCursor: page.next }
    },
  }),
  defineOperation({
    method: 'POST',
    path: '/v1/websites/{websiteId}/assets/uploads',
    operationId: 'assets.beginUpload',
    capability: 'assets.write',
    rateClass: 'standard',
    tool: 'begin_asset_upload',
    tag,
    summary: 'Begin a two-step upload',
    description:
      'Declares the file (filename, contentType, bytes, altText?). Answers a pending asset and an upload: PUT the bytes to upload.url with exactly upload.headers (a signature for this asset, size and type, valid an hour), then POST …/assets/{assetId}/finalize.',
    params: WebsitePathParams,
    body: Type.Object(
      {
        filename: Type.String({ minLength: 1, maxLength: 255 }),
        contentType: Type.String({ minLength: 3, maxLength: 200, pattern: '^[\\w.+-]+/[\\w.+-]+$' }),
        bytes: Type.Integer({ minimum: 1, maximum: ASSET_MAX_BYTES }),
        altText: Type.Optional(Type.String({ maxLength: 1000 })),
      },
      { additionalProperties: false },
    ),
    status: 201,
    response: Type.Object({
      asset: Asset,
      upload: Type.Object({
        url: Type.String(),
        method: Type.Literal('PUT'),
        headers: Type.Record(Type.String(), Type.String()),
        expiresAt: Timestamp,
      }),
    }),
    async handle(ctx, { body }) {
      const { asset, signature } = await ctx.registry.assets.begin(ctx.website!.id, {
        filename: body.filename,
        contentType: body.contentType,
        bytes: body.bytes,
        altText: body.altText ?? '',
      })
      return {
        asset: assetView(ctx, ctx.website!, asset),
        upload: {
          url: ctx.urls.api(`/v1/websites/${ctx.website!.id}/assets/${asset.id}/upload`),
          method: 'PUT' as const,
          headers: {
            'Content-Type': asset.contentType,
            'X-Upload-Expires': String(signature.expires),
            'X-Upload-Signature': signature.signature,
          },
          expiresAt: iso(signature.expires),
        },
      }
    },
  }),
  defineOperation({
    method: 'POST',
    path: '/v1/websites/{websiteId}/assets/import',
    operationId: 'assets.import',
    capability: 'assets.write',
    // The spec's Assets section puts every asset operation in class S (standard).
    rateClass: 'standard',
    tool: 'import_assets',
    tag,
    summary: 'Import assets from public URLs',
    description: `Fetches up to ${ASSET_IMPORT_MAX_URLS} public http(s) URLs server-side (never private or loopback addresses; redirects checked again; at most 50 MiB each) and keeps each as a ready asset, its type sniffed from the bytes. Each URL that failed is listed with why.`,
    params: WebsitePathParams,
    body: Type.Object(
      {
        urls: Type.Array(Type.String({ minLength: 1, maxLength: 2000 }), { minItems: 1, maxItems: ASSET_IMPORT_MAX_URLS }),
        altText: Type.Optional(Type.String({ maxLength: 1000 })),
      },
      { additionalProperties: false },
    ),
    response: Type.Object({ imported: Type.Array(Asset), failed: Type.Array(Type.Object({ url: Type.String(), message: Type.String() })) }),
    async handle(ctx, { body }) {
      const imported = []
      const failed = []
      // One at a time: at most one file's bytes in memory.
      for (const url of body.urls) {
        try {
          imported.push(assetView(ctx, ctx.website!, await ctx.registry.assets.import(ctx.website!.id, url, body.altText ?? '')))
        } catch (error) {
          if (!(error instanceof ApiError)) throw error
          failed.push({ url, message: error.message })
        }
      }
      if (imported.length === 0)
        throw new ApiError('validation', `No URL could be imported: ${failed.map((f) => f.message).join('; ')}`, {
          field: 'body.urls',
          failed,
        })
      return { imported, failed }
    },
  }),
  defineOperation({
    method: 'PUT',
    path: '/v1/websites/{websiteId}/assets/{assetId}/upload',
    operationId: 'assets.putBytes',
    capability: 'assets.write',
    rateClass: 'standard',
    tool: null,
    tag,
    summary: 'Send the bytes of a two-step upload',
    description:
      'The upload target beginUpload points at: the whole file as the body, with the headers it answered (Content-Type, X-Upload-Expires, X-Upload-Signature). A changed or expired signature is a 403.',
    params: AssetParams,
    streamsBody: { type: 'application/octet-stream', description: 'The bytes, exactly as many as declared' },
    response: Type.Object({ assetId: Type.String(), received: Type.Integer(), next: Type.String() }),
    async handle(ctx, { params, stream }) {
      const asset = ctx.registry.assets.get(ctx.website!.id, params.assetId)
      ctx.registry.assets.checkSignature(asset, {
        expires: stream!.header('x-upload-expires'),
        signature: stream!.header('x-upload-signature'),
        contentType: stream!.contentType,
      })
      const out = fileSink(ctx.registry.assets.pendingFile(asset))
      let received = 0
      try {
        received = await stream!.pipe(asset.bytes, out.sink)
      } finally {
        await out.close()
      }
      return { assetId: asset.id, received, next: `POST /v1/websites/${ctx.website!.id}/assets/${asset.id}/finalize` }
    },
  }),
  defineOperation({
    method: 'POST',
    path: '/v1/websites/{websiteId}/assets/{assetId}/finalize',
    operationId: 'assets.finalize',
    capability: 'assets.write',
    rateClass: 'standard',
    tool: 'finalize_asset_upload',
    tag,
    summary: 'Finish a two-step upload',
    description:
      'Checks the bytes that arrived (size as declared, type sniffed from them, image dimensions) and makes the asset ready; 409 while bytes are missing.',
    params: AssetParams,
    response: Asset,
    async handle(ctx, { params }) {
      return assetView(ctx, ctx.website!, await ctx.registry.assets.finalize(ctx.website!.id, params.assetId))
    },
  }),
  defineOperation({
    method: 'GET',
    path: '/v1/websites/{websiteId}/assets/{assetId}',
    operationId: 'assets.get',
    capability: 'assets.read',
    rateClass: 'standard',
    tool: 'get_asset',
    tag,
    summary: 'Get an asset',
    description: 'Its kind, type, size, image dimensions, alt text and URLs.',
    params: AssetParams,
    response: Asset,
    handle(ctx, { params }) {
      return assetView(ctx, ctx.website!, ctx.registry.assets.get(ctx.website!.id, params.assetId))
    },
  }),
  defineOperation({
    method: 'PATCH',
    path: '/v1/websites/{websiteId}/assets/{assetId}',
    operationId: 'assets.update',
    capability: 'assets.write',
    rateClass: 'standard',
    tool: 'update_asset',
    tag,
    summary: 'Rename an asset or change its alt text',
    description: 'Changes the filename or the alt text; the bytes and the URL stay the same.',
    params: AssetParams,
    body: Type.Object(
      { filename: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })), altText: Type.Optional(Type.String({ maxLength: 1000 })) },
      { additionalProperties: false },
    ),
    response: Asset,
    async handle(ctx, { params, body }) {
      return assetView(ctx, ctx.website!, await ctx.registry.assets.update(ctx.website!.id, params.assetId, body))
    },
  }),
  defineOperation({
    method: 'DELETE',
    path: '/v1/websites/{websiteId}/assets/{assetId}',
    operationId: 'assets.delete',
    capability: 'assets.write',
    rateClass: 'standard',
    tool: 'delete_asset',
    tag,
    summary: 'Archive an asset, or delete it for good',
    description:
      'By default archives it: lists leave it out, but its link keeps working (pages that use it do not break) and it still counts toward storage. With permanent=true it is deleted: its URL and resized variants stop working, pages that still reference it show a broken image, and the space is freed.',
    params: AssetParams,
    query: Type.Object(
      { permanent: Type.Optional(Type.Boolean({ description: 'Delete for good and free the space' })) },
      { additionalProperties: false },
    ),
    response: Type.Object({
      deleted: Type.Boolean({ description: 'true: gone for good; false: archived' }),
      archived: Type.Boolean(),
    }),
    async handle(ctx, { params, query }) {
      const done = await ctx.registry.assets.delete(ctx.website!.id, params.assetId, { permanent: query.permanent })
      return { deleted: done === 'deleted', archived: done === 'archived' }
    },
  }),
  defineOperation({
    method: 'POST',
    path: '/v1/websites/{websiteId}/assets/{assetId}/variants',
    operationId: 'assets.variants',
    capability: 'assets.write',
    rateClass: 'expensive',
    tool: 'pregenerate_image_variants',
    tag,
    summary: 'Pre-generate resized widths of an image',
    description: `Renders the widths now (at most ${IMAGE_PREGENERATE_MAX}, each up to ${IMAGE_MAX_DIMENSION}), so the first visitor gets them from the cache. Answers each width's URL (use these in srcset).`,
    params: AssetParams,
    body: Type.Object(
      {
        widths: Type.Array(Type.Integer({ minimum: 1, maximum: IMAGE_MAX_DIMENSION }), { minItems: 1, maxItems: IMAGE_PREGENERATE_MAX }),
        format: Type.Optional(StringEnum(['webp', 'avif', 'jpeg', 'png'] as const)),
        quality: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })),
      },
      { additionalProperties: false },
    ),
    response: Type.Object({ variants: Type.Array(Type.Object({ width: Type.Integer(), url: Type.String(), bytes: Type.Integer() })) }),
    async handle(ctx, { params, body }) {
      const asset = ctx.registry.assets.get(ctx.website!.id, params.assetId)
      const served = ctx.registry.assets.served(ctx.website!.id, asset.id)
      if (served === null || asset.kind !== 'image' || asset.contentType === 'image/svg+xml')
        throw new ApiError('validation', `Asset ${asset.id} is not a ready raster image; only images have resized variants`, {
          field: 'path.assetId',
        })
      const origin = originOf(ctx, ctx.website!)
      const variants = []
      for (const width of body.widths) {
        const query = new URLSearchParams({
          w: String(width),
          ...(body.format === undefined ? {} : { fm: body.format }),
          ...(body.quality === undefined ? {} : { q: String(body.quality) }),
        }).toString()
        const chosen = ctx.registry.images.keyFor(asset, imageParams(query, asset))
        const variant = await ctx.registry.images.variant(asset, served.file, chosen.params, chosen.key)
        variants.push({ width, url: `${origin}/_platform/img/${asset.id}?${query}`, bytes: variant.bytes.length })
      }
      return { variants }
    },
  }),
]
