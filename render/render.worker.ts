/**
 * The render process: a child process of the server (started by render-pool.ts) that renders pages
 * of a server bundle inside isolated-vm isolates, one task at a time, and the only code that creates
 * isolates. Each task gets a fresh isolate (256 MB heap) with the language built-ins and TextEncoder
 * only; a render that throws, loops past its CPU budget, exhausts memory or recurses too deep becomes
 * a failure for that page, and a poisoned isolate is replaced before the next page.
 *
 * Why a process and not a worker thread: isolated-vm 5 aborts the whole process when one of its
 * handles (its own library object included, alive for the thread's life) is collected while a worker
 * thread shuts down, and a thread that loaded it always shuts down with such handles. A process is
 * ended by SIGKILL, which runs no teardown at all, so retiring, replacing or stopping a renderer can
 * never take the server down; nor can a crash inside isolated-vm or V8.
 *
 * Protocol (IPC, structured clone): in `{type: 'render', id, task}` and `{type: 'stop', id}`; out
 * `{type: 'started', id}`, `{type: 'loaded', id, routes, config}`, one `{type: 'page', id, index,
 * result}` per page rendered,
 * then `{type: 'done', id, bundleError, bundleErrorLocation}`. A page stopped by `stop` sends nothing.
 */
import ivm from 'isolated-vm'
import { BUNDLE_URL, locate, sourceTracer, type SourceLocation } from './locate.js'

export interface RenderTask {
  code: string
  /** The bundle's source map: a failure names the line of the site's file it came from. */
  map: string | null
  /** The CMS content `cms` of @platform reads (JSON: collection key to items). */
  cms: string
  /** Pages to render; without `params`, a dynamic route gets a placeholder value (check time). */
  pages: { kind: 'page' | 'not_found'; name: string; params?: Record<string, string> }[]
  cpuBudgetMs: number
  heapMb: number
}

/** What the pool sends. */
export type RenderRequest = { type: 'render'; id: number; task: RenderTask } | { type: 'stop'; id: number }

/** What the render process answers. */
export type RenderReply =
  | { type: 'started'; id: number }
  | { type: 'loaded'; id: number; routes: Record<string, string | null>; config: unknown }
  | { type: 'page'; id: number; index: number; result: PageRender }
  | { type: 'done'; id: number; bundleError: string | null; bundleErrorLocation: SourceLocation | null }

/** A route param a page's queries looked an item up by: the collection (its key in page code) and how (slug, id, or a field's eq filter). */
export interface ParamBinding {
  param: string
  collection: string
  by: string
}

export type PageRender =
  | { ok: true; html: string; metadata: unknown; data: unknown; bindings?: ParamBinding[] }
  | { ok: false; message: string; location: SourceLocation | null }

export interface RenderOutcome {
  /** Page name to its declared route (null when it declares none), or null if the bundle itself failed. */
  routes: Record<string, string | null> | null
  bundleError: string | null
  /** Where in the site's files loading failed (a throw at the top level of a module), when known. */
  bundleErrorLocation: SourceLocation | null
  /** website_config's default export, as JSON, or null. */
  config: unknown
  results: PageRender[]
}

/**
 * The budget is CPU time, watched on the isolate; the wall-clock timeout is only a backstop, generous
 * enough that a loaded machine does not cut a render that is within its CPU budget.
 */
const WALL_FACTOR = 4
/** Loading (the site's top-level code) has no CPU watchdog: its wall-clock limit is this many budgets. */
const LOAD_FACTOR = 2
/** A failure's message is cut here: an agent reads it, and a megabyte message helps nobody. */
const MAX_MESSAGE_CHARS = 2000

/** Spec: TextEncoder is the one non-language global a render may use. */
const TEXT_ENCODER = `
if (typeof TextEncoder === 'undefined') {
  globalThis.TextEncoder = class TextEncoder {
    get encoding() { return 'utf-8' }
    encode(input = '') {
      const s = String(input), out = []
      for (let i = 0; i < s.length; i++) {
        let c = s.charCodeAt(i)
        if (c >= 0xd800 && c < 0xdc00 && i + 1 < s.length) {
          const d = s.charCodeAt(i + 1)
          if (d >= 0xdc00 && d < 0xe000) { c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00); i++ }
        }
        if (c < 0x80) out.push(c)
        else if (c < 0x800) out.push(0xc0 | (c >> 6), 0x80 | (c & 63))
        else if (c < 0x10000) out.push(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63))
        else out.push(0xf0 | (c >> 18), 0x80 | ((c >> 12) & 63), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63))
      }
      return new Uint8Array(out)
    }
    encodeInto(input, dest) { const b = this.encode(input); const n = Math.min(b.length, dest.length); dest.set(b.subarray(0, n)); return { read: input.length, written: n } }
  }
}
`

