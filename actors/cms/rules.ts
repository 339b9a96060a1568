// Pure rules of the CMS: slugs, field keys and definitions, value checks and conversions between types, an item's publication status.
import { ApiError } from '../../core/errors.js'
import { newId } from '../../core/ids.js'
import { FIELD_TYPES, type CollectionRecord, type FieldDef, type FieldType, type ItemRecord } from '../../core/schemas/cms.js'

/** Item properties that are not fields: no field key may take one of these names. */
const RESERVED_KEYS = new Set([
  'id',
  'slug',
  'publishedAt',
  'publishAt',
  'createdAt',
  'updatedAt',
  'position',
  'collectionId',
  'status',
  'deletedAt',
])
const KEY = /^[a-zA-Z][a-zA-Z0-9_]{0,63}$/
export const SLUG = /^[a-z0-9]+(?:-[a-z0-9]+)*$/
const TEXT_MAX = 10_000
const RICH_TEXT_MAX = 200_000
const JSON_MAX = 100_000
const MULTI_MAX = 200

export interface FieldInput {
  key?: string
  name: string
  type: FieldType
  required?: boolean
  unique?: boolean
  options?: string[]
  /** reference and multi_reference: the target collection's id or slug. */
  collection?: string
}

/** A slug from free text: lowercase letters, digits and single hyphens. */
export function slugify(text: string): string {
  return text
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 80)
}

/** A field key from a name: `Cover image` to `coverImage`. */
function keyOf(name: string): string {
  const words = name
    .normalize('NFKD')
    .replace(/[^A-Za-z0-9]+/g, ' ')
    .trim()
    .split(' ')
    .filter(Boolean)
  const key = words.map((w, i) => (i === 0 ? w.toLowerCase() : w[0].toUpperCase() + w.slice(1).toLowerCase())).join('')
  return /^[a-zA-Z]/.test(key) ? key.slice(0, 64) : `f${key}`.slice(0, 64)
}

const isDate = (v: unknown) =>
  typeof v === 'string' &&
  /^\d{4}-\d{2}-\d{2}$/.test(v) &&
  !Number.isNaN(Date.parse(`${v}T00:00:00Z`)) &&
  new Date(`${v}T00:00:00Z`).toISOString().startsWith(v)
const isDateTime = (v: unknown) =>
  typeof v === 'string' && /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2})$/.test(v) && !Number.isNaN(Date.parse(v))

/** A field from its input: a valid, free key (from the name by default), the options or target its type needs; errors name `at`. */
export function fieldOf(websiteId: string, collections: CollectionRecord[], input: FieldInput, taken: Set<string>, at: string): FieldDef {
  const key = input.key ?? keyOf(input.name)
  if (!KEY.test(key))
    throw new ApiError('validation', `${at}.key "${key}" is not a field key: a letter, then letters, digits or _ (at most 64)`, {
      field: `${at}.key`,
    })
  if (RESERVED_KEYS.has(key))
    throw new ApiError('validation', `${at}.key "${key}" is an item property; pick another key`, { field: `${at}.key` })
  if (taken.has(key)) throw new ApiError('conflict', `The collection already has a field with key "${key}"`, { field: `${at}.key` })
  if (!(FIELD_TYPES as readonly string[]).includes(input.type))
    throw new ApiError('validation', `${at}.type is one of ${FIELD_TYPES.join(', ')}`, { field: `${at}.type` })
  const field: FieldDef = {
    id: newId('fld'),
    key,
    name: input.name,
    type: input.type,
    required: input.required ?? false,
    unique: input.unique ?? false,
  }
  if (input.type === 'select' || input.type === 'multi_select') {
    if (input.options === undefined || input.options.length === 0)
      throw new ApiError('validation', `${at}.options lists the values a ${input.type} field allows`, { field: `${at}.options` })
    field.options = [...new Set(input.options)]
  }
  if (input.type === 'reference' || input.type === 'multi_reference') {
    if (input.collection === undefined)
      throw new ApiError('validation', `${at}.collection names the collection a ${input.type} field points at (id or slug)`, {
        field: `${at}.collection`,
      })
    const target = collections.find((c) => c.id === input.collection || c.slug === input.collection)
    if (target === undefined)
      throw new ApiError('validation', `${at}.collection: no collection ${input.collection} on this website`, {
        field: `${at}.collection`,
      })
    field.collectionId = target.id
  }
  void websiteId
  return field
}

/** What value checks look up: an asset of the website (kind and readiness) and an item by id. */
export interface ValueLookups {
  asset(websiteId: string, assetId: string): { kind: string; status: string } | undefined
  item(itemId: string): ItemRecord | undefined
}

