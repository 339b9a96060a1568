import { Type } from '@sinclair/typebox'
import { iso } from '../../core/clock.js'
import { actorOf } from '../../core/principal.js'
import { StringEnum, Timestamp, named } from '../../core/schemas/common.js'
import type { TransferRecord } from '../../core/schemas/identity.js'
import { Website } from '../../core/schemas/website.js'
import { websiteResource } from '../resources.js'
import { defineOperation, WebsitePathParams } from '../operation.js'

const TransferSchema = named(
  'Transfer',
  Type.Object({
    id: Type.String({ description: 'Transfer id (`tr_…`)' }),
    websiteId: Type.String(),
    status: StringEnum(['pending', 'cancelled', 'accepted'] as const),
    toOrganizationId: Type.Union([Type.String(), Type.Null()], {
      description: 'Only this organization may accept; null: any organization holding the code',
    }),
    createdAt: Timestamp,
    expiresAt: Timestamp,
  }),
)

const TransferWithCode = named(
  'TransferWithCode',
  Type.Composite([
    TransferSchema,
    Type.Object({
      code: Type.String({ description: 'Shown once (`wt_…`, valid 7 days): give it to an admin of the receiving organization' }),
    }),
  ]),
)

function transfer(record: TransferRecord) {
  return {
    id: record.id,
    websiteId: record.websiteId,
    status: record.status,
    toOrganizationId: record.toOrgId,
    createdAt: iso(record.createdAt),
    expiresAt: iso(record.expiresAt),
  }
}

const tag = 'Websites'

export const transferOperations = [
  defineOperation({
    method: 'POST',
    path: '/v1/websites/{websiteId}/transfer',
    operationId: 'websites.transferStart',
    capability: 'websites.manage',
    rateClass: 'standard',
    tool: 'start_transfer',
    tag,
    summary: 'Start a transfer to another organization',
    description:
      'Starts moving this website to another organization: answers once with a code (wt_…, valid 7 days) that an admin of the receiving organization passes to accept_transfer. Hostnames stay; the live site never goes offline. 409 while another transfer is pending.',
    params: WebsitePathParams,
    body: Type.Object({ toOrganizationId: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })) }, { additionalProperties: false }),
    response: TransferWithCode,
    status: 201,
    async handle(ctx, { body }) {
      const { record, code } = await ctx.registry.transfers.start(actorOf(ctx.principal), ctx.website!, body.toOrganizationId ?? null)
      return { ...transfer(record), code }
    },
  }),
  defineOperation({
    method: 'GET',
    path: '/v1/websites/{websiteId}/transfer',
    operationId: 'websites.transferGet',
    capability: 'websites.manage',
    rateClass: 'standard',
    tool: 'get_transfer',
    tag,
    summary: 'The pending transfer',
    description: 'Shows the website’s pending transfer (never its code), or transfer: null when none is pending.',
    params: WebsitePathParams,
    response: Type.Object({ transfer: Type.Union([TransferSchema, Type.Null()]) }),
    handle(ctx) {
      const record = ctx.registry.transfers.pending(ctx.website!.id)
      return { transfer: record === undefined ? null : transfer(record) }
    },
  }),
  defineOperation({
    method: 'DELETE',
    path: '/v1/websites/{websiteId}/transfer',
    operationId: 'websites.transferCancel',
    capability: 'websites.manage',
    rateClass: 'standard',
    tool: 'cancel_transfer',
    tag,
    summary: 'Cancel the pending transfer',
    description: 'Cancels the pending transfer: its code stops working.',
    params: WebsitePathParams,
    response: TransferSchema,
    async handle(ctx) {
      return transfer(await ctx.registry.transfers.cancel(actorOf(ctx.principal), ctx.website!))
    },
  }),
  defineOperation({
    method: 'POST',
    path: '/v1/websites/transfers/accept',
    operationId: 'websites.transferAccept',
    capability: 'websites.create',
    mayNeedPlanRoom: true,
    rateClass: 'standard',
    tool: 'accept_transfer',
    tag,
    summary: 'Accept a transfer',
    description:
      'Moves a website into your organization with its whole history, builds and published version, given the code its sender got from start_transfer. 404 for a wrong, used, cancelled or expired code; 402 plan_limit when your plan has no room.',
    body: Type.Object({ code: Type.String({ minLength: 1, maxLength: 200 }) }, { additionalProperties: false }),
    response: Website,
    async handle(ctx, { body }) {
      const moved = await ctx.registry.transfers.accept(actorOf(ctx.principal), ctx.org.id, body.code)
      // The old organization knew the webhook secret: the new owner's receivers get a new one.
      await ctx.registry.forms.rotateWebhookSecret(moved.id)
      return websiteResource(ctx.registry.website(moved.id)!, ctx.urls, ctx.registry)
    },
  }),
]
