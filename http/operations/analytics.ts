import { Type } from '@sinclair/typebox'
import { BEACON_DIMENSIONS, type BeaconDimension } from '../../actors/analytics/beacon.js'
import { overview } from '../../actors/analytics/overview.js'
import { beaconQuery, beaconTimeseries } from '../../actors/analytics/report.js'
import { SEGMENT_OPERATORS, TRACKER_FILTERS, type TrackerFilter } from '../../actors/analytics/tracker-filters.js'
import { trackerQuery, trackerTimeseries } from '../../actors/analytics/tracker-report.js'
import { TRACKER_DIMENSIONS, type TrackerDimension } from '../../actors/analytics/tracker-dimensions.js'
import { iso } from '../../core/clock.js'
import { ApiError } from '../../core/errors.js'
import { StringEnum, Timestamp } from '../../core/schemas/common.js'
import { ANALYTICS_MAX_POINTS, ANALYTICS_MAX_POINTS_DEFAULT, ANALYTICS_ROWS_DEFAULT, ANALYTICS_ROWS_MAX } from '../../core/limits.js'
import { defineOperation, WebsitePathParams } from '../operation.js'
import { checkRange, instant, parseCohort, parseSegment } from './analytics-params.js'

export { analyticsShareOperations } from './analytics-share.js'

const PERIODS = { '24h': 24, '7d': 7 * 24, '30d': 30 * 24, '90d': 90 * 24 } as const
const HOUR = 60 * 60 * 1000

const Ranked = Type.Array(Type.Object({ name: Type.String(), pageviews: Type.Integer(), visitors: Type.Optional(Type.Integer()) }))
const Source = StringEnum(['beacon', 'tracker'] as const, {
  description:
    "tracker: the site's own /_platform/a.js sends page views and events; beacon: page views counted as they are served (when the site has no tracker data)",
})
const Count = Type.Union([Type.Integer(), Type.Null()])

/** The spec's dimensions and filters; the beacon (until the tracker is enabled) keeps five of them. */
const DIMENSIONS = TRACKER_DIMENSIONS
const beaconOnly = (what: string, name: string) =>
  new ApiError(
    'validation',
    `${what} ${name} needs the tracker, which this site does not use yet (add <script defer src="/_platform/a.js" data-website-id="…"> to its pages, or website_config.analytics.enabled on a framework site); beacon data has ${BEACON_DIMENSIONS.join(', ')}`,
    { field: `query.${what === 'dimension' ? 'dimension' : name}` },
  )

const Range = {
  startAt: Type.Integer({ minimum: 0, description: 'Unix milliseconds' }),
  endAt: Type.Integer({ minimum: 0, description: 'Unix milliseconds' }),
}

const Points = Type.Array(Type.Object({ x: Type.String(), y: Type.Integer() }))
const EventPoints = Type.Array(
  Type.Object({ x: Type.String({ description: 'event name' }), t: Type.String({ description: 'bucket' }), y: Type.Integer() }),
)

