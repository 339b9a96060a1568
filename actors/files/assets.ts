import { createHmac, timingSafeEqual } from 'node:crypto'
import { rm, stat, writeFile } from 'node:fs/promises'
import { loadSharp } from './sharp.js'
import type { Clock } from '../../core/clock.js'
import { contentTypeFor } from '../../core/content-type.js'
import { ApiError } from '../../core/errors.js'
import { newId } from '../../core/ids.js'
import { ASSET_IMPORT_MAX_REDIRECTS, ASSET_MAX_BYTES, ASSET_UPLOAD_URL_MS, IMAGE_MAX_INPUT_PIXELS } from '../../core/limits.js'
import type { Logger } from '../../core/log.js'
import type { AssetRecord } from '../../core/schemas/assets.js'
import type { FilesStore } from './tables.js'
import type { Mailboxes } from '../mailboxes.js'
import { OutboundError, type OutboundGuard } from '../outbound.js'

/** The kind of an asset, from its (detected) media type. */
export function kindOf(contentType: string): AssetRecord['kind'] {
  if (contentType.startsWith('image/')) return 'image'
  if (contentType.startsWith('video/')) return 'video'
  if (contentType.startsWith('audio/')) return 'audio'
  if (/^(application\/(pdf|msword|vnd\.|rtf|epub)|text\/)/.test(contentType)) return 'document'
  return 'other'
}

/** Types that are text: file-type detects binary formats only, so these are trusted from the name. */
const TEXTUAL = /^(text\/|application\/(json|xml|javascript)|image\/svg\+xml)/

export interface UploadSignature {
  expires: number
  signature: string
}

/**
 * A website's asset library (spec: Assets): bytes in the blob directory, named by hash and counted
 * by the same references as shared files; records in LMDB. Uploads are one request (multipart, streamed
 * to the work area), two steps (a pending asset, a signed and expiring upload, then finalize), or an
 * import of public URLs through the SSRF guard. Every finished upload is checked the same way: its
 * size, its type sniffed from the bytes (file-type) against what was declared, and for images their
 * dimensions (sharp, with its pixel limit against decompression bombs).
 */
export class Assets {
  constructor(
    /** Websites' lanes: an asset's commands run in its website's (blob files take turns per hash, in the store). */
    private readonly lanes: Mailboxes,
    private readonly store: FilesStore,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly guard: OutboundGuard,
    /** Signs two-step upload URLs (derived from the installation's key). */
    private readonly signingKey: Buffer,
  ) {}

  /** An asset of this website, or 404. */
  get(websiteId: string, assetId: string): AssetRecord {
    const asset = this.store.assets.get(assetId)
    if (asset === undefined || asset.websiteId !== websiteId)
      throw new ApiError('not_found', `No asset ${assetId} on this website; GET /v1/websites/${websiteId}/assets lists them`)
    return asset
  }

  /** A ready asset for serving (null: none on this website). */
  served(websiteId: string, assetId: string): { asset: AssetRecord; file: string } | null {
    const asset = this.store.assets.get(assetId)
    if (asset === undefined || asset.websiteId !== websiteId || asset.status !== 'ready' || asset.hash === null) return null
    return { asset, file: this.store.files.path(asset.hash) }
  }

