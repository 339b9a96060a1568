/**
 * A mailbox runs commands one at a time, in arrival order. An actor puts every command that reads
 * and then writes its state through its mailbox, so a check and the write it guards never
 * interleave with another command of the same actor.
 */
export class Mailbox {
  #tail: Promise<unknown> = Promise.resolve()
  #queued = 0

  run<T>(command: () => Promise<T> | T): Promise<T> {
    this.#queued++
    const result = this.#tail.then(command)
    this.#tail = result.then(
      () => this.#queued--,
      () => this.#queued--,
    )
    return result
  }

  /** Commands queued or running. */
  get size(): number {
    return this.#queued
  }

  /** Resolves when every command queued so far has finished. */
  drained(): Promise<void> {
    return this.#tail.then(() => undefined)
  }
}
