import { createHash } from 'node:crypto'
import { createReadStream } from 'node:fs'
import { promisify } from 'node:util'
import { brotliCompress, constants, gzip } from 'node:zlib'
import { BROTLI_MAX_QUALITY_BYTES, COMPRESS_MIN_BYTES } from './limits.js'
import { isCompressible } from './content-type.js'
import type { ManifestEntry } from './schemas/records.js'

const gzipAsync = promisify(gzip)
const brotliAsync = promisify(brotliCompress)

/** sha256 of bytes, hex. */
export function sha256(bytes: Uint8Array | string): string {
  return createHash('sha256').update(bytes).digest('hex')
}

/** SHA-256 (hex) and size of a file, read as a stream in 1 MiB chunks. */
export async function sha256File(path: string): Promise<{ sha256: string; size: number }> {
  const hash = createHash('sha256')
  let size = 0
  for await (const chunk of createReadStream(path, { highWaterMark: 1 << 20 })) {
    hash.update(chunk as Buffer)
    size += (chunk as Buffer).length
  }
  return { sha256: hash.digest('hex'), size }
}

/** The digest of a manifest: equal digests mean identical content at identical paths. */
export function manifestDigest(files: Readonly<Record<string, ManifestEntry>>): string {
  const hash = createHash('sha256')
  for (const path of Object.keys(files).sort()) {
    const f = files[path]
    hash.update(`${path}\0${f.hash}\0${f.contentType}\n`)
  }
  return hash.digest('hex')
}

/** Compressible content of at least 1 KiB gets precompressed variants. */
export function shouldCompress(bytes: Uint8Array, contentType: string): boolean {
  return bytes.length >= COMPRESS_MIN_BYTES && isCompressible(contentType)
}

export interface Variants {
  gzip: Buffer | null
  br: Buffer | null
}

/**
 * gzip and brotli variants of compressible content of at least 1 KiB, each kept only when it is
 * smaller than the original. zlib runs on libuv's thread pool, so the event loop keeps serving.
 */
export async function compressVariants(bytes: Buffer, contentType: string): Promise<Variants> {
  if (!shouldCompress(bytes, contentType)) return { gzip: null, br: null }
  const quality = bytes.length <= BROTLI_MAX_QUALITY_BYTES ? 11 : 9
  const [gz, br] = await Promise.all([
    gzipAsync(bytes, { level: 9 }),
    brotliAsync(bytes, {
      params: {
        [constants.BROTLI_PARAM_QUALITY]: quality,
        [constants.BROTLI_PARAM_SIZE_HINT]: bytes.length,
        [constants.BROTLI_PARAM_MODE]: /^text\/|javascript|json|xml|svg/.test(contentType)
          ? constants.BROTLI_MODE_TEXT
          : constants.BROTLI_MODE_GENERIC,
      },
    }),
  ])
  return { gzip: gz.length < bytes.length ? gz : null, br: br.length < bytes.length ? br : null }
}

// ignoreBOM keeps a leading U+FEFF in the text: reading a file and writing it back changes nothing.
const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

/** Text when valid UTF-8 (byte for byte, a BOM included), else null. */
export function utf8OrNull(bytes: Uint8Array): string | null {
  try {
    return UTF8.decode(bytes)
  } catch {
    return null
  }
}
