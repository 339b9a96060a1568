import { Type } from '@sinclair/typebox'
import { iso } from '../../core/clock.js'
import { ApiError } from '../../core/errors.js'
import { FEEDBACK_MAX_CHARS, STORAGE_IN_PROGRESS_BYTES } from '../../core/limits.js'
import { actorOf, personOf } from '../../core/principal.js'
import { StringEnum, Timestamp, named } from '../../core/schemas/common.js'
import { defineOperation, type OperationContext } from '../operation.js'

const Nullable = (description: string) => Type.Union([Type.Integer(), Type.Null()], { description })

const Billing = named(
  'Billing',
  Type.Object({
    enabled: Type.Boolean({
      description: 'false: billing is off on this server: no plans, unlimited websites, claims produce ordinary active sites',
    }),
    plan: Type.Union([StringEnum(['free', 'base', 'max'] as const), Type.Null()], {
      description: 'The organization’s plan; null when billing is off (there are no plans)',
    }),
    comped: Type.Boolean({ description: 'Given by the operator without payment (false with billing off)' }),
    limits: Type.Object({
      websites: Nullable('Website slots of the plan (storage sites take none); null: unlimited'),
      storageBytes: Nullable('Shared-file storage; null: unlimited'),
      shareLinkMaxDays: Nullable('Longest lifetime of a shared-file link; null: no limit'),
    }),
    usage: Type.Object({ websites: Type.Integer({ description: 'Live websites that take a slot' }) }),
    storage: Type.Object(
      {
        used: Type.Integer({
          description:
            "Bytes kept against the plan's storage: finished shared files, the websites' assets (archived ones included) and large site files",
        }),
        limit: Nullable('The plan’s storage; null: unlimited'),
        uploading: Type.Integer({ description: 'Bytes of unfinished uploads (clear_uploads_in_progress cancels them)' }),
        uploadingLimit: Type.Integer({ description: 'The in-progress allowance' }),
      },
      { description: 'What the dashboard’s storage bar shows' },
    ),
    upgradeUrl: Type.String({ description: 'Where a signed-in admin changes the plan' }),
    checkoutAvailable: Type.Boolean({ description: 'true when Stripe is configured (checkout, portal and sync work)' }),
  }),
)

function notConfigured(ctx: OperationContext): ApiError {
  return new ApiError(
    'conflict',
    `Billing is not configured on this server${ctx.config.billing.enabled ? ' (no Stripe secret key)' : ' (billing is off: nothing needs paying)'}; the operator sets plans with plinth plan set`,
    {
      reason: 'billing_not_configured',
    },
  )
}

const tag = 'Billing'

export const billingOperations = [
  defineOperation({
    method: 'GET',
    path: '/v1/billing',
    operationId: 'billing.get',
    capability: 'billing.read',
    rateClass: 'standard',
    tool: 'get_billing',
    tag,
    summary: 'Plan, limits and usage',
    description:
      'Says whether billing is on, the organization’s plan, its limits (null: unlimited) and usage. With billing off nothing is limited.',
    response: Billing,
    handle(ctx) {
      const { registry } = ctx
      const view = registry.plans.view(ctx.org.id)
      return {
        enabled: ctx.config.billing.enabled,
        ...view,
        storage: {
          used: registry.files.orgUsed(ctx.org.id),
          limit: view.limits.storageBytes,
          uploading: registry.files.uploading(ctx.org.id),
          uploadingLimit: STORAGE_IN_PROGRESS_BYTES,
        },
        upgradeUrl: ctx.urls.app('/billing'),
        checkoutAvailable: ctx.registry.stripe !== null,
      }
    },
  }),
  ...(['checkout', 'portal', 'sync'] as const).map((what) =>
    defineOperation({
      method: 'POST',
      path: `/v1/billing/${what}`,
      operationId: `billing.${what}`,
      capability: 'billing.manage',
      personOnly: true,
      callsUpstream: true,
      rateClass: 'standard',
      tool: `billing_${what}`,
      tag,
      summary: { checkout: 'Start a checkout for a plan', portal: 'Open the billing portal', sync: 'Pull the subscription into the plan' }[
        what
      ],
      description: {
        checkout:
          'Answers the payment provider’s checkout URL for the Base or Max plan. Needs a signed-in admin (API keys get 403 user_required).',
        portal: 'Answers the payment provider’s customer-portal URL. Needs a signed-in admin.',
        sync: 'Reads the organization’s subscription from the payment provider and sets the plan to match. Needs a signed-in admin.',
      }[what],
      body:
        what === 'checkout'
          ? Type.Object({ plan: StringEnum(['base', 'max'] as const) }, { additionalProperties: false })
          : Type.Object({}, { additionalProperties: false }),
      response: Type.Object({ url: Type.Optional(Type.String()), plan: Type.Optional(StringEnum(['free', 'base', 'max'] as const)) }),
      async handle(ctx, { body }) {
        const stripe = ctx.registry.stripe
        if (stripe === null) throw notConfigured(ctx)
        const actor = actorOf(ctx.principal)
        if (what === 'portal') return stripe.portal(ctx.org.id)
        if (what === 'sync') return { plan: (await stripe.sync(actor, ctx.org.id)).plan }
        const person = ctx.registry.people.person(personOf(ctx.principal) ?? '')
        if (person === undefined) throw new ApiError('forbidden', 'A checkout needs a signed-in person', { reason: 'user_required' })
        return stripe.checkout({
          orgId: ctx.org.id,
          plan: (body as { plan: 'base' | 'max' }).plan,
          email: person.email,
          name: person.name,
          actor,
        })
      },
    }),
  ),
  defineOperation({
    method: 'POST',
    path: '/v1/feedback',
    operationId: 'feedback.create',
    capability: 'websites.read',
    rateClass: 'standard',
    tool: 'send_feedback',
    tag: 'Account',
    summary: 'Send feedback',
    description:
      'Sends a message to the operators of this server (a bug, a missing feature, what confused you), with optional structured context. The operator reads it with plinth feedback.',
    body: Type.Object(
      {
        message: Type.String({ minLength: 1, maxLength: FEEDBACK_MAX_CHARS }),
        context: Type.Optional(
          Type.Record(Type.String(), Type.Unknown(), { description: 'Anything that helps: the website id, the operation, the error' }),
        ),
      },
      { additionalProperties: false },
    ),
    response: Type.Object({ id: Type.String(), createdAt: Timestamp }),
    status: 201,
    async handle(ctx, { body }) {
      const context = body.context ?? null
      if (context !== null && JSON.stringify(context).length > FEEDBACK_MAX_CHARS)
        throw new ApiError('validation', `body.context is over ${FEEDBACK_MAX_CHARS} characters of JSON`, { field: 'body.context' })
      const sent = await ctx.registry.feedback.send(ctx.org.id, actorOf(ctx.principal), body.message, context)
      return { id: sent.id, createdAt: iso(sent.createdAt) }
    },
  }),
]
