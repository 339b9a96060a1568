import { createHash } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { loadSharp } from './sharp.js'
import { ApiError } from '../../core/errors.js'
import {
  IMAGE_CACHE_BYTES,
  IMAGE_MAX_DIMENSION,
  IMAGE_MAX_INPUT_PIXELS,
  IMAGE_VARIANTS_PER_SITE,
  IMAGE_WIDTH_LADDER,
} from '../../core/limits.js'
import type { AssetRecord } from '../../core/schemas/assets.js'
import type { FilesStore } from './tables.js'
import type { Assets } from './assets.js'

const FORMATS = { webp: 'image/webp', avif: 'image/avif', jpeg: 'image/jpeg', png: 'image/png' } as const
type Format = keyof typeof FORMATS
const FITS = ['cover', 'contain', 'inside'] as const
type Fit = (typeof FITS)[number]

export interface ImageParams {
  width: number | null
  height: number | null
  fit: Fit
  format: Format
  quality: number
}

export interface Variant {
  bytes: Buffer
  contentType: string
  etag: string
}

/** The variant's key: everything that changes its bytes. */
export function variantKey(p: ImageParams): string {
  return `${p.width ?? ''}x${p.height ?? ''}-${p.fit}-${p.format}-q${p.quality}`
}

function dimension(text: string, name: string): number {
  if (!/^\d{1,5}$/.test(text) || Number(text) < 1 || Number(text) > IMAGE_MAX_DIMENSION)
    throw new ApiError('validation', `${name} is a whole number of pixels from 1 to ${IMAGE_MAX_DIMENSION}`, { field: `query.${name}` })
  return Number(text)
}

/**
 * `?w=&h=&fit=&format=&q=` (`fm` as Netlify and imageUrl spell format), checked: unknown parameters,
 * sizes past 4096 and qualities outside 1-100 are a 400 that says what is accepted. The format
 * defaults to the original's when it is one of the four, else WebP.
 */
export function imageParams(query: string, asset: AssetRecord): ImageParams {
  const params = new URLSearchParams(query)
  for (const name of params.keys()) {
    if (!['w', 'h', 'fit', 'format', 'fm', 'q'].includes(name))
      throw new ApiError(
        'validation',
        `Unknown image parameter ${name}; use w, h, fit (cover, contain, inside), format or fm (webp, avif, jpeg, png) and q (1-100)`,
        { field: `query.${name}` },
      )
  }
  const width = params.has('w') ? dimension(params.get('w')!, 'w') : null
  const height = params.has('h') ? dimension(params.get('h')!, 'h') : null
  const fit = (params.get('fit') ?? 'inside') as Fit
  if (!FITS.includes(fit)) throw new ApiError('validation', 'fit is cover, contain or inside', { field: 'query.fit' })
  const original = Object.entries(FORMATS).find(([, type]) => type === asset.contentType)?.[0] as Format | undefined
  const format = (params.get('format') ?? params.get('fm') ?? original ?? 'webp') as Format
  if (!(format in FORMATS)) throw new ApiError('validation', 'format is webp, avif, jpeg or png', { field: 'query.format' })
  const q = params.get('q')
  if (q !== null && (!/^\d{1,3}$/.test(q) || Number(q) < 1 || Number(q) > 100))
    throw new ApiError('validation', 'q (quality) is a whole number from 1 to 100', { field: 'query.q' })
  return { width, height, fit, format, quality: q === null ? 75 : Number(q) }
}

/** Past the website's cap on distinct variants: the width rounds up to the ladder (height kept in proportion), quality to 50, 75 or 90. */
function laddered(p: ImageParams): ImageParams {
  const width = p.width === null ? null : (IMAGE_WIDTH_LADDER.find((w) => w >= p.width!) ?? IMAGE_MAX_DIMENSION)
  const height =
    p.height === null
      ? null
      : p.width === null
        ? (IMAGE_WIDTH_LADDER.find((h) => h >= p.height!) ?? IMAGE_MAX_DIMENSION)
        : Math.min(IMAGE_MAX_DIMENSION, Math.round((p.height * width!) / p.width))
  const quality = p.quality <= 60 ? 50 : p.quality <= 82 ? 75 : 90
  return { ...p, width, height, quality }
}

