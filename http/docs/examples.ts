import { existsSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import type { PublicUrls } from '../../core/hostnames.js'

/*
 * The example of each operation: a real call and its answer, recorded by test/http/examples.test.ts
 * against a fresh server into docs/api-examples.json (which it checks on every run). OpenAPI shows
 * them as `examples` and an `x-codeSamples` curl command; /docs/api under each operation.
 */

/** The file, from the checkout's root. */
export const EXAMPLES_FILE = 'docs/api-examples.json'

/** The origin the examples (and the written docs) name: served, they name this server instead. */
export const EXAMPLE_ORIGIN = 'http://localhost:8080'

/** A recorded request: the path with its ids, and how it was sent. */
export interface ExampleRequest {
  method: string
  path: string
  query?: Record<string, string>
  /** What Authorization: Bearer carries: `$KEY` (an API key), another variable, a token an earlier answer gave; null: none. */
  auth: string | null
  /** Headers an earlier answer said to send (an upload's). */
  headers?: Record<string, string>
  json?: unknown
  /** multipart/form-data: fields, and files by name. */
  form?: ({ name: string; value: string } | { name: string; file: string })[]
  /** A body of bytes: the file sent. */
  bytes?: string
}

export interface ApiExample {
  request: ExampleRequest
  status: number
  answer: unknown
}

export interface ApiExamples {
  about: string
  origin: string
  examples: Record<string, ApiExample>
}

const FILE = fileURLToPath(new URL(`../../../${EXAMPLES_FILE}`, import.meta.url))

/** Text written for a server at http://localhost:8080 (sites at *.localhost:8080), naming this one: its API origin and its sites' hosts. */
export function localize(text: string, urls: PublicUrls): string {
  return text.replace(/http:\/\/([a-z0-9-]+)\.localhost:8080/g, (_, label: string) => urls.published(label)).split(EXAMPLE_ORIGIN).join(urls.apiOrigin)
}

/** Every operation's example as this server would answer it; none when the checkout lacks the file. */
export function apiExamples(urls: PublicUrls): Record<string, ApiExample> {
  if (!existsSync(FILE)) return {}
  return (JSON.parse(localize(readFileSync(FILE, 'utf8'), urls)) as ApiExamples).examples
}

/** A word for the shell: single-quoted unless plain. */
function shellWord(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`
}

/** The example as a curl command against `apiOrigin`. */
export function curlCommand(request: ExampleRequest, apiOrigin: string): string {
  const query = request.query === undefined ? '' : `?${new URLSearchParams(request.query).toString()}`
  const lines = [`curl -s${request.method === 'GET' ? '' : ` -X ${request.method}`} ${shellWord(`${apiOrigin}${request.path}${query}`)}`]
  if (request.auth !== null) lines.push(`-H "Authorization: Bearer ${request.auth}"`)
  for (const [name, value] of Object.entries(request.headers ?? {})) lines.push(`-H ${shellWord(`${name}: ${value}`)}`)
  if (request.json !== undefined) {
    const json = JSON.stringify(request.json)
    lines.push('-H "Content-Type: application/json"', `-d ${shellWord(json.length > 100 ? JSON.stringify(request.json, null, 2) : json)}`)
  }
  for (const part of request.form ?? [])
    lines.push(
      'file' in part
        ? `-F ${shellWord(`${part.name}=@${part.file}${part.file.includes('/') ? `;filename=${part.file}` : ''}`)}`
        : `-F ${shellWord(`${part.name}=${part.value}`)}`,
    )
  if (request.bytes !== undefined) lines.push(`--data-binary ${shellWord(`@${request.bytes}`)}`)
  return lines.join(' \\\n  ')
}

/** Lines of an answer /docs/api shows; the rest is in /openapi.json. */
const ANSWER_LINES = 30

/** An answer shortened for reading: lists cut to their first entries, long strings to their start. */
function shortened(value: unknown): unknown {
  if (Array.isArray(value)) {
    const kept = value.slice(0, 2).map(shortened)
    return value.length > 2 ? [...kept, `… ${value.length - 2} more`] : kept
  }
  if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, shortened(inner)]))
  if (typeof value === 'string' && value.length > 200) return `${value.slice(0, 200)}… (${value.length} characters)`
  return value
}

/** An answer as /docs/api shows it: pretty JSON, shortened, and whether anything was left out. */
export function answerText(value: unknown): { text: string; whole: boolean } {
  const short = shortened(value)
  const lines = JSON.stringify(short, null, 2).split('\n')
  const whole = lines.length <= ANSWER_LINES && JSON.stringify(short) === JSON.stringify(value)
  if (lines.length <= ANSWER_LINES) return { text: lines.join('\n'), whole }
  return { text: [...lines.slice(0, ANSWER_LINES), `  … ${lines.length - ANSWER_LINES} more lines`].join('\n'), whole }
}
