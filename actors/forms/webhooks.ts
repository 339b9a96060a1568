import { createHmac } from 'node:crypto'
import type { Clock } from '../../core/clock.js'
import { WEBHOOK_BACKOFF_MAX_MS, WEBHOOK_BACKOFF_START_MS, WEBHOOK_CONCURRENCY, WEBHOOK_RETRY_WINDOW_MS } from '../../core/limits.js'
import type { Logger } from '../../core/log.js'
import type { DeliveryAttempt, WebhookDeliveryRecord } from '../../core/schemas/forms.js'
import type { FormsStore } from './tables.js'
import type { Forms } from './forms.js'
import { OutboundError, type OutboundGuard } from '../outbound.js'

/** The header a webhook's signature rides in: `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`. */
export const SIGNATURE_HEADER = 'x-platform-signature'

/** The signature of a body at time `t` (seconds) with a website's secret; receivers compute the same. */
export function signature(secret: string, t: number, body: string): string {
  return `t=${t},v1=${createHmac('sha256', secret).update(`${t}.${body}`).digest('hex')}`
}

/**
 * Sends form webhooks from the durable outbox (spec: Forms, webhook). A submission's commit puts its
 * delivery in the outbox; this loop sends what is due through the SSRF guard, records every attempt
 * on the submission, and retries failures with exponential backoff (30 s doubling, at most an hour
 * apart) until 24 hours after the submission. Nothing here runs on a visitor's request, and a restart
 * picks the outbox up where it was.
 */
export class WebhookDeliverer {
  #running: Promise<number> | null = null

  constructor(
    private readonly store: FormsStore,
    private readonly clock: Clock,
    private readonly forms: Forms,
    private readonly guard: OutboundGuard,
    private readonly log: Logger,
  ) {}

  /** One pass over what is due (never two at once); resolves with how many were tried. */
  deliverDue(): Promise<number> {
    this.#running ??= this.#pass().finally(() => (this.#running = null))
    return this.#running
  }

  /** Resolves when the pass under way (if any) has finished. */
  async drained(): Promise<void> {
    await this.#running
  }

  async #pass(): Promise<number> {
    const now = this.clock.now()
    // Fair between websites: at most two deliveries of one website per pass, so a site whose receiver
    // hangs delays only its own; and no barrier between them, each slot takes the next as it frees.
    const due: WebhookDeliveryRecord[] = []
    const perSite = new Map<string, number>()
    for (const { value } of this.store.webhooksDue.range({ start: [0, ''], end: [now + 1, ''] })) {
      const delivery = this.store.webhookDeliveries.get(value)
      if (delivery === undefined) continue
      const taken = perSite.get(delivery.websiteId) ?? 0
      if (taken >= 2) continue
      perSite.set(delivery.websiteId, taken + 1)
      due.push(delivery)
      if (due.length >= 100) break
    }
    let next = 0
    const worker = async () => {
      while (next < due.length) await this.#attempt(due[next++])
    }
    await Promise.all(Array.from({ length: Math.min(WEBHOOK_CONCURRENCY, due.length) }, worker))
    return due.length
  }

  async #attempt(delivery: WebhookDeliveryRecord): Promise<void> {
    const at = this.clock.now()
    const t = Math.floor(at / 1000)
    let attempt: DeliveryAttempt
    try {
      const response = await this.guard.request(delivery.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': 'Plinth-Webhooks/1',
          [SIGNATURE_HEADER]: signature(this.forms.webhookSecret(delivery.websiteId), t, delivery.body),
        },
        body: delivery.body,
      })
      const ok = response.status >= 200 && response.status < 300
      attempt = { at, status: response.status, error: ok ? null : `the receiver answered ${response.status}` }
    } catch (error) {
      attempt = { at, status: null, error: error instanceof OutboundError ? error.message : String(error) }
      if (!(error instanceof OutboundError))
        this.log.error('webhook attempt failed unexpectedly', { deliveryId: delivery.id, error: (error as Error)?.stack ?? String(error) })
    }
    const delivered = attempt.error === null
    const attempts = delivery.attempts + 1
    const wait = Math.min(WEBHOOK_BACKOFF_MAX_MS, WEBHOOK_BACKOFF_START_MS * 2 ** (attempts - 1))
    const next = this.clock.now() + wait
    const givingUp = !delivered && next > delivery.createdAt + WEBHOOK_RETRY_WINDOW_MS
    await this.store.commit(() => {
      const submission = this.store.formSubmissions.get(delivery.submissionId)
      this.store.webhooksDue.remove([delivery.nextAttemptAt, delivery.id])
      if (delivered || givingUp || submission === undefined) this.store.webhookDeliveries.remove(delivery.id)
      else {
        this.store.webhookDeliveries.put(delivery.id, { ...delivery, attempts, nextAttemptAt: next })
        this.store.webhooksDue.put([next, delivery.id], delivery.id)
      }
      if (submission !== undefined) {
        this.store.formSubmissions.put(submission.id, {
          ...submission,
          webhook: delivered ? 'delivered' : givingUp ? 'failed' : 'pending',
          deliveries: [...submission.deliveries, attempt].slice(-50),
        })
      }
    })
  }
}
