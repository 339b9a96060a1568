// The body half of Request and Response (the Fetch Standard's Body mixin). A body is whole bytes (what
// arrives from the host, a string, a Blob) or a ReadableStream; bytes become a stream only when a site
// asks for `.body`, so reading a body the usual ways copies nothing.
import URLSearchParams from 'core-js-pure/stable/url-search-params/index.js'
import { ReadableStream } from 'web-streams-polyfill'
import { Blob, blobBytes, bytesStream } from './blob.js'
import { bytesOf, utf8Decode, utf8Encode } from './encoding.js'
import { FormData, encodeMultipart, parseFormData } from './form-data.js'
import type { Headers } from './headers.js'
import { parseJson } from './host.js'
import { inspect } from './inspect.js'

export type BodySource = Uint8Array | ReadableStream<Uint8Array> | null

const USED = 'Body has already been used. It can only be used once. Use tee() first if you need to read it twice.'

/**
 * Whether a stream has been read from. The polyfill keeps the spec's [[disturbed]] slot as `_disturbed`;
 * if a later version renames it, this says false and only `locked` catches a stream read elsewhere.
 */
export function disturbed(stream: ReadableStream<unknown>): boolean {
  return (stream as unknown as { _disturbed?: unknown })._disturbed === true
}

/** A chunk of a body stream as bytes; anything else (a string) is the site's mistake, named. */
export function chunkBytes(value: unknown): Uint8Array {
  if (value instanceof Uint8Array) return value
  if (value instanceof ArrayBuffer || ArrayBuffer.isView(value)) return bytesOf(value)
  throw new TypeError(
    `A body stream gave a chunk that is not bytes (${inspect(value).slice(0, 60)}): enqueue Uint8Arrays (pipe strings through a TextEncoderStream)`,
  )
}

export function concatBytes(chunks: Uint8Array[], size: number): Uint8Array {
  if (chunks.length === 1) return chunks[0]
  const bytes = new Uint8Array(size)
  let offset = 0
  for (const chunk of chunks) {
    bytes.set(chunk, offset)
    offset += chunk.byteLength
  }
  return bytes
}

/** Every byte of a stream; past `limit` it is cancelled and `tooLarge` thrown. */
export async function readAll(stream: ReadableStream<unknown>, limit = Infinity, tooLarge?: (size: number) => Error): Promise<Uint8Array> {
  const reader = stream.getReader()
  const chunks: Uint8Array[] = []
  let size = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    let chunk: Uint8Array
    try {
      chunk = chunkBytes(value)
    } catch (error) {
      void reader.cancel(error).catch(() => undefined)
      throw error
    }
    size += chunk.byteLength
    if (size > limit) {
      const error = tooLarge?.(size) ?? new RangeError(`The body is larger than ${limit} bytes`)
      void reader.cancel(error).catch(() => undefined)
      throw error
    }
    chunks.push(chunk)
  }
  // Copied when a single chunk is the whole body: the stream's source may still hold on to it.
  return chunks.length === 1 ? chunks[0].slice() : concatBytes(chunks, size)
}

/** A body given to a constructor, as a source and the Content-Type it implies (if any). */
export function extractBody(init: unknown): { source: BodySource; type: string | null } {
  if (typeof init === 'string') return { source: utf8Encode(init), type: 'text/plain;charset=UTF-8' }
  if (init instanceof ReadableStream) {
    if (init.locked || disturbed(init)) throw new TypeError('This ReadableStream is locked or has been read from: it cannot be a body')
    return { source: init as ReadableStream<Uint8Array>, type: null }
  }
  if (init instanceof ArrayBuffer || ArrayBuffer.isView(init)) return { source: bytesOf(init).slice(), type: null }
  // A Blob's bytes never change: shared, not copied.
  if (init instanceof Blob) return { source: blobBytes(init), type: init.type === '' ? null : init.type }
  if (init instanceof URLSearchParams)
    return { source: utf8Encode(init.toString()), type: 'application/x-www-form-urlencoded;charset=UTF-8' }
  if (init instanceof FormData) {
    const { bytes, type } = encodeMultipart(init)
    return { source: bytes, type }
  }
  // Anything else becomes a string, as WebIDL's conversion of the BodyInit union does.
  return { source: utf8Encode(String(init)), type: 'text/plain;charset=UTF-8' }
}

export interface BodyAccess {
  set(body: Body, source: BodySource): void
  /** Whether there is a body (used or not), without turning bytes into a stream as `.body` does. */
  present(body: Body): boolean
  /** The source, the body now used (for a new Request taking it, or for sending it). */
  take(body: Body): BodySource
  /** A second source for a clone: the same bytes, or one branch of a tee. */
  clone(body: Body): BodySource
}

export let bodyAccess: BodyAccess

export abstract class Body {
  #source: BodySource = null
  /** Read or handed on by the runtime (a stream read by the site directly shows as disturbed instead). */
  #used = false

  abstract get headers(): Headers

  static {
    bodyAccess = {
      set(body, source) {
        body.#source = source
        body.#used = false
      },
      present(body) {
        return body.#source !== null
      },
      take(body) {
        if (body.#unusable()) throw new TypeError(USED)
        body.#used = true
        return body.#source
      },
      clone(body) {
        if (body.#unusable()) throw new TypeError('Cannot clone a body that has already been used')
        const source = body.#source
        if (!(source instanceof ReadableStream)) return source
        const [mine, theirs] = source.tee()
        body.#source = mine
        return theirs
      },
    }
  }

  #unusable(): boolean {
    const source = this.#source
    return this.#used || (source instanceof ReadableStream && (source.locked || disturbed(source)))
  }

  get body(): ReadableStream<Uint8Array> | null {
    const source = this.#source
    if (source === null || source instanceof ReadableStream) return source
    // Read already: an empty, closed stream stands for it (bodyUsed stays true).
    const stream = this.#used
      ? new ReadableStream<Uint8Array>({ start: (controller) => controller.close() })
      : bytesStream(source, () => {
          this.#used = true
        })
    this.#source = stream
    return stream
  }

  get bodyUsed(): boolean {
    const source = this.#source
    return this.#used || (source instanceof ReadableStream && disturbed(source))
  }

  /** The whole body; `owned` when the bytes are a fresh copy the caller may hand out. */
  async #read(): Promise<{ bytes: Uint8Array; owned: boolean }> {
    // Checked before any await: a second read in the same tick is refused too.
    if (this.#unusable()) throw new TypeError(USED)
    this.#used = true
    const source = this.#source
    if (source === null) return { bytes: new Uint8Array(0), owned: true }
    if (source instanceof Uint8Array) return { bytes: source, owned: false }
    return { bytes: await readAll(source), owned: true }
  }

  async arrayBuffer(): Promise<ArrayBuffer> {
    const { bytes, owned } = await this.#read()
    return owned && bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength
      ? (bytes.buffer as ArrayBuffer)
      : bytes.slice().buffer
  }

  async bytes(): Promise<Uint8Array> {
    const { bytes, owned } = await this.#read()
    return owned ? bytes : bytes.slice()
  }

  async text(): Promise<string> {
    return utf8Decode((await this.#read()).bytes)
  }

  async json(): Promise<unknown> {
    return parseJson(await this.text())
  }

  async blob(): Promise<Blob> {
    const { bytes } = await this.#read()
    return new Blob([bytes], { type: this.headers.get('content-type') ?? '' })
  }

  async formData(): Promise<FormData> {
    const { bytes } = await this.#read()
    return parseFormData(bytes, this.headers.get('content-type'))
  }
}
