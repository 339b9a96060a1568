import { createHmac, timingSafeEqual } from 'node:crypto'
import type { Clock } from '../../core/clock.js'
import type { AnalyticsStore } from './tables.js'
import type { Mailboxes } from '../mailboxes.js'

/**
 * Shareable, read-only analytics dashboards: one unguessable link per website, derived from the
 * installation's key and a generation number (so the link itself is never stored), revoked by
 * bumping the generation.
 */
export class AnalyticsShares {
  constructor(
    private readonly store: AnalyticsStore,
    private readonly clock: Clock,
    /** Websites' lanes: turning sharing on or off runs in the website's. */
    private readonly lanes: Mailboxes,
    private readonly key: Buffer,
  ) {}

  #secret(websiteId: string, generation: number): string {
    return createHmac('sha256', this.key).update(`analytics-share:${websiteId}:${generation}`).digest('base64url')
  }

  /** The link's secret while sharing is on; null when it is off. */
  secret(websiteId: string): string | null {
    const record = this.store.analyticsShares.get(websiteId)
    return record?.enabled === true ? this.#secret(websiteId, record.generation) : null
  }

  /** Turns sharing on with a new secret (an earlier link stops working). */
  enable(websiteId: string): Promise<string> {
    return this.lanes.run(websiteId, async () => {
      const now = this.clock.now()
      const record = await this.store.commit(() => {
        const current = this.store.analyticsShares.get(websiteId)
        const next = { v: 1 as const, websiteId, generation: (current?.generation ?? -1) + 1, enabled: true, updatedAt: now }
        this.store.analyticsShares.put(websiteId, next)
        return next
      })
      return this.#secret(websiteId, record.generation)
    })
  }

  /** Turns sharing off: the link answers 404 from now on. */
  revoke(websiteId: string): Promise<void> {
    return this.lanes.run(websiteId, async () => {
      const now = this.clock.now()
      await this.store.commit(() => {
        const current = this.store.analyticsShares.get(websiteId)
        if (current !== undefined)
          this.store.analyticsShares.put(websiteId, { ...current, generation: current.generation + 1, enabled: false, updatedAt: now })
      })
    })
  }

  /** True when `secret` is the website's current link secret. */
  matches(websiteId: string, secret: string): boolean {
    const expected = this.secret(websiteId)
    if (expected === null) return false
    const a = Buffer.from(expected)
    const b = Buffer.from(secret)
    return a.length === b.length && timingSafeEqual(a, b)
  }
}
