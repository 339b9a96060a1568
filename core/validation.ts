import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv'
import addFormatsModule from 'ajv-formats'
import type { TSchema } from '@sinclair/typebox'

/**
 * The one Ajv instance. `allErrors: false` on purpose (fastify's ajv-compiler: collecting every
 * error of a hostile document is a denial-of-service lever); the first error is the one reported.
 */
const ajv = new Ajv({ allErrors: false, strict: true, useDefaults: true, verbose: true, coerceTypes: false })
const addFormats = addFormatsModule as unknown as (a: Ajv) => Ajv
addFormats(ajv)
ajv.addKeyword('kind').addKeyword('modifier')

const compiled = new WeakMap<TSchema, ValidateFunction>()

/** The compiled validator for `schema`, compiled once. */
export function validator(schema: TSchema): ValidateFunction {
  let fn = compiled.get(schema)
  if (fn === undefined) {
    fn = ajv.compile(schema)
    compiled.set(schema, fn)
  }
  return fn
}

/**
 * A JSON pointer as a field path the way the rest of the API writes them: `/files/0/path` under
 * `body` is `body.files[0].path`.
 */
export function fieldPath(root: string, instancePath: string): string {
  let out = root
  for (const raw of instancePath.split('/').slice(1)) {
    const segment = raw.replace(/~1/g, '/').replace(/~0/g, '~')
    out += /^\d+$/.test(segment) ? `[${segment}]` : `.${segment}`
  }
  return out
}

/**
 * The error to report: the first, unless it failed inside a union (`"published" or a version
 * number`), where the union itself says best what was expected.
 */
export function primaryError(errors: readonly ErrorObject[]): ErrorObject {
  const first = errors[0]
  const union = errors.find((e) => (e.keyword === 'anyOf' || e.keyword === 'oneOf') && first.instancePath.startsWith(e.instancePath))
  // A union that says what it takes says it best; one that does not (a nullable name), the limit a value of its type broke.
  if (union === undefined || (union.parentSchema as { description?: string } | undefined)?.description !== undefined) return union ?? first
  const limit = errors.find((e) => e !== union && e.instancePath === union.instancePath && LIMIT_KEYWORDS.has(e.keyword))
  return limit ?? union
}

const LIMIT_KEYWORDS = new Set([
  'maxLength',
  'minLength',
  'maximum',
  'minimum',
  'exclusiveMaximum',
  'exclusiveMinimum',
  'maxItems',
  'minItems',
])

/** A readable sentence for an Ajv error, naming the field: `body.name must be string`. */
export function describeError(error: ErrorObject, root: string): string {
  const field = fieldPath(root, error.instancePath)
  const parent = error.parentSchema as { description?: string } | undefined
  switch (error.keyword) {
    case 'required':
      return `${field}.${(error.params as { missingProperty: string }).missingProperty} is required`
    case 'additionalProperties':
      return `${field}.${(error.params as { additionalProperty: string }).additionalProperty} is not a known field`
    case 'pattern':
    case 'format':
      return parent?.description ? `${field} must be: ${parent.description}` : `${field} ${error.message}`
    case 'anyOf':
    case 'oneOf':
      return parent?.description ? `${field} must be ${parent.description}` : `${field} ${error.message ?? 'is invalid'}`
    case 'minProperties':
      return `${field} must name at least one field to change`
    case 'enum':
    case 'const':
      return `${field} must be one of ${JSON.stringify((error.params as { allowedValues?: unknown[] }).allowedValues ?? [(error.params as { allowedValue?: unknown }).allowedValue])}`
    default:
      return `${field} ${error.message ?? 'is invalid'}`
  }
}

/** The field path of the first error (`body.name`), for `details.field`. */
export function errorField(error: ErrorObject, root: string): string {
  const base = fieldPath(root, error.instancePath)
  if (error.keyword === 'required') return `${base}.${(error.params as { missingProperty: string }).missingProperty}`
  if (error.keyword === 'additionalProperties') return `${base}.${(error.params as { additionalProperty: string }).additionalProperty}`
  return base
}

/**
 * What the first error's rule was, for a client that words it itself (the dashboard names the field
 * by its label): `{rule: 'maxLength', limit: 200}`, `{rule: 'required'}`, `{rule: 'enum', allowed: [...]}`.
 */
export function errorRule(error: ErrorObject): { rule: string; limit?: number; allowed?: unknown[] } {
  const params = error.params as { limit?: unknown; allowedValues?: unknown[]; allowedValue?: unknown }
  if (typeof params.limit === 'number') return { rule: error.keyword, limit: params.limit }
  if (error.keyword === 'enum') return { rule: 'enum', allowed: params.allowedValues ?? [] }
  if (error.keyword === 'const') return { rule: 'enum', allowed: [params.allowedValue] }
  return { rule: error.keyword }
}
