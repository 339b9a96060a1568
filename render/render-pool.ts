import { fork, type ChildProcess } from 'node:child_process'
import { availableParallelism } from 'node:os'
import { FairShare } from './fair-share.js'
import type { PageRender, RenderOutcome, RenderReply, RenderRequest, RenderTask } from './render.worker.js'

/** Spec, Limits: page render, 5 s CPU per render and 256 MB heap per isolate. */
export const RENDER_CPU_BUDGET_MS = 5000
export const RENDER_HEAP_MB = 256
/** A page that runs this long marks its site slow (typical pages render in a few milliseconds). */
export const SLOW_PAGE_MS = 300
/** Loading a site's code (compiling its bundle, running its top level) that takes this long does too. */
const SLOW_LOAD_MS = 1000
/** A render process left idle this long is ended (a new one starts on demand in about 100 ms). */
const IDLE_MS = 60_000
/** A process asked to stop a task that has not answered by then (stuck loading) is killed. */
const STOP_GRACE_MS = 1000
/** A task whose process crashed this many times fails its remaining pages instead of trying again. */
const MAX_CRASHES = 3

/** The render processes for this machine: one per core, at least two (one keeps serving fast sites). */
export function renderProcessCount(): number {
  return Math.max(2, Math.min(8, availableParallelism()))
}

interface Job {
  siteKey: string
  task: Omit<RenderTask, 'pages'>
  pages: RenderTask['pages']
  /** The first page not rendered yet: a task taken back resumes here. */
  next: number
  results: PageRender[]
  routes: Record<string, string | null> | null
  config: unknown
  crashes: number
  signal: AbortSignal | undefined
  resolve(outcome: RenderOutcome): void
  reject(error: unknown): void
}

interface Renderer {
  child: ChildProcess
  job: Job | null
  /** The id of the task sent to it. */
  taskId: number
  /** When the process last reported progress (started, loaded, or a page done); 0 before it started. */
  progressAt: number
  /** Whether a page of this task, or its loading, ran slow. */
  slow: boolean
  /** Since when this task counts as a slow site's (its site was slow when it started, or it ran slow). */
  slowSince: number | null
  /** Why the pool takes the task back: null while it runs. */
  recall: 'preempted' | 'aborted' | null
  recallTimer: NodeJS.Timeout | undefined
  idleTimer: NodeJS.Timeout | undefined
  exited: Promise<void>
}

/**
 * Renders pages in child processes (render.worker.ts), shared fairly between sites (fair-share.ts):
 * sites take turns, one task each at a time; a site whose page runs longer than SLOW_PAGE_MS (or its
 * loading longer than SLOW_LOAD_MS) is slow, and slow sites hold at most all processes but one. A
 * slow task beyond that share when a fast site waits is taken back: its current page is dropped and
 * rendered again later, pages already done are kept. Budgets are each page's own (5 s of CPU, 256 MB):
 * a bad site spends its own time.
 *
 * A stopped task (a superseded build) ends within one watchdog tick of its process; a process that
 * crashes is replaced and its task goes on from the next page.
 */
export class RenderPool {
  readonly #renderers: Renderer[] = []
  readonly #share: FairShare<Job>
  readonly #idleMs: number
  readonly #cpuBudgetMs: number
  #monitor: NodeJS.Timeout | undefined
  #nextTaskId = 1
  #closed = false

  /** `cpuBudgetMs`: each page's CPU budget unless a render asks for another (default 5 s). */
  constructor(options: { processes?: number; idleMs?: number; cpuBudgetMs?: number } = {}) {
    this.#share = new FairShare(options.processes ?? renderProcessCount())
    this.#idleMs = options.idleMs ?? IDLE_MS
    this.#cpuBudgetMs = options.cpuBudgetMs ?? RENDER_CPU_BUDGET_MS
  }

