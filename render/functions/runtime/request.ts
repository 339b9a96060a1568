// Request and Response as Workers have them (the Fetch Standard's classes plus `cf`). Written here:
// no npm implementation runs on bare V8 with ReadableStream bodies (whatwg-fetch has none, undici
// needs Node), and their rules are mostly the constructor checks below.
import URL from 'core-js-pure/stable/url/index.js'
import { Body, bodyAccess, extractBody, type BodySource } from './body.js'
import { AbortSignal, quietSignal } from './events.js'
import { Headers, lockHeaders } from './headers.js'
import { INSPECT } from './inspect.js'

type HeadersInit = ConstructorParameters<typeof Headers>[0]

export interface RequestInit {
  method?: string
  headers?: HeadersInit
  body?: unknown
  redirect?: string
  signal?: AbortSignal | null
  cf?: unknown
  integrity?: string
}

export interface ResponseInit {
  status?: number
  statusText?: string
  headers?: HeadersInit
  cf?: unknown
  webSocket?: null
  encodeBody?: string
}

const METHOD = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/
const NORMALIZED = new Set(['DELETE', 'GET', 'HEAD', 'OPTIONS', 'POST', 'PUT', 'PATCH'])
const REDIRECTS = new Set(['follow', 'manual', 'error'])
export const NULL_BODY_STATUS = new Set([101, 103, 204, 205, 304])
const REDIRECT_STATUS = new Set([301, 302, 303, 307, 308])

/**
 * Parsed URLs by their text: a URL parse costs about 20 µs here (core-js' URL in bare V8), and a request
 * parses the same few URLs several times (the request, its route's path, its clones). Bounded.
 */
const parsed = new Map<string, { href: string; pathname: string }>()
const PARSED_MAX = 256

function parse(text: string, base?: string): { href: string; pathname: string } {
  const key = base === undefined ? text : `${base}\n${text}`
  let found = parsed.get(key)
  if (found === undefined) {
    const url = new URL(text, base)
    found = { href: url.href, pathname: url.pathname }
    if (parsed.size >= PARSED_MAX) parsed.delete(parsed.keys().next().value!)
    parsed.set(key, found)
  }
  return found
}

/** An absolute URL, serialized; anything else is a TypeError naming it. */
export function absoluteUrl(input: unknown, base?: string): string {
  const text = String(input)
  try {
    return parse(text, base).href
  } catch {
    throw new TypeError(`Invalid URL: ${text}`)
  }
}

/** The path of an absolute URL (a request's: already valid). */
export function pathnameOf(url: string): string {
  return parse(url).pathname
}

function methodOf(value: unknown): string {
  const method = String(value)
  if (!METHOD.test(method)) throw new TypeError(`Invalid HTTP method: "${method}"`)
  const upper = method.toUpperCase()
  if (upper === 'CONNECT' || upper === 'TRACE' || upper === 'TRACK') throw new TypeError(`The HTTP method "${method}" is not allowed`)
  return NORMALIZED.has(upper) ? upper : method
}

export class Request extends Body {
  readonly #method: string
  readonly #url: string
  readonly #headers: Headers
  readonly #redirect: string
  readonly #signal: AbortSignal
  readonly #cf: unknown
  readonly #integrity: string

  constructor(input: unknown, init?: RequestInit | null) {
    if (arguments.length === 0) throw new TypeError("Failed to construct 'Request': 1 argument required, but only 0 present.")
    super()
    const base = input instanceof Request ? input : null
    const options: RequestInit = init ?? {}
    if (typeof options !== 'object') throw new TypeError("Failed to construct 'Request': the second argument must be an object")
    this.#url = base !== null ? base.#url : absoluteUrl(input)
    this.#method = options.method !== undefined ? methodOf(options.method) : base !== null ? base.#method : 'GET'
    this.#headers = new Headers(options.headers !== undefined ? options.headers : base !== null ? base.#headers : undefined)
    const redirect = options.redirect !== undefined ? String(options.redirect) : base !== null ? base.#redirect : 'follow'
    if (!REDIRECTS.has(redirect)) throw new TypeError(`Invalid redirect value "${redirect}": use "follow", "manual" or "error"`)
    this.#redirect = redirect
    const signal = 'signal' in options ? options.signal : base === null ? undefined : base.#signal
    if (signal !== undefined && signal !== null && !(signal instanceof AbortSignal))
      throw new TypeError('The signal must be an AbortSignal')
    this.#signal = signal ?? quietSignal()
    this.#cf = options.cf !== undefined ? options.cf : base === null ? undefined : base.#cf
    this.#integrity = options.integrity !== undefined ? String(options.integrity) : base === null ? '' : base.#integrity
    const noBody = this.#method === 'GET' || this.#method === 'HEAD'
    let source: BodySource = null
    if (options.body !== undefined && options.body !== null) {
      if (noBody) throw new TypeError('Request with a GET or HEAD method cannot have a body.')
      const extracted = extractBody(options.body)
      source = extracted.source
      if (extracted.type !== null && !this.#headers.has('content-type')) this.#headers.set('content-type', extracted.type)
    } else if (options.body === undefined && base !== null && bodyAccess.present(base)) {
      // The new Request takes the old one's body (which is then used), as the spec's constructor does.
      source = bodyAccess.take(base)
      if (source !== null && noBody) throw new TypeError('Request with a GET or HEAD method cannot have a body.')
    }
    bodyAccess.set(this, source)
  }

  get method(): string {
    return this.#method
  }
  get url(): string {
    return this.#url
  }
  get headers(): Headers {
    return this.#headers
  }
  get redirect(): string {
    return this.#redirect
  }
  get signal(): AbortSignal {
    return this.#signal
  }
  get cf(): unknown {
    return this.#cf
  }
  get integrity(): string {
    return this.#integrity
  }
  get keepalive(): boolean {
    return false
  }
  get fetcher(): null {
    return null
  }

  clone(): Request {
    const copy = new Request(this.#url, {
      method: this.#method,
      headers: this.#headers,
      redirect: this.#redirect,
      signal: this.#signal,
      cf: this.#cf,
    })
    bodyAccess.set(copy, bodyAccess.clone(this))
    return copy
  }

