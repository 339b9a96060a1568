// What a cluster's nodes hand each other beside the log, as the composition root uses it: a replica's page
// views, a backup that ended, an operator's command given to a replica and a key-value write a function made
// on one (each run by the primary), and the lines its sites' functions logged (kept by every node).
import { errorBody, type ErrorBody } from '../core/errors.js'
import type { Logger } from '../core/log.js'
import { BACKUP_SUBJECT, FUNCTION_LOGS_SUBJECT, KV_SUBJECT, OPERATOR_SUBJECT, type NodeMessages } from './messages.js'
import type { ClusterTrust } from './trust.js'

/** What the primary answered to an operator's command (the control socket's answer line, as it gives it). */
export type OperatorAnswer = { ok: boolean; answer?: unknown; error?: ErrorBody }

/** The primary's answer travels sealed under a subject of its own: a request cannot be said back as an answer. */
const answerOf = (subject: string) => `${subject}.answer`

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
  askPrimary(command: unknown, timeoutMs: number): Promise<OperatorAnswer | null> {
    return this.#ask(OPERATOR_SUBJECT, command, timeoutMs)
  }

  /** While this node leads, runs each operator's command another node hands on with `run`, and answers it. */
  onOperator(run: (command: unknown) => Promise<unknown>): void {
    this.#answer(OPERATOR_SUBJECT, run)
  }

  /** Hands a write to a site's key-value store (made by its function on this replica) to the primary, sealed; as askPrimary. */
  askPrimaryKv(write: unknown, timeoutMs: number): Promise<OperatorAnswer | null> {
    return this.#ask(KV_SUBJECT, write, timeoutMs)
  }

  /** While this node leads, commits each key-value write a replica hands on with `run`, and answers it. */
  onKv(run: (write: unknown) => Promise<unknown>): void {
    this.#answer(KV_SUBJECT, run)
  }

  /** Tells every other node the lines this node's site functions logged (sealed). */
  sendFunctionLogs(batch: unknown): void {
    this.messages.say(
      FUNCTION_LOGS_SUBJECT,
      this.trust.seal(FUNCTION_LOGS_SUBJECT, Buffer.from(JSON.stringify({ node: this.node, batch }))),
    )
  }

  /** Hands each batch of lines another node's functions logged to `take`, with the node that sent it. */
  onFunctionLogs(take: (node: string, batch: unknown) => void): void {
    this.messages.on(FUNCTION_LOGS_SUBJECT, (message) => {
      const plain = this.trust.open(FUNCTION_LOGS_SUBJECT, message.data)
      if (plain === null) return
      let said: { node?: unknown; batch?: unknown }
      try {
        said = JSON.parse(plain.toString('utf8'))
      } catch {
        return
      }
      if (typeof said.node === 'string' && said.node !== this.node) take(said.node, said.batch)
    })
  }

  async #ask(subject: string, request: unknown, timeoutMs: number): Promise<OperatorAnswer | null> {
    const asked = this.trust.seal(subject, Buffer.from(JSON.stringify(request)))
    const said = await this.messages.ask(subject, asked, timeoutMs)
    const plain = said === null ? null : this.trust.open(answerOf(subject), said)
    return plain === null ? null : (JSON.parse(plain.toString('utf8')) as OperatorAnswer)
  }

  #answer(subject: string, run: (request: unknown) => Promise<unknown>): void {
    this.messages.onAsked(subject, async (payload) => {
      if (!this.leading()) return null
      const plain = this.trust.open(subject, payload)
      if (plain === null) return null
      let request: unknown
      try {
        request = JSON.parse(plain.toString('utf8'))
      } catch {
        return null
      }
      // A refusal travels in the API's error shape (its kind and message), as the control socket answers it.
      const answer = await run(request).then(
        (said): OperatorAnswer => ({ ok: true, answer: said }),
        (error: unknown): OperatorAnswer => ({ ok: false, error: errorBody(error) }),
      )
      return this.trust.seal(answerOf(subject), Buffer.from(JSON.stringify(answer)))
    })
  }
}
