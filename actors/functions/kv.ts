// A website's key-value store (`env.KV` in its functions): Cloudflare KV's operations and limits, kept in LMDB by the website's lane.
import { ApiError } from '../../core/errors.js'
import type { Clock } from '../../core/clock.js'
import type { FunctionKvRecord } from '../../core/schemas/functions.js'
import type { Mailboxes } from '../mailboxes.js'
import type { FunctionsStore } from './tables.js'

/** Cloudflare KV's limits, a value's size brought down to what one LMDB record holds well. */
export const KV_KEY_MAX_BYTES = 512
export const KV_VALUE_MAX_BYTES = 1024 * 1024
export const KV_METADATA_MAX_BYTES = 1024
export const KV_TTL_MIN_SECONDS = 60
export const KV_LIST_MAX = 1000
/** What one website may keep in all (its values' bytes). */
export const KV_SITE_MAX_BYTES = 100 * 1024 * 1024

/** A write a replica hands the primary (its function ran there): what `put` or `delete` was asked, the value as base64. */
export type KvWrite =
  | {
      op: 'put'
      websiteId: string
      key: string
      value: string
      options: { expiration?: number; expirationTtl?: number; metadata?: unknown }
    }
  | { op: 'delete'; websiteId: string; key: string }

export interface KvEntry {
  value: Uint8Array
  metadata: unknown
  expiration: number | null
}

/** Why a key is refused, in Cloudflare's words where it has them; null: fine. */
function keyProblem(key: string): string | null {
  if (key === '') return 'Key names must not be empty'
  if (key === '.' || key === '..') return `Illegal key name "${key}". Please use a different name.`
  if (Buffer.byteLength(key) > KV_KEY_MAX_BYTES)
    return `KV GET failed: 414 UTF-8 encoded length of ${Buffer.byteLength(key)} exceeds key length limit of ${KV_KEY_MAX_BYTES}.`
  return null
}

/**
 * Each website's key-value store. Reads come straight from the store (as a replica would read its own
 * copy); writes run in the website's lane, one commit each, so a put is durable when it resolves.
 * An expired key reads as absent and goes at its next write or list.
 */
export class FunctionKv {
  /** Bytes of values each website holds, counted on its first write since the start. */
  readonly #bytes = new Map<string, number>()
  /**
   * On a cluster's replica (whose store takes no commit): hands a write to the primary and resolves once
   * it is committed there and applied here (set by the composition root; null elsewhere).
   */
  forward: ((write: KvWrite) => Promise<void>) | null = null

  constructor(
    private readonly store: FunctionsStore,
    private readonly clock: Clock,
    private readonly lanes: Mailboxes,
  ) {}

