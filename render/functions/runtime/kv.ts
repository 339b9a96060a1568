// env.KV: Cloudflare's KV namespace API over the host's 'kv' operation. What Cloudflare checks before
// a request leaves the Worker is checked here too, with errors worded as Cloudflare's are; the value
// limit is this platform's (1 MiB), not Cloudflare's 25 MiB.
import { ReadableStream } from 'web-streams-polyfill'
import { bytesStream } from './blob.js'
import { readAll } from './body.js'
import { bytesOf, utf8Decode, utf8Encode } from './encoding.js'
import { exactBuffer, hostCall, parseJson, toJson } from './host.js'

export const KV_VALUE_MAX = 1024 * 1024
const KEY_MAX = 512
const METADATA_MAX = 1024
const LIST_MAX = 1000
const BULK_MAX = 100
const TYPES = new Set(['text', 'json', 'arrayBuffer', 'stream'])

type ValueType = 'text' | 'json' | 'arrayBuffer' | 'stream'
interface GetOptions {
  type?: ValueType
  cacheTtl?: number
}

function checkKey(key: unknown, op: string): string {
  const name = String(key)
  if (name === '') throw new Error(`KV ${op} failed: 400 Key names must not be empty.`)
  if (name === '.' || name === '..') throw new Error(`KV ${op} failed: 400 Illegal key name "${name}": "." and ".." cannot be key names.`)
  const length = utf8Encode(name).byteLength
  if (length > KEY_MAX) throw new Error(`KV ${op} failed: 414 UTF-8 encoded length of ${length} exceeds key length limit of ${KEY_MAX}.`)
  return name
}

function readOptions(options: unknown, op: string): ValueType {
  const given: { type?: string; cacheTtl?: number } = typeof options === 'string' ? { type: options } : ((options ?? {}) as GetOptions)
  const type = given.type ?? 'text'
  if (!TYPES.has(type)) throw new TypeError('Unknown response type. Possible types are "text", "arrayBuffer", "json", and "stream".')
  if (given.cacheTtl !== undefined) {
    const ttl = Number(given.cacheTtl)
    if (!Number.isFinite(ttl) || ttl < 60)
      throw new Error(`KV ${op} failed: 400 Invalid cache_ttl of ${given.cacheTtl}. Cache TTL must be at least 60.`)
  }
  return type as ValueType
}

function decode(bytes: Uint8Array, type: ValueType): unknown {
  switch (type) {
    case 'text':
      return utf8Decode(bytes)
    case 'json':
      return parseJson(utf8Decode(bytes))
    case 'arrayBuffer':
      return exactBuffer(bytes)
    default:
      return bytesStream(bytes)
  }
}

const CONSTRUCTING = Symbol('constructing')

export class KVNamespace {
  readonly #id: number

  constructor(key: symbol, id: number) {
    if (key !== CONSTRUCTING) throw new TypeError('Illegal constructor')
    this.#id = id
  }

  async #call(op: string, request: object, bytes?: Uint8Array): Promise<[unknown, Uint8Array]> {
    try {
      const [json, data] = await hostCall(this.#id, 'kv', toJson(request), bytes === undefined ? undefined : exactBuffer(bytes))
      return [parseJson(json), new Uint8Array(data ?? new ArrayBuffer(0))]
    } catch (error) {
      throw new Error(`KV ${op} failed: ${error instanceof Error ? error.message : String(error)}`)
    }
  }

