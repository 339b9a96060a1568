import { isUtf8 } from 'node:buffer'
import { ApiError } from './errors.js'

declare global {
  interface String {
    /** ES2024, in Node.js since 20 (V8 11.3); the project's lib stays ES2023 for the rest. */
    isWellFormed(): boolean
  }
}

/** The replacement character a lenient UTF-8 decoder puts where bytes are not UTF-8. */
const REPLACEMENT = '\uFFFD'
const REPLACEMENT_BYTES = Buffer.from(REPLACEMENT)

/**
 * The path (under `root`) of the first string of a parsed JSON value, key or value, that `bad`
 * picks out: `body.files[1].content`, or `a key of body.files[1]`.
 */
function findString(value: unknown, root: string, bad: (text: string) => boolean): string | null {
  if (typeof value === 'string') return bad(value) ? root : null
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = findString(value[i], `${root}[${i}]`, bad)
      if (found !== null) return found
    }
    return null
  }
  if (value !== null && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      if (bad(key)) return `a key of ${root}`
      const found = findString(item, /^[A-Za-z_$][\w$]*$/.test(key) ? `${root}.${key}` : `${root}[${JSON.stringify(key)}]`, bad)
      if (found !== null) return found
    }
  }
  return null
}

/** `body.files[1].content` as the field a detail names (a key's path names its object). */
function fieldOf(path: string): string {
  return path.startsWith('a key of ') ? path.slice('a key of '.length) : path
}

/**
 * How deeply a JSON value may nest (objects and arrays). Every body the API takes fits in a handful
 * of levels; a limit keeps every later walk of the value (validation, UTF-8 checks, copies) far from
 * the stack's end, so 5,000 levels are a 400 rather than a stack overflow.
 */
export const JSON_DEPTH_MAX = 64

/**
 * 400 when `value` nests deeper than JSON_DEPTH_MAX. Walks without recursion (an explicit stack), so
 * any depth JSON.parse produced is measured safely.
 */
export function checkDepth(value: unknown, root: string, max = JSON_DEPTH_MAX): void {
  const stack: [unknown, number][] = [[value, 1]]
  while (stack.length > 0) {
    const [item, depth] = stack.pop()!
    if (item === null || typeof item !== 'object') continue
    if (depth > max)
      throw new ApiError('validation', `${root} nests objects and arrays more than ${max} levels deep; send a flatter value`, {
        field: root,
        limit: max,
      })
    for (const child of Array.isArray(item) ? item : Object.values(item))
      if (child !== null && typeof child === 'object') stack.push([child, depth + 1])
  }
}

/**
 * Parses a JSON body, refusing text that would be stored other than as sent: bytes that are not
 * UTF-8 (a lenient decode would store U+FFFD in their place) and strings that are not well-formed
 * Unicode (a lone surrogate from a `\ud800` escape cannot be written as UTF-8 either). The 400 names
 * the field. `root` is how fields are named (`body`, `arguments`).
 */
export function parseJsonText(bytes: Buffer, root: string): unknown {
  let value: unknown
  try {
    value = JSON.parse(bytes.toString('utf8'))
  } catch (error) {
    throw new ApiError('validation', `${root} is not valid JSON: ${(error as Error).message}`, { field: root, reason: 'invalid_json' })
  }
  checkDepth(value, root)
  if (!isUtf8(bytes)) throw notUtf8(bytes, value, root)
  checkWellFormed(value, root)
  return value
}

/** The 400 for JSON text whose bytes are not all UTF-8, naming the field they are in when it can tell. */
function notUtf8(bytes: Buffer, value: unknown, root: string): ApiError {
  // Every U+FFFD stands for bytes that were not UTF-8, unless the body also sent real ones.
  const path = bytes.includes(REPLACEMENT_BYTES) ? null : findString(value, root, (s) => s.includes(REPLACEMENT))
  return new ApiError(
    'validation',
    `${path ?? root} is not valid UTF-8: JSON text must be UTF-8; send binary content as base64 (encoding: "base64")`,
    {
      field: path === null ? root : fieldOf(path),
    },
  )
}

/**
 * For a JSON body another parser reads (the MCP SDK's): null when its bytes are UTF-8, else the 400
 * naming the field, found under `at` (the JSON-RPC request's `params.arguments`) and named `root`.
 */
export function utf8Error(bytes: Buffer, at: (request: unknown) => unknown, root: string): ApiError | null {
  if (isUtf8(bytes)) return null
  let value: unknown
  try {
    value = at(JSON.parse(bytes.toString('utf8')))
  } catch {
    value = undefined
  }
  return notUtf8(bytes, value, root)
}

/** Refuses a string of a parsed value that is not well-formed Unicode, naming its field. */
export function checkWellFormed(value: unknown, root: string): void {
  const malformed = findString(value, root, (s) => !s.isWellFormed())
  if (malformed !== null) {
    throw new ApiError(
      'validation',
      `${malformed} is not well-formed Unicode (a lone surrogate escape such as \\ud800 has no UTF-8 form); send binary content as base64`,
      {
        field: fieldOf(malformed),
      },
    )
  }
}
