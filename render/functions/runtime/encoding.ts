// TextEncoder and TextDecoder (UTF-8, UTF-16LE, windows-1252), their stream forms, atob and btoa.
// The codecs are written here: the npm polyfills that follow the Encoding Standard decode in quadratic
// time (text-encoding-utf-8 took 71 s for 1 MB here), and the fast one (fastestsmallesttextencoderdecoder)
// has neither `fatal` nor `stream`, which the multipart parser and streamed bodies need.
import base64 from 'base-64'
import { TransformStream } from 'web-streams-polyfill'
import { DOMException } from './dom-exception.js'

type BufferSource = ArrayBuffer | ArrayBufferView | SharedArrayBuffer

/** The bytes of a BufferSource, without copying. */
export function bytesOf(source: unknown, what = 'The argument'): Uint8Array {
  if (source instanceof Uint8Array) return source
  if (ArrayBuffer.isView(source)) return new Uint8Array(source.buffer, source.byteOffset, source.byteLength)
  if (source instanceof ArrayBuffer || (typeof SharedArrayBuffer === 'function' && source instanceof SharedArrayBuffer))
    return new Uint8Array(source)
  throw new TypeError(`${what} must be an ArrayBuffer or an ArrayBufferView`)
}

/** UTF-8 bytes of a string, lone surrogates as U+FFFD (a USVString, as TextEncoder gives). */
export function utf8Encode(text: string): Uint8Array {
  const out = new Uint8Array(text.length * 3)
  const written = encodeUtf8Into(text, out).written
  return written === out.length ? out : out.slice(0, written)
}

function encodeUtf8Into(text: string, out: Uint8Array): { read: number; written: number } {
  let j = 0
  let i = 0
  const length = text.length
  for (; i < length; i++) {
    let code = text.charCodeAt(i)
    if (code < 0x80) {
      if (j >= out.length) break
      out[j++] = code
      continue
    }
    let units = 1
    if (code >= 0xd800 && code <= 0xdfff) {
      const next = i + 1 < length ? text.charCodeAt(i + 1) : 0
      if (code <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
        code = 0x10000 + ((code - 0xd800) << 10) + (next - 0xdc00)
        units = 2
      } else code = 0xfffd
    }
    const size = code < 0x800 ? 2 : code < 0x10000 ? 3 : 4
    if (j + size > out.length) break
    if (size === 2) {
      out[j++] = 0xc0 | (code >> 6)
    } else if (size === 3) {
      out[j++] = 0xe0 | (code >> 12)
      out[j++] = 0x80 | ((code >> 6) & 0x3f)
    } else {
      out[j++] = 0xf0 | (code >> 18)
      out[j++] = 0x80 | ((code >> 12) & 0x3f)
      out[j++] = 0x80 | ((code >> 6) & 0x3f)
    }
    out[j++] = 0x80 | (code & 0x3f)
    i += units - 1
  }
  return { read: i, written: j }
}

/** UTF-16 code units to a string, in slices (String.fromCharCode takes a bounded argument count). */
function unitsToString(units: Uint16Array, length: number): string {
  let text = ''
  for (let start = 0; start < length; start += 8192)
    text += String.fromCharCode.apply(null, units.subarray(start, Math.min(length, start + 8192)) as unknown as number[])
  return text
}

const WINDOWS_1252 = [
  0x20ac, 0x81, 0x201a, 0x192, 0x201e, 0x2026, 0x2020, 0x2021, 0x2c6, 0x2030, 0x160, 0x2039, 0x152, 0x8d, 0x17d, 0x8f, 0x90, 0x2018, 0x2019,
  0x201c, 0x201d, 0x2022, 0x2013, 0x2014, 0x2dc, 0x2122, 0x161, 0x203a, 0x153, 0x9d, 0x17e, 0x178,
]

const LABELS: Record<string, 'utf-8' | 'utf-16le' | 'windows-1252'> = {
  'utf-8': 'utf-8',
  utf8: 'utf-8',
  'unicode-1-1-utf-8': 'utf-8',
  unicode11utf8: 'utf-8',
  unicode20utf8: 'utf-8',
  'x-unicode20utf8': 'utf-8',
  'utf-16le': 'utf-16le',
  'utf-16': 'utf-16le',
  'ucs-2': 'utf-16le',
  unicode: 'utf-16le',
  csunicode: 'utf-16le',
  'iso-10646-ucs-2': 'utf-16le',
  unicodefeff: 'utf-16le',
  'windows-1252': 'windows-1252',
  latin1: 'windows-1252',
  'iso-8859-1': 'windows-1252',
  'iso8859-1': 'windows-1252',
  iso88591: 'windows-1252',
  'iso_8859-1': 'windows-1252',
  l1: 'windows-1252',
  ascii: 'windows-1252',
  'us-ascii': 'windows-1252',
  cp1252: 'windows-1252',
  cp819: 'windows-1252',
  'x-cp1252': 'windows-1252',
}

interface TextDecoderOptions {
  fatal?: boolean
  ignoreBOM?: boolean
}

