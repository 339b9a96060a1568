import { ERROR_KINDS, ERROR_REASON_DESCRIPTIONS, type ErrorKind } from '../../core/errors.js'
import { ANON_RATE_LIMITS, LIST_LIMIT_DEFAULT, LIST_LIMIT_MAX, RATE_LIMITS } from '../../core/limits.js'
import { answerText } from './examples.js'

/*
 * The API reference (`GET /docs/api`) as Markdown, written from the OpenAPI document and the error
 * registry alone: what the description says is what the reference says.
 */

type Json = Record<string, any>

/** The spec's ten error kinds; the registry's others say why they exist. */
const SPEC_KINDS: readonly ErrorKind[] = ['validation', 'unauthorized', 'payment_required', 'forbidden', 'not_found', 'conflict', 'payload_too_large', 'rate_limited', 'upstream', 'internal']

/** A table cell: one line, pipes escaped. */
function cell(text: unknown): string {
  return String(text ?? '')
    .replace(/\r?\n/g, ' ')
    .replace(/\|/g, '\\|')
}

/** A heading's anchor, as the reference links to it. */
export function anchor(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '')
}

/** The schema a `$ref` names, or the schema itself. */
function resolve(doc: Json, schema: Json | undefined): Json | undefined {
  if (schema?.$ref === undefined) return schema
  return doc.components.schemas[String(schema.$ref).split('/').pop()!]
}

/** A named schema's heading in the Schemas section (not the bare name: a tag may have it). */
function schemaHeading(name: string): string {
  return `${name} schema`
}

/** A short type: `string`, `integer 1-100`, `"a" | "b"`, `Website[]` (linked to its fields), `object of string`, `object`. */
function typeOf(doc: Json, schema: Json | undefined): string {
  if (schema === undefined) return ''
  if (schema.$ref !== undefined) {
    const name = String(schema.$ref).split('/').pop()!
    return `[${name}](#${anchor(schemaHeading(name))})`
  }
  if (schema.enum !== undefined) return schema.enum.map((v: unknown) => JSON.stringify(v)).join(' | ') // cell() escapes the pipes
  if (schema.const !== undefined) return JSON.stringify(schema.const)
  const union = schema.anyOf ?? schema.oneOf
  if (union !== undefined) return union.map((s: Json) => typeOf(doc, s)).join(' or ')
  if (schema.type === 'array') return `${typeOf(doc, schema.items)}[]`
  if (Array.isArray(schema.type)) return schema.type.join(' or ')
  // A map (TypeBox's Record): its values' type.
  const values = Object.values((schema.patternProperties ?? {}) as Json)[0] ?? (typeof schema.additionalProperties === 'object' ? schema.additionalProperties : undefined)
  if (schema.type === 'object' && values !== undefined && Object.keys(schema.properties ?? {}).length === 0) return `object of ${typeOf(doc, values) || 'any'}`
  const range = schema.minimum !== undefined || schema.maximum !== undefined ? ` ${schema.minimum ?? ''}-${schema.maximum ?? ''}` : ''
  const length = schema.maxLength !== undefined ? ` (≤ ${schema.maxLength} chars)` : ''
  return `${schema.type ?? 'any'}${range}${length}`
}

/** The inline object a field holds (itself, or its list's items; maybe or null), whose fields get rows of their own: never a named schema. */
function inlineObject(schema: Json): { object: Json; list: boolean } | undefined {
  const choices = (schema.anyOf ?? schema.oneOf) as Json[] | undefined
  const single = choices?.filter((c) => c.type !== 'null')
  const one = single?.length === 1 ? single[0]! : schema
  if (one.$ref !== undefined) return undefined
  if (one.type === 'array') {
    const items = one.items as Json | undefined
    return items?.$ref === undefined && items?.properties !== undefined && Object.keys(items.properties).length > 0 ? { object: items, list: true } : undefined
  }
  return one.properties !== undefined && Object.keys(one.properties).length > 0 ? { object: one, list: false } : undefined
}

/** Rows of an object's fields, and of the fields of the inline objects they hold (`urls.draft`, `files[].path`). */
function fieldRows(doc: Json, object: Json, prefix: string, depth: number): string[] {
  const required = new Set<string>(object.required ?? [])
  return Object.entries(object.properties as Json).flatMap(([name, property]) => {
    const row = `| \`${prefix}${name}\` | ${cell(typeOf(doc, property))} | ${required.has(name) ? 'yes' : ''} | ${cell((property as Json).description ?? resolve(doc, property as Json)?.description ?? '')} |`
    const inner = depth < 3 ? inlineObject(property as Json) : undefined
    return inner === undefined ? [row] : [row, ...fieldRows(doc, inner.object, `${prefix}${name}${inner.list ? '[]' : ''}.`, depth + 1)]
  })
}

