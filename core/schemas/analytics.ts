import { Type, type Static } from '@sinclair/typebox'
import { Ms } from './records.js'

/**
 * A website's shareable analytics dashboard. Its link's secret is derived from the installation key
 * and `generation`, never stored; revoking bumps the generation, so every earlier link stops working.
 */
export const AnalyticsShareRecord = Type.Object({
  v: Type.Literal(1),
  websiteId: Type.String(),
  generation: Type.Integer({ minimum: 0 }),
  enabled: Type.Boolean(),
  updatedAt: Ms,
})
export type AnalyticsShareRecord = Static<typeof AnalyticsShareRecord>
