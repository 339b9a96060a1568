// What a cluster node is given (its settings) and what it tells the rest of the server (its events).
import type { NatsAccess } from './connection.js'

/** How a node joins (core/config.ts reads these from PLINTH_CLUSTER_NATS, PLINTH_NODE_NAME and PLINTH_NODE_URL). */
export interface ClusterSettings extends NatsAccess {
  servers: readonly string[]
  node: string
  /** Where the other nodes reach this one's HTTP port (replicas forward the API there when it leads). */
  url: string
  /** How long a lease lives without renewal (the longest a cluster goes without a primary after one dies). */
  leaseMs: number
  /** The id of this node's data directory (node-name.ts, `homeOf`): its own entry from before a restart is taken over. */
  home: string
}

/** What the rest of the server is told. */
export interface ClusterEvents {
  /**
   * A replica applied an entry (the store announced its writes to the caches of the tables they touch,
   * `Store.changes`); the promise (if any) resolves when every serving thread serves it (then the
   * primary is told).
   */
  applied(): Promise<void> | null | void
  /** This node became the primary (its background work may write now). */
  leading(): void
  /**
   * This node cannot serve or follow as it is, and stops: it stepped down from leading and its data
   * directory holds an entry the log never acknowledged, or the log was trimmed past it (a restart
   * restores a backup); or the log goes on in a newer format than its build reads (`upgrade`: it
   * needs the newer Plinth, and a restart as it is would stop again).
   */
  lost(reason: string, upgrade?: boolean): void
}
