import { Mailbox, type Lane } from './mailbox.js'

/**
 * One mailbox per key (a website id: the website's lane): commands on one key run one at a time, in
 * arrival order, and commands on different keys never wait on each other. A key's mailbox exists only
 * while it has commands queued or running, so an installation with a million websites holds none at
 * rest.
 */
export class Mailboxes {
  readonly #boxes = new Map<string, { box: Mailbox; pending: number }>()

  run<T>(key: string, command: () => Promise<T> | T): Promise<T> {
    let entry = this.#boxes.get(key)
    if (entry === undefined) {
      entry = { box: new Mailbox(), pending: 0 }
      this.#boxes.set(key, entry)
    }
    const held = entry
    held.pending++
    return held.box.run(command).finally(() => {
      if (--held.pending === 0 && this.#boxes.get(key) === held) this.#boxes.delete(key)
    })
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