/** What the beacon and the tracker hold in memory is written before a report reads. */
async function flushed(ctx: { registry: { beacon: { flush(): Promise<void> }; tracker: { flush(): Promise<void> } } }): Promise<void> {
  await Promise.all([ctx.registry.beacon.flush(), ctx.registry.tracker.flush()])
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
      'Totals, a series (hours up to two days, days beyond), and the top pages, referrers, countries, devices and hostnames of the published site. Page views are every published HTML page served, as the edge beacon counts them (no drafts, bots or 304s); when the site runs the tracker (/_platform/a.js) it adds visitors, bounces, time, browsers and custom events, and its visits. sources says which answered each figure. period is 24h, 7d (default), 30d or 90d; or give from and to (ISO time or Unix ms).',
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
      source: Source,
      sources: Type.Object(
        {
          pageviews: Source,
          visits: Source,
          visitors: Type.Union([Type.Literal('tracker'), Type.Null()], {
            description: 'visitors, bounces, totaltime, browsers and events: the tracker, or null when the site sends no tracker data',
          }),
        },
        {
          description:
            "Which source answered each figure: beacon (every published HTML page served) or tracker (the site's /_platform/a.js)",
        },
      ),
      from: Timestamp,
      to: Timestamp,
      unit: StringEnum(['hour', 'day'] as const),
      totals: Type.Object({
        pageviews: Type.Integer(),
        visitors: Count,
        visits: Type.Integer(),
        bounces: Count,
        totaltime: Count,
        events: Count,
      }),
      series: Type.Array(Type.Object({ x: Timestamp, y: Type.Integer() })),
      pages: Ranked,
      referrers: Ranked,
      countries: Ranked,
      devices: Ranked,
      hostnames: Ranked,
      browsers: Type.Optional(Ranked),
      events: Type.Optional(Type.Array(Type.Object({ name: Type.String(), events: Type.Integer(), visitors: Type.Integer() }))),
    }),
    async handle(ctx, { query }) {
      if (query.period !== undefined && (query.from !== undefined || query.to !== undefined))
        throw new ApiError('validation', 'Give period, or from and to, not both', { field: 'query.period' })
      const now = ctx.clock.now()
      // Up to and including now (the range is [from, to)).
      const to = query.to === undefined ? now + 1 : instant(query.to, 'query.to')
      const from = query.from === undefined ? to - PERIODS[query.period ?? '7d'] * HOUR : instant(query.from, 'query.from')
      if (from >= to) throw new ApiError('validation', 'from must be before to', { field: 'query.from' })
      if (to - from > 366 * 24 * HOUR)
        throw new ApiError('validation', 'A report covers at most 366 days; narrow from and to', { field: 'query.from' })
      // What the beacon and tracker hold in memory now is counted before the report reads.
      await flushed(ctx)
      const id = ctx.website!.id
      const report = overview(ctx.registry.reads, {
        websiteId: id,
        from,
        to,
        topN: 10,
        beacon: ctx.registry.beacon.enabled,
        tracker: ctx.registry.tracker.has(id),
      })
      const { sources, unit, totals, series, pages, referrers, countries, devices, hostnames, browsers, events } = report
      return {
        source: sources.pageviews,
        sources,
        from: iso(from),
        to: iso(to),
        unit,
        totals,
        series: series.map((p) => ({ x: iso(p.x), y: p.y })),
        pages,
        referrers,
        countries,
        devices,
        hostnames,
        ...(browsers === null ? {} : { browsers }),
        ...(events === null ? {} : { events }),
      }
    },
  }),
  defineOperation({
    method: 'GET',
    path: '/v1/websites/{websiteId}/analytics/query',
    operationId: 'analytics.query',
    capability: 'analytics.read',
    rateClass: 'standard',
    tool: 'query_analytics',
    tag: 'Analytics',
    summary: 'Totals, or one dimension ranked by page views',
    description: `Without dimension: {pageviews, visitors, visits, bounces, totaltime (seconds), events} between startAt and endAt (Unix ms). With dimension: rows ranked by page views (limit default ${ANALYTICS_ROWS_DEFAULT}, at most ${ANALYTICS_ROWS_MAX}). Filters narrow it: no filter, or one filter on a visit's own value (referrer, country, browser, utmSource, …), reads rollups; other filters, combinations, segment and cohort read the raw events kept for the retention period. Visitors are counted per day (their hash changes daily). From beacon data (source: beacon, a site with no tracker data) only path, referrer, country, device and hostname exist, one at a time; visits (views that arrived from another site or none) are given for the whole site, and visitors, bounces and totaltime are null.`,
    params: WebsitePathParams,
    query: Type.Object(
      {
        ...Range,
        dimension: Type.Optional(StringEnum(DIMENSIONS)),
        limit: Type.Optional(Type.Integer({ minimum: 1, maximum: ANALYTICS_ROWS_MAX })),
        ...Object.fromEntries(TRACKER_FILTERS.map((f) => [f, Type.Optional(Type.String({ maxLength: 500 }))])),
        segment: Type.Optional(
          Type.String({
            maxLength: 4000,
            description: `Filters used together, as JSON: {"match": "all" (default) or "any", "filters": [{"name": <a filter>, "operator": ${SEGMENT_OPERATORS.join(' | ')}, "value": "…"}]}, e.g. {"match":"any","filters":[{"name":"country","operator":"eq","value":"DE"},{"name":"country","operator":"eq","value":"AT"}]}`,
          }),
        ),
        cohort: Type.Optional(
          Type.String({
            maxLength: 1000,
            description:
              'Visitors who did something, as JSON: {"action": {"type": "path" or "event", "value": "/pricing" or "signup"}, "startAt"?: ms, "endAt"?: ms (default the query\'s range)}. A visitor is known for one UTC day (no cookies), or across days by the distinctId a page sets with platform.identify.',
          }),
        ),
      },
      { additionalProperties: false },
    ),
    response: Type.Object({
      source: Source,
      pageviews: Type.Integer(),
      visitors: Count,
      visits: Count,
      bounces: Count,
      totaltime: Count,
      events: Count,
      rows: Type.Optional(
        Type.Array(
          Type.Object({
            name: Type.String(),
            pageviews: Type.Integer(),
            visitors: Type.Optional(Type.Integer()),
            visits: Type.Optional(Count),
            bounces: Type.Optional(Count),
            totaltime: Type.Optional(Count),
            events: Type.Optional(Type.Integer()),
          }),
        ),
      ),
    }),
    async handle(ctx, { query }) {
      checkRange(query.startAt, query.endAt)
      const given = TRACKER_FILTERS.filter((name) => typeof (query as Record<string, unknown>)[name] === 'string')
      const segment = query.segment === undefined ? undefined : parseSegment(query.segment)
      const cohort = query.cohort === undefined ? undefined : parseCohort(query.cohort, query.startAt, query.endAt)
      await flushed(ctx)
      if (ctx.registry.tracker.has(ctx.website!.id)) {
        const filters: Partial<Record<TrackerFilter, string>> = {}
        for (const name of given) filters[name] = (query as unknown as Record<string, string>)[name]
        const result = trackerQuery(ctx.registry.reads, ctx.website!.id, {
          startAt: query.startAt,
          endAt: query.endAt,
          dimension: (query.dimension as TrackerDimension | undefined) ?? null,
          limit: query.limit ?? ANALYTICS_ROWS_DEFAULT,
          filters,
          ...(segment === undefined ? {} : { segment }),
          ...(cohort === undefined ? {} : { cohort }),
        })
        return { source: 'tracker' as const, ...result.totals, ...(result.rows === null ? {} : { rows: result.rows }) }
      }
      if (query.segment !== undefined || query.cohort !== undefined)
        throw beaconOnly('filter', query.segment !== undefined ? 'segment' : 'cohort')
      if (query.dimension !== undefined && !(BEACON_DIMENSIONS as readonly string[]).includes(query.dimension))
        throw beaconOnly('dimension', query.dimension)
      const filters: Partial<Record<BeaconDimension, string>> = {}
      for (const name of given) {
        if (!(BEACON_DIMENSIONS as readonly string[]).includes(name)) throw beaconOnly('filter', name)
        filters[name as BeaconDimension] = (query as unknown as Record<string, string>)[name]
      }
      const result = beaconQuery(ctx.registry.reads, ctx.website!.id, {
        startAt: query.startAt,
        endAt: query.endAt,
        dimension: (query.dimension as BeaconDimension | undefined) ?? null,
        limit: query.limit ?? ANALYTICS_ROWS_DEFAULT,
        filters,
      })
      return {
        source: 'beacon' as const,
        pageviews: result.pageviews,
        visitors: null,
        visits: result.visits,
        bounces: null,
        totaltime: null,
        events: null,
        ...(result.rows === null ? {} : { rows: result.rows }),
      }
    },
  }),
  defineOperation({
    method: 'GET',
    path: '/v1/websites/{websiteId}/analytics/timeseries',
    operationId: 'analytics.timeseries',
    capability: 'analytics.read',
    rateClass: 'standard',
    tool: 'analytics_timeseries',
    tag: 'Analytics',
    summary: 'Page views over time',
    description: `Buckets of unit (minute, hour, day, month, year; day and coarser fall in timezone, an IANA name, default UTC) between startAt and endAt (Unix ms). series=pageviews (default): {pageviews, sessions} (sessions: visits started); series=events: custom events as {x: name, t: bucket, y: count}. At most maxPoints buckets (default ${ANALYTICS_MAX_POINTS_DEFAULT}, max ${ANALYTICS_MAX_POINTS}): the most recent are kept and truncated says so. compare=prev or yoy adds the same buckets of the previous period or year. unit=minute covers at most 24 hours. From beacon data (a site with no tracker data): series pageviews only; sessions are visits begun (views that arrived from another site or none).`,
    params: WebsitePathParams,
    query: Type.Object(
      {
        ...Range,
        series: Type.Optional(StringEnum(['pageviews', 'events'] as const)),
        unit: Type.Optional(StringEnum(['year', 'month', 'day', 'hour', 'minute'] as const)),
        timezone: Type.Optional(Type.String({ maxLength: 64 })),
        maxPoints: Type.Optional(Type.Integer({ minimum: 1, maximum: ANALYTICS_MAX_POINTS })),
        compare: Type.Optional(StringEnum(['prev', 'yoy'] as const)),
      },
      { additionalProperties: false },
    ),
    response: Type.Object({
      source: Source,
      pageviews: Type.Optional(Points),
      sessions: Type.Optional(Type.Union([Points, Type.Null()])),
      events: Type.Optional(EventPoints),
      compare: Type.Optional(
        Type.Object({
          pageviews: Type.Optional(Points),
          sessions: Type.Optional(Type.Union([Points, Type.Null()])),
          events: Type.Optional(EventPoints),
        }),
      ),
      truncated: Type.Optional(Type.Object({ shown: Type.Integer(), total: Type.Integer(), hint: Type.String() })),
    }),
    async handle(ctx, { query }) {
      checkRange(query.startAt, query.endAt)
      const unit = query.unit ?? 'day'
      const timezone = query.timezone ?? 'UTC'
      try {
        new Intl.DateTimeFormat('en', { timeZone: timezone })
      } catch {
        throw new ApiError('validation', `timezone ${JSON.stringify(timezone)} is not an IANA time zone (such as Europe/Berlin)`, {
          field: 'query.timezone',
        })
      }
      await flushed(ctx)
      const maxPoints = query.maxPoints ?? ANALYTICS_MAX_POINTS_DEFAULT
      const span = query.endAt - query.startAt
      const shift = query.compare === 'yoy' ? 365 * 24 * HOUR : span
      const id = ctx.website!.id
      if (ctx.registry.tracker.has(id)) {
        const series = query.series ?? 'pageviews'
        const run = (startAt: number, endAt: number) =>
          trackerTimeseries(ctx.registry.reads, id, { startAt, endAt, unit, timezone, maxPoints, series })
        const strip = <T extends { series: unknown; truncated: unknown }>({ series: _s, truncated: _t, ...rest }: T) => rest
        const main = run(query.startAt, query.endAt)
        const compare = query.compare === undefined ? null : run(query.startAt - shift, query.endAt - shift)
        return {
          source: 'tracker' as const,
          ...strip(main),
          ...(compare === null ? {} : { compare: strip(compare) }),
          ...(main.truncated === null ? {} : { truncated: main.truncated }),
        }
      }
      if (query.series === 'events')
        throw new ApiError(
          'validation',
          'series=events needs the tracker (custom events), which this site does not use yet; beacon data has series=pageviews',
          { field: 'query.series' },
        )
      const series = beaconTimeseries(ctx.registry.reads, id, { startAt: query.startAt, endAt: query.endAt, unit, timezone, maxPoints })
      const compare =
        query.compare === undefined
          ? null
          : beaconTimeseries(ctx.registry.reads, id, {
              startAt: query.startAt - shift,
              endAt: query.endAt - shift,
              unit,
              timezone,
              maxPoints,
            })
      return {
        source: 'beacon' as const,
        pageviews: series.pageviews,
        sessions: series.sessions,
        ...(compare === null ? {} : { compare: { pageviews: compare.pageviews, sessions: compare.sessions } }),
        ...(series.truncated === null ? {} : { truncated: series.truncated }),
      }
    },
  }),
  defineOperation({
    method: 'GET',
    path: '/v1/websites/{websiteId}/analytics/realtime',
    operationId: 'analytics.realtime',
    capability: 'analytics.read',
    rateClass: 'standard',
    tool: 'analytics_realtime',
    tag: 'Analytics',
    summary: 'The last 30 minutes',
    description:
      'Page views, visitors, custom events and countries of the trailing 30 minutes, now. From beacon data (a site with no tracker data) visitors are the visits begun in the window (views that arrived from another site or none) and events 0.',
    params: WebsitePathParams,
    response: Type.Object({
      source: Source,
      views: Type.Integer(),
      visitors: Count,
      events: Type.Integer(),
      countries: Type.Array(Type.Object({ name: Type.String(), views: Type.Integer() })),
      timestamp: Timestamp,
    }),
    async handle(ctx) {
      await flushed(ctx)
      const now = ctx.clock.now()
      const order = (countries: Map<string, number>) =>
        [...countries].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).map(([name, views]) => ({ name, views }))
      if (ctx.registry.tracker.has(ctx.website!.id)) {
        const recent = ctx.registry.tracker.recent(ctx.website!.id, now, 30 * 60 * 1000)
        return {
          source: 'tracker' as const,
          views: recent.views,
          visitors: recent.visitors,
          events: recent.events,
          countries: order(recent.countries),
          timestamp: iso(now),
        }
      }
      const recent = ctx.registry.beacon.recent(ctx.website!.id, now, 30 * 60 * 1000)
      return {
        source: 'beacon' as const,
        views: recent.views,
        // The beacon sees no addresses: a visitor here is a visit begun in the window.
        visitors: recent.visits,
        events: 0,
        countries: order(recent.countries),
        timestamp: iso(now),
      }
    },
  }),
]
