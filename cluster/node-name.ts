// A node's name in the `plinth-nodes` bucket: held while it runs (its entry lives two leases, renewed), signed.
import { randomBytes } from 'node:crypto'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { KV } from '@nats-io/kv'
import type { Logger } from '../core/log.js'
import type { ClusterTrust } from './trust.js'

/** The file in a node's data directory that names it among data directories (made at its first start in a cluster). */
const HOME_FILE = 'cluster-home'

/**
 * The id of a node's data directory (random, made once, kept in it): an entry in plinth-nodes with this
 * id was made by a run of this node on this data directory. The data directory's lock is held before
 * this is read, so that run has ended.
 */
export function homeOf(dataDir: string): string {
  const path = join(dataDir, HOME_FILE)
  if (existsSync(path)) {
    const id = readFileSync(path, 'utf8').trim()
    if (/^[0-9a-f]{32}$/.test(id)) return id
  }
  const id = randomBytes(16).toString('hex')
  writeFileSync(path, `${id}\n`, { mode: 0o600 })
  return id
}

/** Times a start tries to take its name when the entry keeps changing under it. */
const TAKE_ATTEMPTS = 3

/** The name's entry changed between its read and its overwrite. */
class Changed extends Error {
  constructor(override readonly cause: unknown) {
    super(String(cause))
  }
}

/**
 * One entry per node, under its name: its address, its data directory's id (`homeOf`), when, and how
 * far it applied the log, signed like a message between nodes. A second node started under a name a live
 * node holds is refused; the entry of this node's own run before a restart (killed, its entry not yet
 * expired: the same data directory, whose lock this run holds) is taken over at once; an entry no node
 * signed (a NATS client put it there) is written over and counted.
 */
export class NodeName {
  #revision = 0

  constructor(
    private readonly nodes: KV,
    private readonly trust: ClusterTrust,
    private readonly node: string,
    private readonly url: string,
    /** This node's data directory's id (`homeOf`). */
    private readonly home: string,
    private readonly logger: Logger,
    /** Told when an entry no node signed held the name (counted in /metrics). */
    private readonly forged: () => void,
  ) {}

  /** This node's entry (its address, when, how far it applied the log), signed like a message between nodes. */
  #entry(applied: number): string {
    const said = JSON.stringify({ url: this.url, home: this.home, at: Date.now(), seq: applied })
    const { at, mac } = this.trust.sealMessage(`plinth-nodes.${this.node}`, Buffer.from(said), Date.now())
    return JSON.stringify({ said, at, mac })
  }

  /**
   * Takes the name; throws naming the other node when a live one holds it. Resolves true when it was
   * held by this node's own run before this start (which has ended: its lease, if it led, may be taken at once).
   */
  async take(applied: number): Promise<boolean> {
    // The entry read may expire (two leases after its last renewal) or change before it is written over:
    // then the write meets another revision ("wrong last sequence"), and the name is taken again from the top.
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.#take(applied)
      } catch (error) {
        if (attempt >= TAKE_ATTEMPTS || !(error instanceof Changed)) throw error instanceof Changed ? error.cause : error
      }
    }
  }

  async #take(applied: number): Promise<boolean> {
    try {
      this.#revision = await this.nodes.create(this.node, this.#entry(applied))
      return false
    } catch (error) {
      // The name is held (the key exists); anything else, an election's answer, is the caller's to retry.
      if (!/wrong last sequence|exists/i.test(String(error))) throw error
      const seen = await this.nodes.get(this.node)
      // Gone since the create met it (it expired): taken again from the top.
      if (seen === null || seen.operation !== 'PUT') throw new Changed(error)
      let url: string | null = null
      let home: unknown = null
      try {
        const entry = seen.json<{ said?: unknown; at?: unknown; mac?: unknown }>()
        const said = typeof entry?.said === 'string' ? entry.said : ''
        const signed =
          typeof entry?.at === 'string' &&
          typeof entry.mac === 'string' &&
          this.trust.openMessage(`plinth-nodes.${this.node}`, Buffer.from(said), entry.at, entry.mac) !== null
        const named = signed ? (JSON.parse(said) as { url?: unknown; home?: unknown }) : null
        if (typeof named?.url === 'string') url = named.url
        home = named?.home
      } catch {
        // Not an entry a node wrote.
      }
      if (url === null) {
        // An entry no node signed holds the name (a NATS client put it there): written over.
        this.forged()
        this.logger.warn('the name of this node was held in plinth-nodes by an entry no node signed: written over', { node: this.node })
        this.#revision = await this.#overwrite(applied, seen.revision)
        return false
      }
      if (home === this.home) {
        // This node's own entry from its run before a restart (a kill leaves it for two leases): that run has ended.
        this.logger.info("this node's name was still held by its own run before this start (the same data directory): taken over", {
          node: this.node,
        })
        this.#revision = await this.#overwrite(applied, seen.revision)
        return true
      }
      throw new Error(`another node named "${this.node}" is running (${url ?? 'address unknown'}); give each node its own PLINTH_NODE_NAME`)
    }
  }

  /** Writes over the entry read at `revision`; one that expired or changed since is `Changed` (taken again). */
  async #overwrite(applied: number, revision: number): Promise<number> {
    try {
      return await this.nodes.update(this.node, this.#entry(applied), revision)
    } catch (error) {
      if (/wrong last sequence/i.test(String(error))) throw new Changed(error)
      throw error
    }
  }

  /** The entry renewed (it lives two leases): its address and how far this node applied the log. */
  async renew(applied: number): Promise<void> {
    await this.nodes.update(this.node, this.#entry(applied), this.#revision).then(
      (revision) => (this.#revision = revision),
      () => undefined,
    )
  }

  /** Gives the name up (a node closing). */
  async release(): Promise<void> {
    await this.nodes.delete(this.node, { previousSeq: this.#revision }).catch(() => undefined)
  }
}
