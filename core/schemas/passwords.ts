import { Type, type Static } from '@sinclair/typebox'
import { Ms } from './records.js'

/**
 * A website's password (set_website_password): only its scrypt hash. `generation` goes up with every
 * change, so the visitors' cookies of an earlier password stop working.
 */
export const SitePasswordRecord = Type.Object({
  v: Type.Literal(1),
  websiteId: Type.String(),
  hash: Type.String(),
  generation: Type.Integer({ minimum: 1 }),
  setAt: Ms,
})
export type SitePasswordRecord = Static<typeof SitePasswordRecord>
