import type { Clock } from '../../core/clock.js'
import { newId } from '../../core/ids.js'
import type { FeedbackRecord } from '../../core/schemas/identity.js'
import type { OrganizationStore } from './tables.js'

/**
 * What people and agents send the operators (POST /v1/feedback; read with `plinth feedback`). The
 * single writer of the `feedback` table: each message is one append under a fresh sequence number,
 * so no command reads before it writes and none needs a mailbox.
 */
export class Feedback {
  constructor(
    private readonly store: OrganizationStore,
    private readonly clock: Clock,
  ) {}

  async send(orgId: string, actor: FeedbackRecord['actor'], message: string, context: FeedbackRecord['context']): Promise<FeedbackRecord> {
    const record: FeedbackRecord = { v: 1, id: newId('fb'), orgId, actor, message, context, createdAt: this.clock.now() }
    await this.store.commit(() => this.store.feedback.put([this.store.nextSeq()], record))
    return record
  }
}