  /** A website's assets, newest first; `search` in filename and alt text; `kind` filters. */
  list(
    websiteId: string,
    options: { limit: number; cursor?: string; search?: string; kind?: AssetRecord['kind']; archived?: boolean },
  ): { items: AssetRecord[]; next: string | null } {
    const items: AssetRecord[] = []
    const needle = options.search?.toLowerCase()
    let before: [number, string] | null = null
    if (options.cursor !== undefined) {
      try {
        before = JSON.parse(Buffer.from(options.cursor, 'base64url').toString()) as [number, string]
      } catch {
        before = null
      }
      if (!Array.isArray(before) || typeof before[0] !== 'number' || typeof before[1] !== 'string')
        throw new ApiError('validation', 'cursor is not one this list gave; pass nextCursor from the previous page as it was', {
          field: 'query.cursor',
        })
    }
    let next: string | null = null
    const end = before === null ? [websiteId, Number.MAX_SAFE_INTEGER, ''] : [websiteId, before[0], before[1]]
    for (const { key, value } of this.store.assetsByWebsite.range({ start: end, end: [websiteId, 0, ''], reverse: true })) {
      const [, createdAt, id] = key as [string, number, string]
      if (before !== null && createdAt === before[0] && id === before[1]) continue
      const asset = this.store.assets.get(value)
      if (asset === undefined || asset.status !== 'ready') continue
      if ((asset.archivedAt !== undefined) !== (options.archived === true)) continue
      if (options.kind !== undefined && asset.kind !== options.kind) continue
      if (needle !== undefined && !asset.filename.toLowerCase().includes(needle) && !asset.altText.toLowerCase().includes(needle)) continue
      if (items.length === options.limit) {
        const last = items[items.length - 1]
        next = Buffer.from(JSON.stringify([last.createdAt, last.id])).toString('base64url')
        break
      }
      items.push(asset)
    }
    return { items, next }
  }

  // Checking and keeping bytes

