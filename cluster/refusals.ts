// What a node refused from the cluster: counted by kind (/metrics), each kind logged once.
import type { Logger } from '../core/log.js'
import type { SkipReason } from './log.js'

/** What a node refused from the cluster, counted in /metrics (plinth_cluster_refused_total). */
export type Refusal = `log_${SkipReason}` | 'lease' | 'message' | 'forward'

/** The counts (a Map /metrics reads) and a warning said once per kind (each occurrence is counted). */
export class Refusals extends Map<Refusal, number> {
  readonly #warned = new Set<string>()

  constructor(private readonly logger: Logger) {
    super()
  }

  count(what: Refusal): void {
    this.set(what, (this.get(what) ?? 0) + 1)
  }

  warnOnce(kind: string, message: string, fields: Record<string, unknown>): void {
    if (this.#warned.has(kind)) return
    this.#warned.add(kind)
    this.logger.warn(message, fields)
  }
}
