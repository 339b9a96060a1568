import { readFile } from 'node:fs/promises'
import { availableParallelism } from 'node:os'
import { Piscina } from 'piscina'
import { ApiError } from '../core/errors.js'
import { WARM_SITES_DEFAULT } from '../core/limits.js'
import { FairShare, type Running } from './fair-share.js'
import type { CssDiagnostic } from './css.js'
import type { LintResult } from './lint.js'
import type {
  CssTask,
  EditResult,
  EditTask,
  FormatResult,
  FormatTask,
  LintTask,
  SearchResult,
  SearchTask,
  TypecheckTask,
} from './tool.worker.js'
import type { TypecheckDiagnostic } from './typecheck.js'

/** A search that runs longer than this is stopped and refused (issue: answered within a second). */
export const SEARCH_TIME_LIMIT_MS = 800

/**
 * CPU budgets of the steps that parse site source, like a page render's 5 s: a normal warm check
 * takes tens of milliseconds per step and a cold typecheck about 2 s on a small machine;
 * pathological types (120 recursive aliases) ran 19 s and more and grew the server past 5 GB before
 * these existed. Formatting a large file legitimately takes a few seconds.
 */
export const STEP_CPU_BUDGET_MS = { lint: 5_000, typecheck: 10_000, css: 5_000, format: 10_000, editDefinition: 10_000 } as const
/** Heap of a check worker: the shared library types, PLINTH_WARM_SITES sites' warm programs (3-4 MB each; 20 by default), one check. */
export const CHECK_HEAP_MB = 1024
/** Heap of an edit worker (prettier and the compiler's parser on one file). */
export const EDIT_HEAP_MB = 512
/** A check step that has used this much CPU marks its site slow (fair-share.ts). */
const SLOW_STEP_CPU_MS = 3000

export type Step = keyof typeof STEP_CPU_BUDGET_MS

/** Budgets of a pool, as given (defaults above; tests shrink them). */
export interface ToolLimitOptions {
  cpuBudgetMs?: Partial<Record<Step, number>>
  checkHeapMb?: number
  editHeapMb?: number
}

/** Budgets of a pool. */
interface SourceLimits {
  cpuBudgetMs: Record<Step, number>
  checkHeapMb: number
  editHeapMb: number
}

/** A step stopped by its budget; the gate reports it as a diagnostic of that step. */
export class BudgetExceeded extends Error {
  constructor(
    readonly step: Step,
    readonly limit: 'cpu' | 'memory' | 'time',
    limits: SourceLimits,
  ) {
    const seconds = limits.cpuBudgetMs[step] / 1000
    const heapMb = step === 'format' || step === 'editDefinition' ? limits.editHeapMb : limits.checkHeapMb
    super(
      limit === 'memory'
        ? `${step} used more than ${heapMb} MB of memory and was stopped`
        : limit === 'cpu'
          ? `${step} used more than ${seconds} s of CPU and was stopped`
          : `${step} ran longer than ${seconds} s and was stopped`,
    )
    this.name = 'BudgetExceeded'
  }
}

/**
 * A worker announces the OS thread that runs its task here (Linux): `[started, tid, cpu ticks so
 * far]`, so the pool can read the thread's CPU time from /proc while the task runs.
 */
export type ThreadSlot = Int32Array

