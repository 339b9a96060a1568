// fetch() and env.ASSETS.fetch(): the request goes to the host whole ('fetch' or 'assets'), the
// response comes back whole. A host refusal (an address it will not reach, too many subrequests) is
// a rejected promise with a TypeError carrying its message, as a network error is in Workers.
import URL from 'core-js-pure/stable/url/index.js'
import { bodyAccess, readAll } from './body.js'
import { followSignal, type AbortSignal } from './events.js'
import { Headers, lockHeaders } from './headers.js'
import { exactBuffer, hostCall, parseJson, requireRequest, toJson, type HostAnswer } from './host.js'
import { NULL_BODY_STATUS, Request, absoluteUrl, makeResponse, type RequestInit, type Response } from './request.js'

const REDIRECT_STATUS = new Set([301, 302, 303, 307, 308])

interface ResponseHead {
  status: number
  statusText?: string
  headers?: [string, string][]
  url?: string
  redirected?: boolean
}

/** A host call that rejects with the signal's reason as soon as the signal aborts (the host's answer is then ignored). */
function abortable(call: Promise<HostAnswer>, signal: AbortSignal): Promise<HostAnswer> {
  return new Promise((resolve, reject) => {
    const forget = followSignal(signal, () => reject(signal.reason))
    call.then(resolve, reject).finally(forget)
  })
}

async function send(id: number, op: 'fetch' | 'assets', request: Request, what: string): Promise<Response> {
  const signal = request.signal
  signal.throwIfAborted()
  const source = bodyAccess.take(request)
  const bytes = source === null ? undefined : source instanceof Uint8Array ? source : await readAll(source)
  const head = toJson({
    method: request.method,
    url: request.url,
    headers: [...request.headers],
    // "error" is "manual" for the host; a redirect answer then fails here.
    redirect: request.redirect === 'follow' ? 'follow' : 'manual',
  })
  let answer: HostAnswer
  try {
    answer = await abortable(hostCall(id, op, head, bytes === undefined ? undefined : exactBuffer(bytes)), signal)
  } catch (error) {
    if (signal.aborted && error === signal.reason) throw error
    throw new TypeError(`${what} failed: ${error instanceof Error ? error.message : String(error)}`)
  }
  const info = parseJson(answer[0]) as ResponseHead
  const status = Number(info.status)
  if (request.redirect === 'error' && REDIRECT_STATUS.has(status))
    throw new TypeError(`${what} failed: ${request.url} answered with a redirect, and the request's redirect mode is "error"`)
  const headers = new Headers(Array.isArray(info.headers) ? info.headers : [])
  // As in Workers, a fetched response's headers are read-only: new Response(response.body, response) makes a changeable copy.
  lockHeaders(headers)
  const nullBody = request.method === 'HEAD' || NULL_BODY_STATUS.has(status)
  return makeResponse({
    status,
    statusText: typeof info.statusText === 'string' ? info.statusText : '',
    headers,
    body: nullBody ? null : new Uint8Array(answer[1] ?? new ArrayBuffer(0)),
    url: typeof info.url === 'string' ? info.url : request.url,
    redirected: info.redirected === true,
  })
}

export async function fetch(input: unknown, init?: RequestInit): Promise<Response> {
  const request = new Request(input, init)
  if (!/^https?:$/.test(new URL(request.url).protocol))
    throw new TypeError(`Fetch API cannot load: ${request.url} (only http: and https: URLs)`)
  return send(requireRequest('fetch()'), 'fetch', request, 'fetch()')
}

/** env.ASSETS: the site's own static files (the URL's path is what counts; a relative one is read against the request's URL). */
const CONSTRUCTING = Symbol('constructing')

export class Fetcher {
  readonly #id: number
  readonly #base: string

  constructor(key: symbol, id: number, base: string) {
    if (key !== CONSTRUCTING) throw new TypeError('Illegal constructor')
    this.#id = id
    this.#base = base
  }

  async fetch(input: unknown, init?: RequestInit): Promise<Response> {
    const request =
      input instanceof Request ? (init === undefined ? input : new Request(input, init)) : new Request(absoluteUrl(input, this.#base), init)
    return send(this.#id, 'assets', request, 'env.ASSETS.fetch()')
  }

  get [Symbol.toStringTag](): string {
    return 'Fetcher'
  }
}

/** The ASSETS binding of one request. */
export function assetsBinding(id: number, base: string): Fetcher {
  return new Fetcher(CONSTRUCTING, id, base)
}
