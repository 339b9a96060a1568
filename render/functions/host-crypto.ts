/**
 * The host half of a functions isolate's crypto.subtle: Node's Web Crypto does the work, and the keys
 * stay here, in one HostCrypto per isolate, the isolate holding only their handles (numbers). The
 * protocol is described at the top of runtime/crypto.ts: a JSON request naming the method and its
 * arguments (bytes as {"$bytes": base64}, keys as {"$key": handle}), the data as the call's bytes.
 *
 * Everything in a request is the site's to choose: methods are a fixed list, keys are looked up by
 * handle, and a failure is an answer ({"error"}) rather than an exception, so the isolate can throw
 * the same kind of error (a DOMException by name, or a TypeError) that Web Crypto would.
 */
import { createHash, webcrypto } from 'node:crypto'

type Key = webcrypto.CryptoKey

/** Live keys per isolate at most: a site importing a key per request is released by the isolate's GC; a leak stops here. */
const MAX_KEYS = 10_000
const MAX_DEPTH = 8

interface KeyFields {
  id: number
  type: string
  extractable: boolean
  algorithm: unknown
  usages: string[]
}

/** Web Crypto's methods with the loose types of a bridge (Node checks every argument itself). */
type Loose = Record<string, (...args: unknown[]) => Promise<unknown>>
const subtle = webcrypto.subtle as unknown as Loose

function isKeyPair(value: unknown): value is { publicKey: Key; privateKey: Key } {
  return typeof value === 'object' && value !== null && 'privateKey' in value && 'publicKey' in value
}

function encode(value: unknown, depth = 0): unknown {
  if (depth > MAX_DEPTH) return null
  if (value instanceof ArrayBuffer || ArrayBuffer.isView(value)) {
    const bytes = value instanceof ArrayBuffer ? new Uint8Array(value) : new Uint8Array(value.buffer, value.byteOffset, value.byteLength)
    return { $bytes: Buffer.from(bytes).toString('base64') }
  }
  if (Array.isArray(value)) return value.map((item) => encode(item, depth + 1))
  if (typeof value === 'object' && value !== null) {
    const out: Record<string, unknown> = {}
    for (const key of Object.keys(value)) out[key] = encode((value as Record<string, unknown>)[key], depth + 1)
    return out
  }
  return value
}

function toArrayBuffer(bytes: Uint8Array): ArrayBuffer {
  return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer
}

function describe(error: unknown): { name: string; message: string; dom: boolean } {
  if (error instanceof Error) return { name: error.name, message: error.message, dom: error instanceof DOMException }
  return { name: 'OperationError', message: String(error), dom: true }
}

function algorithmName(algorithm: unknown): string {
  if (typeof algorithm === 'string') return algorithm
  if (typeof algorithm === 'object' && algorithm !== null && typeof (algorithm as { name?: unknown }).name === 'string')
    return (algorithm as { name: string }).name
  return ''
}

export class HostCrypto {
  readonly #keys = new Map<number, Key>()
  #next = 1

  /** How many keys this isolate holds (for tests and metrics). */
  get size(): number {
    return this.#keys.size
  }

  async handle(json: string, bytes: ArrayBuffer | undefined): Promise<[string, ArrayBuffer | undefined]> {
    try {
      const request = JSON.parse(json) as Record<string, unknown>
      if (typeof request !== 'object' || request === null || Array.isArray(request))
        throw new TypeError('A subtle request must be a JSON object')
      if (Array.isArray(request.release)) for (const id of request.release) if (typeof id === 'number') this.#keys.delete(id)
      return await this.#run(request, bytes === undefined ? new Uint8Array(0) : new Uint8Array(bytes))
    } catch (error) {
      return [JSON.stringify({ error: describe(error) }), undefined]
    }
  }

  #decode(value: unknown, depth = 0): unknown {
    if (depth > MAX_DEPTH) throw new TypeError('The algorithm is nested too deeply')
    if (Array.isArray(value)) return value.map((item) => this.#decode(item, depth + 1))
    if (typeof value !== 'object' || value === null) return value
    const record = value as Record<string, unknown>
    if (typeof record.$bytes === 'string') return new Uint8Array(Buffer.from(record.$bytes, 'base64'))
    if (typeof record.$key === 'number') return this.#key(record.$key)
    const out: Record<string, unknown> = {}
    for (const key of Object.keys(record)) if (key !== '__proto__') out[key] = this.#decode(record[key], depth + 1)
    return out
  }

