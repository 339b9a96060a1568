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

/** A readable sentence for the first Ajv error, naming the field: `body.name: must be a string`. */
export function describeError(error: ErrorObject, root: string): string {
  const field = root + error.instancePath.replace(/\//g, '.')
  const parent = error.parentSchema as { description?: string } | undefined
  switch (error.keyword) {
    case 'required':
      return `${field}.${(error.params as { missingProperty: string }).missingProperty} is required`
    case 'additionalProperties':
      return `${field}.${(error.params as { additionalProperty: string }).additionalProperty} is not a known field`
    case 'pattern':
    case 'format':
      return parent?.description ? `${field} must be: ${parent.description}` : `${field} ${error.message}`
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
  const base = root + error.instancePath.replace(/\//g, '.')
  if (error.keyword === 'required') return `${base}.${(error.params as { missingProperty: string }).missingProperty}`
  if (error.keyword === 'additionalProperties') return `${base}.${(error.params as { additionalProperty: string }).additionalProperty}`
  return base
}