/** The fields of an object schema as a table: name, type, required, what it is. */
function fieldsTable(doc: Json, schema: Json | undefined): string {
  const object = resolve(doc, schema)
  const properties = object?.properties as Json | undefined
  if (properties === undefined || Object.keys(properties).length === 0) return ''
  return ['| field | type | required | what it is |', '|---|---|---|---|', ...fieldRows(doc, object!, '', 0)].join('\n')
}

function operationSection(doc: Json, method: string, path: string, entry: Json): string {
  const lines: string[] = [`### ${entry.summary}`, '']
  const facts = [`\`${method.toUpperCase()} ${path}\``, `operationId \`${entry.operationId}\``, `capability \`${entry['x-capability']}\``, `class ${entry['x-rate-limit-class']}`]
  if (entry['x-mcp-tool'] !== undefined)
    facts.push(
      `MCP tool \`${entry['x-mcp-tool']}\`${entry['x-mcp-toolset'] === 'core' ? '' : ` (toolset \`${entry['x-mcp-toolset']}\`)`}`,
    )
  if (entry.deprecated === true) facts.push('**deprecated**')
  lines.push(facts.join(' · '), '', entry.description, '')
  const parameters = (entry.parameters ?? []) as Json[]
  if (parameters.length > 0) {
    lines.push('| parameter | in | type | required | what it is |', '|---|---|---|---|---|')
    for (const p of parameters) lines.push(`| \`${p.name}\` | ${p.in} | ${cell(typeOf(doc, p.schema))} | ${p.required ? 'yes' : ''} | ${cell(p.description ?? '')} |`)
    lines.push('')
  }
  const body = entry.requestBody?.content as Json | undefined
  if (body !== undefined) {
    const [type, media] = Object.entries(body)[0] as [string, Json]
    const table = type === 'application/json' ? fieldsTable(doc, media.schema) : ''
    lines.push(`Body (\`${type}\`)${table === '' ? `: ${cell(entry.requestBody.description ?? typeOf(doc, media.schema))}` : ':'}`, '')
    if (table !== '') lines.push(table, '')
  }
  const responses = Object.entries(entry.responses as Json)
  const success = responses.filter(([status]) => status.startsWith('2'))
  for (const [status, response] of success) {
    const schema = (response as Json).content?.['application/json']?.schema
    const table = fieldsTable(doc, schema)
    lines.push(`Answer ${status}${table === '' ? (schema === undefined ? '' : `: ${cell(typeOf(doc, schema))}`) : ':'}`, '')
    if (table !== '') lines.push(table, '')
  }
  const sample = entry['x-codeSamples']?.[0]?.source as string | undefined
  if (sample !== undefined) {
    lines.push('Example:', '', '```sh', sample, '```', '')
    for (const [status, response] of success) {
      const example = (response as Json).content?.['application/json']?.examples?.example
      if (example === undefined) continue
      const answer = answerText(example.value)
      lines.push(`It answers ${status}${answer.whole ? '' : ' (shortened; the whole answer is in /openapi.json)'}:`, '', '```json', answer.text, '```', '')
    }
  }
  const failures = responses.filter(([status]) => !status.startsWith('2')).map(([status, response]) => {
    const kind = String((response as Json).$ref ?? '').split('/').pop() ?? ''
    return kind === '' ? status : `[${status}](#error-${kind.replace(/_/g, '-')})`
  })
  if (failures.length > 0) lines.push(`Errors: ${failures.join(', ')}`, '')
  return lines.join('\n')
}

