import { ApiError } from './errors.js'

/**
 * Opaque list cursors: the ordering key of the last item of a page, versioned and base64url-encoded.
 * Keyset cursors neither repeat nor skip an item when others are created while a client pages.
 */

const CURSOR_VERSION = 1

export function encodeCursor(key: readonly (string | number)[]): string {
  return Buffer.from(JSON.stringify([CURSOR_VERSION, ...key])).toString('base64url')
}

/** The key inside a cursor; a cursor that was not made here is a 400 naming `cursor`. */
export function decodeCursor(cursor: string, arity: number): (string | number)[] {
  let parsed: unknown
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'))
  } catch {
    parsed = undefined
  }
  if (
    !Array.isArray(parsed) ||
    parsed[0] !== CURSOR_VERSION ||
    parsed.length !== arity + 1 ||
    !parsed.slice(1).every((part) => typeof part === 'string' || typeof part === 'number')
  ) {
    throw new ApiError('validation', 'cursor is not a cursor from this list; pass nextCursor from the previous page unchanged', {
      field: 'query.cursor',
    })
  }
  return parsed.slice(1) as (string | number)[]
}

/**
 * One page of items already sorted by a unique string key, after the key in `cursor`: the page,
 * and the cursor of its last item when more follow.
 */
export function pageByKey<T>(
  sorted: readonly T[],
  key: (item: T) => string,
  limit: number,
  cursor: string | undefined,
): { items: T[]; nextCursor: string | null } {
  const after = cursor === undefined ? null : String(decodeCursor(cursor, 1)[0])
  const rest = after === null ? sorted : sorted.filter((item) => key(item) > after)
  const items = rest.slice(0, limit)
  return { items, nextCursor: rest.length > limit ? encodeCursor([key(items[items.length - 1])]) : null }
}

/** The number in a newest-first cursor (a seq or a version), or above every number when there is none. */
export function cursorBelow(cursor: string | undefined): number {
  return cursor === undefined ? Number.MAX_SAFE_INTEGER : (decodeCursor(cursor, 1)[0] as number)
}

/**
 * One newest-first page of entries numbered by `numberOf` (a seq, a version), read lazily from
 * `entries` (descending, starting at or below `below`): up to `limit` items numbered below `below`
 * that `include` keeps, and the cursor of the last one when another follows.
 */
export function pageDescending<E, T = E>(
  entries: Iterable<E>,
  options: { numberOf(entry: E): number; below: number; limit: number; include?(entry: E): boolean; map?(entry: E): T },
): { items: T[]; nextCursor: string | null } {
  const items: T[] = []
  let last: number | null = null
  for (const entry of entries) {
    const number = options.numberOf(entry)
    if (number >= options.below || (options.include !== undefined && !options.include(entry))) continue
    if (items.length === options.limit) return { items, nextCursor: encodeCursor([last!]) }
    items.push(options.map === undefined ? (entry as unknown as T) : options.map(entry))
    last = number
  }
  return { items, nextCursor: null }
}

/**
 * One page of a list read by position (CMS items in a chosen sort order, where no key is unique and
 * stable): `read(offset, limit)` gives the items from `offset` and how many there are in all; the
 * cursor carries the offset of the next page.
 */
export function pageByOffset<T>(
  read: (offset: number, limit: number) => { items: T[]; total: number },
  limit: number,
  cursor: string | undefined,
  start = 0,
): { items: T[]; total: number; nextCursor: string | null } {
  const offset = cursor === undefined ? start : decodeCursor(cursor, 1)[0]
  if (typeof offset !== 'number' || !Number.isInteger(offset) || offset < 0) {
    throw new ApiError('validation', 'cursor is not a cursor from this list; pass nextCursor from the previous page unchanged', {
      field: 'query.cursor',
    })
  }
  const { items, total } = read(offset, limit)
  return { items, total, nextCursor: offset + limit < total ? encodeCursor([offset + limit]) : null }
}