  get(websiteId: string, key: string): KvEntry | null {
    const problem = keyProblem(key)
    if (problem !== null) throw new ApiError('validation', problem)
    const record = this.store.functionKv.get([websiteId, key])
    if (record === undefined || this.#expired(record)) return null
    return { value: record.value, metadata: record.metadata, expiration: record.expiration }
  }

  put(
    websiteId: string,
    key: string,
    value: Uint8Array,
    options: { expiration?: number; expirationTtl?: number; metadata?: unknown },
  ): Promise<void> {
    const problem = keyProblem(key)
    if (problem !== null) throw new ApiError('validation', problem)
    if (value.byteLength > KV_VALUE_MAX_BYTES)
      throw new ApiError(
        'payload_too_large',
        `KV put failed: the value is ${value.byteLength} bytes; a value is at most ${KV_VALUE_MAX_BYTES} bytes (1 MiB) here`,
      )
    const metadata = options.metadata === undefined ? null : options.metadata
    if (metadata !== null && Buffer.byteLength(JSON.stringify(metadata) ?? '') > KV_METADATA_MAX_BYTES)
      throw new ApiError('validation', `KV put failed: metadata is at most ${KV_METADATA_MAX_BYTES} bytes once serialized`)
    const now = Math.floor(this.clock.now() / 1000)
    let expiration: number | null = null
    if (options.expirationTtl !== undefined) {
      if (!(options.expirationTtl >= KV_TTL_MIN_SECONDS))
        throw new ApiError(
          'validation',
          `KV put failed: 400 Invalid expiration_ttl of ${options.expirationTtl}. Expiration TTL must be at least ${KV_TTL_MIN_SECONDS}.`,
        )
      expiration = now + Math.floor(options.expirationTtl)
    } else if (options.expiration !== undefined) {
      if (!(options.expiration >= now + KV_TTL_MIN_SECONDS))
        throw new ApiError(
          'validation',
          `KV put failed: 400 Invalid expiration of ${options.expiration}. Expiration times must be at least ${KV_TTL_MIN_SECONDS} seconds in the future.`,
        )
      expiration = Math.floor(options.expiration)
    }
    if (!this.store.writable && this.forward !== null)
      return this.forward({ op: 'put', websiteId, key, value: Buffer.from(value).toString('base64'), options })
    this.#requireWritable()
    return this.lanes.run(websiteId, async () => {
      const held = this.#held(websiteId)
      const previous = this.store.functionKv.get([websiteId, key])
      const after = held - (previous?.value.byteLength ?? 0) + value.byteLength
      if (after > KV_SITE_MAX_BYTES)
        throw new ApiError(
          'payload_too_large',
          `KV put failed: the website's key-value store would hold ${after} bytes; at most ${KV_SITE_MAX_BYTES} (100 MiB). Delete keys first.`,
        )
      const record: FunctionKvRecord = { v: 1, value: Buffer.from(value), metadata, expiration }
      await this.store.commit(() => this.store.functionKv.put([websiteId, key], record))
      this.#bytes.set(websiteId, after)
    })
  }

  delete(websiteId: string, key: string): Promise<void> {
    const problem = keyProblem(key)
    if (problem !== null) throw new ApiError('validation', problem)
    if (!this.store.writable && this.forward !== null) return this.forward({ op: 'delete', websiteId, key })
    this.#requireWritable()
    return this.lanes.run(websiteId, async () => {
      const previous = this.store.functionKv.get([websiteId, key])
      if (previous === undefined) return
      await this.store.commit(() => this.store.functionKv.remove([websiteId, key]))
      const held = this.#bytes.get(websiteId)
      if (held !== undefined) this.#bytes.set(websiteId, held - previous.value.byteLength)
    })
  }

  /** A replica's write, on the primary: checked again as if the function had made it here. */
  apply(write: KvWrite): Promise<void> {
    if (write.op === 'delete') return this.delete(write.websiteId, write.key)
    return this.put(write.websiteId, write.key, Buffer.from(write.value, 'base64'), write.options ?? {})
  }

  /** Keys in order, from after `cursor` (the last key of the previous page, base64url), at most `limit`. */
  list(
    websiteId: string,
    options: { prefix?: string; limit?: number; cursor?: string },
  ): { keys: { name: string; expiration?: number; metadata?: unknown }[]; list_complete: boolean; cursor?: string } {
    const limit = Math.min(KV_LIST_MAX, Math.max(1, Math.floor(options.limit ?? KV_LIST_MAX)))
    const prefix = options.prefix ?? ''
    const after = options.cursor === undefined || options.cursor === '' ? null : Buffer.from(options.cursor, 'base64url').toString('utf8')
    const keys: { name: string; expiration?: number; metadata?: unknown }[] = []
    let more = false
    for (const { key, value } of this.store.functionKv.range({
      start: [websiteId, after ?? prefix],
      end: [websiteId, `${prefix}\uffff`],
    })) {
      const name = String((key as [string, string])[1])
      if (name === after || this.#expired(value)) continue
      if (keys.length === limit) {
        more = true
        break
      }
      keys.push({
        name,
        ...(value.expiration === null ? {} : { expiration: value.expiration }),
        ...(value.metadata === null ? {} : { metadata: value.metadata }),
      })
    }
    return more
      ? { keys, list_complete: false, cursor: Buffer.from(keys[keys.length - 1].name).toString('base64url') }
      : { keys, list_complete: true }
  }

  /** How many keys and value bytes a website's store holds (expired keys not counted). */
  size(websiteId: string): { keys: number; bytes: number } {
    let keys = 0
    let bytes = 0
    for (const { value } of this.store.functionKv.range({ start: [websiteId, ''], end: [websiteId, '\uffff'] })) {
      if (this.#expired(value)) continue
      keys++
      bytes += value.value.byteLength
    }
    return { keys, bytes }
  }

  /** Inside a website's purge commit. */
  removeWebsite(websiteId: string): void {
    for (const { key } of this.store.functionKv.range({ start: [websiteId, ''], end: [websiteId, '\uffff'] }))
      this.store.functionKv.remove(key as [string, string])
    this.#bytes.delete(websiteId)
  }

  /** A cluster's replica reads its own copy and writes nothing (its store takes no commit). */
  #requireWritable(): void {
    if (!this.store.writable)
      throw new ApiError(
        'unavailable',
        "KV write failed: this request was served by a cluster's node that does not lead it and cannot reach the node that does; try again in a few seconds",
      )
  }

  #held(websiteId: string): number {
    let held = this.#bytes.get(websiteId)
    if (held === undefined) {
      held = 0
      for (const { value } of this.store.functionKv.range({ start: [websiteId, ''], end: [websiteId, '\uffff'] }))
        held += value.value.byteLength
      this.#bytes.set(websiteId, held)
    }
    return held
  }

  #expired(record: FunctionKvRecord): boolean {
    return record.expiration !== null && record.expiration * 1000 <= this.clock.now()
  }
}
