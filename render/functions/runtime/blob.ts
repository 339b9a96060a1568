// Blob and File, held as bytes in memory (a function's bodies are whole in memory anyway). Written
// here: fetch-blob, the maintained implementation, imports Node's streams.
import { ReadableStream } from 'web-streams-polyfill'
import { bytesOf, utf8Decode, utf8Encode } from './encoding.js'
import { INSPECT } from './inspect.js'

type BlobPart = string | ArrayBuffer | ArrayBufferView | Blob

let blobBytes: (blob: Blob) => Uint8Array

/** A stream giving these bytes once a reader asks (highWaterMark 0: nothing is read ahead). */
export function bytesStream(bytes: Uint8Array, onRead?: () => void): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        onRead?.()
        // A copy: the reader may change its chunk, and these bytes may be shared with a clone.
        if (bytes.byteLength > 0) controller.enqueue(bytes.slice())
        controller.close()
      },
    },
    { highWaterMark: 0 },
  )
}

function normalizeType(type: unknown): string {
  const text = type === undefined ? '' : String(type)
  return /^[\x20-\x7e]*$/.test(text) ? text.toLowerCase() : ''
}

export class Blob {
  readonly #bytes: Uint8Array
  readonly #type: string

  constructor(parts?: Iterable<BlobPart>, options?: { type?: string; endings?: string }) {
    const chunks: Uint8Array[] = []
    let size = 0
    if (parts !== undefined && parts !== null) {
      if (typeof parts !== 'object' || typeof (parts as Iterable<BlobPart>)[Symbol.iterator] !== 'function')
        throw new TypeError("Failed to construct 'Blob': The provided value cannot be converted to a sequence.")
      for (const part of parts) {
        const bytes =
          part instanceof Blob
            ? part.#bytes
            : part instanceof ArrayBuffer || ArrayBuffer.isView(part)
              ? bytesOf(part).slice()
              : utf8Encode(String(part))
        chunks.push(bytes)
        size += bytes.byteLength
      }
    }
    const bytes = chunks.length === 1 && chunks[0].byteLength === size ? chunks[0] : new Uint8Array(size)
    if (bytes !== chunks[0]) {
      let offset = 0
      for (const chunk of chunks) {
        bytes.set(chunk, offset)
        offset += chunk.byteLength
      }
    }
    this.#bytes = bytes
    this.#type = normalizeType(options?.type)
  }

  static {
    blobBytes = (blob) => blob.#bytes
  }

  get size(): number {
    return this.#bytes.byteLength
  }
  get type(): string {
    return this.#type
  }

  slice(start?: number, end?: number, contentType?: string): Blob {
    const size = this.#bytes.byteLength
    const clamp = (value: number | undefined, fallback: number) => {
      if (value === undefined) return fallback
      const n = Math.trunc(Number(value)) || 0
      return n < 0 ? Math.max(size + n, 0) : Math.min(n, size)
    }
    const from = clamp(start, 0)
    const to = Math.max(clamp(end, size), from)
    return new Blob([this.#bytes.subarray(from, to)], { type: contentType })
  }

  async arrayBuffer(): Promise<ArrayBuffer> {
    return this.#bytes.slice().buffer
  }
  async bytes(): Promise<Uint8Array> {
    return this.#bytes.slice()
  }
  async text(): Promise<string> {
    return utf8Decode(this.#bytes)
  }
  stream(): ReadableStream<Uint8Array> {
    return bytesStream(this.#bytes)
  }

  [INSPECT](): object {
    return { size: this.size, type: this.type }
  }
  get [Symbol.toStringTag](): string {
    return 'Blob'
  }
}

export class File extends Blob {
  readonly #name: string
  readonly #lastModified: number

  constructor(bits: Iterable<BlobPart>, name: string, options?: { type?: string; lastModified?: number }) {
    if (arguments.length < 2) throw new TypeError("Failed to construct 'File': 2 arguments required.")
    super(bits, options)
    this.#name = String(name)
    const modified = options?.lastModified === undefined ? Date.now() : Number(options.lastModified)
    this.#lastModified = Number.isFinite(modified) ? Math.trunc(modified) : 0
  }

  get name(): string {
    return this.#name
  }
  get lastModified(): number {
    return this.#lastModified
  }
  get webkitRelativePath(): string {
    return ''
  }

  override [INSPECT](): object {
    return { name: this.name, size: this.size, type: this.type, lastModified: this.lastModified }
  }
  override get [Symbol.toStringTag](): string {
    return 'File'
  }
}

export { blobBytes }
