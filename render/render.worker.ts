/**
 * Renders pages of a server bundle inside isolated-vm isolates: the only code that creates isolates.
 * Each task gets a fresh isolate (256 MB heap) with the language built-ins and TextEncoder only; a
 * render that throws, loops past its CPU budget, exhausts memory or recurses too deep becomes a
 * failure for that page, and a poisoned isolate is replaced before the next page.
 */
import ivm from 'isolated-vm'

export interface RenderTask {
  code: string
  /** Pages to render; without `params`, a dynamic route gets a placeholder value (check time). */
  pages: { kind: 'page' | 'not_found'; name: string; params?: Record<string, string> }[]
  cpuBudgetMs: number
  heapMb: number
}

export type PageRender = { ok: true; html: string; metadata: unknown; data: unknown } | { ok: false; message: string }

export interface RenderOutcome {
  /** Page name to its declared route (null when it declares none), or null if the bundle itself failed. */
  routes: Record<string, string | null> | null
  bundleError: string | null
  /** website_config's default export, as JSON, or null. */
  config: unknown
  results: PageRender[]
}

/**
 * The budget is CPU time, watched on the isolate; the wall-clock timeout is only a backstop, generous
 * enough that a loaded machine does not cut a render that is within its CPU budget.
 */
const WALL_FACTOR = 4

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

interface Loaded {
  isolate: ivm.Isolate
  render: ivm.Reference<(kind: string, name: string, params: string) => string>
  routes: string
  config: string
}

function load(task: RenderTask): Loaded {
  const isolate = new ivm.Isolate({ memoryLimit: task.heapMb })
  try {
    const context = isolate.createContextSync()
    isolate.compileScriptSync(TEXT_ENCODER + task.code).runSync(context, { timeout: task.cpuBudgetMs * 2 })
    const routes = context.evalSync('__plinthRoutes()', { timeout: task.cpuBudgetMs }) as string
    const config = context.evalSync('__plinthConfig()', { timeout: task.cpuBudgetMs }) as string
    return { isolate, render: context.global.getSync('__plinthRender', { reference: true }), routes, config }
  } catch (error) {
    if (!isolate.isDisposed) isolate.dispose()
    throw error
  }
}

function explain(error: unknown, stoppedForCpu: boolean, task: RenderTask): string {
  const message = error instanceof Error ? error.message : String(error)
  if (stoppedForCpu) return `render used more than ${task.cpuBudgetMs / 1000} s of CPU and was stopped (an endless loop?)`
  if (/memory limit/i.test(message)) return `render used more than ${task.heapMb} MB of memory and was stopped`
  if (/timed out/i.test(message)) return `render ran longer than ${(task.cpuBudgetMs * WALL_FACTOR) / 1000} s of wall-clock time and was stopped`
  return message
}

/** `/blog/:slug` -> `{slug: 'sample-slug'}`: each dynamic route renders once at check time. */
export function placeholderParams(route: string | null): Record<string, string> {
  const params: Record<string, string> = {}
  for (const segment of (route ?? '').split('/')) if (segment.startsWith(':')) params[segment.slice(1)] = `sample-${segment.slice(1)}`
  return params
}

export default async function render(task: RenderTask): Promise<RenderOutcome> {
  let loaded: Loaded
  try {
    loaded = load(task)
  } catch (error) {
    return { routes: null, bundleError: explain(error, false, task), config: null, results: [] }
  }
  const routes = JSON.parse(loaded.routes) as Record<string, string | null>
  const config = JSON.parse(loaded.config) as unknown
  const results: PageRender[] = []
  try {
    for (const page of task.pages) {
      if (loaded.isolate.isDisposed) loaded = load(task)
      const isolate = loaded.isolate
      const start = isolate.cpuTime
      let stoppedForCpu = false
      // Settles when the watchdog stopped the isolate: a call into a disposed isolate is not
      // guaranteed to settle, so the render is not left waiting on it.
      let stopped!: () => void
      const stoppedSignal = new Promise<'stopped'>((resolve) => (stopped = () => setTimeout(() => resolve('stopped'), 1000)))
      // \`timeout\` is wall-clock; the CPU budget is watched on the isolate's own CPU time.
      const watchdog = setInterval(() => {
        if (!isolate.isDisposed && isolate.cpuTime - start > BigInt(task.cpuBudgetMs) * 1_000_000n) {
          stoppedForCpu = true
          isolate.dispose()
          stopped()
        }
      }, 25)
      try {
        const params = page.params ?? placeholderParams(routes[page.name] ?? null)
        const call = loaded.render.apply(undefined, [page.kind, page.name, JSON.stringify(params)], { timeout: task.cpuBudgetMs * WALL_FACTOR, result: { copy: true } })
        call.catch(() => undefined)
        const json = await Promise.race([call, stoppedSignal])
        if (json === 'stopped') throw new Error('stopped')
        const parsed = JSON.parse(json as string) as { html: string; metadata: unknown; data: unknown }
        results.push({ ok: true, ...parsed })
      } catch (error) {
        results.push({ ok: false, message: explain(error, stoppedForCpu, task) })
      } finally {
        clearInterval(watchdog)
      }
    }
  } finally {
    if (!loaded.isolate.isDisposed) loaded.isolate.dispose()
  }
  return { routes, bundleError: null, config, results }
}
