// What a cluster's nodes hand each other beside the log, as the composition root uses it: a replica's page
// views, a backup that ended, and an operator's command given to a replica (run by the primary).
import { errorBody, type ErrorBody } from '../core/errors.js'
import type { Logger } from '../core/log.js'
import { BACKUP_SUBJECT, OPERATOR_SUBJECT, type NodeMessages } from './messages.js'
import type { ClusterTrust } from './trust.js'

/** What the primary answered to an operator's command (the control socket's answer line, as it gives it). */
export type OperatorAnswer = { ok: boolean; answer?: unknown; error?: ErrorBody }

/** The primary's answer travels sealed under its own subject: a request cannot be said back as an answer. */
const ANSWER = `${OPERATOR_SUBJECT}.answer`

export class NodeExchange {
  constructor(
    private readonly messages: NodeMessages,
    private readonly trust: ClusterTrust,
    private readonly node: string,
    /** Whether this node leads now (only the primary folds page views and runs operators' commands). */
    private readonly leading: () => boolean,
    private readonly logger: Logger,
  ) {}

  /** Page views counted on this replica, to the primary (messages.ts). */
  sendViews(report: unknown): void {
    this.messages.sendViews(report)
  }

  /** Hands the replicas' page views to `fold` while this node leads. */
  onViews(fold: (report: unknown) => void): void {
    this.messages.onViews(this.leading, fold, (error) =>
      this.logger.warn("a replica's page views could not be read", { error: String(error) }),
    )
  }

  /** Tells the cluster a backup of this node ended (its primary may trim the log). */
  announceBackup(): void {
    this.messages.say(BACKUP_SUBJECT, Buffer.from(this.node))
  }

  /** Calls `then` when any node says a backup of it ended. */
  onBackup(then: () => void): void {
    this.messages.on(BACKUP_SUBJECT, () => then())
  }

  /**
   * Hands an operator's command (JSON) to the primary, sealed (a password may be in it: nobody on NATS
   * without the installation's secret reads it); resolves its answer, or null when no primary answered
   * within `timeoutMs`.
   */
  async askPrimary(command: unknown, timeoutMs: number): Promise<OperatorAnswer | null> {
    const asked = this.trust.seal(OPERATOR_SUBJECT, Buffer.from(JSON.stringify(command)))
    const said = await this.messages.ask(OPERATOR_SUBJECT, asked, timeoutMs)
    const plain = said === null ? null : this.trust.open(ANSWER, said)
    return plain === null ? null : (JSON.parse(plain.toString('utf8')) as OperatorAnswer)
  }

  /** While this node leads, runs each operator's command another node hands on with `run`, and answers it. */
  onOperator(run: (command: unknown) => Promise<unknown>): void {
    this.messages.onAsked(OPERATOR_SUBJECT, async (payload) => {
      if (!this.leading()) return null
      const plain = this.trust.open(OPERATOR_SUBJECT, payload)
      if (plain === null) return null
      let command: unknown
      try {
        command = JSON.parse(plain.toString('utf8'))
      } catch {
        return null
      }
      // A refusal travels in the API's error shape (its kind and message), as the control socket answers it.
      const answer = await run(command).then(
        (said): OperatorAnswer => ({ ok: true, answer: said }),
        (error: unknown): OperatorAnswer => ({ ok: false, error: errorBody(error) }),
      )
      return this.trust.seal(ANSWER, Buffer.from(JSON.stringify(answer)))
    })
  }
}
