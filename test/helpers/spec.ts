import { existsSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

/**
 * The spec's endpoint tables, read from the copy in test/fixtures/spec.md (the same text as
 * ../shared/spec.md; a test checks the two agree when the shared copy is there). Tests compare the
 * OpenAPI description against these rows, so a renamed operation cannot drift from the spec.
 */

const here = dirname(fileURLToPath(import.meta.url))
/** test/fixtures/spec.md in the source tree (tests run from dist/test/helpers). */
export const SPEC_PATH = join(here, '..', '..', '..', 'test', 'fixtures', 'spec.md')
/** The shared spec beside the checkout, when the checkout has one. */
export const SHARED_SPEC_PATH = join(here, '..', '..', '..', '..', 'shared', 'spec.md')

export function specText(): string {
  return readFileSync(SPEC_PATH, 'utf8')
}

export function sharedSpecText(): string | null {
  return existsSync(SHARED_SPEC_PATH) ? readFileSync(SHARED_SPEC_PATH, 'utf8') : null
}

/** One endpoint row of the spec, with the spec's own line for messages. */
export interface SpecEndpoint {
  method: string
  /** As the description writes it: under `/v1` unless the spec marks it, `{id}` as `{websiteId}`. */
  path: string
  operationId: string | null
  capability: string | null
  rateClass: 'standard' | 'expensive' | null
  /** The line of the spec it came from, quoted in assertion messages. */
  line: string
}

const CLASS = { S: 'standard', E: 'expensive' } as const

/** The description's path for a path of the spec: `{base_url}` is `/v1`, `{id}` is the website id. */
export function descriptionPath(path: string, underV1: boolean): string {
  // The anonymous endpoints' `{id}` may be `current` or `storage`, not only a website id: kept.
  return underV1 ? `/v1${path}`.replace(/\{id\}/g, '{websiteId}') : path
}

function cells(line: string): string[] {
  return line
    .trim()
    .replace(/^\||\|$/g, '')
    .split('|')
    .map((c) => c.trim())
}

function unquote(cell: string): string {
  return cell.replace(/`/g, '').trim()
}

/** Every endpoint row of the spec's "Endpoints" part: tables, and the method-and-path list. */
export function specEndpoints(text = specText()): SpecEndpoint[] {
  const lines = text.split('\n')
  const out: SpecEndpoint[] = []
  const start = lines.indexOf('## Endpoints')
  const end = lines.indexOf('## Authentication')
  let heading = ''
  let header: string[] | null = null
  for (let i = start; i < end; i++) {
    const line = lines[i]
    if (line.startsWith('### ')) {
      heading = line
      header = null
      continue
    }
    if (!line.startsWith('|')) {
      header = null
      if (heading.startsWith('### Operations whose detail is limited')) out.push(...methodAndPathList(line))
      continue
    }
    const row = cells(line)
    if (header === null) {
      header = row
      continue
    }
    if (row.every((c) => /^-+$/.test(c))) continue
    const col = (name: string) => {
      const at = header!.indexOf(name)
      return at === -1 ? null : row[at]
    }
    const anonymous = heading.includes('not under `/v1`')
    const method = col('Method') ?? (heading.includes('all GET') ? 'GET' : null)
    const path = col('Path')
    if (method === null || path === null) continue
    const operationId = col('operationId')
    const headingClass = /class ([SE])\)/.exec(heading)?.[1] as 'S' | 'E' | undefined
    // "S (L)": the class, then a note that the operation is a list.
    const rowClass = (col('Class')?.split(/\s/)[0] ?? null) as 'S' | 'E' | null
    const headingCapability = /capability ([a-z.]+)/.exec(heading)?.[1] ?? null
    const klass = rowClass ?? (/\bclass [SE]\b/.test(heading) ? (headingClass ?? null) : null)
    out.push({
      method,
      path: descriptionPath(unquote(path), !anonymous),
      // `cms.items.list (L; search, …)`: the id is the first word.
      operationId: operationId === null ? null : unquote(operationId).split(/\s/)[0],
      capability: col('Capability') ?? headingCapability,
      rateClass: klass === null ? null : CLASS[klass],
      line: line.trim(),
    })
  }
  return out
}

/**
 * "Assets: PATCH, DELETE `/websites/{id}/assets/{assetId}`; POST `…/variants`." One endpoint per
 * method of each path; `/storage/uploads (at /v1/storage/uploads)` is already under /v1.
 */
function methodAndPathList(line: string): SpecEndpoint[] {
  const out: SpecEndpoint[] = []
  const body = line.replace(/^[A-Za-z ]+:\s*/, '')
  for (const part of body.split(';')) {
    const match = /^\s*((?:GET|POST|PUT|PATCH|DELETE)(?:,\s*(?:GET|POST|PUT|PATCH|DELETE))*)\s+`([^`]+)`/.exec(part)
    if (match === null) continue
    for (const method of match[1].split(/,\s*/)) {
      out.push({
        method,
        path: descriptionPath(match[2], !match[2].startsWith('/v1')),
        operationId: null,
        capability: null,
        rateClass: null,
        line: line.trim(),
      })
    }
  }
  return out
}
