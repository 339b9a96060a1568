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
export function pageByKey<T>(sorted: readonly T[], key: (item: T) => string, limit: number, cursor: string | undefined): { items: T[]; nextCursor: string | null } {
  const after = cursor === undefined ? null : String(decodeCursor(cursor, 1)[0])
  const rest = after === null ? sorted : sorted.filter((item) => key(item) > after)
  const items = rest.slice(0, limit)
  return { items, nextCursor: rest.length > limit ? encodeCursor([key(items[items.length - 1])]) : null }
}
