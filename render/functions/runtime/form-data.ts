// FormData, its multipart/form-data encoding (a body of a Request or Response), and reading one back
// (request.formData()): multipart through @remix-run/multipart-parser, urlencoded through URLSearchParams.
// The class is written here: formdata-polyfill needs fetch-blob, which imports Node's streams.
import { getMultipartBoundary, parseMultipart } from '@remix-run/multipart-parser'
import URLSearchParams from 'core-js-pure/stable/url-search-params/index.js'
import { Blob, File, blobBytes } from './blob.js'
import { utf8Decode, utf8Encode } from './encoding.js'
import { INSPECT } from './inspect.js'

type Value = string | File
type Entry = [string, Value]

function entryOf(name: unknown, value: unknown, filename: unknown, arity: number): Entry {
  if (value instanceof Blob) {
    const file =
      value instanceof File && filename === undefined
        ? value
        : new File([value], filename !== undefined ? String(filename) : value instanceof File ? value.name : 'blob', {
            type: value.type,
            lastModified: value instanceof File ? value.lastModified : undefined,
          })
    return [String(name), file]
  }
  if (arity > 2 && filename !== undefined)
    throw new TypeError("Failed to execute 'append' on 'FormData': parameter 2 is not of type 'Blob'.")
  return [String(name), String(value)]
}

export class FormData {
  #entries: Entry[] = []

  constructor(form?: unknown) {
    if (form !== undefined) throw new TypeError('FormData takes no HTML form here: create it empty and append to it')
  }

  append(name: string, value: string | Blob, filename?: string): void {
    this.#entries.push(entryOf(name, value, filename, arguments.length))
  }

  set(name: string, value: string | Blob, filename?: string): void {
    const entry = entryOf(name, value, filename, arguments.length)
    const first = this.#entries.findIndex(([n]) => n === entry[0])
    if (first < 0) {
      this.#entries.push(entry)
      return
    }
    this.#entries = this.#entries.filter(([n], i) => i === first || n !== entry[0])
    this.#entries[first] = entry
  }

  get(name: string): Value | null {
    const key = String(name)
    const entry = this.#entries.find(([n]) => n === key)
    return entry === undefined ? null : entry[1]
  }

  getAll(name: string): Value[] {
    const key = String(name)
    return this.#entries.filter(([n]) => n === key).map(([, v]) => v)
  }

  has(name: string): boolean {
    const key = String(name)
    return this.#entries.some(([n]) => n === key)
  }

  delete(name: string): void {
    const key = String(name)
    this.#entries = this.#entries.filter(([n]) => n !== key)
  }

  forEach(callback: (value: Value, name: string, parent: FormData) => void, thisArg?: unknown): void {
    for (const [name, value] of this.entries()) callback.call(thisArg, value, name, this)
  }

  *entries(): IterableIterator<Entry> {
    // Live: an entry appended while iterating is visited, as the spec's iterator does.
    for (let i = 0; i < this.#entries.length; i++) yield [this.#entries[i][0], this.#entries[i][1]]
  }

  *keys(): IterableIterator<string> {
    for (const [name] of this.entries()) yield name
  }

  *values(): IterableIterator<Value> {
    for (const [, value] of this.entries()) yield value
  }

  [Symbol.iterator](): IterableIterator<Entry> {
    return this.entries()
  }

  [INSPECT](): object {
    return Object.fromEntries(this.#entries.map(([n, v]) => [n, v]))
  }
  get [Symbol.toStringTag](): string {
    return 'FormData'
  }
}

// The HTML spec's escaping of names and filenames in multipart/form-data.
const escapeName = (text: string) => text.replace(/\n/g, '%0A').replace(/\r/g, '%0D').replace(/"/g, '%22')
const normalizeNewlines = (text: string) => text.replace(/\r\n|\r|\n/g, '\r\n')

/** A FormData as a multipart/form-data body and its content type. */
export function encodeMultipart(form: FormData): { bytes: Uint8Array; type: string } {
  let boundary = '----PlinthFormBoundary'
  for (let i = 0; i < 24; i++) boundary += 'abcdefghijklmnopqrstuvwxyz0123456789'[Math.floor(Math.random() * 36)]
  const chunks: Uint8Array[] = []
  for (const [name, value] of form) {
    let head = `--${boundary}\r\nContent-Disposition: form-data; name="${escapeName(normalizeNewlines(name))}"`
    if (typeof value === 'string') {
      chunks.push(utf8Encode(`${head}\r\n\r\n${normalizeNewlines(value)}\r\n`))
      continue
    }
    head += `; filename="${escapeName(value.name)}"\r\nContent-Type: ${value.type || 'application/octet-stream'}\r\n\r\n`
    chunks.push(utf8Encode(head), blobBytes(value), utf8Encode('\r\n'))
  }
  chunks.push(utf8Encode(`--${boundary}--\r\n`))
  let size = 0
  for (const chunk of chunks) size += chunk.byteLength
  const bytes = new Uint8Array(size)
  let offset = 0
  for (const chunk of chunks) {
    bytes.set(chunk, offset)
    offset += chunk.byteLength
  }
  return { bytes, type: `multipart/form-data; boundary=${boundary}` }
}

/** A body read as form data, by its Content-Type (the two kinds Body.formData() reads). */
export function parseFormData(bytes: Uint8Array, contentType: string | null): FormData {
  const essence = (contentType ?? '').split(';')[0].trim().toLowerCase()
  const form = new FormData()
  if (essence === 'multipart/form-data') {
    const boundary = getMultipartBoundary(contentType!)
    if (boundary === null) throw new TypeError('The multipart/form-data Content-Type header has no boundary')
    try {
      // The whole body is already in memory (and its size the host's to limit): no part limit below it.
      const limit = Math.max(bytes.byteLength, 1)
      for (const part of parseMultipart(bytes, { boundary, maxFileSize: limit, maxTotalSize: limit, maxParts: 10_000 })) {
        const name = part.name
        if (name === undefined) continue
        const filename = part.filename
        if (filename === undefined) form.append(name, utf8Decode(part.bytes))
        else form.append(name, new File([part.bytes], filename, { type: part.headers['content-type'] ?? 'application/octet-stream' }))
      }
    } catch (error) {
      throw new TypeError(`The body is not valid multipart/form-data: ${error instanceof Error ? error.message : String(error)}`)
    }
    return form
  }
  if (essence === 'application/x-www-form-urlencoded') {
    for (const [name, value] of new URLSearchParams(utf8Decode(bytes))) form.append(name, value)
    return form
  }
  throw new TypeError(
    'Unrecognized Content-Type header value. FormData can only parse the following MIME types: multipart/form-data, application/x-www-form-urlencoded',
  )
}
