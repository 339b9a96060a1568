// One credential's commands at a time: a mailbox per credential, made on demand and dropped when empty.
import type { AnonymousCredentialRecord } from '../../core/schemas/anonymous.js'
import type { AnonymousStore } from './tables.js'
import { Mailbox } from '../mailbox.js'

/** The credential's record as stored now (it must exist). */
export function currentCredential(store: AnonymousStore, id: string): AnonymousCredentialRecord {
  const record = store.anonCredentials.get(id)
  if (record === undefined) throw new Error(`anonymous credential ${id} vanished`)
  return record
}

/** The mailboxes of the credentials with a command queued or running. */
export class CredentialTurns {
  readonly #mailboxes = new Map<string, Mailbox>()

  constructor(private readonly store: AnonymousStore) {}

  /** True while the credential has a command queued or running. */
  has(id: string): boolean {
    return this.#mailboxes.has(id)
  }

  /** Runs a command of one credential, on its current record, after every earlier one. */
  run<T>(id: string, command: (credential: AnonymousCredentialRecord) => Promise<T>): Promise<T> {
    let mailbox = this.#mailboxes.get(id)
    if (mailbox === undefined) {
      mailbox = new Mailbox()
      this.#mailboxes.set(id, mailbox)
    }
    const box = mailbox
    return box
      .run(() => command(currentCredential(this.store, id)))
      .finally(() => {
        if (box.size === 0 && this.#mailboxes.get(id) === box) this.#mailboxes.delete(id)
      })
  }

  /** Resolves when every credential command queued so far has finished. */
  async drained(): Promise<void> {
    await Promise.all([...this.#mailboxes.values()].map((m) => m.drained()))
  }
}
