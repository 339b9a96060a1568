// crypto: getRandomValues and randomUUID from the host's random bytes, and crypto.subtle as a bridge
// to the host's Web Crypto (host-crypto.ts), where the keys live: a CryptoKey here holds only the
// host's handle for it and the fields a site may read.
//
// The 'subtle' protocol: json {method, ...arguments, release?: handles}, bytes = the data argument.
// Arguments are JSON, with every BufferSource as {"$bytes": base64} and every CryptoKey as {"$key": handle};
// verify sends signature and data as one byte string, split at `signatureLength`.
// Answers: {} with bytes (an ArrayBuffer result), {"bool"}, {"jwk"}, {"key"}, {"keys": {publicKey, privateKey}},
// or {"error": {name, message, dom}}. Keys collected here are released with the next call.
import { DOMException } from './dom-exception.js'
import { base64ToBytes, bytesOf, bytesToBase64 } from './encoding.js'
import { currentRequest, exactBuffer, hostCall, hostRandom, parseJson, toJson } from './host.js'
import { INSPECT } from './inspect.js'

const RANDOM_MAX = 65536
const POOL_SIZE = 512

// Small draws (UUIDs, nonces) come from a pool refilled 512 bytes at a time: each host call stops the isolate's thread.
let pool: Uint8Array = new Uint8Array(0)
let poolOffset = 0

function randomBytes(length: number): Uint8Array {
  if (length > 64) return hostRandom(length)
  if (poolOffset + length > pool.length) {
    pool = hostRandom(POOL_SIZE)
    poolOffset = 0
  }
  const bytes = pool.slice(poolOffset, poolOffset + length)
  // Used bytes are zeroed: the pool never hands the same bytes out twice.
  pool.fill(0, poolOffset, poolOffset + length)
  poolOffset += length
  return bytes
}

const INTEGER_ARRAYS = [
  Int8Array,
  Uint8Array,
  Uint8ClampedArray,
  Int16Array,
  Uint16Array,
  Int32Array,
  Uint32Array,
  BigInt64Array,
  BigUint64Array,
]

interface KeyFields {
  id: number
  type: string
  extractable: boolean
  algorithm: Record<string, unknown>
  usages: string[]
}

const CONSTRUCTING = Symbol('constructing')
let handleOf: (key: CryptoKey) => number
const released: number[] = []
const collected = typeof FinalizationRegistry === 'function' ? new FinalizationRegistry<number>((id) => released.push(id)) : null

export class CryptoKey {
  readonly #id: number
  readonly #type: string
  readonly #extractable: boolean
  readonly #algorithm: Record<string, unknown>
  readonly #usages: string[]

  constructor(key: symbol, fields: KeyFields) {
    if (key !== CONSTRUCTING) throw new TypeError('Illegal constructor')
    this.#id = fields.id
    this.#type = fields.type
    this.#extractable = fields.extractable
    this.#algorithm = Object.freeze(fields.algorithm)
    this.#usages = fields.usages
    collected?.register(this, fields.id)
  }

  static {
    handleOf = (key) => key.#id
  }

