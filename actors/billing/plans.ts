import type { Clock } from '../../core/clock.js'
import type { BillingConfig, PlanName } from '../../core/config.js'
import { ApiError } from '../../core/errors.js'
import { FREE_LINK_MAX_DAYS } from '../../core/limits.js'
import type { AuditActorValue } from '../../core/schemas/audit.js'
import type { PlanRecord } from '../../core/schemas/identity.js'
import type { BillingStore } from './tables.js'
import { Mailbox } from '../mailbox.js'
import { appendAudit } from '../organization/audit.js'

export interface PlanView {
  /** null with billing off: there are no plans (spec: "then there are no plans"). */
  plan: PlanName | null
  comped: boolean
  limits: { websites: number | null; storageBytes: number | null; shareLinkMaxDays: number | null }
  usage: { websites: number }
}

/**
 * Plans and their limits. With billing off (the default) there are no plans: every limit is null
 * (unlimited) and nothing is held. With billing on, an organization without a plan record is on
 * `free`; website slots count live websites that are not storage sites.
 */
export class Plans {
  /** Plan changes one at a time (installation-wide state: the operator's CLI and Stripe's syncs). */
  readonly mailbox = new Mailbox()

  constructor(
    private readonly store: BillingStore,
    private readonly clock: Clock,
    readonly billing: BillingConfig,
    /** Where a person upgrades (the dashboard's billing page). */
    /** Where a person upgrades their plan (the dashboard's billing screen). */
    readonly upgradeUrl: () => string,
  ) {}

  /** Called after a plan changed (the registry activates held claims that now fit). */
  onPlanChanged: ((orgId: string, actor: AuditActorValue) => Promise<void>) | null = null

  record(orgId: string): PlanRecord {
    return (
      this.store.plans.get(orgId) ?? {
        v: 1,
        orgId,
        plan: 'free',
        comped: false,
        stripeCustomerId: null,
        stripeSubscriptionId: null,
        updatedAt: 0,
      }
    )
  }

  /** Live websites of the organization that take a slot (storage sites and held claims take none). */
  websitesUsed(orgId: string): number {
    let used = 0
    for (const { value } of this.store.websitesByOrg.range({ start: [orgId, 'live', 0], end: [orgId, 'live', Number.MAX_SAFE_INTEGER] })) {
      const website = this.store.websites.get(value)
      if (website !== undefined && website.kind !== 'storage' && website.held !== true) used++
    }
    return used
  }

  /** True when one more website of `kind` fits the organization's plan (always, with billing off). */
  hasRoom(orgId: string, kind: string): boolean {
    if (!this.billing.enabled || kind === 'storage') return true
    return this.websitesUsed(orgId) < this.billing.websiteSlots[this.record(orgId).plan]
  }

  view(orgId: string): PlanView {
    const record = this.record(orgId)
    const usage = { websites: this.websitesUsed(orgId) }
    if (!this.billing.enabled)
      return { plan: null, comped: false, limits: { websites: null, storageBytes: null, shareLinkMaxDays: null }, usage }
    const free = record.plan === 'free'
    return {
      plan: record.plan,
      comped: record.comped,
      limits: {
        websites: this.billing.websiteSlots[record.plan],
        storageBytes: free ? this.billing.freeStorageBytes : null,
        shareLinkMaxDays: free ? FREE_LINK_MAX_DAYS : null,
      },
      usage,
    }
  }

  /**
   * 402 `plan_limit` when one more website of `kind` does not fit the organization's plan (create,
   * restore, accepting a transfer). Call inside the commit that adds the website, so two additions
   * can never both take the last slot.
   */
  assertRoom(orgId: string, kind: string): void {
    // An anonymous credential's hidden organization has no plan: its limits are the anonymous ones.
    if (!this.billing.enabled || kind === 'storage' || this.store.organizations.get(orgId)?.kind === 'anonymous') return
    const record = this.record(orgId)
    const slots = this.billing.websiteSlots[record.plan]
    const used = this.websitesUsed(orgId)
    if (used >= slots) {
      throw new ApiError(
        'payment_required',
        `The ${record.plan} plan has room for ${slots} website${slots === 1 ? '' : 's'} and ${used} are in use; upgrade the plan at ${this.upgradeUrl()}, or delete a website first`,
        {
          reason: 'plan_limit',
          upgradeUrl: this.upgradeUrl(),
          plan: record.plan,
          limit: slots,
          used,
        },
      )
    }
  }

  /** 402 `plan_required` when billing is on and the organization is on the free plan: `what` needs a paid one. */
  assertPaid(orgId: string, what: string): void {
    if (!this.billing.enabled) return
    const record = this.record(orgId)
    if (record.plan !== 'free') return
    throw new ApiError('payment_required', `${what} needs a paid plan; upgrade at ${this.upgradeUrl()}`, {
      reason: 'plan_required',
      upgradeUrl: this.upgradeUrl(),
      plan: record.plan,
    })
  }

  /** Sets an organization's plan (the operator's `plinth plan set`, or a Stripe sync). */
  async set(
    actor: AuditActorValue,
    orgId: string,
    plan: PlanName,
    change: { comped?: boolean; stripeCustomerId?: string | null; stripeSubscriptionId?: string | null } = {},
  ): Promise<PlanRecord> {
    if (this.store.organizations.get(orgId) === undefined) throw new ApiError('not_found', `Organization ${orgId} not found`)
    let changed = false
    const next = await this.mailbox.run(() => {
      const now = this.clock.now()
      return this.store.commit(() => {
        const current = this.record(orgId)
        const next: PlanRecord = {
          ...current,
          plan,
          comped: change.comped ?? current.comped,
          stripeCustomerId: change.stripeCustomerId === undefined ? current.stripeCustomerId : change.stripeCustomerId,
          stripeSubscriptionId: change.stripeSubscriptionId === undefined ? current.stripeSubscriptionId : change.stripeSubscriptionId,
          updatedAt: now,
        }
        this.store.plans.put(orgId, next)
        if (current.plan !== plan || current.comped !== next.comped) {
          changed = true
          appendAudit(this.store, orgId, actor, now, {
            eventType: 'billing.plan_changed',
            resourceType: 'billing',
            resourceId: orgId,
            websiteId: null,
            metadata: { from: current.plan, to: plan, comped: next.comped },
          })
        }
        return next
      })
    })
    // After the turn: activating held claims runs website commands, each in its own website's lane.
    if (changed) await this.onPlanChanged?.(orgId, actor)
    return next
  }
}
