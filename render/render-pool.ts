import { Piscina } from 'piscina'
import type { RenderOutcome, RenderTask } from './render.worker.js'

/** Spec, Limits: page render, 5 s CPU per render and 256 MB heap per isolate. */
export const RENDER_CPU_BUDGET_MS = 5000
export const RENDER_HEAP_MB = 256

/** The piscina pool whose workers render pages inside isolates. */
export class RenderPool {
  readonly #pool: Piscina

  constructor(maxThreads = 1) {
    this.#pool = new Piscina({
      filename: new URL('./render.worker.js', import.meta.url).href,
      minThreads: 0,
      maxThreads,
      idleTimeout: 60_000,
    })
  }

  /** Renders pages; aborting `signal` stops the worker thread (a superseded build). */
  render(code: string, pages: RenderTask['pages'], limits: { cpuBudgetMs?: number; heapMb?: number } = {}, signal?: AbortSignal): Promise<RenderOutcome> {
    const task: RenderTask = { code, pages, cpuBudgetMs: limits.cpuBudgetMs ?? RENDER_CPU_BUDGET_MS, heapMb: limits.heapMb ?? RENDER_HEAP_MB }
    return this.#pool.run(task, signal === undefined ? {} : { signal }) as Promise<RenderOutcome>
  }

  close(): Promise<void> {
    return this.#pool.close({ force: true })
  }
}
