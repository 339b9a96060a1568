/** The shareable analytics dashboard link: created (or replaced) and revoked. */

import { Type } from '@sinclair/typebox'
import { defineOperation, WebsitePathParams } from '../operation.js'

export const analyticsShareOperations = [
  defineOperation({
    method: 'POST',
    path: '/v1/websites/{websiteId}/analytics/share',
    operationId: 'analytics.share',
    capability: 'publishing.manage',
    rateClass: 'standard',
    tool: 'share_analytics',
    tag: 'Analytics',
    summary: 'Create the shareable dashboard link',
    description:
      'Turns on a read-only analytics dashboard behind an unguessable link (website.analytics.dashboardUrl) that anyone holding it can open. Calling it again makes a new link; the old one stops working.',
    params: WebsitePathParams,
    response: Type.Object({ dashboardUrl: Type.String() }),
    status: 201,
    async handle(ctx) {
      const secret = await ctx.registry.analyticsShares.enable(ctx.website!.id)
      return { dashboardUrl: ctx.urls.app(`/share/analytics/${ctx.website!.id}/${secret}`) }
    },
  }),
  defineOperation({
    method: 'DELETE',
    path: '/v1/websites/{websiteId}/analytics/share',
    operationId: 'analytics.unshare',
    capability: 'publishing.manage',
    rateClass: 'standard',
    tool: 'revoke_analytics_share',
    tag: 'Analytics',
    summary: 'Revoke the shareable dashboard link',
    description: 'The dashboard link stops working at once; website.analytics.dashboardUrl becomes null.',
    params: WebsitePathParams,
    response: Type.Object({ revoked: Type.Boolean() }),
    async handle(ctx) {
      await ctx.registry.analyticsShares.revoke(ctx.website!.id)
      return { revoked: true }
    },
  }),
]
