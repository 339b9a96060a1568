import { Type, type Static, type TSchema, type TUnsafe } from '@sinclair/typebox'
import { ERROR_REASONS, ERROR_STATUS } from '../errors.js'
import { LIST_LIMIT_DEFAULT, LIST_LIMIT_MAX, LIST_LIMIT_MIN } from '../limits.js'

/** Schemas published under `components.schemas` in OpenAPI; the generator replaces them by `$ref`. */
export const NAMED_SCHEMAS = new Map<TSchema, string>()

/** Registers `schema` under `name` for OpenAPI and returns it unchanged. */
export function named<T extends TSchema>(name: string, schema: T): T {
  NAMED_SCHEMAS.set(schema, name)
  return schema
}

/** A string enum as a JSON Schema `enum` (clear Ajv errors, unlike a union of literals). */
export function StringEnum<const T extends readonly string[]>(values: T, options: { description?: string } = {}): TUnsafe<T[number]> {
  return Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...options })
}

export const WebsiteId = Type.String({ pattern: '^ws_[a-z0-9]{1,64}$', description: 'Website id (`ws_…`)' })
export const ApiKeyId = Type.String({ pattern: '^key_[a-z0-9]{1,64}$', description: 'API key id (`key_…`)' })
export const Timestamp = Type.String({ format: 'date-time', description: 'ISO-8601 time' })
export const NullableTimestamp = Type.Union([Timestamp, Type.Null()])

/** `limit` and `cursor`, accepted by every list (spec: Lists). */
export const ListQuery = {
  limit: Type.Optional(
    Type.Integer({
      minimum: LIST_LIMIT_MIN,
      maximum: LIST_LIMIT_MAX,
      default: LIST_LIMIT_DEFAULT,
      description: 'Page size, 1-100 (default 20)',
    }),
  ),
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 512, description: 'Opaque cursor from `nextCursor` of the previous page' })),
}

/** `{items, nextCursor}`: every list answers this shape. */
export function Page<T extends TSchema>(item: T) {
  return Type.Object({
    items: Type.Array(item),
    nextCursor: Type.Union([Type.String(), Type.Null()], { description: 'Pass as `cursor` for the next page; null at the end' }),
  })
}

export const ErrorBodySchema = named(
  'Error',
  Type.Object({
    kind: StringEnum(Object.keys(ERROR_STATUS) as (keyof typeof ERROR_STATUS)[]),
    message: Type.String(),
    details: Type.Optional(Type.Object({ reason: Type.Optional(StringEnum(ERROR_REASONS)) }, { additionalProperties: true })),
  }),
)

export type ListQueryInput = { limit?: number; cursor?: string }
export type ErrorBodyStatic = Static<typeof ErrorBodySchema>