/**
 * Images resized on demand (issue 15): sharp on libvips' own threads (the event loop never waits on
 * a resize), EXIF orientation applied, metadata stripped (sharp's default), the input's pixels bounded.
 * Rendered variants are kept twice: in a memory LRU served synchronously like any static file, and in
 * the blob directory (a restart reads them back instead of resizing again). Concurrent requests for
 * one variant share one resize.
 */
export class Images {
  readonly #memory = new Map<string, Variant>()
  #memoryBytes = 0
  readonly #rendering = new Map<string, Promise<Variant>>()

  constructor(
    private readonly store: FilesStore,
    private readonly assets: Assets,
    /** Distinct variants a website may have before widths round up to the ladder. */
    private readonly variantsPerSite = IMAGE_VARIANTS_PER_SITE,
  ) {}

  /** The key a request is served under: its own, or laddered when the website has too many. */
  keyFor(asset: AssetRecord, params: ImageParams): { params: ImageParams; key: string } {
    const key = variantKey(params)
    if (
      this.store.assetVariants.get([asset.id, key]) !== undefined ||
      this.store.variantCounts.get([asset.websiteId]) < this.variantsPerSite
    )
      return { params, key }
    const rounded = laddered(params)
    return { params: rounded, key: variantKey(rounded) }
  }

  /** A variant in memory now (the synchronous path), or undefined. */
  cached(assetId: string, key: string): Variant | undefined {
    const id = `${assetId} ${key}`
    const hit = this.#memory.get(id)
    if (hit !== undefined) {
      // Least recently used out first: a hit moves to the end.
      this.#memory.delete(id)
      this.#memory.set(id, hit)
    }
    return hit
  }

  #remember(id: string, variant: Variant): void {
    if (variant.bytes.length > IMAGE_CACHE_BYTES / 8) return
    this.#memory.set(id, variant)
    this.#memoryBytes += variant.bytes.length
    for (const [old, kept] of this.#memory) {
      if (this.#memoryBytes <= IMAGE_CACHE_BYTES) break
      this.#memory.delete(old)
      this.#memoryBytes -= kept.bytes.length
    }
  }

  /** The variant from disk, or rendered now (and kept). */
  variant(asset: AssetRecord, file: string, params: ImageParams, key: string): Promise<Variant> {
    const id = `${asset.id} ${key}`
    let pending = this.#rendering.get(id)
    if (pending === undefined) {
      pending = this.#produce(asset, file, params, key).finally(() => this.#rendering.delete(id))
      this.#rendering.set(id, pending)
    }
    return pending
  }

  async #produce(asset: AssetRecord, file: string, params: ImageParams, key: string): Promise<Variant> {
    const contentType = FORMATS[params.format]
    const stored = this.store.assetVariants.get([asset.id, key])
    if (stored !== undefined) {
      const bytes = await readFile(this.store.files.path(stored)).catch(() => null)
      if (bytes !== null) {
        const variant = { bytes, contentType, etag: `"${stored.slice(0, 32)}"` }
        this.#remember(`${asset.id} ${key}`, variant)
        return variant
      }
    }
    let bytes: Buffer
    const sharp = await loadSharp()
    try {
      const image = sharp(file, { limitInputPixels: IMAGE_MAX_INPUT_PIXELS, failOn: 'error', animated: false })
        .rotate()
        .resize({ width: params.width ?? undefined, height: params.height ?? undefined, fit: params.fit, withoutEnlargement: true })
      bytes = await (
        params.format === 'png'
          ? image.png()
          : params.format === 'jpeg'
            ? image.jpeg({ quality: params.quality, mozjpeg: true })
            : params.format === 'avif'
              ? image.avif({ quality: params.quality, effort: 2 })
              : image.webp({ quality: params.quality })
      ).toBuffer()
    } catch (error) {
      const message = (error as Error).message
      if (/pixel limit|exceeds pixel/i.test(message))
        throw new ApiError(
          'validation',
          `This image has more than ${IMAGE_MAX_INPUT_PIXELS.toLocaleString('en')} pixels; it is not resized`,
        )
      throw new ApiError('validation', 'This asset could not be read as an image')
    }
    const hash = createHash('sha256').update(bytes).digest('hex')
    const variant = { bytes, contentType, etag: `"${hash.slice(0, 32)}"` }
    this.#remember(`${asset.id} ${key}`, variant)
    await this.assets.keepVariant(asset, key, bytes)
    return variant
  }
}
