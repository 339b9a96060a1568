// Site passwords: set_website_password protects every address of a website (published, draft, custom domains).
import { Type } from '@sinclair/typebox'
import { auditActor } from '../../actors/organization/audit.js'
import { SITE_PASSWORD_MAX_CHARS, SITE_PASSWORD_MIN_CHARS } from '../../core/limits.js'
import { defineOperation, WebsitePathParams } from '../operation.js'

export const passwordOperations = [
  defineOperation({
    method: 'PUT',
    path: '/v1/websites/{websiteId}/password',
    operationId: 'websites.setPassword',
    capability: 'websites.manage',
    rateClass: 'standard',
    tool: 'set_website_password',
    tag: 'Websites',
    summary: 'Protect a website with a password (or remove it)',
    description: `password (${SITE_PASSWORD_MIN_CHARS}-${SITE_PASSWORD_MAX_CHARS} characters) protects the whole site on every address, draft included: a visitor gets a password page and stays let in on that address for 7 days; programs send HTTP Basic auth with any user name. null removes it. Only a slow hash is kept, so tell the person the password with the link. With billing on it needs a paid plan (402 plan_required with details.upgradeUrl).`,
    params: WebsitePathParams,
    body: Type.Object(
      { password: Type.Union([Type.String({ minLength: SITE_PASSWORD_MIN_CHARS, maxLength: SITE_PASSWORD_MAX_CHARS }), Type.Null()]) },
      { additionalProperties: false },
    ),
    response: Type.Object({ websiteId: Type.String(), protected: Type.Boolean(), next: Type.Object({ message: Type.String() }) }),
    extraErrors: ['payment_required'],
    async handle(ctx, { body }) {
      const website = ctx.website!
      if (body.password !== null) ctx.registry.plans.assertPaid(website.record.orgId, 'A site password')
      const result = await ctx.registry.sitePasswords.set(website.record, auditActor(ctx.principal), body.password)
      return {
        websiteId: website.id,
        protected: result.protected,
        next: {
          message: result.protected
            ? 'The site asks for the password on every address now; tell the person the password together with the link (only its hash is kept).'
            : 'The site is open to everyone again.',
        },
      }
    },
  }),
]
