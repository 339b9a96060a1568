import { Type, type Static } from '@sinclair/typebox'
import { Ms, NullableMs } from './records.js'

/** Field types of the CMS (spec: CMS, deprecated). */
export const FIELD_TYPES = [
  'text',
  'rich_text',
  'number',
  'boolean',
  'date',
  'datetime',
  'select',
  'multi_select',
  'url',
  'email',
  'color',
  'image',
  'file',
  'gallery',
  'reference',
  'multi_reference',
  'json',
] as const
export type FieldType = (typeof FIELD_TYPES)[number]

export const FieldDef = Type.Object({
  id: Type.String(),
  /** The stable key items carry the value under (letters, digits and _; starts with a letter). */
  key: Type.String(),
  name: Type.String(),
  type: Type.Union(FIELD_TYPES.map((t) => Type.Literal(t))),
  required: Type.Boolean(),
  unique: Type.Boolean(),
  /** select and multi_select: the allowed values. */
  options: Type.Optional(Type.Array(Type.String())),
  /** reference and multi_reference: the collection referred to. */
  collectionId: Type.Optional(Type.String()),
})
export type FieldDef = Static<typeof FieldDef>

/** A collection of a website's CMS: its fields, in order. */
export const CollectionRecord = Type.Object({
  v: Type.Literal(1),
  id: Type.String(),
  websiteId: Type.String(),
  name: Type.String(),
  /** Unique within the website: `cms.<slug>` in page code (camelCased). */
  slug: Type.String(),
  fields: Type.Array(FieldDef),
  createdAt: Ms,
  updatedAt: Ms,
})
export type CollectionRecord = Static<typeof CollectionRecord>

/** An item: its slug, its values by field key, and its publication. */
export const ItemRecord = Type.Object({
  v: Type.Literal(1),
  id: Type.String(),
  websiteId: Type.String(),
  collectionId: Type.String(),
  slug: Type.String(),
  values: Type.Record(Type.String(), Type.Unknown()),
  /** Published since then (only published items reach sites); null: a draft. */
  publishedAt: NullableMs,
  /** Scheduled publication, when set and in the future. */
  publishAt: NullableMs,
  deletedAt: NullableMs,
  position: Type.Number(),
  createdAt: Ms,
  updatedAt: Ms,
})
export type ItemRecord = Static<typeof ItemRecord>

/** A legacy page record (spec: Legacy page record): stored and returned, never rendered by sites. */
export const LegacyPageRecord = Type.Object({
  v: Type.Literal(1),
  id: Type.String(),
  websiteId: Type.String(),
  title: Type.String(),
  /** Unique within the website. */
  slug: Type.String(),
  /** The page's text as it was written (Markdown or HTML, as `format` says); never served. */
  content: Type.String(),
  format: Type.Union([Type.Literal('markdown'), Type.Literal('html')]),
  description: Type.String(),
  createdAt: Ms,
  updatedAt: Ms,
})
export type LegacyPageRecord = Static<typeof LegacyPageRecord>