  /**
   * Renders pages of a server bundle (its source map locates failures in the site's files) for the
   * site `siteKey`. Aborting `signal` (a superseded build) rejects with its reason and stops the
   * render within one watchdog tick.
   */
  render(
    bundle: { code: string; map: string | null },
    pages: RenderTask['pages'],
    limits: { cpuBudgetMs?: number; heapMb?: number; cms?: string } = {},
    signal?: AbortSignal,
    siteKey = 'anonymous',
  ): Promise<RenderOutcome> {
    if (this.#closed) return Promise.reject(new Error('the render pool is closed'))
    signal?.throwIfAborted()
    return new Promise<RenderOutcome>((resolve, reject) => {
      const job: Job = {
        siteKey,
        task: {
          code: bundle.code,
          map: bundle.map,
          cms: limits.cms ?? '{}',
          cpuBudgetMs: limits.cpuBudgetMs ?? this.#cpuBudgetMs,
          heapMb: limits.heapMb ?? RENDER_HEAP_MB,
        },
        pages,
        next: 0,
        results: [],
        routes: null,
        config: null,
        crashes: 0,
        signal,
        resolve,
        reject,
      }
      signal?.addEventListener('abort', () => this.#abort(job), { once: true })
      this.#share.enqueue(siteKey, job)
      this.#pump()
    })
  }

  /** Ends every process once its task is stopped; waiting renders are refused. */
  async close(): Promise<void> {
    this.#closed = true
    for (const job of this.#share.drain()) job.reject(new Error('the render pool is closed'))
    for (const renderer of this.#renderers) if (renderer.job !== null) this.#recall(renderer, 'aborted')
    // Stopped tasks end within a watchdog tick (or their process is killed after STOP_GRACE_MS).
    const deadline = Date.now() + STOP_GRACE_MS
    while (this.#renderers.some((r) => r.job !== null) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10))
    const all = [...this.#renderers]
    for (const renderer of all) renderer.child.kill('SIGKILL')
    await Promise.all(all.map((r) => r.exited))
    clearInterval(this.#monitor)
  }

  #pump(): void {
    if (this.#closed) return
    for (;;) {
      const free = this.#renderers.find((r) => r.job === null)
      if (free === undefined && this.#renderers.length >= this.#share.slots) break
      const job = this.#share.next(
        this.#renderers.flatMap((r) => (r.job === null ? [] : [{ siteKey: r.job.siteKey, slowSince: r.slowSince }])),
      )
      if (job === undefined) break
      this.#start(free ?? this.#spawn(), job)
    }
    this.#watch()
  }

  #spawn(): Renderer {
    const child = fork(new URL('./render.worker.js', import.meta.url), [], {
      execArgv: ['--no-node-snapshot'],
      serialization: 'advanced',
      // No secret of the server's environment reaches the process that runs site code.
      env: { PATH: process.env.PATH ?? '' },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    })
    const renderer: Renderer = {
      child,
      job: null,
      taskId: 0,
      progressAt: 0,
      slow: false,
      slowSince: null,
      recall: null,
      recallTimer: undefined,
      idleTimer: undefined,
      exited: new Promise<void>((resolve) => child.once('exit', () => resolve())),
    }
    child.on('message', (reply: RenderReply) => this.#reply(renderer, reply))
    child.on('error', () => undefined)
    child.once('exit', (code, signal) => this.#exited(renderer, code, signal))
    this.#renderers.push(renderer)
    return renderer
  }

  #start(renderer: Renderer, job: Job): void {
    clearTimeout(renderer.idleTimer)
    renderer.job = job
    renderer.taskId = this.#nextTaskId++
    // The clock starts when the process takes the task (a new process boots first).
    renderer.progressAt = 0
    renderer.slow = false
    renderer.slowSince = this.#share.isSlow(job.siteKey) ? Date.now() : null
    const request: RenderRequest = { type: 'render', id: renderer.taskId, task: { ...job.task, pages: job.pages.slice(job.next) } }
    // A process that died a moment ago fails this send; its exit handler takes the task back.
    renderer.child.send(request, (error) => error && renderer.child.kill('SIGKILL'))
  }

  #reply(renderer: Renderer, reply: RenderReply): void {
    const job = renderer.job
    if (job === null || reply.id !== renderer.taskId) return
    renderer.progressAt = Date.now()
    if (reply.type === 'started') return
    if (reply.type === 'loaded') {
      job.routes = reply.routes
      job.config = reply.config
    } else if (reply.type === 'page') {
      job.results.push(reply.result)
      job.next++
    } else {
      this.#finish(renderer, reply.bundleError === null ? null : { message: reply.bundleError, location: reply.bundleErrorLocation })
    }
  }

  /** The task of `renderer` ended (done, taken back, or its process died). */
  #finish(renderer: Renderer, bundleError: { message: string; location: RenderOutcome['bundleErrorLocation'] } | null): void {
    const job = renderer.job!
    const recall = renderer.recall
    // A site that rendered a whole task without a slow page is fast again.
    if (recall === null && !renderer.slow) this.#share.markFast(job.siteKey)
    renderer.job = null
    renderer.recall = null
    clearTimeout(renderer.recallTimer)
    if (recall === 'aborted' || job.signal?.aborted) job.reject(job.signal?.reason ?? new Error('the render was stopped'))
    else if (bundleError !== null)
      job.resolve({ routes: null, bundleError: bundleError.message, bundleErrorLocation: bundleError.location, config: null, results: [] })
    else if (job.next < job.pages.length) this.#share.enqueue(job.siteKey, job, true)
    else job.resolve({ routes: job.routes ?? {}, bundleError: null, bundleErrorLocation: null, config: job.config, results: job.results })
    if (this.#renderers.includes(renderer)) {
      clearTimeout(renderer.idleTimer)
      renderer.idleTimer = setTimeout(() => renderer.child.kill('SIGKILL'), this.#idleMs)
    }
    this.#pump()
  }

  #exited(renderer: Renderer, code: number | null, signal: NodeJS.Signals | null): void {
    clearTimeout(renderer.idleTimer)
    this.#renderers.splice(this.#renderers.indexOf(renderer), 1)
    const job = renderer.job
    if (job === null) return this.#pump()
    if (renderer.recall === null) {
      // A crash: the page it was rendering fails with what happened, and the task goes on without it.
      job.crashes++
      const how = signal === null ? `exit code ${code}` : signal
      const failure: PageRender = { ok: false, message: `the render process crashed (${how}) while rendering this page`, location: null }
      if (job.routes === null && job.crashes >= MAX_CRASHES) {
        renderer.recall = null
        return this.#finish(renderer, { message: `the render process crashed (${how}) while loading the site's code`, location: null })
      }
      if (job.routes !== null) {
        const count = job.crashes >= MAX_CRASHES ? job.pages.length - job.next : 1
        for (let i = 0; i < count; i++) job.results.push(failure)
        job.next += count
      }
    }
    this.#finish(renderer, null)
  }

  /** Takes a task back from its process: it stops at once, or is killed after STOP_GRACE_MS. */
  #recall(renderer: Renderer, why: 'preempted' | 'aborted'): void {
    if (renderer.recall !== null) {
      if (why === 'aborted') renderer.recall = why
      return
    }
    renderer.recall = why
    renderer.child.send({ type: 'stop', id: renderer.taskId } satisfies RenderRequest, () => undefined)
    renderer.recallTimer = setTimeout(() => renderer.child.kill('SIGKILL'), STOP_GRACE_MS)
  }

  #abort(job: Job): void {
    if (this.#share.remove(job.siteKey, job)) {
      job.reject(job.signal?.reason ?? new Error('the render was stopped'))
      return
    }
    const renderer = this.#renderers.find((r) => r.job === job)
    if (renderer !== undefined) this.#recall(renderer, 'aborted')
  }

  /** While tasks run: marks slow sites, and takes back a slow site's task when it holds a fast site's share. */
  #watch(): void {
    const busy = this.#renderers.some((r) => r.job !== null)
    if (!busy) {
      clearInterval(this.#monitor)
      this.#monitor = undefined
      return
    }
    this.#monitor ??= setInterval(() => this.#check(), 50)
  }

  #check(): void {
    const now = Date.now()
    const running = this.#renderers.filter((r) => r.job !== null && r.recall === null)
    for (const r of running) {
      if (r.progressAt === 0) continue
      if (now - r.progressAt > (r.job!.routes === null ? SLOW_LOAD_MS : SLOW_PAGE_MS)) {
        if (!r.slow) r.slowSince ??= now
        r.slow = true
        this.#share.markSlow(r.job!.siteKey)
      }
    }
    const victim = this.#share.preempt(running.map((r) => ({ siteKey: r.job!.siteKey, slowSince: r.slowSince, renderer: r })))
    if (victim !== undefined) this.#recall(victim.renderer, 'preempted')
  }
}