export class TextDecoder {
  readonly #encoding: 'utf-8' | 'utf-16le' | 'windows-1252'
  readonly #fatal: boolean
  readonly #ignoreBOM: boolean
  // The decoder's state between calls with { stream: true }.
  #needed = 0
  #seen = 0
  #codePoint = 0
  #lower = 0x80
  #upper = 0xbf
  #pendingByte = -1
  #pendingLead = -1
  #started = false

  constructor(label: string = 'utf-8', options: TextDecoderOptions = {}) {
    const encoding = LABELS[String(label).trim().toLowerCase()]
    if (encoding === undefined) throw new RangeError(`The "${label}" encoding is not supported`)
    this.#encoding = encoding
    this.#fatal = Boolean(options?.fatal)
    this.#ignoreBOM = Boolean(options?.ignoreBOM)
  }

  get encoding(): string {
    return this.#encoding
  }
  get fatal(): boolean {
    return this.#fatal
  }
  get ignoreBOM(): boolean {
    return this.#ignoreBOM
  }

  decode(input?: BufferSource, options?: { stream?: boolean }): string {
    const bytes = input === undefined || input === null ? new Uint8Array(0) : bytesOf(input, 'The input')
    const stream = Boolean(options?.stream)
    let text: string
    try {
      if (this.#encoding === 'utf-8') text = this.#utf8(bytes, !stream)
      else if (this.#encoding === 'utf-16le') text = this.#utf16(bytes, !stream)
      else {
        const units = new Uint16Array(bytes.length)
        for (let i = 0; i < bytes.length; i++) units[i] = bytes[i] >= 0x80 && bytes[i] < 0xa0 ? WINDOWS_1252[bytes[i] - 0x80] : bytes[i]
        text = unitsToString(units, units.length)
      }
    } catch (error) {
      this.#reset()
      throw error
    }
    if (!this.#started && text.length > 0) {
      this.#started = true
      if (!this.#ignoreBOM && this.#encoding !== 'windows-1252' && text.charCodeAt(0) === 0xfeff) text = text.slice(1)
    }
    if (!stream) this.#reset()
    return text
  }

  #reset(): void {
    this.#needed = this.#seen = this.#codePoint = 0
    this.#lower = 0x80
    this.#upper = 0xbf
    this.#pendingByte = this.#pendingLead = -1
    this.#started = false
  }

  #error(): number {
    if (this.#fatal) throw new TypeError(`The encoded data was not valid for encoding ${this.#encoding}`)
    return 0xfffd
  }

  // The Encoding Standard's UTF-8 decoder: an ill-formed sequence gives one U+FFFD for its maximal part.
  #utf8(bytes: Uint8Array, flush: boolean): string {
    const units = new Uint16Array(bytes.length + 4)
    let n = 0
    let needed = this.#needed
    let seen = this.#seen
    let codePoint = this.#codePoint
    let lower = this.#lower
    let upper = this.#upper
    for (let i = 0; i < bytes.length; i++) {
      const byte = bytes[i]
      if (needed === 0) {
        if (byte < 0x80) units[n++] = byte
        else if (byte >= 0xc2 && byte <= 0xdf) {
          needed = 1
          codePoint = byte & 0x1f
        } else if (byte >= 0xe0 && byte <= 0xef) {
          if (byte === 0xe0) lower = 0xa0
          if (byte === 0xed) upper = 0x9f
          needed = 2
          codePoint = byte & 0xf
        } else if (byte >= 0xf0 && byte <= 0xf4) {
          if (byte === 0xf0) lower = 0x90
          if (byte === 0xf4) upper = 0x8f
          needed = 3
          codePoint = byte & 0x7
        } else units[n++] = this.#error()
        continue
      }
      if (byte < lower || byte > upper) {
        needed = seen = codePoint = 0
        lower = 0x80
        upper = 0xbf
        units[n++] = this.#error()
        i-- // The byte starts over, as the first of a new sequence.
        continue
      }
      lower = 0x80
      upper = 0xbf
      codePoint = (codePoint << 6) | (byte & 0x3f)
      if (++seen !== needed) continue
      if (codePoint > 0xffff) {
        codePoint -= 0x10000
        units[n++] = 0xd800 + (codePoint >> 10)
        units[n++] = 0xdc00 + (codePoint & 0x3ff)
      } else units[n++] = codePoint
      needed = seen = codePoint = 0
    }
    if (flush && needed !== 0) {
      needed = seen = codePoint = 0
      lower = 0x80
      upper = 0xbf
      units[n++] = this.#error()
    }
    this.#needed = needed
    this.#seen = seen
    this.#codePoint = codePoint
    this.#lower = lower
    this.#upper = upper
    return unitsToString(units, n)
  }

  #utf16(bytes: Uint8Array, flush: boolean): string {
    const units = new Uint16Array((bytes.length >> 1) + 3)
    let n = 0
    let i = 0
    const push = (unit: number) => {
      const lead = this.#pendingLead
      if (lead >= 0) {
        this.#pendingLead = -1
        if (unit >= 0xdc00 && unit <= 0xdfff) {
          units[n++] = lead
          units[n++] = unit
          return
        }
        units[n++] = this.#error()
      }
      if (unit >= 0xd800 && unit <= 0xdbff) this.#pendingLead = unit
      else if (unit >= 0xdc00 && unit <= 0xdfff) units[n++] = this.#error()
      else units[n++] = unit
    }
    if (this.#pendingByte >= 0 && bytes.length > 0) {
      push(this.#pendingByte | (bytes[0] << 8))
      this.#pendingByte = -1
      i = 1
    }
    for (; i + 1 < bytes.length; i += 2) push(bytes[i] | (bytes[i + 1] << 8))
    if (i < bytes.length) this.#pendingByte = bytes[i]
    if (flush && (this.#pendingByte >= 0 || this.#pendingLead >= 0)) {
      this.#pendingByte = this.#pendingLead = -1
      units[n++] = this.#error()
    }
    return unitsToString(units, n)
  }

  get [Symbol.toStringTag](): string {
    return 'TextDecoder'
  }
}

export class TextEncoder {
  get encoding(): string {
    return 'utf-8'
  }
  encode(input: unknown = ''): Uint8Array {
    return utf8Encode(String(input))
  }
  encodeInto(source: unknown, destination: Uint8Array): { read: number; written: number } {
    if (!(destination instanceof Uint8Array)) throw new TypeError('encodeInto() needs a Uint8Array to write into')
    return encodeUtf8Into(String(source), destination)
  }
  get [Symbol.toStringTag](): string {
    return 'TextEncoder'
  }
}

export class TextEncoderStream {
  readonly #transform: TransformStream<string, Uint8Array>

  constructor() {
    let pendingLead = ''
    this.#transform = new TransformStream<string, Uint8Array>({
      transform(chunk, controller) {
        let text = pendingLead + String(chunk)
        pendingLead = ''
        // A surrogate pair split across chunks is kept whole: hold a trailing lead surrogate back.
        const last = text.charCodeAt(text.length - 1)
        if (last >= 0xd800 && last <= 0xdbff) {
          pendingLead = text.slice(-1)
          text = text.slice(0, -1)
        }
        if (text.length > 0) controller.enqueue(utf8Encode(text))
      },
      flush(controller) {
        if (pendingLead !== '') controller.enqueue(new Uint8Array([0xef, 0xbf, 0xbd]))
      },
    })
  }
  get encoding(): string {
    return 'utf-8'
  }
  get readable() {
    return this.#transform.readable
  }
  get writable() {
    return this.#transform.writable
  }
  get [Symbol.toStringTag](): string {
    return 'TextEncoderStream'
  }
}

