// Changes this process's actors did not make themselves, announced by table to the caches that mirror those tables.
import type { Key } from './tables.js'
import type { Write } from './write-set.js'

/** One write of a change: its table, key and value as now stored (null: the key was removed). */
export interface Change {
  table: string
  key: Key
  value: unknown
}

type Listener = (changes: readonly Change[]) => void

/**
 * The one path by which caches learn of writes made elsewhere: an entry of a cluster's log applied on
 * this node (a replica following, or a node catching up before it leads). A concern keeps its caches
 * current for the commits its own actor makes (it writes the store, then its memory, as it always
 * has) and listens here, by the tables it caches, for every other write; so it is correct on a
 * cluster's replicas without knowing they exist. (Its own commits are not announced back to it: a
 * website's actor would otherwise be made again from the store after each of its own writes.)
 *
 * Two passes per change: the caches (`listen`) first, then what reads them (`after`: the serving
 * threads are told of the websites whose answers changed), so no observer sees a cache half current.
 */
export class ChangeFeed {
  readonly #caches: { tables: ReadonlySet<string>; fn: Listener }[] = []
  readonly #observers: { tables: ReadonlySet<string>; fn: Listener }[] = []

  /** `fn` runs with the writes to `tables` of each change, before any observer. */
  listen(tables: readonly string[], fn: Listener): void {
    this.#caches.push({ tables: new Set(tables), fn })
  }

  /** `fn` runs with the writes to `tables` of each change, once every cache has taken it. */
  after(tables: readonly string[], fn: Listener): void {
    this.#observers.push({ tables: new Set(tables), fn })
  }

  /** Tells the listeners of a change: the writes, with values read by `decode` (only for tables someone listens to). */
  announce(writes: readonly Write[], decode: (table: string, bytes: Buffer) => unknown): void {
    const decoded = new Map<Write, Change>()
    const changeOf = (write: Write): Change => {
      let change = decoded.get(write)
      if (change === undefined) {
        const [table, key, bytes] = write
        decoded.set(write, (change = { table, key, value: bytes === null ? null : decode(table, bytes) }))
      }
      return change
    }
    for (const { tables, fn } of [...this.#caches, ...this.#observers]) {
      const mine = writes.filter(([table]) => tables.has(table))
      if (mine.length > 0) fn(mine.map(changeOf))
    }
  }
}