  [INSPECT](): object {
    return { method: this.#method, url: this.#url, headers: this.#headers, bodyUsed: this.bodyUsed }
  }
  get [Symbol.toStringTag](): string {
    return 'Request'
  }
}

/** The request the host hands in: its body as the host sent it, its headers read-only (as in Workers). */
export function incomingRequest(method: string, url: string, headers: [string, string][], body: Uint8Array | null, cf: unknown): Request {
  const request = new Request(url, { method, headers, cf: cf ?? undefined })
  bodyAccess.set(request, body)
  lockHeaders(request.headers)
  return request
}

interface ResponseFields {
  status: number
  statusText: string
  headers: Headers
  body: BodySource
  url?: string
  redirected?: boolean
  type?: string
  cf?: unknown
}

let makeResponse: (fields: ResponseFields) => Response

export class Response extends Body {
  #status = 200
  #statusText = ''
  #headers: Headers
  #type = 'default'
  #url = ''
  #redirected = false
  #cf: unknown = undefined

  constructor(body?: unknown, init?: ResponseInit | null) {
    super()
    const options: ResponseInit = init ?? {}
    if (typeof options !== 'object') throw new TypeError("Failed to construct 'Response': the second argument must be an object")
    const status = options.status === undefined ? 200 : Math.trunc(Number(options.status))
    if (!(status >= 200 && status <= 599))
      throw new RangeError(
        `Responses may only be constructed with status codes in the range 200 to 599, inclusive (got ${String(options.status)}).`,
      )
    const statusText = options.statusText === undefined ? '' : String(options.statusText)
    if (!/^[\t\x20-\x7e\x80-\xff]*$/.test(statusText))
      throw new TypeError('Invalid statusText: it may not contain line breaks or characters above U+00FF')
    this.#status = status
    this.#statusText = statusText
    this.#headers = new Headers(options.headers)
    this.#cf = options.cf
    if (body !== undefined && body !== null) {
      if (NULL_BODY_STATUS.has(status)) throw new TypeError(`Response with null body status (${status}) cannot have body`)
      const { source, type } = extractBody(body)
      if (type !== null && !this.#headers.has('content-type')) this.#headers.set('content-type', type)
      bodyAccess.set(this, source)
    }
  }

  static {
    makeResponse = (fields) => {
      const response = new Response(null)
      response.#status = fields.status
      response.#statusText = fields.statusText
      response.#headers = fields.headers
      response.#url = fields.url ?? ''
      response.#redirected = fields.redirected ?? false
      response.#type = fields.type ?? 'default'
      response.#cf = fields.cf
      bodyAccess.set(response, fields.body)
      return response
    }
  }

  static json(data: unknown, init?: ResponseInit | null): Response {
    const text = JSON.stringify(data)
    if (text === undefined) throw new TypeError('Response.json() cannot serialize this value (undefined, a function or a symbol)')
    const headers = new Headers(init?.headers)
    if (!headers.has('content-type')) headers.set('content-type', 'application/json')
    return new Response(text, { status: init?.status, statusText: init?.statusText, headers, cf: init?.cf })
  }

  static redirect(url: unknown, status: number = 302): Response {
    const location = absoluteUrl(url)
    const code = Math.trunc(Number(status))
    if (!REDIRECT_STATUS.has(code)) throw new RangeError(`Invalid redirect status code ${String(status)}: use 301, 302, 303, 307 or 308`)
    const response = new Response(null, { status: code, headers: { location } })
    lockHeaders(response.headers)
    return response
  }

  static error(): Response {
    const headers = new Headers()
    lockHeaders(headers)
    return makeResponse({ status: 0, statusText: '', headers, body: null, type: 'error' })
  }

  get status(): number {
    return this.#status
  }
  get statusText(): string {
    return this.#statusText
  }
  get ok(): boolean {
    return this.#status >= 200 && this.#status <= 299
  }
  get headers(): Headers {
    return this.#headers
  }
  get type(): string {
    return this.#type
  }
  get url(): string {
    return this.#url
  }
  get redirected(): boolean {
    return this.#redirected
  }
  get webSocket(): null {
    return null
  }
  get cf(): unknown {
    return this.#cf
  }

  clone(): Response {
    const source = bodyAccess.clone(this)
    return makeResponse({
      status: this.#status,
      statusText: this.#statusText,
      headers: new Headers(this.#headers),
      body: source,
      url: this.#url,
      redirected: this.#redirected,
      type: this.#type,
      cf: this.#cf,
    })
  }

  [INSPECT](): object {
    return {
      status: this.#status,
      statusText: this.#statusText,
      headers: this.#headers,
      ok: this.ok,
      redirected: this.#redirected,
      url: this.#url,
      bodyUsed: this.bodyUsed,
    }
  }
  get [Symbol.toStringTag](): string {
    return 'Response'
  }
}

/** The same response with headers a site may change and its body moved over (Pages hands on responses so). */
export function rewrapResponse(response: Response): Response {
  const body = bodyAccess.take(response)
  return makeResponse({
    status: response.status,
    statusText: response.statusText,
    headers: new Headers(response.headers),
    body: NULL_BODY_STATUS.has(response.status) ? null : body,
    url: response.url,
    redirected: response.redirected,
    type: response.type,
    cf: response.cf,
  })
}

export { makeResponse }
