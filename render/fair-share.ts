/** How long a site stays slow, unless a task of it runs fast before then. */
const SLOW_SITE_MS = 10 * 60_000

/** A task in flight, as the policy sees it. */
export interface Running {
  siteKey: string
  /** Since when the task counts as a slow site's (its site was slow when it started, or it ran slow); null: fast. */
  slowSince: number | null
}

/**
 * Turns between sites for a pool of `slots` workers (render processes, check threads):
 *
 * - one task per site at a time, and sites take turns (round robin), so a site's tasks wait behind
 *   at most one task of each other site, never behind another site's queue;
 * - a site whose task ran slow is slow for a while, and slow sites together hold at most all slots
 *   but one (and always one), so fast sites always have a slot;
 * - when slow tasks hold more than that share (a task turned slow while it ran) and a fast site
 *   waits, the task that turned slow last is the one to take back.
 */
export class FairShare<J> {
  /** Waiting jobs by site; a site's position in this map is its turn (served sites move to the back). */
  readonly #waiting = new Map<string, J[]>()
  readonly #slowUntil = new Map<string, number>()

  constructor(readonly slots: number) {}

  /** Slow sites may hold all slots but one (and always one). */
  get slowQuota(): number {
    return Math.max(1, this.slots - 1)
  }

  get waiting(): boolean {
    return this.#waiting.size > 0
  }

  /** Queues a job of a site; `front` for one taken back, so it goes on before the site's later work. */
  enqueue(siteKey: string, job: J, front = false): void {
    const jobs = this.#waiting.get(siteKey) ?? []
    if (front) jobs.unshift(job)
    else jobs.push(job)
    this.#waiting.set(siteKey, jobs)
  }

  /** Takes a job out of the queue; false when it was not waiting. */
  remove(siteKey: string, job: J): boolean {
    const jobs = this.#waiting.get(siteKey)
    const at = jobs?.indexOf(job) ?? -1
    if (at === -1) return false
    jobs!.splice(at, 1)
    if (jobs!.length === 0) this.#waiting.delete(siteKey)
    return true
  }

  /** Empties the queue, returning what waited. */
  drain(): J[] {
    const all = [...this.#waiting.values()].flat()
    this.#waiting.clear()
    return all
  }

  isSlow(siteKey: string): boolean {
    const until = this.#slowUntil.get(siteKey)
    if (until === undefined) return false
    if (until > Date.now()) return true
    this.#slowUntil.delete(siteKey)
    return false
  }

  markSlow(siteKey: string): void {
    this.#slowUntil.set(siteKey, Date.now() + SLOW_SITE_MS)
  }

  /** A site that ran a whole task without turning slow is fast again. */
  markFast(siteKey: string): void {
    this.#slowUntil.delete(siteKey)
  }

  /** The next job to start, given the tasks in flight; undefined when none may start now. */
  next(running: readonly Running[]): J | undefined {
    const busy = new Set(running.map((r) => r.siteKey))
    const slowRunning = running.filter((r) => r.slowSince !== null).length
    for (const [siteKey, jobs] of this.#waiting) {
      if (busy.has(siteKey)) continue
      if (this.isSlow(siteKey) && slowRunning >= this.slowQuota) continue
      const job = jobs.shift()!
      // Served: the site goes to the back of the turn order.
      this.#waiting.delete(siteKey)
      if (jobs.length > 0) this.#waiting.set(siteKey, jobs)
      return job
    }
    return undefined
  }

  /** The task to take back so a waiting fast site gets the slot slow tasks hold beyond their share. */
  preempt<R extends Running>(running: readonly R[]): R | undefined {
    const slow = running.filter((r) => r.slowSince !== null)
    if (slow.length <= this.slowQuota) return undefined
    const busy = new Set(running.map((r) => r.siteKey))
    const fastWaiting = [...this.#waiting.keys()].some((siteKey) => !busy.has(siteKey) && !this.isSlow(siteKey))
    if (!fastWaiting) return undefined
    return slow.reduce((a, b) => (a.slowSince! > b.slowSince! ? a : b))
  }
}
