// Pages Functions routing over the route table the compile step writes (wrangler's order: most specific
// first). For a request: every middleware route whose path is a prefix of the request's, least specific
// (outermost folder) first; then the first handler route matching the whole path and the method. Each
// gets a context whose next() runs the one after; past the last, next() asks env.ASSETS.
import URL from 'core-js-pure/stable/url/index.js'
import type { Fetcher } from './fetch.js'
import { inspect } from './inspect.js'
import { pathnameOf, Request, Response, rewrapResponse, type RequestInit } from './request.js'

export interface Route {
  routePath: string
  mountPath: string
  method: string
  middlewares: unknown[]
  modules: unknown[]
}

type Params = Record<string, string | string[]>
type Match = { path: string; params: Params } | null
type Matcher = (path: string) => Match

const PARAM = /:([A-Za-z0-9_]+)(\*)?/g
const escape = (text: string) => text.replace(/[.+?^${}()|[\]\\/*]/g, '\\$&')
// One path segment: what path-to-regexp (which wrangler uses) lets a parameter match.
const SEGMENT = '[^\\/#\\?]+?'

/**
 * A route path as path-to-regexp 6 reads it with wrangler's options: case-insensitive, an optional
 * trailing slash, `:name` one segment, `/:name*` zero or more (an array); `end: false` matches a prefix
 * that ends at a segment boundary. Parameters are not decoded (wrangler leaves them as in the URL).
 */
export function compilePath(pattern: string, end: boolean): Matcher {
  let source = '^'
  const names: { name: string; repeat: boolean }[] = []
  let last = 0
  for (const match of pattern.matchAll(PARAM)) {
    const literal = pattern.slice(last, match.index)
    const repeat = match[2] === '*'
    if (repeat && literal.endsWith('/')) source += `${escape(literal.slice(0, -1))}(?:\\/(${SEGMENT}(?:\\/${SEGMENT})*))?`
    else if (repeat) source += `${escape(literal)}(${SEGMENT}(?:\\/${SEGMENT})*)?`
    else source += `${escape(literal)}(${SEGMENT})`
    names.push({ name: match[1], repeat })
    last = match.index + match[0].length
  }
  source += escape(pattern.slice(last))
  if (end) source += '[\\/#\\?]?$'
  else if (!pattern.endsWith('/')) source += '(?:[\\/#\\?](?=$))?(?=[\\/#\\?]|$)'
  const regexp = new RegExp(source, 'i')
  return (path) => {
    const found = regexp.exec(path)
    if (found === null) return null
    const params: Params = {}
    names.forEach(({ name, repeat }, i) => {
      const value = found[i + 1]
      if (value !== undefined) params[name] = repeat ? value.split('/') : value
    })
    return { path: found[0], params }
  }
}

interface CompiledRoute {
  route: Route
  prefix: Matcher
  whole: Matcher
  mount: Matcher
}

const compiled = new WeakMap<Route[], CompiledRoute[]>()

function compileRoutes(routes: Route[]): CompiledRoute[] {
  let list = compiled.get(routes)
  if (list === undefined) {
    list = routes.map((route) => ({
      route,
      prefix: compilePath(String(route.routePath), false),
      whole: compilePath(String(route.routePath), true),
      mount: compilePath(String(route.mountPath), false),
    }))
    compiled.set(routes, list)
  }
  return list
}

interface Step {
  handler: unknown
  params: Params
  path: string
}

function* steps(routes: CompiledRoute[], method: string, path: string): Generator<Step> {
  for (const each of [...routes].reverse()) {
    if (each.route.method && each.route.method !== method) continue
    const match = each.prefix(path)
    const mount = each.mount(path)
    if (match === null || mount === null) continue
    for (const handler of (each.route.middlewares ?? []).flat()) yield { handler, params: match.params, path: mount.path }
  }
  for (const each of routes) {
    if (each.route.method && each.route.method !== method) continue
    const modules = (each.route.modules ?? []).flat()
    if (modules.length === 0) continue
    const match = each.whole(path)
    if (match === null || each.mount(path) === null) continue
    for (const handler of modules) yield { handler, params: match.params, path: match.path }
    return
  }
}

/** What the request's runner provides: where waitUntil promises go. */
export interface Execution {
  waitUntil(promise: unknown): void
}

function notAResponse(value: unknown, path: string): Error {
  const what = value === undefined ? 'undefined (is a `return` missing?)' : inspect(value).slice(0, 200)
  return new Error(`The function for ${path} returned ${what} instead of a Response: return a Response (or a Promise of one) from it`)
}

/** Runs a request through the routes; a failure after passThroughOnException() falls through to the static files. */
export async function runPages(
  routes: Route[],
  original: Request,
  env: Record<string, unknown> & { ASSETS: Fetcher },
  execution: Execution,
): Promise<Response> {
  const chain = steps(compileRoutes(routes), original.method, pathnameOf(original.url))
  let request = original
  let data: object = {}
  let failOpen = false
  const next = async (input?: unknown, init?: RequestInit): Promise<Response> => {
    if (input !== undefined) request = new Request(typeof input === 'string' ? new URL(input, request.url).href : input, init)
    const step = chain.next()
    if (step.done) return rewrapResponse(await env.ASSETS.fetch(request))
    const { handler, params, path } = step.value
    if (typeof handler !== 'function')
      throw new TypeError(`The handler for ${path} is not a function (it is ${inspect(handler).slice(0, 100)})`)
    const context = {
      request: request.clone(),
      functionPath: path,
      next,
      params,
      get data(): object {
        return data
      },
      set data(value: object) {
        if (typeof value !== 'object' || value === null) throw new TypeError('context.data must be an object')
        data = value
      },
      env,
      waitUntil: (promise: unknown) => execution.waitUntil(promise),
      passThroughOnException: () => {
        failOpen = true
      },
    }
    const response: unknown = await handler(context)
    if (!(response instanceof Response)) throw notAResponse(response, path)
    return rewrapResponse(response)
  }
  try {
    return await next()
  } catch (error) {
    if (!failOpen) throw error
    return rewrapResponse(await env.ASSETS.fetch(original))
  }
}

/** Advanced mode (`_worker.js`): the site's own fetch handler. */
export async function runWorker(
  worker: { fetch?: unknown },
  request: Request,
  env: Record<string, unknown> & { ASSETS: Fetcher },
  execution: Execution,
): Promise<Response> {
  if (typeof worker.fetch !== 'function') throw new TypeError('The _worker.js default export has no fetch(request, env, ctx) handler')
  let failOpen = false
  const ctx = {
    waitUntil: (promise: unknown) => execution.waitUntil(promise),
    passThroughOnException: () => {
      failOpen = true
    },
  }
  try {
    const response: unknown = await worker.fetch(request, env, ctx)
    if (!(response instanceof Response)) throw notAResponse(response, pathnameOf(request.url))
    return response
  } catch (error) {
    if (!failOpen) throw error
    return rewrapResponse(await env.ASSETS.fetch(request))
  }
}
