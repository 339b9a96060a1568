import { counters } from '../core/metrics.js'

/** Queues a command behind the others of a wider order and runs it in its turn. */
export type Lane = <T>(command: () => Promise<T> | T) => Promise<T>

/**
 * A mailbox runs commands one at a time, in arrival order. An actor puts every command that reads
 * and then writes its state through its mailbox, so a check and the write it guards never
 * interleave with another command of the same actor. It also says whether its actor may be evicted:
 * held by a request, queued commands, or asked for since the registry last looked.
 */
export class Mailbox {
  #tail: Promise<unknown> = Promise.resolve()
  /** Where commands queue: this mailbox's own order, or a wider one it joins (a website's lane). */
  readonly #lane: Lane | null
  #queued = 0
  #holds = 0
  #closed: string | null = null
  /** Asked for since the registry's last look at idle actors (the registry sets and clears it). */
  touched = true

  /**
   * Without a lane, the mailbox keeps its own order. With one, its commands queue there, behind
   * every other command of the lane: a website actor's commands share its website's lane with the
   * website's domains, CMS and settings, so all of them run one at a time.
   */
  constructor(lane?: Lane) {
    this.#lane = lane ?? null
  }

  run<T>(command: () => Promise<T> | T): Promise<T> {
    // A second writer of the same state must never exist: a closed mailbox refuses loudly.
    if (this.#closed !== null) return Promise.reject(new Error(this.#closed))
    // A lane's own mailbox counts the command for /metrics.
    const counted = this.#lane === null
    this.#queued++
    if (counted) counters.mailboxQueued++
    const done = () => {
      this.#queued--
      if (counted) counters.mailboxQueued--
    }
    const result = this.#lane === null ? this.#tail.then(command) : this.#lane(command)
    this.#tail = result.then(done, done)
    return result
  }

  /** Commands queued or running. */
  get size(): number {
    return this.#queued
  }

  /**
   * Keeps the actor in memory until `release`: a request holds its actors from authorization to
   * answer (its body may still be arriving before it sends a command).
   */
  hold(): void {
    this.#holds++
  }

  release(): void {
    this.#holds--
  }

  /** Nothing holds the actor through its mailbox: no request, no queued or running command. */
  get idle(): boolean {
    return this.#holds === 0 && this.#queued === 0
  }

  /** Refuses every later command with `reason` (an evicted actor's mailbox; it is empty by then). */
  close(reason: string): void {
    this.#closed = reason
  }

  /** Resolves when every command queued so far has finished. */
  drained(): Promise<void> {
    return this.#tail.then(() => undefined)
  }
}