export class TextDecoderStream {
  readonly #decoder: TextDecoder
  readonly #transform: TransformStream<BufferSource, string>

  constructor(label: string = 'utf-8', options: TextDecoderOptions = {}) {
    const decoder = (this.#decoder = new TextDecoder(label, options))
    this.#transform = new TransformStream<BufferSource, string>({
      transform(chunk, controller) {
        const text = decoder.decode(chunk, { stream: true })
        if (text !== '') controller.enqueue(text)
      },
      flush(controller) {
        const text = decoder.decode()
        if (text !== '') controller.enqueue(text)
      },
    })
  }
  get encoding(): string {
    return this.#decoder.encoding
  }
  get fatal(): boolean {
    return this.#decoder.fatal
  }
  get ignoreBOM(): boolean {
    return this.#decoder.ignoreBOM
  }
  get readable() {
    return this.#transform.readable
  }
  get writable() {
    return this.#transform.writable
  }
  get [Symbol.toStringTag](): string {
    return 'TextDecoderStream'
  }
}

const utf8Decoder = new TextDecoder()
/** UTF-8 bytes as text, ill-formed sequences as U+FFFD, a leading BOM dropped (as Body.text() reads). */
export function utf8Decode(bytes: Uint8Array): string {
  return utf8Decoder.decode(bytes)
}

export function btoa(data: unknown): string {
  if (arguments.length === 0) throw new TypeError("Failed to execute 'btoa': 1 argument required, but only 0 present.")
  try {
    return base64.encode(String(data))
  } catch {
    throw new DOMException('The string to be encoded contains characters outside of the Latin1 range.', 'InvalidCharacterError')
  }
}

export function atob(data: unknown): string {
  if (arguments.length === 0) throw new TypeError("Failed to execute 'atob': 1 argument required, but only 0 present.")
  try {
    return base64.decode(String(data))
  } catch {
    throw new DOMException('The string to be decoded is not correctly encoded.', 'InvalidCharacterError')
  }
}

/** Bytes as base64 (for the subtle bridge's JSON). */
export function bytesToBase64(bytes: Uint8Array): string {
  let binary = ''
  for (let start = 0; start < bytes.length; start += 8192)
    binary += String.fromCharCode.apply(null, bytes.subarray(start, start + 8192) as unknown as number[])
  return base64.encode(binary)
}

export function base64ToBytes(text: string): Uint8Array {
  const binary = base64.decode(text)
  const bytes = new Uint8Array(binary.length)
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i)
  return bytes
}