  #key(handle: unknown): Key {
    const key = typeof handle === 'number' ? this.#keys.get(handle) : undefined
    if (key === undefined)
      throw new DOMException('The CryptoKey is unknown here (was it created by another isolate?)', 'InvalidAccessError')
    return key
  }

  #add(key: Key): KeyFields {
    if (this.#keys.size >= MAX_KEYS) throw new DOMException(`This isolate holds ${MAX_KEYS} CryptoKeys already`, 'QuotaExceededError')
    const id = this.#next++
    this.#keys.set(id, key)
    return { id, type: key.type, extractable: key.extractable, algorithm: encode(key.algorithm), usages: [...key.usages] }
  }

  #keyAnswer(result: unknown): [string, undefined] {
    if (isKeyPair(result))
      return [JSON.stringify({ keys: { publicKey: this.#add(result.publicKey), privateKey: this.#add(result.privateKey) } }), undefined]
    return [JSON.stringify({ key: this.#add(result as Key) }), undefined]
  }

  async #run(request: Record<string, unknown>, data: Uint8Array): Promise<[string, ArrayBuffer | undefined]> {
    const arg = (name: string) => this.#decode(request[name])
    const bytes = (result: unknown): [string, ArrayBuffer] => ['{}', result as ArrayBuffer]
    switch (request.method) {
      case 'digest': {
        const algorithm = arg('algorithm')
        // Workers also digest MD5 (for old checksums); Web Crypto does not.
        if (algorithmName(algorithm).toUpperCase() === 'MD5') return bytes(toArrayBuffer(createHash('md5').update(data).digest()))
        return bytes(await subtle.digest(algorithm, data))
      }
      case 'generateKey':
        return this.#keyAnswer(await subtle.generateKey(arg('algorithm'), Boolean(request.extractable), arg('usages')))
      case 'importKey': {
        const format = String(request.format)
        const keyData = format === 'jwk' ? arg('jwk') : data
        return this.#keyAnswer(await subtle.importKey(format, keyData, arg('algorithm'), Boolean(request.extractable), arg('usages')))
      }
      case 'exportKey': {
        const result = await subtle.exportKey(String(request.format), arg('key'))
        return result instanceof ArrayBuffer ? bytes(result) : [JSON.stringify({ jwk: result }), undefined]
      }
      case 'sign':
        return bytes(await subtle.sign(arg('algorithm'), arg('key'), data))
      case 'verify': {
        const length = Number(request.signatureLength)
        if (!Number.isInteger(length) || length < 0 || length > data.byteLength) throw new TypeError('The signature length is out of range')
        const valid = await subtle.verify(arg('algorithm'), arg('key'), data.subarray(0, length), data.subarray(length))
        return [JSON.stringify({ bool: valid === true }), undefined]
      }
      case 'encrypt':
        return bytes(await subtle.encrypt(arg('algorithm'), arg('key'), data))
      case 'decrypt':
        return bytes(await subtle.decrypt(arg('algorithm'), arg('key'), data))
      case 'deriveBits':
        return bytes(await subtle.deriveBits(arg('algorithm'), arg('key'), request.length ?? null))
      case 'deriveKey':
        return this.#keyAnswer(
          await subtle.deriveKey(arg('algorithm'), arg('key'), arg('derivedKeyAlgorithm'), Boolean(request.extractable), arg('usages')),
        )
      case 'wrapKey':
        return bytes(await subtle.wrapKey(String(request.format), arg('key'), arg('wrappingKey'), arg('algorithm')))
      case 'unwrapKey':
        return this.#keyAnswer(
          await subtle.unwrapKey(
            String(request.format),
            data,
            arg('unwrappingKey'),
            arg('algorithm'),
            arg('unwrappedKeyAlgorithm'),
            Boolean(request.extractable),
            arg('usages'),
          ),
        )
      default:
        throw new TypeError(`crypto.subtle has no method "${String(request.method)}" here`)
    }
  }
}
