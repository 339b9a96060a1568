// Sites' functions as the registry holds them: the isolate pool, the limits, each site's logs, and what a request's function may reach.
import type { Clock } from '../../core/clock.js'
import {
  DEFAULT_FUNCTION_LIMITS,
  FunctionPool,
  type FunctionLimits,
  type InvocationHost,
  type InvocationResult,
} from '../../render/functions/function-pool.js'
import { mapStack } from '../../render/functions/stack.js'
import type { Mailboxes } from '../mailboxes.js'
import { FunctionKv } from './kv.js'
import { FunctionLogs } from './logs.js'
import type { FunctionsStore } from './tables.js'
import { FunctionVariables } from './variables.js'

export type { InvocationHost, InvocationResult } from '../../render/functions/function-pool.js'
export type { FunctionLogEntry, FunctionLogLine } from './logs.js'

/** What a function request may bring and make (operator settings; Cloudflare's where it has them). */
export interface FunctionSettings extends FunctionLimits {
  /** Request body bytes a function reads at most (10 MiB). */
  bodyBytes: number
  /** Outgoing fetches per request (50). */
  subrequests: number
}

export const DEFAULT_FUNCTION_SETTINGS: FunctionSettings = { ...DEFAULT_FUNCTION_LIMITS, bodyBytes: 10 * 1024 * 1024, subrequests: 50 }

/**
 * The functions of every site: runs a request through a version's compiled script (by its hash, in a
 * warm isolate of the pool) and keeps what it logged. The pool is made on the first request, so a
 * server whose sites have no functions starts no process for them.
 */
export class SiteFunctions {
  readonly logs: FunctionLogs
  readonly variables: FunctionVariables
  readonly kv: FunctionKv
  #pool: FunctionPool | null = null

  constructor(
    private readonly store: FunctionsStore,
    clock: Clock,
    lanes: Mailboxes,
    /** Seals secrets at rest (derived from the installation's secret). */
    key: Buffer,
    readonly settings: FunctionSettings = DEFAULT_FUNCTION_SETTINGS,
    private readonly processes?: number,
  ) {
    this.logs = new FunctionLogs(() => clock.now())
    this.variables = new FunctionVariables(store, clock, lanes, key)
    this.kv = new FunctionKv(store, clock, lanes)
  }

  /** Runs one request; never rejects (every failure is an outcome). */
  invoke(script: string, head: string, body: Uint8Array | null, host: InvocationHost): Promise<InvocationResult> {
    this.#pool ??= new FunctionPool((hash) => this.store.getBlob(hash)?.toString('utf8') ?? null, { processes: this.processes })
    return this.#pool.invoke(script, head, body, this.settings, host)
  }

  /** A stack trace with its frames named by the site's files (the script's source map, by hash). */
  stack(stack: string, map: string | null): string {
    return mapStack(stack, map === null ? null : (this.store.getBlob(map)?.toString('utf8') ?? null))
  }

  /** Plain variables and secrets a site's functions read as `env`, and the secrets' values (kept out of its logs). */
  env(websiteId: string): { env: Record<string, string>; secrets: string[] } {
    return this.variables.env(websiteId)
  }

  /** Inside a website's purge commit: its variables and key-value store go with it. */
  removeWebsite(websiteId: string): void {
    this.variables.removeWebsite(websiteId)
    this.kv.removeWebsite(websiteId)
    this.logs.forget(websiteId)
  }

  async close(): Promise<void> {
    await this.#pool?.close()
  }
}
