import { Mailbox, type Lane } from './mailbox.js'

/**
 * One mailbox per key (a website id: the website's lane): commands on one key run one at a time, in
 * arrival order, and commands on different keys never wait on each other. A key's mailbox exists only
 * while it has commands queued or running, so an installation with a million websites holds none at
 * rest.
 */
export class Mailboxes {
  readonly #boxes = new Map<string, { box: Mailbox; pending: number }>()

  constructor(
    /**
     * Asked when a command's turn comes: an error refuses it (its key is gone: a website purged while
     * the command waited behind the purge), null lets it run. Without it every command runs.
     */
    private readonly gone: ((key: string) => Error | null) | null = null,
  ) {}

  /**
   * Runs `command` in its turn on `key`. `evenIfGone`: the command cleans up after its key is gone
   * (the last steps of a purge, the expiry sweep) and runs anyway.
   */
  run<T>(key: string, command: () => Promise<T> | T, options: { evenIfGone?: boolean } = {}): Promise<T> {
    const gone = options.evenIfGone === true ? null : this.gone
    const guarded =
      gone === null
        ? command
        : () => {
            const refused = gone(key)
            if (refused !== null) throw refused
            return command()
          }
    let entry = this.#boxes.get(key)
    if (entry === undefined) {
      entry = { box: new Mailbox(), pending: 0 }
      this.#boxes.set(key, entry)
    }
    const held = entry
    held.pending++
    return held.box.run(guarded).finally(() => {
      if (--held.pending === 0 && this.#boxes.get(key) === held) this.#boxes.delete(key)
    })
  }

  /** True while the key has a command queued or running. */
  has(key: string): boolean {
    return this.#boxes.has(key)
  }

  /** The lane of one key, for a mailbox that joins it. */
  lane(key: string): Lane {
    return (command) => this.run(key, command)
  }

  /** Commands queued or running, over every key. */
  get size(): number {
    let size = 0
    for (const { pending } of this.#boxes.values()) size += pending
    return size
  }

  /** Resolves when every command queued so far, on every key, has finished. */
  async drained(): Promise<void> {
    await Promise.all([...this.#boxes.values()].map(({ box }) => box.drained()))
  }
}