/**
 * What crosses from the isolate to this thread is only ever a string made here. A value the site
 * threw is described inside the isolate, where reading it (a looping `message` getter, a huge
 * message, a thrown non-Error) runs under the render's budgets; isolated-vm's own copy of a thrown
 * value runs outside them and can spin forever. The helpers are captured before any site code runs
 * and cannot be replaced by it. Answers: `{"ok": value}` or `{"failure": {message, stack}}`.
 */
const SAFE_PREAMBLE = `
(() => {
  const stringify = JSON.stringify
  const StringOf = String
  const ErrorType = Error
  const MAX_MESSAGE = ${MAX_MESSAGE_CHARS}
  const cut = (text) => text.length > MAX_MESSAGE ? text.slice(0, MAX_MESSAGE) + ' ... (' + (text.length - MAX_MESSAGE) + ' more characters)' : text
  let loadFailure = null
  const failure = (thrown) => {
    let message
    let stack = ''
    try {
      if (thrown instanceof ErrorType) {
        message = StringOf(thrown.message)
        const full = thrown.stack
        if (typeof full === 'string') stack = full.split('\\n').filter((line) => /^\\s+at /.test(line)).slice(0, 50).join('\\n')
      } else {
        let text
        try { text = stringify(thrown) } catch {}
        message = 'threw a value that is not an Error: ' + (typeof text === 'string' ? text : StringOf(thrown))
      }
    } catch {
      message = 'threw a value whose message cannot be read'
    }
    return stringify({ failure: { message: cut(message), stack } })
  }
  Object.defineProperty(globalThis, '__plinthSafe', {
    value: Object.freeze({
      ok: (value) => stringify({ ok: value }),
      // Pages share the isolate: one that turned stack traces off does not take the next one's location.
      prepare: () => { try { ErrorType.stackTraceLimit = 10 } catch {} },
      failure,
      recordLoad: (thrown) => { loadFailure = failure(thrown) },
      loadFailure: () => loadFailure,
    }),
    writable: false,
    configurable: false,
    enumerable: false,
  })
})();
`

interface Loaded {
  isolate: ivm.Isolate
  render: ivm.Reference<(kind: string, name: string, params: string) => string>
  routes: Record<string, string | null>
  config: unknown
}

/** A failure inside the isolate, described there: message and the stack's frames. */
interface Described {
  message: string
  stack: string
}

/** Thrown by load() when the site's code failed while loading, or its routes or config could not be read. */
class LoadFailure extends Error {
  constructor(readonly described: Described) {
    super(described.message)
  }
}

/** React's production build names its errors by number; the ones a page meets most, in words. */
const REACT_ERRORS: Record<string, string> = {
  '31': 'an object was rendered as a child; render one of its fields, or map a list to elements',
  '130': 'a component used in JSX is undefined or not a component; check its import and that the file exports it under that name',
  '426': 'a component suspended or is async; render must be synchronous (load data in queries instead)',
}

/** What the browser has and a render does not (spec: the language built-ins and TextEncoder only). */
const BROWSER_ONLY =
  /^(window|document|navigator|location|localStorage|sessionStorage|fetch|XMLHttpRequest|setTimeout|setInterval|requestAnimationFrame|matchMedia|history|self|alert|HTMLElement|Element|Image|URL|URLSearchParams|crypto|performance) is not defined$/

/** A failure's message, with what React's numbered production errors mean and where browser code belongs. */
function withHint(message: string): string {
  const code = /Minified React error #(\d+)/.exec(message)?.[1]
  if (code !== undefined && REACT_ERRORS[code] !== undefined) return `${message} (React error ${code}: ${REACT_ERRORS[code]})`
  const browser = BROWSER_ONLY.exec(message)?.[1]
  if (browser !== undefined) {
    return `${message}: pages render on the server first, where ${browser} does not exist; use it in useEffect or an event handler, which run only in the browser after hydration`
  }
  return message
}