  get type(): string {
    return this.#type
  }
  get extractable(): boolean {
    return this.#extractable
  }
  get algorithm(): Record<string, unknown> {
    return this.#algorithm
  }
  get usages(): string[] {
    return [...this.#usages]
  }

  [INSPECT](): object {
    return { type: this.#type, extractable: this.#extractable, algorithm: this.#algorithm, usages: this.#usages }
  }
  get [Symbol.toStringTag](): string {
    return 'CryptoKey'
  }
}

/** An argument as JSON for the host: bytes as base64, keys as their handles. */
function encode(value: unknown, depth = 0): unknown {
  if (depth > 8) throw new TypeError('The algorithm is nested too deeply')
  if (value instanceof CryptoKey) return { $key: handleOf(value) }
  if (value instanceof ArrayBuffer || ArrayBuffer.isView(value)) return { $bytes: bytesToBase64(bytesOf(value)) }
  if (Array.isArray(value)) return value.map((item) => encode(item, depth + 1))
  if (typeof value === 'object' && value !== null) {
    const out: Record<string, unknown> = {}
    for (const key of Object.keys(value)) out[key] = encode((value as Record<string, unknown>)[key], depth + 1)
    return out
  }
  if (typeof value === 'function' || typeof value === 'symbol' || typeof value === 'bigint')
    throw new TypeError('A crypto argument cannot be a function, a symbol or a bigint')
  return value
}

function decode(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(decode)
  if (typeof value === 'object' && value !== null) {
    const record = value as Record<string, unknown>
    if (typeof record.$bytes === 'string') return base64ToBytes(record.$bytes)
    const out: Record<string, unknown> = {}
    for (const key of Object.keys(record)) out[key] = decode(record[key])
    return out
  }
  return value
}

function keyFrom(fields: KeyFields): CryptoKey {
  return new CryptoKey(CONSTRUCTING, { ...fields, algorithm: decode(fields.algorithm) as Record<string, unknown> })
}

interface Answer {
  error?: { name: string; message: string; dom: boolean }
  bool?: boolean
  jwk?: unknown
  key?: KeyFields
  keys?: { publicKey: KeyFields; privateKey: KeyFields }
}

async function subtleCall(method: string, args: Record<string, unknown>, bytes?: Uint8Array): Promise<[Answer, ArrayBuffer | undefined]> {
  const request: Record<string, unknown> = { method }
  for (const key of Object.keys(args)) request[key] = encode(args[key])
  if (released.length > 0) request.release = released.splice(0)
  const [json, data] = await hostCall(currentRequest(), 'subtle', toJson(request), bytes === undefined ? undefined : exactBuffer(bytes))
  const answer = parseJson(json) as Answer
  if (answer.error !== undefined) {
    const { name, message, dom } = answer.error
    if (dom) throw new DOMException(message, name)
    throw name === 'RangeError' ? new RangeError(message) : new TypeError(message)
  }
  return [answer, data]
}

function data(value: unknown, what: string): Uint8Array {
  return bytesOf(value, what).slice()
}

function key(value: unknown, what: string): CryptoKey {
  if (!(value instanceof CryptoKey)) throw new TypeError(`${what} is not a CryptoKey`)
  return value
}

function needs(count: number, given: number, method: string): void {
  if (given < count)
    throw new TypeError(`Failed to execute '${method}' on 'SubtleCrypto': ${count} arguments required, but only ${given} present.`)
}

export class SubtleCrypto {
  constructor(keyArg?: symbol) {
    if (keyArg !== CONSTRUCTING) throw new TypeError('Illegal constructor')
  }

  async digest(algorithm: unknown, input: unknown): Promise<ArrayBuffer> {
    needs(2, arguments.length, 'digest')
    return (await subtleCall('digest', { algorithm }, data(input, 'The data')))[1] ?? new ArrayBuffer(0)
  }

  async generateKey(
    algorithm: unknown,
    extractable: boolean,
    usages: string[],
  ): Promise<CryptoKey | { publicKey: CryptoKey; privateKey: CryptoKey }> {
    needs(3, arguments.length, 'generateKey')
    const [answer] = await subtleCall('generateKey', { algorithm, extractable: Boolean(extractable), usages: [...usages] })
    if (answer.keys !== undefined) return { publicKey: keyFrom(answer.keys.publicKey), privateKey: keyFrom(answer.keys.privateKey) }
    return keyFrom(answer.key!)
  }

  async importKey(format: string, keyData: unknown, algorithm: unknown, extractable: boolean, usages: string[]): Promise<CryptoKey> {
    needs(5, arguments.length, 'importKey')
    const jwk = String(format) === 'jwk'
    if (jwk && (typeof keyData !== 'object' || keyData === null)) throw new TypeError('A JWK key must be given as an object')
    const args = {
      format: String(format),
      algorithm,
      extractable: Boolean(extractable),
      usages: [...usages],
      ...(jwk ? { jwk: keyData } : {}),
    }
    const [answer] = await subtleCall('importKey', args, jwk ? undefined : data(keyData, 'The key data'))
    return keyFrom(answer.key!)
  }

  async exportKey(format: string, cryptoKey: CryptoKey): Promise<ArrayBuffer | unknown> {
    needs(2, arguments.length, 'exportKey')
    const [answer, bytes] = await subtleCall('exportKey', { format: String(format), key: key(cryptoKey, 'The key') })
    return answer.jwk !== undefined ? answer.jwk : (bytes ?? new ArrayBuffer(0))
  }

  async sign(algorithm: unknown, cryptoKey: CryptoKey, input: unknown): Promise<ArrayBuffer> {
    needs(3, arguments.length, 'sign')
    return (await subtleCall('sign', { algorithm, key: key(cryptoKey, 'The key') }, data(input, 'The data')))[1] ?? new ArrayBuffer(0)
  }

  async verify(algorithm: unknown, cryptoKey: CryptoKey, signature: unknown, input: unknown): Promise<boolean> {
    needs(4, arguments.length, 'verify')
    const sig = bytesOf(signature, 'The signature')
    const body = bytesOf(input, 'The data')
    const both = new Uint8Array(sig.byteLength + body.byteLength)
    both.set(sig)
    both.set(body, sig.byteLength)
    const [answer] = await subtleCall('verify', { algorithm, key: key(cryptoKey, 'The key'), signatureLength: sig.byteLength }, both)
    return answer.bool === true
  }

  async encrypt(algorithm: unknown, cryptoKey: CryptoKey, input: unknown): Promise<ArrayBuffer> {
    needs(3, arguments.length, 'encrypt')
    return (await subtleCall('encrypt', { algorithm, key: key(cryptoKey, 'The key') }, data(input, 'The data')))[1] ?? new ArrayBuffer(0)
  }

  async decrypt(algorithm: unknown, cryptoKey: CryptoKey, input: unknown): Promise<ArrayBuffer> {
    needs(3, arguments.length, 'decrypt')
    return (await subtleCall('decrypt', { algorithm, key: key(cryptoKey, 'The key') }, data(input, 'The data')))[1] ?? new ArrayBuffer(0)
  }

  async deriveBits(algorithm: unknown, baseKey: CryptoKey, length?: number | null): Promise<ArrayBuffer> {
    needs(2, arguments.length, 'deriveBits')
    const [, bytes] = await subtleCall('deriveBits', { algorithm, key: key(baseKey, 'The base key'), length: length ?? null })
    return bytes ?? new ArrayBuffer(0)
  }

  async deriveKey(
    algorithm: unknown,
    baseKey: CryptoKey,
    derivedKeyAlgorithm: unknown,
    extractable: boolean,
    usages: string[],
  ): Promise<CryptoKey> {
    needs(5, arguments.length, 'deriveKey')
    const args = {
      algorithm,
      key: key(baseKey, 'The base key'),
      derivedKeyAlgorithm,
      extractable: Boolean(extractable),
      usages: [...usages],
    }
    return keyFrom((await subtleCall('deriveKey', args))[0].key!)
  }

  async wrapKey(format: string, cryptoKey: CryptoKey, wrappingKey: CryptoKey, wrapAlgorithm: unknown): Promise<ArrayBuffer> {
    needs(4, arguments.length, 'wrapKey')
    const args = {
      format: String(format),
      key: key(cryptoKey, 'The key'),
      wrappingKey: key(wrappingKey, 'The wrapping key'),
      algorithm: wrapAlgorithm,
    }
    return (await subtleCall('wrapKey', args))[1] ?? new ArrayBuffer(0)
  }

  async unwrapKey(
    format: string,
    wrappedKey: unknown,
    unwrappingKey: CryptoKey,
    unwrapAlgorithm: unknown,
    unwrappedKeyAlgorithm: unknown,
    extractable: boolean,
    usages: string[],
  ): Promise<CryptoKey> {
    needs(7, arguments.length, 'unwrapKey')
    const args = {
      format: String(format),
      unwrappingKey: key(unwrappingKey, 'The unwrapping key'),
      algorithm: unwrapAlgorithm,
      unwrappedKeyAlgorithm,
      extractable: Boolean(extractable),
      usages: [...usages],
    }
    return keyFrom((await subtleCall('unwrapKey', args, data(wrappedKey, 'The wrapped key')))[0].key!)
  }

  /** Workers' addition: equal-length byte strings compared in time that does not depend on where they differ. */
  timingSafeEqual(a: unknown, b: unknown): boolean {
    const left = bytesOf(a, 'The first argument')
    const right = bytesOf(b, 'The second argument')
    if (left.byteLength !== right.byteLength) throw new TypeError('timingSafeEqual() needs two inputs of the same length')
    let difference = 0
    for (let i = 0; i < left.byteLength; i++) difference |= left[i] ^ right[i]
    return difference === 0
  }

  get [Symbol.toStringTag](): string {
    return 'SubtleCrypto'
  }
}

export class Crypto {
  readonly #subtle = new SubtleCrypto(CONSTRUCTING)

  constructor(keyArg?: symbol) {
    if (keyArg !== CONSTRUCTING) throw new TypeError('Illegal constructor')
  }

  get subtle(): SubtleCrypto {
    return this.#subtle
  }

  getRandomValues<T extends ArrayBufferView>(array: T): T {
    if (!INTEGER_ARRAYS.some((kind) => array instanceof kind))
      throw new DOMException(
        "Failed to execute 'getRandomValues' on 'Crypto': The provided ArrayBufferView is not an integer array type.",
        'TypeMismatchError',
      )
    if (array.byteLength > RANDOM_MAX)
      throw new DOMException(
        `Failed to execute 'getRandomValues' on 'Crypto': The ArrayBufferView's byte length (${array.byteLength}) exceeds the number of bytes of entropy available via this API (${RANDOM_MAX}).`,
        'QuotaExceededError',
      )
    if (array.byteLength > 0) new Uint8Array(array.buffer, array.byteOffset, array.byteLength).set(randomBytes(array.byteLength))
    return array
  }

  randomUUID(): string {
    const bytes = randomBytes(16)
    bytes[6] = (bytes[6] & 0x0f) | 0x40
    bytes[8] = (bytes[8] & 0x3f) | 0x80
    const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
  }

  get [Symbol.toStringTag](): string {
    return 'Crypto'
  }
}

export const crypto = new Crypto(CONSTRUCTING)
