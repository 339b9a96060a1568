// Item lists of a collection: filter operators, search, publication status and sort over its items, a page at a time.
import { ApiError } from '../../core/errors.js'
import type { CollectionRecord, ItemRecord } from '../../core/schemas/cms.js'
import { itemPublishedAt, itemStatus } from './rules.js'

export const FILTER_OPERATORS = [
  'eq',
  'neq',
  'contains',
  'startsWith',
  'endsWith',
  'gt',
  'gte',
  'lt',
  'lte',
  'in',
  'nin',
  'exists',
] as const
export type FilterOperator = (typeof FILTER_OPERATORS)[number]
export type Filter = Record<string, Partial<Record<FilterOperator, unknown>>>

/** What a list of items asks for. */
export interface ItemQuery {
  filter?: Filter
  filterLogic?: 'and' | 'or'
  sort?: { field: string; direction: 'asc' | 'desc' }
  search?: string
  limit: number
  offset: number
  status?: 'published' | 'draft' | 'scheduled' | 'all'
  deleted?: boolean
}

/**
 * Items of a collection: not deleted (unless asked), filtered (every operator, `and` or `or`),
 * searched in text fields and the slug, sorted (position by default), a page at a time.
 */
export function queryItems(
  collection: CollectionRecord,
  items: Iterable<ItemRecord>,
  now: number,
  options: ItemQuery,
): { items: ItemRecord[]; total: number } {
  const known = new Map(collection.fields.map((f) => [f.key, f]))
  const property = (name: string, at: string) => {
    if (!known.has(name) && !['slug', 'publishedAt', 'createdAt', 'updatedAt', 'position', 'id'].includes(name)) {
      throw new ApiError(
        'validation',
        `${at}: ${collection.slug} has no field ${name}; its fields are ${[...known.keys()].join(', ') || 'none'} (and slug, createdAt, updatedAt, publishedAt, position)`,
        { field: at },
      )
    }
  }
  const filters = Object.entries(options.filter ?? {})
  for (const [name, ops] of filters) {
    property(name, `query.filter.${name}`)
    for (const op of Object.keys(ops))
      if (!(FILTER_OPERATORS as readonly string[]).includes(op))
        throw new ApiError('validation', `query.filter.${name}: ${op} is not an operator; use ${FILTER_OPERATORS.join(', ')}`, {
          field: `query.filter.${name}`,
        })
  }
  if (options.sort !== undefined) property(options.sort.field, 'query.sort')
  const read = (item: ItemRecord, name: string): unknown => {
    switch (name) {
      case 'id':
        return item.id
      case 'slug':
        return item.slug
      case 'publishedAt': {
        const at = itemPublishedAt(item, now)
        return at === null ? null : new Date(at).toISOString()
      }
      case 'createdAt':
        return new Date(item.createdAt).toISOString()
      case 'updatedAt':
        return new Date(item.updatedAt).toISOString()
      case 'position':
        return item.position
      default:
        return item.values[name]
    }
  }
  const compare = (a: unknown, b: unknown): number =>
    typeof a === 'number' && typeof b === 'number' ? a - b : String(a).localeCompare(String(b))
  const test = (value: unknown, op: FilterOperator, operand: unknown): boolean => {
    const present = value !== undefined && value !== null && value !== ''
    switch (op) {
      case 'exists':
        return present === (operand !== false)
      case 'eq':
        return JSON.stringify(value) === JSON.stringify(operand)
      case 'neq':
        return JSON.stringify(value) !== JSON.stringify(operand)
      case 'contains':
        return Array.isArray(value)
          ? value.includes(operand)
          : typeof value === 'string' && typeof operand === 'string' && value.toLowerCase().includes(operand.toLowerCase())
      case 'startsWith':
        return typeof value === 'string' && typeof operand === 'string' && value.toLowerCase().startsWith(operand.toLowerCase())
      case 'endsWith':
        return typeof value === 'string' && typeof operand === 'string' && value.toLowerCase().endsWith(operand.toLowerCase())
      case 'gt':
        return present && compare(value, operand) > 0
      case 'gte':
        return present && compare(value, operand) >= 0
      case 'lt':
        return present && compare(value, operand) < 0
      case 'lte':
        return present && compare(value, operand) <= 0
      case 'in':
        return Array.isArray(operand) && (Array.isArray(value) ? value.some((v) => operand.includes(v)) : operand.includes(value))
      case 'nin':
        return Array.isArray(operand) && !(Array.isArray(value) ? value.some((v) => operand.includes(v)) : operand.includes(value))
    }
  }
  const textKeys = collection.fields.filter((f) => f.type === 'text' || f.type === 'rich_text').map((f) => f.key)
  const needle = options.search?.toLowerCase()
  const matched: ItemRecord[] = []
  for (const item of items) {
    if ((item.deletedAt !== null) !== (options.deleted === true)) continue
    const status = itemStatus(item, now)
    if (options.status !== undefined && options.status !== 'all' && status !== options.status) continue
    if (
      needle !== undefined &&
      needle !== '' &&
      !item.slug.includes(needle) &&
      !textKeys.some((k) => typeof item.values[k] === 'string' && (item.values[k] as string).toLowerCase().includes(needle))
    )
      continue
    if (filters.length > 0) {
      const results = filters.map(([name, ops]) =>
        Object.entries(ops).every(([op, operand]) => test(read(item, name), op as FilterOperator, operand)),
      )
      if (options.filterLogic === 'or' ? !results.some(Boolean) : !results.every(Boolean)) continue
    }
    matched.push(item)
  }
  const sort = options.sort ?? { field: 'position', direction: 'asc' as const }
  matched.sort((a, b) => {
    const x = read(a, sort.field)
    const y = read(b, sort.field)
    // Items without the value go last, whichever the direction.
    if (x === undefined || x === null) return y === undefined || y === null ? a.position - b.position : 1
    if (y === undefined || y === null) return -1
    const order = compare(x, y) || a.position - b.position
    return sort.direction === 'desc' ? -order : order
  })
  return { items: matched.slice(options.offset, options.offset + options.limit), total: matched.length }
}