/** A value of type `from` as the field `to` wants it, or why not. */
export function convertValue(
  lookups: ValueLookups,
  websiteId: string,
  value: unknown,
  from: FieldType,
  to: FieldDef,
): { ok: true; value: unknown } | { ok: false; reason: string } {
  let candidate = value
  if (from !== to.type) {
    if (to.type === 'text' || to.type === 'rich_text')
      candidate = typeof value === 'string' ? value : Array.isArray(value) ? value.join(', ') : JSON.stringify(value)
    else if (to.type === 'number' && typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value)))
      candidate = Number(value)
    else if (to.type === 'boolean' && (value === 'true' || value === 'false')) candidate = value === 'true'
    else if (to.type === 'multi_select' && typeof value === 'string') candidate = [value]
    else if (to.type === 'multi_reference' && typeof value === 'string') candidate = [value]
    else if (to.type === 'gallery' && typeof value === 'string') candidate = [value]
    else if (to.type === 'date' && isDateTime(value)) candidate = new Date(Date.parse(value as string)).toISOString().slice(0, 10)
    else if (to.type === 'datetime' && isDate(value)) candidate = `${value}T00:00:00.000Z`
    else if (to.type === 'json') candidate = value
  }
  const problem = valueProblem(lookups, websiteId, to, candidate)
  return problem === null ? { ok: true, value: candidate } : { ok: false, reason: problem }
}

/** Why `value` does not fit `field` (null: it fits). Values are present here (missing is checked by the caller). */
export function valueProblem(lookups: ValueLookups, websiteId: string, field: FieldDef, value: unknown): string | null {
  const asset = (id: unknown, image: boolean) => {
    if (typeof id !== 'string') return 'an asset id'
    const found = lookups.asset(websiteId, id)
    if (found === undefined || found.status !== 'ready') return `an asset of this website (no ready asset ${id})`
    if (image && found.kind !== 'image') return `an image asset (${id} is ${found.kind})`
    return null
  }
  const item = (id: unknown) => {
    if (typeof id !== 'string') return 'an item id'
    const found = lookups.item(id)
    return found === undefined || found.collectionId !== field.collectionId || found.websiteId !== websiteId
      ? `an item of the referenced collection (no item ${id} there)`
      : null
  }
  switch (field.type) {
    case 'text':
      return typeof value === 'string' && value.length <= TEXT_MAX ? null : `text of at most ${TEXT_MAX} characters`
    case 'rich_text':
      return typeof value === 'string' && value.length <= RICH_TEXT_MAX ? null : `Markdown text of at most ${RICH_TEXT_MAX} characters`
    case 'number':
      return typeof value === 'number' && Number.isFinite(value) ? null : 'a number'
    case 'boolean':
      return typeof value === 'boolean' ? null : 'true or false'
    case 'date':
      return isDate(value) ? null : 'a date as YYYY-MM-DD'
    case 'datetime':
      return isDateTime(value) ? null : 'an ISO 8601 date and time with a zone (2026-05-01T09:30:00Z)'
    case 'select':
      return typeof value === 'string' && field.options!.includes(value) ? null : `one of ${field.options!.join(', ')}`
    case 'multi_select':
      return Array.isArray(value) &&
        value.length <= MULTI_MAX &&
        value.every((v) => typeof v === 'string' && field.options!.includes(v)) &&
        new Set(value).size === value.length
        ? null
        : `a list of distinct values among ${field.options!.join(', ')}`
    case 'url':
      return typeof value === 'string' && value.length <= 2000 && /^https?:\/\/[^\s]+$/.test(value) && URL.canParse(value)
        ? null
        : 'an http(s) URL'
    case 'email':
      return typeof value === 'string' && value.length <= 254 && /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(value) ? null : 'an email address'
    case 'color':
      return typeof value === 'string' && /^#([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/.test(value) ? null : 'a color as #rgb or #rrggbb'
    case 'image':
      return asset(value, true)
    case 'file':
      return asset(value, false)
    case 'gallery':
      if (!Array.isArray(value) || value.length > MULTI_MAX) return 'a list of image asset ids'
      for (const id of value) {
        const problem = asset(id, true)
        if (problem !== null) return `a list of image asset ids: ${problem}`
      }
      return null
    case 'reference':
      return item(value)
    case 'multi_reference':
      if (!Array.isArray(value) || value.length > MULTI_MAX) return 'a list of item ids'
      for (const id of value) {
        const problem = item(id)
        if (problem !== null) return `a list of item ids: ${problem}`
      }
      return null
    case 'json': {
      if (value === undefined) return 'JSON'
      const text = JSON.stringify(value)
      return text.length <= JSON_MAX ? null : `JSON of at most ${JSON_MAX} characters`
    }
  }
}

/** published, scheduled or draft, at `now` (a schedule that came due is published). */
export function itemStatus(item: ItemRecord, now: number): 'published' | 'scheduled' | 'draft' {
  if (item.publishedAt !== null && item.publishedAt <= now) return 'published'
  if (item.publishAt !== null) return item.publishAt <= now ? 'published' : 'scheduled'
  return 'draft'
}

/** When the item became published (a due schedule's time), or null. */
export function itemPublishedAt(item: ItemRecord, now: number): number | null {
  if (item.publishedAt !== null && item.publishedAt <= now) return item.publishedAt
  return item.publishAt !== null && item.publishAt <= now ? item.publishAt : null
}