  /**
   * Checks a finished file and makes it the asset's bytes: the size, the type from its bytes (an
   * image/png declared as image/jpeg is fine, an executable declared as an image is not), image
   * dimensions; then into the blob directory and recorded ready.
   */
  async #keep(
    file: string,
    draft: { websiteId: string; filename: string; contentType: string | null; altText: string; id?: string; createdAt?: number },
  ): Promise<AssetRecord> {
    const { size } = await stat(file)
    if (size === 0) throw new ApiError('validation', `${draft.filename} is empty`, { field: 'body.file' })
    if (size > ASSET_MAX_BYTES)
      throw new ApiError('payload_too_large', `${draft.filename} is ${size} bytes; an asset is at most ${ASSET_MAX_BYTES} (50 MiB)`, {
        limitBytes: ASSET_MAX_BYTES,
      })
    // Loaded on the first upload: file-type is 30 modules every start would pay for (about 0.1 s).
    const { fileTypeFromFile } = await import('file-type')
    const detected = await fileTypeFromFile(file)
    const named = contentTypeFor(draft.filename)
    let contentType: string
    if (detected !== undefined) {
      if (draft.contentType !== null && kindOf(draft.contentType) !== kindOf(detected.mime) && kindOf(draft.contentType) !== 'other') {
        throw new ApiError(
          'validation',
          `${draft.filename} was declared ${draft.contentType}, but its bytes are ${detected.mime}; upload it with its real type`,
          { field: 'body.contentType', detected: detected.mime },
        )
      }
      contentType = detected.mime
    } else {
      // Not a binary format file-type knows: text (by its declared type or name) or plain bytes.
      const claimed = draft.contentType ?? named
      if (kindOf(claimed) === 'image' && !TEXTUAL.test(claimed))
        throw new ApiError('validation', `${draft.filename} was declared ${claimed}, but its bytes are not an image format`, {
          field: 'body.contentType',
        })
      contentType = TEXTUAL.test(claimed) || claimed === 'application/octet-stream' ? claimed : 'application/octet-stream'
    }
    let width: number | null = null
    let height: number | null = null
    if (kindOf(contentType) === 'image' && contentType !== 'image/svg+xml') {
      try {
        const sharp = await loadSharp()
        const meta = await sharp(file, { limitInputPixels: IMAGE_MAX_INPUT_PIXELS }).metadata()
        if ((meta.width ?? 0) * (meta.height ?? 0) > IMAGE_MAX_INPUT_PIXELS) throw new Error('too many pixels')
        // As displayed: EXIF orientation 5-8 turns the picture a quarter.
        const turned = (meta.orientation ?? 1) >= 5
        width = (turned ? meta.height : meta.width) ?? null
        height = (turned ? meta.width : meta.height) ?? null
      } catch (error) {
        const pixels = /pixel|too many/i.test((error as Error).message)
        throw new ApiError(
          'validation',
          pixels
            ? `${draft.filename} has more than ${IMAGE_MAX_INPUT_PIXELS.toLocaleString('en')} pixels; scale it down before uploading`
            : `${draft.filename} is not a readable ${contentType} image`,
          { field: 'body.file' },
        )
      }
    }
    return this.lanes.run(draft.websiteId, async () => {
      const { hash, unpin } = await this.store.blobs.adopt(file)
      const now = this.clock.now()
      const asset: AssetRecord = {
        v: 1,
        id: draft.id ?? newId('ast'),
        websiteId: draft.websiteId,
        kind: kindOf(contentType),
        filename: draft.filename,
        contentType,
        bytes: size,
        width,
        height,
        altText: draft.altText,
        hash,
        status: 'ready',
        createdAt: draft.createdAt ?? now,
        uploadExpiresAt: null,
      }
      try {
        await this.store.commit(() => {
          this.store.assets.put(asset.id, asset)
          this.store.assetsByWebsite.put([asset.websiteId, asset.createdAt, asset.id], asset.id)
          this.store.fileRefs.add(hash, 1)
        })
      } finally {
        unpin()
      }
      return asset
    })
  }

  /** A one-request upload: the bytes were streamed to `file` (the work area); it is checked and kept. */
  async upload(
    websiteId: string,
    file: string,
    meta: { filename: string; contentType: string | null; altText: string },
  ): Promise<AssetRecord> {
    try {
      return await this.#keep(file, { websiteId, ...meta })
    } finally {
      await rm(file, { force: true })
    }
  }

  // Two-step uploads

  #sign(assetId: string, bytes: number, contentType: string, expires: number): string {
    return createHmac('sha256', this.signingKey).update(`${assetId}\n${bytes}\n${contentType}\n${expires}`).digest('base64url')
  }

  /** A pending asset and the signature its upload carries (in headers, never in the URL). */
  async begin(
    websiteId: string,
    meta: { filename: string; contentType: string; bytes: number; altText: string },
  ): Promise<{ asset: AssetRecord; signature: UploadSignature }> {
    if (meta.bytes > ASSET_MAX_BYTES)
      throw new ApiError('payload_too_large', `An asset is at most ${ASSET_MAX_BYTES} bytes (50 MiB)`, {
        limitBytes: ASSET_MAX_BYTES,
        field: 'body.bytes',
      })
    const now = this.clock.now()
    const expires = now + ASSET_UPLOAD_URL_MS
    const asset: AssetRecord = {
      v: 1,
      id: newId('ast'),
      websiteId,
      kind: kindOf(meta.contentType),
      filename: meta.filename,
      contentType: meta.contentType,
      bytes: meta.bytes,
      width: null,
      height: null,
      altText: meta.altText,
      hash: null,
      status: 'pending',
      createdAt: now,
      uploadExpiresAt: expires,
    }
    await writeFile(this.store.files.uploadPath(asset.id), Buffer.alloc(0))
    await this.store.commit(() => this.store.assets.put(asset.id, asset))
    return { asset, signature: { expires, signature: this.#sign(asset.id, meta.bytes, meta.contentType, expires) } }
  }

  /** 403 unless the signature is this asset's and unexpired (a tampered or late upload is refused). */
  checkSignature(asset: AssetRecord, given: { expires: string; signature: string; contentType: string }): void {
    const expires = Number(given.expires)
    if (asset.status !== 'pending' || asset.uploadExpiresAt === null)
      throw new ApiError('conflict', `Asset ${asset.id} is not waiting for bytes (it is ${asset.status}); begin a new upload`)
    const expected = Buffer.from(this.#sign(asset.id, asset.bytes, given.contentType.split(';')[0].trim(), expires))
    const actual = Buffer.from(given.signature)
    if (!Number.isInteger(expires) || actual.length !== expected.length || !timingSafeEqual(actual, expected)) {
      throw new ApiError(
        'forbidden',
        'The upload signature does not match this asset, its size and type: send the X-Upload-Expires and X-Upload-Signature headers and the Content-Type that beginUpload answered, unchanged',
      )
    }
    if (this.clock.now() >= expires)
      throw new ApiError('forbidden', `This upload URL expired at ${new Date(expires).toISOString()}; begin the upload again`)
  }

  /** Where a pending asset's bytes are written. */
  pendingFile(asset: AssetRecord): string {
    return this.store.files.uploadPath(asset.id)
  }

  /** Finishes a two-step upload: the bytes that arrived are checked against what was declared. */
  async finalize(websiteId: string, assetId: string): Promise<AssetRecord> {
    const asset = this.get(websiteId, assetId)
    if (asset.status === 'ready') return asset
    const file = this.pendingFile(asset)
    const size = (await stat(file).catch(() => null))?.size ?? 0
    if (size !== asset.bytes)
      throw new ApiError(
        'conflict',
        `Asset ${assetId} was declared ${asset.bytes} bytes and ${size} arrived; PUT the whole file to its upload URL, then finalize`,
        { expectedBytes: asset.bytes, receivedBytes: size },
      )
    const kept = await this.#keep(file, {
      websiteId,
      filename: asset.filename,
      contentType: asset.contentType,
      altText: asset.altText,
      id: asset.id,
      createdAt: asset.createdAt,
    })
    await rm(file, { force: true })
    return kept
  }

  // Imports

  /** Fetches a public URL through the SSRF guard (redirects followed only to targets it allows again) and keeps it. */
  async import(websiteId: string, url: string, altText: string): Promise<AssetRecord> {
    let target = url
    for (let hop = 0; ; hop++) {
      let response
      try {
        response = await this.guard.request(target, {
          method: 'GET',
          headers: { accept: '*/*', 'user-agent': 'Plinth asset import' },
          body: '',
          maxBytes: ASSET_MAX_BYTES + 1,
        })
      } catch (error) {
        if (error instanceof OutboundError) throw new ApiError('validation', `${url}: ${error.message}`, { field: 'body.urls', url })
        throw error
      }
      if (response.status >= 300 && response.status < 400 && typeof response.headers.location === 'string') {
        if (hop >= ASSET_IMPORT_MAX_REDIRECTS)
          throw new ApiError('validation', `${url}: more than ${ASSET_IMPORT_MAX_REDIRECTS} redirects`, { field: 'body.urls', url })
        target = new URL(response.headers.location, target).toString()
        continue
      }
      if (response.status !== 200)
        throw new ApiError('validation', `${url} answered ${response.status}; import only URLs that serve the file`, {
          field: 'body.urls',
          url,
        })
      if (response.truncated)
        throw new ApiError('payload_too_large', `${url} is over ${ASSET_MAX_BYTES} bytes (50 MiB)`, {
          field: 'body.urls',
          url,
          limitBytes: ASSET_MAX_BYTES,
        })
      const name = decodeURIComponent(new URL(target).pathname.split('/').pop() || 'download').slice(0, 200) || 'download'
      const file = this.store.files.uploadPath(newId('upl'))
      await writeFile(file, response.body)
      const declared = typeof response.headers['content-type'] === 'string' ? response.headers['content-type'].split(';')[0].trim() : null
      try {
        return await this.#keep(file, { websiteId, filename: name, contentType: declared, altText })
      } finally {
        await rm(file, { force: true })
      }
    }
  }

  /** Changes the filename or alt text (the bytes, and so the URL, stay). */
  async update(websiteId: string, assetId: string, change: { filename?: string; altText?: string }): Promise<AssetRecord> {
    return this.lanes.run(websiteId, async () => {
      const asset = this.get(websiteId, assetId)
      const next = {
        ...asset,
        ...(change.filename === undefined ? {} : { filename: change.filename }),
        ...(change.altText === undefined ? {} : { altText: change.altText }),
      }
      await this.store.commit(() => this.store.assets.put(asset.id, next))
      return next
    })
  }

  /**
   * Archives an asset (lists leave it out; its link keeps working and its bytes still count), or with
   * `permanent` deletes it, its variants, and their bytes when nothing else names them.
   */
  async delete(websiteId: string, assetId: string, options: { permanent?: boolean } = {}): Promise<'archived' | 'deleted'> {
    return this.lanes.run(websiteId, async () => {
      const asset = this.get(websiteId, assetId)
      if (options.permanent !== true && asset.status === 'ready') {
        if (asset.archivedAt === undefined)
          await this.store.commit(() => this.store.assets.put(asset.id, { ...asset, archivedAt: this.clock.now() }))
        return 'archived' as const
      }
      const hashes: string[] = []
      await this.store.commit(() => hashes.push(...this.#remove(asset)))
      await this.store.blobs.release(hashes)
      if (asset.status === 'pending') await rm(this.pendingFile(asset), { force: true })
      return 'deleted' as const
    })
  }

  /** Every asset of a website, in one transaction (the website's purge; nothing left is a no-op). */
  async removeWebsite(websiteId: string): Promise<void> {
    return this.lanes.run(
      websiteId,
      async () => {
        const assets: AssetRecord[] = []
        for (const { value } of this.store.assetsByWebsite.range({
          start: [websiteId, 0, ''],
          end: [websiteId, Number.MAX_SAFE_INTEGER, ''],
        })) {
          const asset = this.store.assets.get(value)
          if (asset !== undefined) assets.push(asset)
        }
        if (assets.length === 0) return
        const hashes: string[] = []
        await this.store.commit(() => {
          for (const asset of assets) hashes.push(...this.#remove(asset))
        })
        await this.store.blobs.release(hashes)
        for (const asset of assets) if (asset.status === 'pending') await rm(this.pendingFile(asset), { force: true })
      },
      { evenIfGone: true },
    )
  }

  /** Removes an asset and its variants inside a commit; answers the hashes that lost a reference. */
  #remove(asset: AssetRecord): string[] {
    const hashes: string[] = []
    this.store.assets.remove(asset.id)
    this.store.assetsByWebsite.remove([asset.websiteId, asset.createdAt, asset.id])
    if (asset.hash !== null) {
      this.store.fileRefs.add(asset.hash, -1)
      hashes.push(asset.hash)
    }
    for (const { key, value } of this.store.assetVariants.range({ start: [asset.id, ''], end: [asset.id, '\uffff'] })) {
      this.store.assetVariants.remove(key)
      this.store.fileRefs.add(value, -1)
      this.store.variantCounts.add([asset.websiteId], -1)
      hashes.push(value)
    }
    return hashes
  }

  /** Keeps a rendered variant's bytes under its key (counted against the website's variant cap). */
  async keepVariant(asset: AssetRecord, key: string, bytes: Buffer): Promise<void> {
    const file = this.store.files.uploadPath(newId('upl'))
    await writeFile(file, bytes)
    await this.lanes.run(asset.websiteId, async () => {
      if (this.store.assets.get(asset.id) === undefined || this.store.assetVariants.get([asset.id, key]) !== undefined) {
        await rm(file, { force: true })
        return
      }
      const { hash, unpin } = await this.store.blobs.adopt(file)
      try {
        await this.store.commit(() => {
          this.store.assetVariants.put([asset.id, key], hash)
          this.store.fileRefs.add(hash, 1)
          this.store.variantCounts.add([asset.websiteId], 1)
        })
      } finally {
        unpin()
      }
    })
  }

  /** Pending uploads past their signed URL's life go, with their bytes (the sweeper). */
  async sweep(): Promise<number> {
    const now = this.clock.now()
    const stale: AssetRecord[] = []
    for (const { value } of this.store.assets.range({ start: '', end: '\uffff' })) {
      if (value.status === 'pending' && value.uploadExpiresAt !== null && value.uploadExpiresAt + ASSET_UPLOAD_URL_MS <= now)
        stale.push(value)
      if (stale.length >= 1000) break
    }
    for (const asset of stale)
      await this.delete(asset.websiteId, asset.id).catch((error: unknown) =>
        this.log.error('dropping a stale pending asset failed', { assetId: asset.id, error: String(error) }),
      )
    return stale.length
  }
}
