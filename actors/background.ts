// Background work that writes (sweeps, flushes, deliveries, scheduled publications): one scheduler for all of it.
import type { Logger } from '../core/log.js'

interface Job {
  what: string
  timer: NodeJS.Timeout
  running: Promise<unknown> | null
}

/**
 * Runs each job on its period, only while this node makes writes (`writable`: the embedded server, or a
 * cluster's primary; never a replica, whose store refuses commits), one turn of a job at a time (a turn
 * still running when the next is due skips that one), with a failure logged under the job's name. No
 * concern checks where it runs: each hands its turn here (`every`), and the composition root says when
 * writes are allowed.
 */
export class Background {
  readonly #jobs: Job[] = []

  constructor(
    private readonly writable: () => boolean,
    private readonly log: Logger,
  ) {}

  /** Runs `turn` every `periodMs` (0: never; tests and offline commands turn a job off). */
  every(what: string, periodMs: number, turn: () => Promise<unknown> | unknown): void {
    if (periodMs <= 0) return
    const job: Job = { what, running: null, timer: undefined as unknown as NodeJS.Timeout }
    job.timer = setInterval(() => {
      if (job.running !== null || !this.writable()) return
      job.running = Promise.resolve()
        .then(turn)
        .catch((error: unknown) => this.log.error(`${what} failed`, { error: (error as Error)?.stack ?? String(error) }))
        .finally(() => (job.running = null))
    }, periodMs).unref()
    this.#jobs.push(job)
  }

  /** Stops every job (shutdown); resolves when the turns under way have finished. */
  async close(): Promise<void> {
    for (const job of this.#jobs) clearInterval(job.timer)
    await Promise.all(this.#jobs.map((job) => job.running))
  }
}
