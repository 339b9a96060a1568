// One credential's commands at a time: a mailbox per credential, made on demand and dropped when empty.
import type { AnonymousCredentialRecord } from '../../core/schemas/anonymous.js'
import type { AnonymousStore } from './tables.js'
import { Mailboxes } from '../mailboxes.js'

/** The credential's record as stored now (it must exist). */
export function currentCredential(store: AnonymousStore, id: string): AnonymousCredentialRecord {
  const record = store.anonCredentials.get(id)
  if (record === undefined) throw new Error(`anonymous credential ${id} vanished`)
  return record
}

/** One lane per credential (actors/mailboxes.ts), with a command queued or running. */
export class CredentialTurns {
  readonly #lanes = new Mailboxes()

  constructor(private readonly store: AnonymousStore) {}

  /** True while the credential has a command queued or running. */
  has(id: string): boolean {
    return this.#lanes.has(id)
  }

  /** Runs a command of one credential, on its current record, after every earlier one. */
  run<T>(id: string, command: (credential: AnonymousCredentialRecord) => Promise<T>): Promise<T> {
    return this.#lanes.run(id, () => command(currentCredential(this.store, id)))
  }

  /** Resolves when every credential command queued so far has finished. */
  drained(): Promise<void> {
    return this.#lanes.drained()
  }
}