  async #get(key: unknown, type: ValueType): Promise<{ value: unknown; metadata: unknown }> {
    const name = checkKey(key, 'GET')
    const [answer, bytes] = await this.#call('GET', { op: 'get', key: name })
    const found = answer as { found?: boolean; metadata?: unknown }
    if (found.found !== true) return { value: null, metadata: null }
    return { value: decode(bytes, type), metadata: found.metadata ?? null }
  }

  async #getMany(keys: unknown[], options: unknown, withMetadata: boolean): Promise<Map<string, unknown>> {
    const type = readOptions(options, 'GET_BULK')
    if (type !== 'text' && type !== 'json') throw new TypeError('A bulk get reads values as "text" or "json" only')
    if (keys.length > BULK_MAX) throw new Error(`KV GET_BULK failed: 400 You can request a maximum of ${BULK_MAX} keys`)
    const names = keys.map((key) => checkKey(key, 'GET_BULK'))
    const results = await Promise.all(names.map((name) => this.#get(name, type)))
    return new Map(names.map((name, i) => [name, withMetadata ? (results[i].value === null ? null : results[i]) : results[i].value]))
  }

  async get(key: unknown, options?: unknown): Promise<unknown> {
    if (Array.isArray(key)) return this.#getMany(key, options, false)
    return (await this.#get(key, readOptions(options, 'GET'))).value
  }

  async getWithMetadata(key: unknown, options?: unknown): Promise<unknown> {
    if (Array.isArray(key)) return this.#getMany(key, options, true)
    const { value, metadata } = await this.#get(key, readOptions(options, 'GET'))
    return { value, metadata, cacheStatus: null }
  }

  async put(key: unknown, value: unknown, options?: { expiration?: number; expirationTtl?: number; metadata?: unknown }): Promise<void> {
    const name = checkKey(key, 'PUT')
    const tooLarge = (size: number) => new Error(`KV PUT failed: 413 Value length of ${size} exceeds limit of ${KV_VALUE_MAX}.`)
    let bytes: Uint8Array
    if (typeof value === 'string') bytes = utf8Encode(value)
    else if (value instanceof ArrayBuffer || ArrayBuffer.isView(value)) bytes = bytesOf(value)
    else if (value instanceof ReadableStream) bytes = await readAll(value, KV_VALUE_MAX, tooLarge)
    else throw new TypeError('KV put() accepts only strings, ArrayBuffers, ArrayBufferViews, and ReadableStreams as values.')
    if (bytes.byteLength > KV_VALUE_MAX) throw tooLarge(bytes.byteLength)
    const request: Record<string, unknown> = { op: 'put', key: name }
    if (options?.expiration !== undefined && options.expiration !== null) {
      const expiration = Number(options.expiration)
      if (!Number.isFinite(expiration) || expiration < Date.now() / 1000 + 60)
        throw new Error(
          `KV PUT failed: 400 Invalid expiration of ${options.expiration}. Please specify integer greater than the current number of seconds since the UNIX epoch plus 60.`,
        )
      request.expiration = Math.floor(expiration)
    }
    if (options?.expirationTtl !== undefined && options.expirationTtl !== null) {
      const ttl = Number(options.expirationTtl)
      if (!Number.isFinite(ttl) || ttl < 60)
        throw new Error(`KV PUT failed: 400 Invalid expiration_ttl of ${options.expirationTtl}. Expiration TTL must be at least 60.`)
      request.expirationTtl = Math.floor(ttl)
    }
    if (options?.metadata !== undefined && options.metadata !== null) {
      const text = JSON.stringify(options.metadata)
      if (text === undefined) throw new TypeError('KV put() metadata must be serializable to JSON')
      const length = utf8Encode(text).byteLength
      if (length > METADATA_MAX) throw new Error(`KV PUT failed: 413 Metadata length of ${length} exceeds limit of ${METADATA_MAX}.`)
      request.metadata = parseJson(text)
    }
    await this.#call('PUT', request, bytes)
  }

  async delete(key: unknown): Promise<void> {
    const name = checkKey(key, 'DELETE')
    await this.#call('DELETE', { op: 'delete', key: name })
  }

  async list(options?: { prefix?: string | null; limit?: number; cursor?: string | null }): Promise<unknown> {
    const request: Record<string, unknown> = { op: 'list' }
    if (options?.prefix !== undefined && options.prefix !== null) request.prefix = String(options.prefix)
    if (options?.limit !== undefined) {
      const limit = Number(options.limit)
      if (!Number.isInteger(limit) || limit < 1)
        throw new Error(`KV LIST failed: 400 Invalid key_count_limit of ${options.limit}. Please specify an integer greater than 0.`)
      if (limit > LIST_MAX)
        throw new Error(
          `KV LIST failed: 400 Invalid key_count_limit of ${options.limit}. Please specify an integer less than ${LIST_MAX + 1}.`,
        )
      request.limit = limit
    }
    if (options?.cursor !== undefined && options.cursor !== null) request.cursor = String(options.cursor)
    const [answer] = await this.#call('LIST', request)
    const listed = answer as {
      keys?: { name: string; expiration?: number; metadata?: unknown }[]
      list_complete?: boolean
      cursor?: string
    }
    const keys = (Array.isArray(listed.keys) ? listed.keys : []).map((key) => {
      const entry: Record<string, unknown> = { name: String(key.name) }
      if (key.expiration !== undefined && key.expiration !== null) entry.expiration = key.expiration
      if (key.metadata !== undefined && key.metadata !== null) entry.metadata = key.metadata
      return entry
    })
    const complete = listed.list_complete !== false
    return complete
      ? { keys, list_complete: true, cacheStatus: null }
      : { keys, list_complete: false, cursor: listed.cursor ?? '', cacheStatus: null }
  }

  get [Symbol.toStringTag](): string {
    return 'KvNamespace'
  }
}

/** The KV binding of one request. */
export function kvBinding(id: number): KVNamespace {
  return new KVNamespace(CONSTRUCTING, id)
}
