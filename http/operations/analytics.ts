import { Type } from '@sinclair/typebox'
import { beaconReport } from '../../actors/analytics/report.js'
import { iso } from '../../core/clock.js'
import { ApiError } from '../../core/errors.js'
import { StringEnum, Timestamp } from '../../core/schemas/common.js'
import { defineOperation, WebsitePathParams } from '../operation.js'

const PERIODS = { '24h': 24, '7d': 7 * 24, '30d': 30 * 24, '90d': 90 * 24 } as const
const HOUR = 60 * 60 * 1000

const Ranked = Type.Array(Type.Object({ name: Type.String(), pageviews: Type.Integer() }))

/** `from`/`to` as an ISO time or Unix milliseconds. */
function instant(text: string, field: string): number {
  const ms = /^\d{1,15}$/.test(text) ? Number(text) : Date.parse(text)
  if (!Number.isFinite(ms)) throw new ApiError('validation', `${field} must be an ISO 8601 time or Unix milliseconds, got ${JSON.stringify(text)}`, { field })
  return ms
}

export const analyticsOperations = [
  defineOperation({
    method: 'GET',
    path: '/v1/websites/{websiteId}/analytics',
    operationId: 'analytics.get',
    capability: 'analytics.read',
    rateClass: 'standard',
    tool: 'get_analytics',
    tag: 'Analytics',
    summary: 'Page views of the published site',
    description:
      'Counts from the edge beacon, which sees every published HTML page served (no drafts, bots or 304s): totals, a series (hours up to two days, days beyond), and the top pages, referrers, countries, devices and hostnames. period is 24h, 7d (default), 30d or 90d; or give from and to (ISO time or Unix ms).',
    params: WebsitePathParams,
    query: Type.Object(
      {
        period: Type.Optional(StringEnum(['24h', '7d', '30d', '90d'] as const)),
        from: Type.Optional(Type.String({ maxLength: 40 })),
        to: Type.Optional(Type.String({ maxLength: 40 })),
      },
      { additionalProperties: false },
    ),
    response: Type.Object({
      source: Type.Literal('beacon'),
      from: Timestamp,
      to: Timestamp,
      unit: StringEnum(['hour', 'day'] as const),
      totals: Type.Object({ pageviews: Type.Integer() }),
      series: Type.Array(Type.Object({ x: Timestamp, y: Type.Integer() })),
      pages: Ranked,
      referrers: Ranked,
      countries: Ranked,
      devices: Ranked,
      hostnames: Ranked,
    }),
    async handle(ctx, { query }) {
      if (query.period !== undefined && (query.from !== undefined || query.to !== undefined)) throw new ApiError('validation', 'Give period, or from and to, not both', { field: 'query.period' })
      const now = ctx.clock.now()
      const to = query.to === undefined ? now : instant(query.to, 'query.to')
      const from = query.from === undefined ? to - PERIODS[query.period ?? '7d'] * HOUR : instant(query.from, 'query.from')
      if (from >= to) throw new ApiError('validation', 'from must be before to', { field: 'query.from' })
      if (to - from > 366 * 24 * HOUR) throw new ApiError('validation', 'A report covers at most 366 days; narrow from and to', { field: 'query.from' })
      // What the beacon holds in memory now is counted before the report reads.
      await ctx.registry.beacon.flush()
      const report = beaconReport(ctx.registry.store, ctx.website!.id, from, to, 10)
      return {
        source: 'beacon' as const,
        from: iso(from),
        to: iso(to),
        unit: report.unit,
        totals: report.totals,
        series: report.series.map((p) => ({ x: iso(p.x), y: p.y })),
        pages: report.top.path,
        referrers: report.top.referrer,
        countries: report.top.country,
        devices: report.top.device,
        hostnames: report.top.hostname,
      }
    },
  }),
]
