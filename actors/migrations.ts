// Schema migrations: run once per installation, by whichever process writes (the embedded server, a cluster's primary), as ordinary commits.
import type { Store } from '../core/store/store.js'
import { LOG_FORMAT } from '../core/store/write-set.js'
import { rewriteWebsites } from './website/migrations.js'

/**
 * A change to records a newer build makes to what an older one wrote. It comes with a new log format
 * (core/store/write-set.ts), so no older node of a cluster applies its writes, and the build that
 * carries it reads the records both before and after it (during a rolling upgrade it applies an older
 * primary's writes, and an actor may write a record back between two of its commits).
 */
export interface Migration {
  /** Its name, recorded in the installation record once it ran: it never runs again. */
  id: string
  /** What it changes, for the operator's log. */
  what: string
  /**
   * Makes the change in commits of its own (each one a log entry in a cluster, so replicas apply it
   * as they apply every write), reading each record in the commit that writes it; resolves how many
   * records it changed. Safe to run again from the start: a crash before its id is recorded runs it again.
   */
  run(store: Store): Promise<number>
}

/** The migrations this build carries (each in its concern's folder), oldest first (none yet in a real build: every record is at its first schema). */
export const MIGRATIONS: readonly Migration[] = LOG_FORMAT === 3 ? [rewriteWebsites] : []
