// A request a site's functions answer (its path is in the version's `_routes.json` rules): read, handed to the isolate pool, its answer streamed back.
import { readFile } from 'node:fs/promises'
import type { Registry } from '../../actors/registry.js'
import type { Channel, Snapshot } from '../../actors/website/snapshot.js'
import type { FunctionLogEntry, FunctionLogLine, InvocationResult } from '../../actors/functions/functions.js'
import { OutboundError } from '../../actors/outbound.js'
import { ApiError } from '../../core/errors.js'
import { countedId } from '../../core/ids.js'
import { DOOR, observeFunction } from '../../core/metrics.js'
import { platformPage } from '../site-files.js'
import type { Exchange } from '../uws.js'

/** Headers the server writes itself: a function's own are dropped (uWS frames the body). */
const HOP_BY_HOP = new Set(['content-length', 'transfer-encoding', 'connection', 'keep-alive', 'upgrade', 'trailer'])
/** Statuses that carry no body. */
const NO_BODY = new Set([101, 204, 205, 304])
/** Redirects a function's fetch follows (Workers' limit is 20; each hop goes through the guard again). */
const REDIRECTS_MAX = 10
/** A fetch's answer is read whole into the function, up to this. */
const FETCH_BODY_MAX_BYTES = 10 * 1024 * 1024

