import { ERROR_KINDS, ERROR_REASON_DESCRIPTIONS } from '../../core/errors.js'
import * as limits from '../../core/limits.js'
import type { ToolCatalogEntry } from '../mcp.js'
import { CORE_TOOLS, TOOLSETS } from '../mcp-toolsets.js'

/*
 * /llms-full.txt: docs/llms-full.txt as written, its generated parts filled in at request time from
 * the tables they describe, so they cannot drift: `{{tools:core}}` (every tool of the default list, one
 * line each with its arguments), `{{tools:toolsets}}` (every toolset and its tools), `{{errors:kinds}}`
 * and `{{errors:reasons}}` (the error registry), `{{limit:NAME}}` (a named limit of core/limits.ts) and
 * `{{rate:NAME}}` (a rate limit there: an anonymous bucket or a key's class).
 */

type Json = Record<string, any>

/** The value schema of a property: a union's structured variant (`{type, name?}` of `file`), else itself. */
function structured(schema: Json): Json {
  const union = (schema.anyOf ?? schema.oneOf) as Json[] | undefined
  if (union === undefined) return schema
  return union.find((s) => s.type === 'object' || s.type === 'array') ?? schema
}

/** How a property's value reads after its name: `{a, b?}` for an object, `[{…}]` for a list of them, `[]` for a list. */
function valueShape(schema: Json, depth: number): string {
  const s = structured(schema)
  if (s.type === 'array') {
    const items = structured((s.items ?? {}) as Json)
    return items.type === 'object' ? `[${objectShape(items, depth + 1)}]` : '[]'
  }
  if (s.type === 'object') return objectShape(s, depth + 1)
  return ''
}

/** An object's fields, `?` after the optional ones; a map of any keys is `{…}`. */
function objectShape(schema: Json, depth: number): string {
  const properties = schema.properties as Json | undefined
  if (properties === undefined || Object.keys(properties).length === 0) return '{…}'
  if (depth > 3) return '{…}'
  const required = new Set<string>(schema.required ?? [])
  const fields = Object.entries(properties).map(
    ([name, property]) => `${name}${required.has(name) ? '' : '?'}${valueShape(property as Json, depth)}`,
  )
  return `{${fields.join(', ')}}`
}

/** A tool as one line: `` `name {arguments}` `` (with who may call it), then what it does. */
export function toolLine(entry: ToolCatalogEntry, words: 'description' | 'summary'): string {
  const args = objectShape(entry.tool.inputSchema as Json, 0)
  const notes = [entry.personOnly ? 'a person only' : '', entry.deprecated ? 'deprecated' : ''].filter((n) => n !== '').join(', ')
  const text = (words === 'description' ? entry.description : entry.summary).replace(/\s+/g, ' ').trim()
  return `- \`${entry.tool.name} ${args === '{…}' ? '{}' : args}\`${notes === '' ? '' : ` (${notes})`}: ${text}`
}

/** The default list, in the order CORE_TOOLS groups it. */
function coreTools(catalog: readonly ToolCatalogEntry[]): string {
  const order = [...CORE_TOOLS]
  return catalog
    .filter((e) => e.toolset === 'core')
    .sort((a, b) => order.indexOf(a.tool.name) - order.indexOf(b.tool.name))
    .map((e) => toolLine(e, 'description'))
    .join('\n')
}

/** Every toolset: how to enable it, what it holds, and its tools (with their arguments and summaries). */
function toolsets(catalog: readonly ToolCatalogEntry[]): string {
  const out: string[] = []
  for (const [name, holds] of Object.entries(TOOLSETS)) {
    const tools = catalog.filter((e) => e.toolset === name)
    out.push(`### \`${name}\` (\`?toolsets=${name}\`): ${holds}`, '', ...tools.map((e) => toolLine(e, 'summary')), '')
  }
  return out.join('\n').trimEnd()
}

function errorKinds(): string {
  const rows = Object.entries(ERROR_KINDS).map(([kind, entry]) => `| \`${kind}\` | ${entry.status} | ${cell(entry.when)} |`)
  return ['| kind | status | when, and what to do |', '|---|---|---|', ...rows].join('\n')
}

function errorReasons(): string {
  return Object.entries(ERROR_REASON_DESCRIPTIONS)
    .map(([reason, meaning]) => `- \`${reason}\`: ${meaning.replace(/ \(spec\)\.$/, '.')}`)
    .join('\n')
}

function cell(text: string): string {
  return text.replace(/\r?\n/g, ' ').replace(/\|/g, '\\|')
}

const KiB = 1024
const MiB = KiB * 1024
const GiB = MiB * 1024

/** A named limit as a person reads it: bytes in MiB/GiB, durations in minutes, hours or days, counts with thousands separators. */
export function limitText(name: string): string {
  const value = (limits as Record<string, unknown>)[name]
  if (typeof value !== 'number') throw new Error(`llms-full.txt names {{limit:${name}}}, which core/limits.ts does not export as a number`)
  if (name.endsWith('_BYTES')) {
    for (const [unit, size] of [
      ['GiB', GiB],
      ['MiB', MiB],
      ['KiB', KiB],
    ] as const)
      if (value >= size && value % size === 0) return `${(value / size).toLocaleString('en-US')} ${unit}`
    if (value % 1_000_000_000 === 0) return `${value / 1_000_000_000} GB`
    return `${value.toLocaleString('en-US')} bytes`
  }
  if (name.endsWith('_MS')) {
    const units = [
      ['day', 24 * 3600_000],
      ['hour', 3600_000],
      ['minute', 60_000],
      ['second', 1000],
    ] as const
    for (const [unit, size] of units) {
      if (value >= size && value % size === 0) {
        const n = value / size
        // A day's worth of hours reads as hours (24 hours), as every page of the docs says it.
        if (unit === 'day' && n === 1) return '24 hours'
        return `${n} ${unit}${n === 1 ? '' : 's'}`
      }
    }
    return `${value} ms`
  }
  return value.toLocaleString('en-US')
}

/** A rate limit in words: an anonymous bucket as the spec says it (`5 creates or swaps, then 10 a day`), or a key's class. */
export function rateText(name: string): string {
  if (Object.hasOwn(limits.ANON_RATE_LIMITS, name)) return limits.ANON_RATE_LIMITS[name as limits.AnonBucket].spec
  if (Object.hasOwn(limits.RATE_LIMITS, name)) {
    const bucket = limits.RATE_LIMITS[name as limits.RateClass]
    return `a burst of ${bucket.burst}, then about ${bucket.perMinute} a minute`
  }
  throw new Error(`llms-full.txt names {{rate:${name}}}, which is no rate limit of core/limits.ts`)
}

/** docs/llms-full.txt with every generated part filled in; an unknown placeholder is an error, never left in. */
export function llmsFull(written: string, catalog: readonly ToolCatalogEntry[]): string {
  return written.replace(/\{\{([a-z]+):([A-Za-z_]+)\}\}/g, (match, kind: string, name: string) => {
    if (kind === 'limit') return limitText(name)
    if (kind === 'rate') return rateText(name)
    if (kind === 'tools' && name === 'core') return coreTools(catalog)
    if (kind === 'tools' && name === 'toolsets') return toolsets(catalog)
    if (kind === 'errors' && name === 'kinds') return errorKinds()
    if (kind === 'errors' && name === 'reasons') return errorReasons()
    throw new Error(`llms-full.txt names ${match}, which nothing generates`)
  })
}
