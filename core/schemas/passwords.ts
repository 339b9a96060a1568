import { Type, type Static } from '@sinclair/typebox'
import { Ms } from './records.js'

/**
 * A website's password (set_website_password), or a shared folder's (set_folder_password), keyed by
 * its scope: the website id, or `<websiteId>/<folder>`. Only its scrypt hash. `generation` goes up with every
 * change, so the visitors' cookies of an earlier password stop working.
 */
export const SitePasswordRecord = Type.Object({
  v: Type.Literal(1),
  websiteId: Type.String(),
  hash: Type.String(),
  generation: Type.Integer({ minimum: 1 }),
  setAt: Ms,
  /** A shared folder's password (set_folder_password): its folder on the storage site; absent for the whole site. */
  folder: Type.Optional(Type.String()),
})
export type SitePasswordRecord = Static<typeof SitePasswordRecord>