/** CPU time of a thread of this process in clock ticks (utime + stime), or null off Linux. */
async function threadTicks(tid: number): Promise<number | null> {
  try {
    const stat = await readFile(`/proc/self/task/${tid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return Number(fields[11]) + Number(fields[12])
  } catch {
    return null
  }
}

/** Linux's USER_HZ: /proc reports thread CPU time in hundredths of a second. */
const TICK_MS = 10

interface Task {
  step: Step
  /** What the worker function gets. */
  payload: object
  /** The site whose check this is (check steps only). */
  siteKey?: string
  resolve(value: unknown): void
  reject(error: unknown): void
}

interface InFlight extends Running {
  task: Task
  controller: AbortController
  slot: ThreadSlot
  startedAt: number
  /** CPU used by the task so far, in ms (null until the worker announced its thread). */
  cpuMs: number | null
  stop: 'budget' | 'time' | 'preempted' | null
}

/**
 * The worker threads that work on site source (tool.worker.ts), never running site code: edits
 * (formatting, AST edits, search) in one pool, so a write never waits behind a check, and the gate's
 * lint, typecheck and css steps in another, shared fairly between sites (fair-share.ts). Every task
 * has a CPU budget watched from here through /proc, and every worker a heap limit; a task over either
 * ends with its worker (a thread that runs no site code ends safely) and rejects with BudgetExceeded.
 */
export class ToolPool {
  readonly #edits: Piscina
  readonly #checks: Piscina
  readonly #share: FairShare<Task>
  readonly #inFlight = new Set<InFlight>()
  readonly #limits: SourceLimits
  #monitor: NodeJS.Timeout | undefined
  #closed = false

  /** Sites whose warm typecheck programs each check worker keeps. */
  readonly #warmSites: number

  constructor(options: { checkThreads?: number; limits?: ToolLimitOptions; warmSites?: number } = {}) {
    this.#warmSites = options.warmSites ?? WARM_SITES_DEFAULT
    const cores = availableParallelism()
    const given = options.limits ?? {}
    this.#limits = {
      cpuBudgetMs: { ...STEP_CPU_BUDGET_MS, ...given.cpuBudgetMs },
      checkHeapMb: given.checkHeapMb ?? CHECK_HEAP_MB,
      editHeapMb: given.editHeapMb ?? EDIT_HEAP_MB,
    }
    this.#edits = new Piscina({
      filename: new URL('./tool.worker.js', import.meta.url).href,
      minThreads: 0,
      maxThreads: Math.max(1, Math.min(2, cores)),
      idleTimeout: 30_000,
      resourceLimits: { maxOldGenerationSizeMb: this.#limits.editHeapMb },
    })
    const checkThreads = options.checkThreads ?? Math.max(2, Math.min(4, cores))
    this.#checks = new Piscina({
      filename: new URL('./tool.worker.js', import.meta.url).href,
      minThreads: 0,
      maxThreads: checkThreads,
      idleTimeout: 120_000,
      resourceLimits: { maxOldGenerationSizeMb: this.#limits.checkHeapMb },
    })
    this.#share = new FairShare(checkThreads)
  }

  format(task: FormatTask): Promise<FormatResult> {
    return this.#edit('format', task) as Promise<FormatResult>
  }

  editDefinition(task: EditTask): Promise<EditResult> {
    return this.#edit('editDefinition', task) as Promise<EditResult>
  }

  typecheck(task: Omit<TypecheckTask, 'warmSites'>): Promise<TypecheckDiagnostic[]> {
    return this.#check('typecheck', task.siteKey, { ...task, warmSites: this.#warmSites }) as Promise<TypecheckDiagnostic[]>
  }

  css(siteKey: string, task: CssTask): Promise<{ css: string; diagnostics: CssDiagnostic[] }> {
    return this.#check('css', siteKey, task) as Promise<{ css: string; diagnostics: CssDiagnostic[] }>
  }

  lint(siteKey: string, task: LintTask): Promise<LintResult> {
    return this.#check('lint', siteKey, task) as Promise<LintResult>
  }

  /** Runs a search with a time limit; past it the worker thread is stopped and the pattern refused. */
  async search(task: SearchTask): Promise<SearchResult> {
    const controller = new AbortController()
    const timer = setTimeout(() => controller.abort(), SEARCH_TIME_LIMIT_MS)
    try {
      return (await this.#edits.run(task, { name: 'search', signal: controller.signal })) as SearchResult
    } catch (error) {
      if (controller.signal.aborted) {
        throw new ApiError(
          'validation',
          `The pattern took longer than ${SEARCH_TIME_LIMIT_MS} ms and was stopped; simplify it (avoid nested quantifiers such as (a+)+)`,
          {
            field: 'body.pattern',
          },
        )
      }
      throw error
    } finally {
      clearTimeout(timer)
    }
  }

  async close(): Promise<void> {
    this.#closed = true
    for (const task of this.#share.drain()) task.reject(new Error('the source pool is closed'))
    clearInterval(this.#monitor)
    await Promise.all([this.#edits.close({ force: true }), this.#checks.close({ force: true })])
  }

  #edit(step: Step, payload: object): Promise<unknown> {
    return new Promise((resolve, reject) => this.#start(this.#edits, { step, payload, resolve, reject }))
  }

  #check(step: Step, siteKey: string, payload: object): Promise<unknown> {
    if (this.#closed) return Promise.reject(new Error('the source pool is closed'))
    return new Promise((resolve, reject) => {
      this.#share.enqueue(siteKey, { step, payload, siteKey, resolve, reject })
      this.#pump()
    })
  }

  #running(): InFlight[] {
    return [...this.#inFlight].filter((f) => f.task.siteKey !== undefined && f.stop !== 'preempted')
  }

  /** Starts checks while a check thread is free, sites in turn. */
  #pump(): void {
    while (!this.#closed && this.#running().length < this.#share.slots) {
      const task = this.#share.next(this.#running())
      if (task === undefined) break
      this.#start(this.#checks, task)
    }
  }

  #start(pool: Piscina, task: Task): void {
    const slot: ThreadSlot = new Int32Array(new SharedArrayBuffer(12))
    const controller = new AbortController()
    const siteKey = task.siteKey ?? ''
    const flight: InFlight = {
      task,
      controller,
      slot,
      siteKey,
      slowSince: task.siteKey !== undefined && this.#share.isSlow(siteKey) ? Date.now() : null,
      startedAt: 0,
      cpuMs: null,
      stop: null,
    }
    this.#inFlight.add(flight)
    this.#monitor ??= setInterval(() => void this.#watch(), 100)
    pool.run({ ...task.payload, thread: slot }, { name: task.step, signal: controller.signal }).then(
      (value) => {
        this.#inFlight.delete(flight)
        if (task.siteKey !== undefined && flight.slowSince === null) this.#share.markFast(siteKey)
        task.resolve(value)
        this.#settled()
      },
      (error: unknown) => {
        this.#inFlight.delete(flight)
        if (flight.stop === 'preempted') this.#share.enqueue(siteKey, task, true)
        else if (flight.stop === 'budget') task.reject(new BudgetExceeded(task.step, 'cpu', this.#limits))
        else if (flight.stop === 'time') task.reject(new BudgetExceeded(task.step, 'time', this.#limits))
        else if ((error as { code?: string })?.code === 'ERR_WORKER_OUT_OF_MEMORY')
          task.reject(new BudgetExceeded(task.step, 'memory', this.#limits))
        else task.reject(error)
        this.#settled()
      },
    )
  }

  #settled(): void {
    if (this.#inFlight.size === 0) {
      clearInterval(this.#monitor)
      this.#monitor = undefined
    }
    this.#pump()
  }

  /** Reads each task's CPU time; stops tasks over budget; marks slow sites; takes back beyond-share ones. */
  async #watch(): Promise<void> {
    const now = Date.now()
    await Promise.all(
      [...this.#inFlight].map(async (flight) => {
        if (flight.stop !== null || Atomics.load(flight.slot, 0) === 0) return
        if (flight.startedAt === 0) flight.startedAt = now
        const tid = Atomics.load(flight.slot, 1)
        const ticks = tid === 0 ? null : await threadTicks(tid)
        if (ticks !== null) flight.cpuMs = (ticks - Atomics.load(flight.slot, 2)) * TICK_MS
        const budget = this.#limits.cpuBudgetMs[flight.task.step]
        // Off Linux the budget is wall-clock time, with room for a loaded machine.
        const over = ticks === null ? now - flight.startedAt > budget * 2 : flight.cpuMs! > budget
        if (over) {
          flight.stop = ticks === null ? 'time' : 'budget'
          flight.controller.abort()
          return
        }
        const used = ticks === null ? now - flight.startedAt : flight.cpuMs!
        if (flight.task.siteKey !== undefined && used > SLOW_STEP_CPU_MS) {
          flight.slowSince ??= now
          this.#share.markSlow(flight.siteKey)
        }
      }),
    )
    const victim = this.#share.preempt(this.#running())
    if (victim !== undefined) {
      victim.stop = 'preempted'
      victim.controller.abort()
    }
  }
}