const ERROR_HEADERS = { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', 'x-robots-tag': 'noindex' }
const FAILED_PAGE = platformPage(
  'This page failed',
  "The site's function threw an error while answering. Its author can read the error in the site's function logs.",
)
const LIMIT_PAGE = platformPage(
  'This page used too much',
  "The site's function went over one of its limits (CPU time, memory or time) while answering. Its author can read which in the site's function logs.",
)

/** What a visitor gets for each outcome that is not an answer, and the words the author reads in the logs. */
function failure(result: InvocationResult): { status: number; page: Buffer; log: string; limit?: string } {
  const outcome = result.outcome
  if ('failure' in outcome) return { status: 500, page: FAILED_PAGE, log: outcome.failure.message }
  if ('limit' in outcome) {
    const status = outcome.limit === 'wall' ? 504 : outcome.limit === 'load' ? 500 : 503
    const what =
      outcome.limit === 'cpu'
        ? `CPU limit: ${outcome.message}; a request gets this much CPU (PLINTH_FUNCTION_CPU_MS): look for a loop that does not end`
        : outcome.limit === 'memory'
          ? `memory limit: ${outcome.message} (PLINTH_FUNCTION_MEMORY_MB): something grows without end`
          : outcome.limit === 'wall'
            ? `time limit: ${outcome.message} (PLINTH_FUNCTION_WALL_MS): a fetch or a promise that never settles?`
            : outcome.limit === 'load'
              ? `the functions could not start: ${outcome.message}`
              : outcome.message
    return { status, page: outcome.limit === 'load' ? FAILED_PAGE : LIMIT_PAGE, log: what, limit: outcome.limit }
  }
  return { status: 500, page: FAILED_PAGE, log: 'no answer' }
}

const EMPTY = new Uint8Array(0)

/** A line of one request's logs: which request, method and path the door adds. */
type RequestLogLine = Omit<FunctionLogLine, 'requestId' | 'method' | 'path'>

/** A push-fed body for `Exchange.sendStream`: each chunk resolves its writer once taken. */
class Body implements AsyncIterable<Uint8Array> {
  readonly #chunks: { chunk: Uint8Array; taken(): void }[] = []
  #wake: (() => void) | null = null
  #ended = false
  #failed = false

  write(chunk: Uint8Array): Promise<void> {
    if (this.#ended) return Promise.resolve()
    return new Promise((taken) => {
      this.#chunks.push({ chunk, taken })
      this.#wake?.()
    })
  }

  end(): void {
    this.#ended = true
    this.#wake?.()
  }

  /** The function failed after its head: the visitor's connection is cut (sendStream closes it on a throw). */
  fail(): void {
    this.#failed = true
    this.end()
  }

  destroy(): void {
    this.#ended = true
    for (const { taken } of this.#chunks.splice(0)) taken()
    this.#wake?.()
  }

  async *[Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    for (;;) {
      const next = this.#chunks.shift()
      if (next !== undefined) {
        next.taken()
        yield next.chunk
        continue
      }
      if (this.#failed) throw new Error("the site's function failed part way through its answer")
      if (this.#ended) return
      await new Promise<void>((resolve) => (this.#wake = resolve))
      this.#wake = null
    }
  }
}

/**
 * The functions door: the request's body read (up to the limit), its head and the site's `env` handed
 * to the pool, and what the function does outside its isolate done here: its answer streamed to the
 * visitor, its fetches through the one SSRF guard (at most `subrequests` a request), `env.ASSETS`
 * answered from the version's own files. Every invocation leaves a line in the site's logs.
 */
export class FunctionsDoor {
  constructor(
    private readonly registry: Registry,
    private readonly scheme: string,
  ) {}

  handle(exchange: Exchange, channel: Channel, snapshot: Snapshot): void {
    exchange.enter(DOOR.hosting)
    // The query and headers are read while the request is live; everything after is asynchronous.
    const query = exchange.query
    exchange.detach()
    const method = exchange.method
    const started = performance.now()
    const requestId = countedId('req')
    const url = `${this.scheme}//${exchange.host}${exchange.path}${query === '' ? '' : `?${query}`}`
    const functions = this.registry.functions
    const settings = functions.settings
    const base = { requestId, method, path: exchange.path }
    const log = (entry: RequestLogLine) => functions.logs.add(channel.websiteId, { ...base, ...entry })
    const read = method === 'GET' || method === 'HEAD' ? Promise.resolve(null) : exchange.readBody(settings.bodyBytes)
    void read.then(
      (body) => this.#run(exchange, channel, snapshot, url, body, log, started),
      (error: unknown) => {
        const status = error instanceof ApiError && error.kind === 'payload_too_large' ? 413 : 400
        const text =
          status === 413
            ? `The request body is over ${settings.bodyBytes} bytes, the most a site's function reads.\n`
            : 'The request body could not be read.\n'
        exchange.send(status, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' }, text)
        log({ type: 'invocation', level: 'warn', message: text.trim(), status, durationMs: Math.round(performance.now() - started) })
      },
    )
  }

  async #run(
    exchange: Exchange,
    channel: Channel,
    snapshot: Snapshot,
    url: string,
    body: Buffer | null,
    log: (entry: RequestLogLine) => void,
    started: number,
  ): Promise<void> {
    const functions = this.registry.functions
    const site = snapshot.functions!
    const headers = Object.entries(exchange.captureHeaders())
    headers.push(['cf-connecting-ip', exchange.remoteAddress()])
    const { env, secrets } = functions.env(channel.websiteId)
    const head = JSON.stringify({ method: exchange.method, url, headers, env, cf: null })
    // A secret's value never reaches the logs, even when the function prints it.
    const redact = (text: string) => secrets.reduce((out, secret) => (secret.length < 4 ? out : out.split(secret).join('[secret]')), text)
    let status = 0
    let streamed: Promise<void> | null = null
    const stream = new Body()
    let fetches = 0
    exchange.onAborted(() => stream.destroy())
    /** The answer's status and headers (hop-by-hop ones left out). */
    const headOf = (json: string): string[] => {
      const answer = JSON.parse(json) as { status: number; headers: [string, string][] }
      status = answer.status
      const pairs: string[] = []
      for (const [name, value] of answer.headers) if (!HOP_BY_HOP.has(name.toLowerCase())) pairs.push(name, value)
      return pairs
    }
    const result = await functions.invoke(site.script, head, body, {
      head: (json) => {
        const pairs = headOf(json)
        if (NO_BODY.has(status)) {
          exchange.send(status, pairs, null)
          stream.destroy()
          return
        }
        streamed = exchange.sendStream(status, pairs, stream, null).catch(() => undefined)
      },
      respond: (json, bytes) => {
        const pairs = headOf(json)
        stream.destroy()
        exchange.send(status, pairs, NO_BODY.has(status) ? null : (bytes ?? EMPTY))
      },
      write: (chunk) => stream.write(chunk),
      end: () => stream.end(),
      call: async (op, json, bytes) => {
        if (op === 'fetch') {
          if (++fetches > functions.settings.subrequests)
            throw new Error(
              `this request made more than ${functions.settings.subrequests} subrequests (fetch calls), the most one request may make`,
            )
          return this.#fetch(json, bytes)
        }
        if (op === 'assets') return this.#asset(snapshot, json)
        if (op === 'kv') return this.#kv(channel.websiteId, json, bytes)
        throw new Error(`${op} is not available to functions on this server yet`)
      },
      log: (level, text) => log({ type: 'console', level: level as FunctionLogEntry['level'], message: redact(text) }),
    })
    const outcome = result.outcome
    if ('ok' in outcome) stream.end()
    else stream.fail()
    await streamed
    const durationMs = Math.round(performance.now() - started)
    observeFunction(site.site, 'ok' in outcome ? 'ok' : 'failure' in outcome ? 'exception' : outcome.limit, result.cpuMs, result.cold)
    if ('ok' in outcome) {
      if (status === 0) exchange.send(500, ERROR_HEADERS, FAILED_PAGE)
      log({
        type: 'invocation',
        level: 'info',
        message: `${exchange.method} ${exchange.path} ${status}`,
        status,
        durationMs,
        cpuMs: result.cpuMs,
        cold: result.cold,
      })
      return
    }
    const failed = failure(result)
    if ('failure' in outcome) {
      const stack = functions.stack(outcome.failure.stack, site.map)
      log({ type: 'exception', level: 'error', message: redact(`Uncaught ${outcome.failure.message}${stack === '' ? '' : `\n${stack}`}`) })
    }
    // Before its head the visitor gets the platform's page; after it, the answer is cut (the body cannot be taken back).
    if (status === 0) exchange.send(failed.status, ERROR_HEADERS, failed.page)
    log({
      type: 'invocation',
      level: 'error',
      message: `${exchange.method} ${exchange.path} ${status === 0 ? failed.status : status}: ${failed.log}`,
      status: status === 0 ? failed.status : status,
      durationMs,
      cpuMs: result.cpuMs,
      cold: result.cold,
      ...(failed.limit === undefined ? {} : { limit: failed.limit }),
    })
  }

  /** A function's fetch, through the SSRF guard; redirects followed hop by hop, each hop guarded. */
  async #fetch(json: string, bytes: Uint8Array | null): Promise<[string, Uint8Array | null]> {
    const request = JSON.parse(json) as { method: string; url: string; headers: [string, string][]; redirect?: string }
    let target = request.url
    let method = request.method
    let body: Buffer = bytes === null ? Buffer.alloc(0) : Buffer.from(bytes)
    for (let hop = 0; ; hop++) {
      let answer
      try {
        answer = await this.registry.outbound.request(target, {
          method,
          headers: Object.fromEntries(request.headers),
          body,
          maxBytes: FETCH_BODY_MAX_BYTES,
        })
      } catch (error) {
        throw new Error(error instanceof OutboundError ? `fetch ${target} failed: ${error.message}` : `fetch ${target} failed`)
      }
      const location = answer.headers.location
      if (request.redirect !== 'manual' && answer.status >= 300 && answer.status < 400 && typeof location === 'string') {
        if (hop >= REDIRECTS_MAX) throw new Error(`fetch ${request.url} failed: more than ${REDIRECTS_MAX} redirects`)
        target = new URL(location, target).href
        if (answer.status === 303 || ((answer.status === 301 || answer.status === 302) && method === 'POST')) {
          method = 'GET'
          body = Buffer.alloc(0)
        }
        continue
      }
      const headers: [string, string][] = []
      for (const [name, value] of Object.entries(answer.headers))
        for (const each of Array.isArray(value) ? value : value === undefined ? [] : [value]) headers.push([name, each])
      return [
        JSON.stringify({ status: answer.status, statusText: '', headers, url: target, redirected: hop > 0 }),
        new Uint8Array(answer.body),
      ]
    }
  }

  /** `env.KV`: the website's key-value store (a refusal's message is what the function's promise rejects with). */
  async #kv(websiteId: string, json: string, bytes: Uint8Array | null): Promise<[string, Uint8Array | null]> {
    const kv = this.registry.functions.kv
    const request = JSON.parse(json) as {
      op: string
      key?: string
      expiration?: number
      expirationTtl?: number
      metadata?: unknown
      prefix?: string
      limit?: number
      cursor?: string
    }
    const key = String(request.key ?? '')
    if (request.op === 'get') {
      const entry = kv.get(websiteId, key)
      if (entry === null) return [JSON.stringify({ found: false, metadata: null, expiration: null }), null]
      return [JSON.stringify({ found: true, metadata: entry.metadata, expiration: entry.expiration }), entry.value]
    }
    if (request.op === 'put') {
      await kv.put(websiteId, key, bytes ?? new Uint8Array(0), request)
      return ['{}', null]
    }
    if (request.op === 'delete') {
      await kv.delete(websiteId, key)
      return ['{}', null]
    }
    if (request.op === 'list') return [JSON.stringify(kv.list(websiteId, request)), null]
    throw new Error(`KV has no operation ${request.op}`)
  }

  /** `env.ASSETS.fetch`: the version's own file at the URL's path (its rewrite rules and 404 page too), never its functions. */
  async #asset(snapshot: Snapshot, json: string): Promise<[string, Uint8Array | null]> {
    const request = JSON.parse(json) as { url: string }
    let path = new URL(request.url, 'http://site').pathname
    try {
      path = decodeURIComponent(path)
    } catch {
      // Kept as sent: it names no file.
    }
    let route = snapshot.route(path)
    const hit = snapshot.rules?.match(path, route !== undefined, '') ?? null
    if (hit?.kind === 'redirect')
      return [JSON.stringify({ status: hit.status, statusText: '', headers: [['location', hit.location]], url: request.url }), null]
    let status = 200
    if (hit?.kind === 'file') {
      const target = snapshot.routeAs(hit.path, path)
      route = hit.status === 200 ? target : undefined
      if (hit.status !== 200 && target !== undefined) return this.#fileAnswer(target.file, 404, request.url)
    }
    if (route?.movedTo != null)
      return [JSON.stringify({ status: 308, statusText: '', headers: [['location', route.movedTo]], url: request.url }), null]
    let file = route?.file
    if (file === undefined) {
      file = snapshot.notFound(path) ?? undefined
      status = 404
      if (file === undefined)
        return [
          JSON.stringify({ status: 404, statusText: '', headers: [['content-type', 'text/plain; charset=utf-8']], url: request.url }),
          new TextEncoder().encode('Not found'),
        ]
    }
    return this.#fileAnswer(file, status, request.url)
  }

  /** A file's answer; a large one kept on disk is read without blocking the main thread, which also serves. */
  async #fileAnswer(
    file: NonNullable<ReturnType<Snapshot['notFound']>>,
    status: number,
    url: string,
  ): Promise<[string, Uint8Array | null]> {
    const bytes = file.disk === null ? file.read().identity : await readFile(file.disk)
    const headers = Object.entries(file.streamHeaders())
    return [JSON.stringify({ status, statusText: '', headers, url }), new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength)]
  }
}