/** The whole reference, as Markdown. */
export function referenceMarkdown(doc: Json): string {
  const out: string[] = []
  const apiOrigin = doc.servers?.[0]?.url ?? ''
  out.push(
    '# Plinth API reference',
    '',
    `Every operation of the Site Publishing API as this server (version ${doc.info.version} of the description) answers it. The base URL is \`${apiOrigin}/v1\`; the machine-readable description is [\`/openapi.json\`](${apiOrigin}/openapi.json), and every operation with an MCP tool is also a tool of the remote MCP server at \`POST ${apiOrigin}/v1/mcp\`. The guide is at [/docs](/docs).`,
    '',
    '## Authentication',
    '',
  )
  for (const [name, scheme] of Object.entries(doc.components.securitySchemes as Json)) out.push(`- **${name}**: ${scheme.description}`)
  out.push(
    '',
    'Each operation below names the capability (`x-capability`) the caller’s role must hold; `none` marks the operations that take no credentials, or an anonymous token. A website outside the caller’s scope is a 404, never a 403: ids never confirm existence across tenants.',
    '',
    '## Errors',
    '',
    'Every failure is `{kind, message, details?}`. The message says what happened and what to do next; `details.field` names a bad field, `details.reason` a case (below).',
    '',
    '| kind | status | when |',
    '|---|---|---|',
  )
  const kinds = Object.entries(ERROR_KINDS) as [ErrorKind, { status: number; when: string; why?: string }][]
  for (const [kind, entry] of kinds) out.push(`| <span id="error-${kind.replace(/_/g, '-')}"></span>\`${kind}\` | ${entry.status} | ${cell(entry.when)} |`)
  out.push('', `The spec names ten kinds (${SPEC_KINDS.map((k) => `\`${k}\``).join(', ')}); Plinth answers ${kinds.length - SPEC_KINDS.length} more, each for a reason:`, '')
  for (const [kind, entry] of kinds) if (entry.why !== undefined) out.push(`- \`${kind}\` (${entry.status}): ${entry.why}`)
  out.push('', '### `details.reason`', '', '| reason | meaning |', '|---|---|')
  for (const [reason, meaning] of Object.entries(ERROR_REASON_DESCRIPTIONS)) out.push(`| \`${reason}\` | ${cell(meaning)} |`)
  out.push(
    '',
    '## Rate limits',
    '',
    `Token buckets per credential: class standard, a burst of ${RATE_LIMITS.standard.burst} then about ${RATE_LIMITS.standard.perMinute} a minute; class expensive (deploys, publishes, rollbacks, builds, checks, activate), ${RATE_LIMITS.expensive.burst} then about ${RATE_LIMITS.expensive.perMinute} a minute. A caller without a credential draws from its address’s standard bucket. Every answer carries \`X-RateLimit-Limit\` and \`X-RateLimit-Remaining\`; a 429 carries \`Retry-After\`.`,
    '',
    `The anonymous endpoints count as the spec’s anonymous limits do: ${Object.values(ANON_RATE_LIMITS)
      .map((b) => `${b.spec} per ${b.per}`)
      .join('; ')}.`,
    '',
    '## Lists',
    '',
    `Every list answers \`{items, nextCursor}\` and takes \`limit\` (1-${LIST_LIMIT_MAX}, default ${LIST_LIMIT_DEFAULT}) and \`cursor\`: pass \`nextCursor\` back unchanged until it is null. Cursors are opaque.`,
    '',
  )
  const byTag = new Map<string, string[]>()
  for (const [path, item] of Object.entries(doc.paths as Json)) {
    for (const [method, entry] of Object.entries(item as Json)) {
      const tag = (entry as Json).tags?.[0] ?? 'Other'
      if (!byTag.has(tag)) byTag.set(tag, [])
      byTag.get(tag)!.push(operationSection(doc, method, path, entry as Json))
    }
  }
  const tags = (doc.tags as { name: string; description: string }[]).filter((t) => byTag.has(t.name))
  out.push(
    '## Operations',
    '',
    'Each operation has an example: a curl command and what it answered, recorded from real calls against a fresh server (the test that records them fails when an answer changes).',
    '',
    ...tags.map((t) => `- [${t.name}](#${anchor(t.name)}): ${t.description}`),
    '- [Schemas](#schemas): the shapes the operations name',
    '',
  )
  for (const tag of tags) out.push(`## ${tag.name}`, '', tag.description, '', ...byTag.get(tag.name)!)
  out.push('## Schemas', '', 'The shapes the operations above name by their name.', '')
  for (const [name, schema] of Object.entries(doc.components.schemas as Json)) {
    const table = fieldsTable(doc, schema as Json)
    out.push(`### ${schemaHeading(name)}`, '')
    if ((schema as Json).description !== undefined) out.push(cell((schema as Json).description), '')
    out.push(table === '' ? typeOf(doc, schema as Json) : table, '')
  }
  return out.join('\n')
}
