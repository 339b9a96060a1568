/**
 * Runs a flush one at a time. A call during a flush waits for the next one, which takes everything
 * pushed until it starts: what was counted before a call is written when its promise resolves (the
 * running flush took its buffer before that). Calls made while the next one waits share it.
 */
export class Flusher {
  #running: Promise<void> | null = null
  #waiting: Promise<void> | null = null

  constructor(private readonly run: () => Promise<void>) {}

  flush(): Promise<void> {
    if (this.#waiting !== null) return this.#waiting
    if (this.#running !== null) {
      this.#waiting = this.#running
        .catch(() => undefined)
        .then(() => {
          this.#waiting = null
          return this.flush()
        })
      return this.#waiting
    }
    this.#running = this.run().finally(() => (this.#running = null))
    return this.#running
  }
}