/** An answer of the isolate: `{"ok": value}` or `{"failure": {...}}`. */
function answer<T>(json: unknown): { ok: T } | { failure: Described } {
  if (typeof json !== 'string') return { failure: { message: 'the page answered something other than text', stack: '' } }
  return JSON.parse(json) as { ok: T } | { failure: Described }
}

function load(task: RenderTask): Loaded {
  const isolate = new ivm.Isolate({ memoryLimit: task.heapMb })
  try {
    const context = isolate.createContextSync()
    // Scripts end in `undefined`: a function as a script's completion value would come back as a
    // Callback handle, which nothing here needs.
    isolate.compileScriptSync(`${SAFE_PREAMBLE}${TEXT_ENCODER}\nundefined`).runSync(context, { timeout: task.cpuBudgetMs })
    // The site's CMS content, as data (JSON text parsed inside the isolate; never code).
    context.global.setSync('__plinthCmsJson', task.cms)
    // Named, so stack frames of the bundle can be mapped back to the site's files; the line before it
    // (lineOffset -1) opens the try that records a throw of the site's top-level code.
    const wrapped = `try {\n${task.code}\n} catch (thrown) { __plinthSafe.recordLoad(thrown) }\nundefined`
    isolate
      .compileScriptSync(wrapped, { filename: BUNDLE_URL, lineOffset: -1 })
      .runSync(context, { timeout: task.cpuBudgetMs * LOAD_FACTOR })
    const failed = context.evalSync('__plinthSafe.loadFailure()', { timeout: task.cpuBudgetMs }) as string | null
    if (failed !== null) throw new LoadFailure((JSON.parse(failed) as { failure: Described }).failure)
    const routes = answer<Record<string, string | null>>(context.evalSync('__plinthRoutes()', { timeout: task.cpuBudgetMs }))
    if ('failure' in routes) throw new LoadFailure(routes.failure)
    const config = answer<unknown>(context.evalSync('__plinthConfig()', { timeout: task.cpuBudgetMs }))
    if ('failure' in config) throw new LoadFailure(config.failure)
    return { isolate, render: context.global.getSync('__plinthRender', { reference: true }), routes: routes.ok, config: config.ok }
  } catch (error) {
    if (!isolate.isDisposed) isolate.dispose()
    throw error
  }
}

/** The platform's own reasons for stopping a render or a load (the site's failures come described). */
function explain(error: unknown, stop: Stop, task: RenderTask, phase: 'render' | 'load'): string {
  const message = error instanceof Error ? error.message : String(error)
  const what = phase === 'render' ? 'render' : "the site's code, while loading,"
  const seconds = task.cpuBudgetMs / 1000
  if (stop === 'cpu')
    return `${what} used more than ${seconds} s of CPU and was stopped (an endless loop, or a promise chain that never ends?)`
  if (stop === 'blocked')
    return `${what} blocked for ${seconds} s without using the CPU (Atomics.wait or another wait) and was stopped: renders must not wait`
  if (/memory limit/i.test(message))
    return `${what} used more than ${task.heapMb} MB of memory and was stopped (something grows without end: an array, a string, a promise chain?)`
  if (/timed out/i.test(message))
    return `${what} ran longer than ${(task.cpuBudgetMs * (phase === 'render' ? WALL_FACTOR : LOAD_FACTOR)) / 1000} s of wall-clock time and was stopped (an endless loop, or a wait?)`
  return message
}

/** `/blog/:slug` -> `{slug: 'sample-slug'}`: each dynamic route renders once at check time. */
export function placeholderParams(route: string | null): Record<string, string> {
  const params: Record<string, string> = {}
  for (const segment of (route ?? '').split('/')) if (segment.startsWith(':')) params[segment.slice(1)] = `sample-${segment.slice(1)}`
  return params
}

/** Why the platform stopped a page: its own reasons, said plainly (the site's failures come described). */
type Stop = 'cpu' | 'blocked' | 'stopped' | null

/**
 * Renders a task's pages, sending each result as it is done. `stopped()` turns true when the pool
 * takes the task back (a superseded build, or a slow site making way for others): the page being
 * rendered is then dropped without a result and nothing more is rendered.
 */
