// Claims of anonymous sites: by the claim page or a claim code, by a token held over the API, claim codes, and activating a held site.
import { Type } from '@sinclair/typebox'
import type { ClaimOutcome } from '../../actors/anonymous/credentials.js'
import { auditActor } from '../../actors/organization/audit.js'
import { iso } from '../../core/clock.js'
import { ApiError } from '../../core/errors.js'
import { personOf } from '../../core/principal.js'
import type { PersonRecord } from '../../core/schemas/identity.js'
import { Timestamp } from '../../core/schemas/common.js'
import { Website } from '../../core/schemas/website.js'
import { defineAnonymousOperation, defineOperation, WebsitePathParams, type OperationContext } from '../operation.js'
import { websiteResource } from '../resources.js'
import { Nullable } from './anonymous-sites.js'

const tag = 'Anonymous'

const ClaimResult = Type.Object({
  // (Website says claimHeld: whether the claimed site waits for room on the plan.)
  website: Nullable(Website),
  storage: Type.Optional(Website),
  workspace: Type.Object({ id: Type.String(), name: Type.String() }),
  dashboardUrl: Type.String({ description: "The claimed site's own page in the dashboard" }),
  billingUrl: Type.Optional(Type.String({ description: 'Present when the website is held: where to upgrade' })),
  alreadyClaimed: Type.Boolean(),
  message: Type.String(),
})

/** The claim answer: where the website went, whether it is held, and what the person does next. */
function claimView(urls: OperationContext['urls'], registry: OperationContext['registry'], outcome: ClaimOutcome) {
  const resource = (record: { id: string } | null) => {
    const actor = record === null ? undefined : registry.website(record.id)
    return actor === undefined ? null : websiteResource(actor, urls, registry)
  }
  const website = resource(outcome.website)
  const storage = resource(outcome.storage)
  // The claimed site's own page in the dashboard (the website's, else the shared files').
  const claimed = website ?? storage
  const dashboardUrl =
    claimed === null ? urls.app('') : urls.app(`/websites/${claimed.id}?workspace=${encodeURIComponent(outcome.workspace.id)}`)
  const held = website?.claimHeld === true
  const where =
    website === null ? 'The shared files' : `“${website.name}”${website.urls.published === null ? '' : ` (${website.urls.published})`}`
  const message = outcome.alreadyClaimed
    ? `Already claimed by you into ${outcome.workspace.name}; nothing changed.`
    : held
      ? `${where} is now in ${outcome.workspace.name}. The plan has no room for it, so it is held: it stays online until its 24-hour preview ends, then goes offline until you upgrade (${urls.app('/billing')}) and activate it.`
      : `${where} is now in ${outcome.workspace.name}, at the same address, with no deadline. Manage it at ${dashboardUrl} or through the API.`
  return {
    website,
    ...(storage === null ? {} : { storage }),
    workspace: { id: outcome.workspace.id, name: outcome.workspace.name },
    dashboardUrl,
    ...(held ? { billingUrl: urls.app('/billing') } : {}),
    alreadyClaimed: outcome.alreadyClaimed,
    message,
  }
}

