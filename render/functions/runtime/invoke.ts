// __plinthInvoke: one request, from the host's head and body to the 'head' and 'write' calls of the
// response, answered with {"ok":true} or {"failure":{message,stack}}.
//
// waitUntil: its promises are awaited after the body has been written and its end sent ('end': the
// visitor's answer is complete), before the answer to the host: the host serves a request's calls (KV,
// fetch) only until it is answered, so work handed to waitUntil finishes while it still can.
import { ReadableStream } from 'web-streams-polyfill'
import { bodyAccess, chunkBytes } from './body.js'
import { reportError } from './console.js'
import { assetsBinding, type Fetcher } from './fetch.js'
import { beginRequest, endRequest, enter, exactBuffer, hostCall, parseJson, toJson } from './host.js'
import { describeThrown } from './inspect.js'
import { kvBinding } from './kv.js'
import { NULL_BODY_STATUS, incomingRequest, type Response } from './request.js'
import { runPages, runWorker, type Execution, type Route } from './router.js'

/** A fixed body goes out in slices of this size, so the host can apply backpressure. */
const WRITE_CHUNK = 256 * 1024
/** A fixed body up to this size goes out with its head in one 'respond' (larger ones in slices). */
const RESPOND_MAX = 256 * 1024

interface Head {
  method: string
  url: string
  headers: [string, string][]
  env?: Record<string, unknown> | null
  cf?: unknown
}

interface Site {
  routes?: Route[]
  worker?: { fetch?: unknown }
}

function siteOf(): Site {
  const site = (globalThis as unknown as { __plinthSite?: unknown }).__plinthSite
  if (typeof site !== 'object' || site === null)
    throw new Error("The site's functions did not load: its compiled script set no __plinthSite")
  const { routes, worker } = site as Site
  if (typeof worker === 'object' && worker !== null) return { worker }
  if (!Array.isArray(routes)) throw new Error('__plinthSite has neither routes (a list) nor a worker ({ fetch })')
  return { routes }
}

function envFor(id: number, vars: Head['env'], url: string): Record<string, unknown> & { ASSETS: Fetcher } {
  const env: Record<string, unknown> = {}
  if (typeof vars === 'object' && vars !== null) for (const name of Object.keys(vars)) env[name] = vars[name]
  env.ASSETS = assetsBinding(id, url)
  env.KV = kvBinding(id)
  return env as Record<string, unknown> & { ASSETS: Fetcher }
}

/** Sends the answer; true when it was sent whole in one 'respond' (head, body and end: the usual fixed body). */
async function respond(id: number, response: Response, method: string): Promise<boolean> {
  if (response.type === 'error')
    throw new TypeError('The function returned Response.error(), a network error: there is nothing to send the visitor')
  const source = bodyAccess.take(response)
  const head = toJson({ status: response.status, statusText: response.statusText, headers: [...response.headers] })
  const bodiless = method === 'HEAD' || NULL_BODY_STATUS.has(response.status)
  // A body already whole (or none) goes in one message with the head: one crossing instead of three.
  if (source === null || bodiless || (source instanceof Uint8Array && source.byteLength <= RESPOND_MAX)) {
    if (source instanceof ReadableStream) void source.cancel().catch(() => undefined)
    await hostCall(id, 'respond', head, source instanceof Uint8Array && !bodiless ? exactBuffer(source) : undefined)
    return true
  }
  await hostCall(id, 'head', head)
  if (source instanceof Uint8Array) {
    for (let offset = 0; offset < source.byteLength; offset += WRITE_CHUNK)
      await hostCall(id, 'write', '{}', exactBuffer(source.subarray(offset, offset + WRITE_CHUNK)))
    return false
  }
  // A stream goes out chunk by chunk as the site produces it, each write awaited (the host's backpressure).
  const reader = source.getReader()
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) return false
      const chunk = chunkBytes(value)
      if (chunk.byteLength > 0) await hostCall(id, 'write', '{}', exactBuffer(chunk))
    }
  } catch (error) {
    void reader.cancel(error).catch(() => undefined)
    throw error
  }
}

export async function invoke(id: number, headJson: string, body: ArrayBuffer | undefined): Promise<string> {
  if (typeof id !== 'number' || !Number.isInteger(id) || id <= 0) throw new TypeError('__plinthInvoke needs a positive integer request id')
  beginRequest(id)
  const pending: Promise<unknown>[] = []
  const execution: Execution = {
    waitUntil(promise) {
      pending.push(
        Promise.resolve(promise).catch((error: unknown) => {
          enter(id)
          reportError(error)
        }),
      )
    },
  }
  let outcome: string
  try {
    const head = parseJson(headJson) as Head
    const bytes = body instanceof ArrayBuffer ? new Uint8Array(body) : null
    const request = incomingRequest(String(head.method), String(head.url), Array.isArray(head.headers) ? head.headers : [], bytes, head.cf)
    const env = envFor(id, head.env, request.url)
    const site = siteOf()
    const response =
      site.worker !== undefined
        ? await runWorker(site.worker, request, env, execution)
        : await runPages(site.routes!, request, env, execution)
    enter(id)
    // The answer is whole: the visitor gets its end now, while waitUntil's work goes on.
    if (!(await respond(id, response, request.method))) await hostCall(id, 'end', '{}')
    outcome = '{"ok":true}'
  } catch (error) {
    outcome = toJson({ failure: describeThrown(error) })
  }
  while (pending.length > 0) await Promise.allSettled(pending.splice(0))
  endRequest(id)
  return outcome
}