async function renderTask(id: number, task: RenderTask, send: (reply: RenderReply) => void, stopped: () => boolean): Promise<void> {
  const tracer = sourceTracer(task.map)
  let loaded: Loaded
  try {
    loaded = load(task)
  } catch (error) {
    if (error instanceof LoadFailure)
      send({ type: 'done', id, bundleError: withHint(error.described.message), bundleErrorLocation: locate(error.described.stack, tracer) })
    else send({ type: 'done', id, bundleError: explain(error, null, task, 'load'), bundleErrorLocation: null })
    return
  }
  send({ type: 'loaded', id, routes: loaded.routes, config: loaded.config })
  try {
    for (let index = 0; index < task.pages.length && !stopped(); index++) {
      const page = task.pages[index]
      if (loaded.isolate.isDisposed) loaded = load(task)
      const isolate = loaded.isolate
      const start = isolate.cpuTime
      const startUsage = process.cpuUsage()
      let stop: Stop = null
      // Settles when the watchdog stopped the isolate: a call into a disposed isolate is not
      // guaranteed to settle, so the render is not left waiting on it.
      let halted!: () => void
      const haltedSignal = new Promise<'halted'>((resolve) => (halted = () => setTimeout(() => resolve('halted'), 1000)))
      // `timeout` is wall-clock; the CPU budget is this process's own CPU time (it renders one page
      // at a time). isolated-vm's clock runs whenever the isolate is entered, waiting (Atomics.wait)
      // or waiting for a core on a busy machine: a page is blocked when that clock passed the budget
      // while the process used next to no CPU. (Half was the line once: a loop given half a core
      // beside other busy processes was called blocked.)
      const budgetNs = task.cpuBudgetMs * 1_000_000
      const watchdog = setInterval(() => {
        if (isolate.isDisposed) return
        const entered = Number(isolate.cpuTime - start)
        const usage = process.cpuUsage(startUsage)
        const cpuNs = (usage.user + usage.system) * 1000
        if (cpuNs > budgetNs) stop = 'cpu'
        else if (entered > budgetNs && cpuNs < entered / 10) stop = 'blocked'
        else if (stopped()) stop = 'stopped'
        if (stop !== null) {
          isolate.dispose()
          halted()
        }
      }, 25)
      try {
        const params = page.params ?? placeholderParams(loaded.routes[page.name] ?? null)
        const call = loaded.render.apply(undefined, [page.kind, page.name, JSON.stringify(params)], {
          timeout: task.cpuBudgetMs * WALL_FACTOR,
          result: { copy: true },
        })
        call.catch(() => undefined)
        const json = await Promise.race([call, haltedSignal])
        if (json === 'halted') throw new Error('halted')
        const rendered = answer<{ html: string; metadata: unknown; data: unknown; bindings?: ParamBinding[] }>(json)
        const result: PageRender =
          'failure' in rendered
            ? { ok: false, message: withHint(rendered.failure.message), location: locate(rendered.failure.stack, tracer) }
            : { ok: true, ...rendered.ok }
        send({ type: 'page', id, index, result })
      } catch (error) {
        // Stopped by the platform: over a budget, out of memory, or taken back by the pool.
        if (stop !== 'stopped')
          send({ type: 'page', id, index, result: { ok: false, message: explain(error, stop, task, 'render'), location: null } })
      } finally {
        clearInterval(watchdog)
      }
    }
  } finally {
    if (!loaded.isolate.isDisposed) loaded.isolate.dispose()
  }
  send({ type: 'done', id, bundleError: null, bundleErrorLocation: null })
}

// The process: one task at a time, as the pool sends them; it ends when the server goes away.
if (process.send !== undefined) {
  const send = (reply: RenderReply) => process.send!(reply)
  let current: { id: number; stopped: boolean } | null = null
  const queue: RenderRequest[] = []
  const next = () => {
    const request = queue.shift()
    if (request === undefined || request.type !== 'render') return
    current = { id: request.id, stopped: false }
    const mine = current
    send({ type: 'started', id: request.id })
    renderTask(request.id, request.task, send, () => mine.stopped)
      .catch((error: unknown) =>
        send({
          type: 'done',
          id: request.id,
          bundleError: `the renderer failed: ${(error as Error)?.message ?? String(error)}`,
          bundleErrorLocation: null,
        }),
      )
      .finally(() => {
        current = null
        next()
      })
  }
  process.on('message', (request: RenderRequest) => {
    if (request.type === 'stop') {
      if (current?.id === request.id) current.stopped = true
      return
    }
    queue.push(request)
    if (current === null) next()
  })
  // The server is gone (or dropped this process): end at once. SIGKILL runs no teardown, which is
  // the point: see the top of this file.
  process.on('disconnect', () => process.kill(process.pid, 'SIGKILL'))
}
