import type Stripe from 'stripe'
import type { PlanName, StripeConfig } from '../../core/config.js'
import { ApiError } from '../../core/errors.js'
import { STRIPE_TIMEOUT_MS } from '../../core/limits.js'
import type { AuditActorValue } from '../../core/schemas/audit.js'
import type { Plans } from './plans.js'

/** Subscription statuses that keep a paid plan (Stripe retries a past-due payment before giving up). */
const PAYING = new Set<string>(['active', 'trialing', 'past_due'])

/** Paid plans, best last, so the best of several subscriptions wins. */
const PAID = ['base', 'max'] as const

export interface CheckoutRequest {
  orgId: string
  plan: 'base' | 'max'
  /** The signed-in person paying: Stripe's customer gets their email. */
  email: string | null
  name: string
  actor: AuditActorValue
}

/**
 * Checkout, the customer portal and subscription sync through Stripe's official client. The one
 * place that talks to Stripe: an organization's Stripe customer is created at its first checkout and
 * kept on its plan record; `sync` reads the customer's subscriptions and sets the plan to the best
 * paid plan among those still paying (free when none is, unless the operator comped the plan).
 */
export class StripeBilling {
  /** Stripe's client, loaded on first use (its 200 modules cost every start a sixth of a second otherwise). */
  #stripe: Promise<{ client: Stripe; StripeError: typeof Stripe.errors.StripeError }> | null = null
  /** One customer creation per organization at a time, so two checkouts never make two customers. */
  readonly #customers = new Map<string, Promise<string>>()

  constructor(
    private readonly config: StripeConfig,
    private readonly plans: Plans,
    /** A dashboard URL for `path` (Stripe sends the person back there). */
    private readonly appUrl: (path: string) => string,
  ) {}

  /** The Checkout Session URL for a subscription to `plan`. */
  async checkout(request: CheckoutRequest): Promise<{ url: string }> {
    const price = this.config.prices[request.plan]
    if (price === null) {
      throw new ApiError(
        'conflict',
        `The ${request.plan} plan has no Stripe price on this server (the operator sets PLINTH_STRIPE_PRICE_${request.plan.toUpperCase()})`,
        { reason: 'billing_not_configured' },
      )
    }
    const current = this.plans.record(request.orgId)
    if (current.stripeSubscriptionId !== null && current.plan !== 'free' && !current.comped) {
      throw new ApiError(
        'conflict',
        `This organization already pays for the ${current.plan} plan; change or cancel it in the billing portal (POST /v1/billing/portal), then sync (POST /v1/billing/sync)`,
      )
    }
    const customer = await this.#customer(request)
    // The dashboard's billing screen of that workspace, which syncs the plan when the checkout succeeded.
    const back = (outcome: string) => `${this.appUrl('/billing')}?workspace=${encodeURIComponent(request.orgId)}&checkout=${outcome}`
    const session = await this.#call((stripe) =>
      stripe.checkout.sessions.create({
        mode: 'subscription',
        customer,
        client_reference_id: request.orgId,
        line_items: [{ price, quantity: 1 }],
        metadata: { orgId: request.orgId, plan: request.plan },
        subscription_data: { metadata: { orgId: request.orgId } },
        success_url: back('success'),
        cancel_url: back('cancelled'),
      }),
    )
    if (session.url === null) throw new ApiError('upstream', 'Stripe answered a checkout session without a URL; try again')
    return { url: session.url }
  }

  /** The customer-portal URL, where the person changes or cancels the subscription. */
  async portal(orgId: string): Promise<{ url: string }> {
    const customer = this.plans.record(orgId).stripeCustomerId
    if (customer === null)
      throw new ApiError('conflict', 'This organization has no Stripe customer yet: start a checkout first (POST /v1/billing/checkout)', {
        reason: 'billing_not_configured',
      })
    const session = await this.#call((stripe) =>
      stripe.billingPortal.sessions.create({
        customer,
        return_url: `${this.appUrl('/billing')}?workspace=${encodeURIComponent(orgId)}`,
      }),
    )
    return { url: session.url }
  }

  /** Reads the customer's subscriptions and sets the plan to match. */
  async sync(actor: AuditActorValue, orgId: string): Promise<{ plan: PlanName; comped: boolean }> {
    const record = this.plans.record(orgId)
    if (record.stripeCustomerId === null) return { plan: record.plan, comped: record.comped }
    const customer = record.stripeCustomerId
    const subscriptions = await this.#call((stripe) => stripe.subscriptions.list({ customer, status: 'all', limit: 100 }))
    let best: { plan: (typeof PAID)[number]; id: string } | null = null
    for (const subscription of subscriptions.data) {
      if (!PAYING.has(subscription.status)) continue
      for (const item of subscription.items.data) {
        const plan = PAID.find((name) => this.config.prices[name] === item.price.id)
        if (plan !== undefined && (best === null || PAID.indexOf(plan) > PAID.indexOf(best.plan))) best = { plan, id: subscription.id }
      }
    }
    // A comped plan is the operator's gift: losing a subscription never takes it away.
    if (best === null && record.comped) return { plan: record.plan, comped: true }
    const next = await this.plans.set(actor, orgId, best?.plan ?? 'free', {
      comped: best === null ? record.comped : false,
      stripeSubscriptionId: best?.id ?? null,
    })
    return { plan: next.plan, comped: next.comped }
  }

  #customer(request: CheckoutRequest): Promise<string> {
    const known = this.plans.record(request.orgId).stripeCustomerId
    if (known !== null) return Promise.resolve(known)
    let pending = this.#customers.get(request.orgId)
    if (pending === undefined) {
      pending = (async () => {
        const customer = await this.#call((stripe) =>
          stripe.customers.create({
            ...(request.email === null ? {} : { email: request.email }),
            name: request.name,
            metadata: { orgId: request.orgId },
          }),
        )
        const record = this.plans.record(request.orgId)
        await this.plans.set(request.actor, request.orgId, record.plan, { stripeCustomerId: customer.id })
        return customer.id
      })().finally(() => this.#customers.delete(request.orgId))
      this.#customers.set(request.orgId, pending)
    }
    return pending
  }

  #load(): Promise<{ client: Stripe; StripeError: typeof Stripe.errors.StripeError }> {
    return (this.#stripe ??= import('stripe').then(({ default: StripeClient }) => {
      const api = this.config.apiUrl === null ? null : new URL(this.config.apiUrl)
      const client = new StripeClient(this.config.secretKey, {
        maxNetworkRetries: 1,
        timeout: STRIPE_TIMEOUT_MS,
        telemetry: false,
        ...(api === null
          ? {}
          : { host: api.hostname, port: api.port === '' ? undefined : api.port, protocol: api.protocol === 'http:' ? 'http' : 'https' }),
      })
      return { client, StripeError: StripeClient.errors.StripeError }
    }))
  }

  /** Stripe's failures become 502s that say what Stripe said (never the key). */
  async #call<T>(request: (stripe: Stripe) => Promise<T>): Promise<T> {
    const { client, StripeError } = await this.#load()
    try {
      return await request(client)
    } catch (error) {
      if (error instanceof StripeError) {
        const kind = [error.rawType, error.code].filter((part) => part !== undefined).join(', ')
        throw new ApiError(
          'upstream',
          `Stripe refused the request (${kind}): ${error.message.replace(/\.$/, '')}. Try again, or ask the operator to check the Stripe settings`,
        )
      }
      throw error
    }
  }
}
