// Headers as the Fetch Standard defines them. Written here: headers-polyfill, the maintained npm one,
// drops invalid names silently instead of throwing, sorts by locale, and rebuilds getSetCookie() by
// splitting a joined string, so Set-Cookie values with commas (Expires=...) come back wrong.
import { INSPECT } from './inspect.js'

type HeadersInit = Headers | Iterable<Iterable<string>> | Record<string, string>

// RFC 9110 token characters.
const NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/
// Leading and trailing HTTP whitespace is trimmed; NUL, CR and LF may not appear inside.
const TRIM = /^[\t\n\r ]+|[\t\n\r ]+$/g
const INVALID_VALUE = /[\0\r\n]/

function checkName(name: unknown): string {
  const text = String(name)
  if (!NAME.test(text)) throw new TypeError(`Invalid header name: "${text}"`)
  return text.toLowerCase()
}

function checkValue(value: unknown, name: string): string {
  const text = String(value).replace(TRIM, '')
  if (INVALID_VALUE.test(text)) throw new TypeError(`Invalid header value for "${name}"`)
  return text
}

let lockHeaders: (headers: Headers) => void

export class Headers {
  /** Values by lowercased name, in the order appended. */
  readonly #map = new Map<string, string[]>()
  #immutable = false

  constructor(init?: HeadersInit) {
    if (init === undefined || init === null) return
    if (init instanceof Headers) {
      for (const [name, values] of init.#map) this.#map.set(name, [...values])
      return
    }
    if (typeof init !== 'object' && typeof init !== 'function')
      throw new TypeError('Headers can be made from a Headers, a list of pairs or a record')
    if (typeof (init as Iterable<unknown>)[Symbol.iterator] === 'function') {
      for (const pair of init as Iterable<Iterable<string>>) {
        const entry = typeof pair === 'string' ? null : [...pair]
        if (entry === null || entry.length !== 2) throw new TypeError('Each header pair must be a list of exactly two items: [name, value]')
        this.append(entry[0], entry[1])
      }
      return
    }
    for (const key of Reflect.ownKeys(init)) {
      const descriptor = Reflect.getOwnPropertyDescriptor(init, key)
      if (descriptor === undefined || !descriptor.enumerable) continue
      if (typeof key === 'symbol') throw new TypeError('A header name cannot be a Symbol')
      this.append(key, (init as Record<string, string>)[key])
    }
  }

  static {
    lockHeaders = (headers) => {
      headers.#immutable = true
    }
  }

  #writable(): void {
    if (this.#immutable) throw new TypeError("Can't modify immutable headers.")
  }

  append(name: string, value: string): void {
    const key = checkName(name)
    const text = checkValue(value, key)
    this.#writable()
    const values = this.#map.get(key)
    if (values === undefined) this.#map.set(key, [text])
    else values.push(text)
  }

  set(name: string, value: string): void {
    const key = checkName(name)
    const text = checkValue(value, key)
    this.#writable()
    this.#map.set(key, [text])
  }

  delete(name: string): void {
    const key = checkName(name)
    this.#writable()
    this.#map.delete(key)
  }

  get(name: string): string | null {
    const values = this.#map.get(checkName(name))
    return values === undefined ? null : values.join(', ')
  }

  /** Workers' older spelling, kept for Set-Cookie: each value apart. */
  getAll(name: string): string[] {
    const key = checkName(name)
    if (key !== 'set-cookie') throw new TypeError('getAll() can only be used with the header name "Set-Cookie".')
    return [...(this.#map.get(key) ?? [])]
  }

  getSetCookie(): string[] {
    return [...(this.#map.get('set-cookie') ?? [])]
  }

  has(name: string): boolean {
    return this.#map.has(checkName(name))
  }

  forEach(callback: (value: string, name: string, parent: Headers) => void, thisArg?: unknown): void {
    for (const [name, value] of this.entries()) callback.call(thisArg, value, name, this)
  }

  /** Sorted by name, values of a name joined with ", ", except Set-Cookie: one entry per value. */
  *entries(): IterableIterator<[string, string]> {
    const names = [...this.#map.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
    for (const name of names) {
      const values = this.#map.get(name)
      if (values === undefined) continue
      if (name === 'set-cookie') for (const value of values) yield [name, value]
      else yield [name, values.join(', ')]
    }
  }

  *keys(): IterableIterator<string> {
    for (const [name] of this.entries()) yield name
  }

  *values(): IterableIterator<string> {
    for (const [, value] of this.entries()) yield value
  }

  [Symbol.iterator](): IterableIterator<[string, string]> {
    return this.entries()
  }

  [INSPECT](): object {
    return Object.fromEntries(this.entries())
  }

  get [Symbol.toStringTag](): string {
    return 'Headers'
  }
}

export { lockHeaders }
