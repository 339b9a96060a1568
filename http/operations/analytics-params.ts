/** Reading the analytics operations' query parameters: instants, ranges, and the JSON segment and cohort. */

import { Type, type Static, type TSchema } from '@sinclair/typebox'
import { check } from '../pipeline.js'
import { SEGMENT_OPERATORS, TRACKER_FILTERS, type Cohort, type Segment } from '../../actors/analytics/tracker-filters.js'
import { ApiError } from '../../core/errors.js'
import { checkDepth } from '../../core/json-text.js'
import { StringEnum } from '../../core/schemas/common.js'

const HOUR = 60 * 60 * 1000

/** `from`/`to` as an ISO time or Unix milliseconds. */
export function instant(text: string, field: string): number {
  const ms = /^\d{1,15}$/.test(text) ? Number(text) : Date.parse(text)
  if (!Number.isFinite(ms))
    throw new ApiError('validation', `${field} must be an ISO 8601 time or Unix milliseconds, got ${JSON.stringify(text)}`, { field })
  return ms
}

const SegmentSchema = Type.Object(
  {
    match: Type.Optional(StringEnum(['all', 'any'] as const)),
    filters: Type.Array(
      Type.Object(
        {
          name: StringEnum(TRACKER_FILTERS),
          operator: Type.Optional(StringEnum(SEGMENT_OPERATORS)),
          value: Type.String({ maxLength: 500 }),
        },
        { additionalProperties: false },
      ),
      { minItems: 1, maxItems: 20 },
    ),
  },
  { additionalProperties: false },
)
const CohortSchema = Type.Object(
  {
    action: Type.Object(
      { type: StringEnum(['path', 'event'] as const), value: Type.String({ minLength: 1, maxLength: 500 }) },
      { additionalProperties: false },
    ),
    startAt: Type.Optional(Type.Integer({ minimum: 0 })),
    endAt: Type.Optional(Type.Integer({ minimum: 0 })),
  },
  { additionalProperties: false },
)

/** A query parameter holding JSON, checked against `schema`; errors name `query.<name>`. */
function jsonParameter(text: string, name: string, schema: TSchema, example: string): unknown {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    throw new ApiError('validation', `query.${name} must be JSON, such as ${example}`, { field: `query.${name}` })
  }
  checkDepth(value, `query.${name}`)
  return check(schema, value, `query.${name}`)
}

/** query.segment: a JSON segment, its operators defaulting to eq and its match to all. */
export function parseSegment(text: string): Segment {
  const parsed = jsonParameter(
    text,
    'segment',
    SegmentSchema,
    '{"filters":[{"name":"device","operator":"eq","value":"mobile"}]}',
  ) as Static<typeof SegmentSchema>
  return {
    match: parsed.match ?? 'all',
    filters: parsed.filters.map((f) => ({ name: f.name, operator: f.operator ?? 'eq', value: f.value })),
  }
}

/** query.cohort: a JSON cohort, its window defaulting to the query's range (at most 400 days). */
export function parseCohort(text: string, startAt: number, endAt: number): Cohort {
  const parsed = jsonParameter(text, 'cohort', CohortSchema, '{"action":{"type":"event","value":"signup"}}') as Static<typeof CohortSchema>
  const cohort = { action: parsed.action, startAt: parsed.startAt ?? startAt, endAt: parsed.endAt ?? endAt }
  if (cohort.startAt >= cohort.endAt)
    throw new ApiError('validation', 'query.cohort: startAt must be before endAt', { field: 'query.cohort.startAt' })
  if (cohort.endAt - cohort.startAt > 400 * 24 * HOUR)
    throw new ApiError('validation', 'query.cohort covers at most 400 days; narrow its startAt and endAt', {
      field: 'query.cohort.startAt',
    })
  return cohort
}

/** startAt before endAt, at most 400 days apart. */
export function checkRange(startAt: number, endAt: number): void {
  if (startAt >= endAt) throw new ApiError('validation', 'startAt must be before endAt', { field: 'query.startAt' })
  if (endAt - startAt > 400 * 24 * HOUR)
    throw new ApiError('validation', 'A range covers at most 400 days; narrow startAt and endAt', { field: 'query.startAt' })
}
