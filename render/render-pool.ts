import { Piscina } from 'piscina'
import type { RenderOutcome, RenderTask } from './render.worker.js'

/** Spec, Limits: page render, 5 s CPU per render and 256 MB heap per isolate. */
export const RENDER_CPU_BUDGET_MS = 5000
export const RENDER_HEAP_MB = 256

/**
 * The piscina pool whose workers render pages inside isolates. Tasks are stopped cooperatively
 * (a shared flag the worker watches), never by terminating a worker in the middle of one: see
 * render.worker.ts for why that would take the process down.
 */
export class RenderPool {
  readonly #pool: Piscina
  /** Abort flags of the tasks in flight. */
  readonly #running = new Set<Int32Array>()

  constructor(maxThreads = 1) {
    this.#pool = new Piscina({
      filename: new URL('./render.worker.js', import.meta.url).href,
      minThreads: 0,
      maxThreads,
      idleTimeout: 60_000,
    })
  }

  /**
   * Renders pages of a server bundle (its source map locates failures in the site's files).
   * Aborting `signal` (a superseded build) stops the task within one watchdog tick: the worker
   * disposes the isolate and this rejects with the abort reason.
   */
  async render(bundle: { code: string; map: string | null }, pages: RenderTask['pages'], limits: { cpuBudgetMs?: number; heapMb?: number } = {}, signal?: AbortSignal): Promise<RenderOutcome> {
    signal?.throwIfAborted()
    const abort = new Int32Array(new SharedArrayBuffer(4))
    const task: RenderTask = { code: bundle.code, map: bundle.map, pages, cpuBudgetMs: limits.cpuBudgetMs ?? RENDER_CPU_BUDGET_MS, heapMb: limits.heapMb ?? RENDER_HEAP_MB, abort }
    const stop = () => Atomics.store(abort, 0, 1)
    signal?.addEventListener('abort', stop, { once: true })
    this.#running.add(abort)
    try {
      const outcome = (await this.#pool.run(task)) as RenderOutcome
      signal?.throwIfAborted()
      return outcome
    } finally {
      signal?.removeEventListener('abort', stop)
      this.#running.delete(abort)
    }
  }

  /** Stops the tasks in flight, lets the workers finish them and exit. */
  close(): Promise<void> {
    for (const abort of this.#running) Atomics.store(abort, 0, 1)
    return this.#pool.close()
  }
}