/** The claim operations, in the order of the operation table. */
export const anonymousClaimOperations = [
  defineAnonymousOperation({
    method: 'POST',
    path: '/api/anonymous/claim',
    operationId: 'anonymous.claim',
    rateLimits: ['networkClaims'],
    anonymous: 'claim',
    public: true,
    rateClass: 'standard',
    tool: null,
    tag,
    summary: 'Claim an anonymous site',
    description:
      'Moves the sites of an anonymous token into a person’s personal workspace, at the same address. Authorized by a dashboard session (trusted Origin), an OAuth token, or {token, code} with a claim code from create_claim_code. The same person retrying gets alreadyClaimed: true.',
    body: Type.Object(
      { token: Type.String({ minLength: 1, maxLength: 200 }), code: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })) },
      { additionalProperties: false },
    ),
    response: ClaimResult,
    async handle(ctx, { body }) {
      ctx.limit('networkClaims')
      let person: PersonRecord
      let actor
      if (ctx.person !== null) {
        person = ctx.person.record
        actor = ctx.person.actor
      } else if (body.code !== undefined) {
        person = ctx.registry.anonymous.claimCodePerson(body.code)
        actor = { kind: 'user' as const, id: person.id, name: person.name }
      } else {
        throw new ApiError(
          'unauthorized',
          'A claim needs a person: sign in at the dashboard (the claim page does this), connect over OAuth, or send {token, code} with a claim code from the create_claim_code MCP tool',
        )
      }
      const outcome = await ctx.registry.anonymous.claim(body.token, person, actor)
      return claimView(ctx.urls, ctx.registry, outcome)
    },
  }),
  defineOperation({
    method: 'POST',
    path: '/v1/websites/claim-codes',
    operationId: 'websites.claimCode',
    capability: 'websites.read',
    personOnly: true,
    rateClass: 'standard',
    tool: 'create_claim_code',
    tag: 'Websites',
    summary: 'Create a claim code',
    description:
      'Use when a site was published anonymously (a wa_ token saved on the machine) and the person wants it in their account: answers a wc_ code valid 10 minutes. Give it to the local helper (webly claim <code>), which sends POST /api/anonymous/claim {token, code}; the token never has to leave the machine. If you hold the token yourself, call claim_website instead.',
    response: Type.Object({ code: Type.String(), expiresAt: Timestamp }),
    status: 201,
    async handle(ctx) {
      const { code, expiresAt } = await ctx.registry.anonymous.createClaimCode(personOf(ctx.principal)!)
      return { code, expiresAt: iso(expiresAt) }
    },
  }),
  defineOperation({
    method: 'POST',
    path: '/v1/websites/claims',
    operationId: 'websites.claimAnonymous',
    capability: 'websites.read',
    personOnly: true,
    rateClass: 'standard',
    tool: 'claim_website',
    // A spent token is gone for good (410); the shared files need room in the workspace's storage (402 storage_limit).
    extraErrors: ['gone', 'payment_required'],
    tag: 'Websites',
    summary: 'Claim an anonymous site with its token',
    description:
      'Use when you hold the wa_ token of a site published without an account and the person wants to keep it: moves it into their personal workspace at the same address (held, with a billingUrl, when their plan has no room). The token stops working.',
    body: Type.Object({ token: Type.String({ minLength: 1, maxLength: 200 }) }, { additionalProperties: false }),
    response: ClaimResult,
    async handle(ctx, { body }) {
      const person = ctx.registry.people.person(personOf(ctx.principal)!)
      if (person === undefined) throw new ApiError('unauthorized', 'The person of this credential no longer exists')
      const outcome = await ctx.registry.anonymous.claim(body.token, person, auditActor(ctx.principal))
      return claimView(ctx.urls, ctx.registry, outcome)
    },
  }),
  defineOperation({
    method: 'POST',
    path: '/v1/websites/{websiteId}/activate',
    operationId: 'websites.activate',
    capability: 'websites.manage',
    rateClass: 'expensive',
    tool: 'activate_website',
    tag: 'Websites',
    summary: 'Activate a held website',
    description:
      'A claimed anonymous site on a plan without room is held (claimHeld: true). After upgrading to Base or Max, this makes it an ordinary active site at the same address; 402 claim_held while there is no slot.',
    params: WebsitePathParams,
    response: Website,
    mayNeedPlanRoom: true,
    async handle(ctx) {
      const website = ctx.website!
      const record = website.record
      if (record.held !== true) return websiteResource(website, ctx.urls, ctx.registry)
      const { plans } = ctx.registry
      // Inside the transaction: two activations (or a claim) cannot both take the last slot.
      const guard = (current: { orgId: string; kind: string }) => {
        if (!plans.billing.enabled || (plans.record(current.orgId).plan !== 'free' && plans.hasRoom(current.orgId, current.kind))) return
        const view = plans.view(current.orgId)
        throw new ApiError(
          'payment_required',
          `Activating needs a free website slot on the Base or Max plan; this organization is on ${view.plan} with ${view.usage.websites} of ${view.limits.websites} in use. Upgrade at ${ctx.urls.app('/billing')}, then activate again`,
          {
            reason: 'claim_held',
            upgradeUrl: ctx.urls.app('/billing'),
          },
        )
      }
      await website.setAvailability(
        auditActor(ctx.principal),
        { held: false, offline: null, previewUntil: null },
        { eventType: 'website.activated' },
        guard,
      )
      return websiteResource(website, ctx.urls, ctx.registry)
    },
  }),
]
