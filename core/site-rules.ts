// A site's serving rules: `_redirects` and `_headers` in the syntax of Netlify and Cloudflare Pages, read
// from a static site's files (and website_config's redirects of a framework site), checked at deploy
// with each bad line named, and compiled once per snapshot into a matcher the hosting plane asks.

/** The files at the root of a static site's version that hold its rules (never served themselves). */
export const REDIRECTS_FILE = '_redirects'
export const HEADERS_FILE = '_headers'

/** Whether a static site's file is one of its rule files (never served, never a route). */
export function isRuleFile(path: string): boolean {
  return path === REDIRECTS_FILE || path === HEADERS_FILE
}

/** Cloudflare Pages' limits: rules past them are reported and ignored. */
export const STATIC_REDIRECTS_MAX = 2000
export const DYNAMIC_REDIRECTS_MAX = 100
export const HEADER_RULES_MAX = 100
export const RULE_LINE_MAX = 2000

/** 200: a rewrite (another path's file under this URL); 404: a custom not-found; the rest redirect. */
export const RULE_STATUSES = [200, 301, 302, 303, 307, 308, 404] as const
export type RuleStatus = (typeof RULE_STATUSES)[number]

export interface RedirectRule {
  /** The line of `_redirects` it came from (1-based; 0: website_config). */
  line: number
  from: string
  to: string
  status: RuleStatus
  /** `!` after the status: applies even when a file exists at the path (website_config's always do). */
  force: boolean
}

export interface HeaderRule {
  line: number
  /** A path pattern: exact, with `*` (any characters) and `:name` (one segment). */
  path: string
  /** Lower-case name and value pairs, in file order. */
  headers: [string, string][]
}

/** A line the parser could not take: reported at deploy, the rest of the file still applies. */
export interface RuleProblem {
  file: string
  line: number
  message: string
}

/**
 * Headers a site cannot set: the platform computes them for each answer (length, encoding, validators,
 * ranges, the connection), chooses the content type from the file (a deploy sets it per file), or
 * says which version answered. On the draft host (and on a site behind a password) Cache-Control and
 * X-Robots-Tag stay the platform's, and Set-Cookie is dropped behind a password (see `ownedOn`).
 */
export const OWNED_HEADERS = new Map<string, string>([
  ['content-length', 'the platform sets it from the bytes it sends'],
  ['content-encoding', 'the platform chooses gzip or brotli for each request'],
  ['transfer-encoding', 'the platform frames each answer'],
  ['content-range', 'the platform answers ranges itself'],
  ['accept-ranges', 'the platform answers ranges itself'],
  ['etag', 'the platform derives it from the bytes and headers'],
  ['last-modified', 'the platform validates with ETag'],
  ['vary', 'the platform sets it for its compressed variants'],
  ['content-type', 'the platform sets it from the file extension; a deploy can set contentType per file'],
  ['location', 'write a redirect in _redirects'],
  ['date', 'the server sets it'],
  ['connection', 'the server manages connections'],
  ['keep-alive', 'the server manages connections'],
  ['x-plinth-version', 'it says which version answered'],
  ['x-content-type-options', 'the platform always sends nosniff'],
])

/** An HTTP header name (RFC 9110 token). */
export const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/

/**
 * Calls `each` with every line of a rules file that is not blank or a `#` comment, and its number;
 * a line over RULE_LINE_MAX is a problem instead.
 */
function eachRuleLine(
  text: string,
  file: string,
  problems: RuleProblem[],
  each: (raw: string, line: number, problem: (message: string) => void) => void,
): void {
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = i + 1
    const problem = (message: string) => void problems.push({ file, line, message })
    const trimmed = raw.trim()
    if (trimmed === '' || trimmed.startsWith('#')) return
    if (raw.length > RULE_LINE_MAX) return problem(`the line is longer than ${RULE_LINE_MAX} characters`)
    each(raw, line, problem)
  })
}

/** Parses `_redirects`: one rule per line, `from to [status][!]`, `#` comments; problems by line. */
export function parseRedirects(text: string): { rules: RedirectRule[]; problems: RuleProblem[] } {
  const rules: RedirectRule[] = []
  const problems: RuleProblem[] = []
  let staticCount = 0
  let dynamicCount = 0
  eachRuleLine(text, REDIRECTS_FILE, problems, (raw, line, problem) => {
    const tokens = raw.trim().split(/\s+/)
    const hash = tokens.findIndex((token) => token.startsWith('#'))
    if (hash !== -1) tokens.length = hash // a comment after the rule
    if (tokens.length < 2) return problem('a rule needs a from path and a to path or URL: "/from /to [status]"')
    const [from, to, statusToken] = tokens as [string, string, string | undefined]
    if (/^https?:\/\//i.test(from)) return problem('from is a path on this site: rules for whole domains are not supported here')
    // Not a rule at all (prose, a stray word): said as such, whatever follows.
    if (!from.startsWith('/')) return problem(`"${raw.trim()}" is not a rule: a rule starts with the path it matches, "/from /to [status]"`)
    if (tokens.length > 3 || /^[A-Za-z][\w-]*=/.test(to)) {
      // Netlify's conditions (Country=…) and query matching (key=:value) are name=value words.
      if (tokens.slice(1).some((token) => /^[A-Za-z][\w-]*=/.test(token)))
        return problem(
          `"${tokens.slice(1).join(' ')}": conditions (Country=, Language=, Role=, Cookie=) and query matching are not supported; the rule is ignored`,
        )
      return problem(`"${tokens.slice(3).join(' ')}" follows the status: a rule is "/from /to [status]"; the rule is ignored`)
    }
    const rule = checkRule(from, to, statusToken, problem)
    if (rule === null) return
    const dynamic = isDynamic(from)
    if (dynamic && ++dynamicCount > DYNAMIC_REDIRECTS_MAX)
      return problem(`past the limit of ${DYNAMIC_REDIRECTS_MAX} rules with * or :placeholders; the rule is ignored`)
    if (!dynamic && ++staticCount > STATIC_REDIRECTS_MAX)
      return problem(`past the limit of ${STATIC_REDIRECTS_MAX} rules without * or :placeholders; the rule is ignored`)
    rules.push({ line, ...rule })
  })
  return { rules, problems }
}

/**
 * What is wrong with a redirect's `from` pattern, or null: a path, `*` only at its end, no query or
 * fragment, no placeholder named twice (`_redirects` and website_config's redirects alike).
 */
export function fromProblem(from: string): string | null {
  if (!from.startsWith('/')) return `from "${from}" must be a path starting with /`
  const star = from.indexOf('*')
  if (star !== -1 && star !== from.length - 1) return `from "${from}": * may only end the path (as in /blog/*)`
  if (/[?#]/.test(from)) return `from "${from}": query strings and fragments are not matched`
  const defined = placeholders(from)
  if (new Set(defined).size !== defined.length || (defined.includes('splat') && star !== -1))
    return `from "${from}" names a placeholder twice`
  return null
}

function checkRule(
  from: string,
  to: string,
  statusToken: string | undefined,
  problem: (message: string) => void,
): Omit<RedirectRule, 'line'> | null {
  const wrong = fromProblem(from)
  if (wrong !== null) return (problem(wrong), null)
  const star = from.indexOf('*')
  const force = statusToken?.endsWith('!') ?? false
  const status = statusToken === undefined ? 301 : Number(force ? statusToken.slice(0, -1) : statusToken)
  if (!(RULE_STATUSES as readonly number[]).includes(status))
    return (problem(`status "${statusToken}" must be one of ${RULE_STATUSES.join(', ')} (with ! to apply even where a file exists)`), null)
  const external = /^https?:\/\//i.test(to)
  if (!external && !to.startsWith('/')) return (problem(`to "${to}" must be a path starting with / or an http(s) URL`), null)
  if (external && (status === 200 || status === 404))
    return (problem(`a ${status} rule serves a file of this site: to "${to}" is on another host (proxying is not supported)`), null)
  const names = new Set(placeholders(from))
  if (star !== -1) names.add('splat')
  // In a URL, placeholders are looked for after its host (https://host:8443 has a port, not one).
  const afterHost = external ? to.slice(Math.max(0, to.indexOf('/', to.indexOf('//') + 2))) : to
  for (const used of (external && afterHost === to ? '' : afterHost).matchAll(/:([A-Za-z_][A-Za-z0-9_]*)/g))
    if (!names.has(used[1]!)) return (problem(`to uses :${used[1]}, which from "${from}" does not define`), null)
  return { from, to, status: status as RuleStatus, force }
}

/** The `:name` segments of a pattern. */
function placeholders(pattern: string): string[] {
  return [...pattern.matchAll(/(?<=\/):([A-Za-z_][A-Za-z0-9_]*)(?=\/|$)/g)].map((m) => m[1]!)
}

function isDynamic(pattern: string): boolean {
  return pattern.includes('*') || placeholders(pattern).length > 0
}

/** Parses `_headers`: a path pattern line, then indented `Name: value` lines; problems by line. */
export function parseHeaders(text: string): { rules: HeaderRule[]; problems: RuleProblem[] } {
  const rules: HeaderRule[] = []
  const problems: RuleProblem[] = []
  let current: HeaderRule | null = null
  let ignored = false
  eachRuleLine(text, HEADERS_FILE, problems, (raw, line, problem) => {
    const trimmed = raw.trim()
    if (!/^\s/.test(raw)) {
      current = null
      ignored = true
      if (/^https?:\/\//i.test(trimmed))
        return problem('a pattern is a path on this site: patterns for whole domains are not supported here')
      if (!trimmed.startsWith('/')) return problem(`"${trimmed}" must be a path pattern starting with / (header lines are indented)`)
      if (/\s/.test(trimmed)) return problem(`"${trimmed}": a path pattern has no spaces`)
      if (rules.length >= HEADER_RULES_MAX) return problem(`past the limit of ${HEADER_RULES_MAX} path patterns; the rule is ignored`)
      ignored = false
      current = { line, path: trimmed, headers: [] }
      rules.push(current)
      return
    }
    if (current === null) {
      if (!ignored) problem('a header line must follow a path pattern line')
      return
    }
    if (trimmed.startsWith('!')) return problem('detaching a header (! Name) is not supported')
    const colon = trimmed.indexOf(':')
    const name = colon === -1 ? '' : trimmed.slice(0, colon).trim()
    const value = colon === -1 ? '' : trimmed.slice(colon + 1).trim()
    if (colon === -1 || !HEADER_NAME.test(name)) return problem(`"${trimmed}" is not a header line "Name: value"`)
    const lower = name.toLowerCase()
    const owned = OWNED_HEADERS.get(lower)
    if (owned !== undefined) return problem(`${name} cannot be set: ${owned}`)
    ;(current as HeaderRule).headers.push([lower, value])
  })
  return { rules: rules.filter((rule) => rule.headers.length > 0), problems }
}

/** What a request path matched: a redirect's Location, or the path of the file to serve and with which status. */
export type RuleHit =
  { kind: 'redirect'; status: 301 | 302 | 303 | 307 | 308; location: string } | { kind: 'file'; status: 200 | 404; path: string }

interface Compiled {
  index: number
  rule: RedirectRule
  /** Dynamic rules: the pattern with named groups; null for an exact path. */
  regex: RegExp | null
}

/** A pattern as an anchored regular expression: `:name` one segment, a final `*` anything (`splat`, `/x/*` also matches `/x`). */
function compilePattern(pattern: string, forHeaders: boolean): RegExp {
  let source = ''
  const segments = pattern.split(/(\*|(?<=\/):[A-Za-z_][A-Za-z0-9_]*(?=\/|$))/)
  for (const part of segments) {
    if (part === '*') source += forHeaders ? '.*' : '(?<splat>.*)'
    else if (part.startsWith(':') && part.length > 1 && !forHeaders) source += `(?<${part.slice(1)}>[^/]+)`
    else if (part.startsWith(':') && part.length > 1) source += '[^/]+'
    else source += part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
  }
  // `/blog/*` matches `/blog` too; a path without `*` matches with or without its trailing slash.
  if (source.endsWith('/(?<splat>.*)')) source = `${source.slice(0, -'/(?<splat>.*)'.length)}(?:/(?<splat>.*))?`
  else if (source.endsWith('/.*')) source = `${source.slice(0, -3)}(?:/.*)?`
  else if (!source.endsWith('/') && !source.endsWith('.*)') && !source.endsWith('.*')) source += '/?'
  // `s`: a decoded path may hold a line break (%0A), which `.` must match too.
  return new RegExp(`^${source}$`, 's')
}

/**
 * Patterns by their first path segment: a request tries only the patterns that begin with its own
 * first segment and those whose first segment is itself a wildcard (`/*`, `/:lang/...`), in order.
 */
class PatternIndex<T extends { index: number }> {
  readonly #bySegment = new Map<string, T[]>()
  readonly #anySegment: T[] = []

  add(pattern: string, item: T): void {
    const second = pattern.indexOf('/', 1)
    const first = second === -1 ? pattern.slice(1) : pattern.slice(1, second)
    // `/blog/*` begins with "blog" (and matches `/blog`); `/*`, `/:x` and `/a*` may begin with anything.
    if (first === '' || first.includes('*') || first.startsWith(':') || (second === -1 && pattern.endsWith('*'))) {
      this.#anySegment.push(item)
      return
    }
    const list = this.#bySegment.get(first)
    if (list === undefined) this.#bySegment.set(first, [item])
    else list.push(item)
  }

  /** The patterns that may match `path`, in the order they were added. */
  *candidates(path: string): Generator<T> {
    const second = path.indexOf('/', 1)
    const mine = this.#bySegment.get(second === -1 ? path.slice(1) : path.slice(1, second)) ?? []
    const any = this.#anySegment
    let i = 0
    let j = 0
    while (i < mine.length || j < any.length) {
      if (j >= any.length || (i < mine.length && mine[i]!.index < any[j]!.index)) yield mine[i++]!
      else yield any[j++]!
    }
  }
}

/** A path without its trailing slash (but `/`): the key of an exact rule. */
const exactKey = (path: string) => (path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path)

/**
 * The redirect rules of a snapshot, compiled: rules without `*` or `:name` in a map by path (one
 * lookup), the others (at most 100) tried in order as regular expressions, only those before the
 * first exact match. First match wins, in file order; a rule without `!` applies only where no file is.
 */
export class RedirectMatcher {
  readonly #exact = new Map<string, Compiled[]>()
  readonly #dynamic = new PatternIndex<Compiled>()

  constructor(rules: readonly RedirectRule[]) {
    rules.forEach((rule, index) => {
      if (isDynamic(rule.from)) this.#dynamic.add(rule.from, { index, rule, regex: compilePattern(rule.from, false) })
      else {
        const key = exactKey(rule.from)
        const list = this.#exact.get(key)
        if (list === undefined) this.#exact.set(key, [{ index, rule, regex: null }])
        else list.push({ index, rule, regex: null })
      }
    })
  }

  /** The rule a decoded request path matches (`hasFile`: a file exists there), with its query for a redirect. */
  match(path: string, hasFile: boolean, query: string): RuleHit | null {
    const exact = this.#exact.get(exactKey(path))?.find((c) => c.rule.force || !hasFile)
    const before = exact?.index ?? Infinity
    for (const compiled of this.#dynamic.candidates(path)) {
      if (compiled.index > before) break
      if (hasFile && !compiled.rule.force) continue
      const found = compiled.regex!.exec(path)
      if (found !== null) return hit(compiled.rule, found.groups ?? {}, query)
    }
    return exact === undefined ? null : hit(exact.rule, {}, query)
  }
}

function hit(rule: RedirectRule, params: Record<string, string | undefined>, query: string): RuleHit {
  // Values come from the decoded path: encoded again, so no %0D%0A becomes a header line.
  const to = rule.to.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, (whole, name: string) =>
    name in params ? encodeURI(params[name] ?? '') : whole,
  )
  if (rule.status === 200 || rule.status === 404) {
    const path = to.split(/[?#]/)[0]!
    return { kind: 'file', status: rule.status, path }
  }
  // The request's query goes along unless the rule's destination has its own.
  const location = query !== '' && !to.includes('?') ? `${to}?${query}` : to
  return { kind: 'redirect', status: rule.status, location }
}

/** The header rules of a snapshot, compiled: every rule whose pattern matches the request path applies, in file order. */
export class HeaderMatcher {
  readonly #rules = new PatternIndex<{ index: number; regex: RegExp; headers: [string, string][] }>()
  /** The merged headers of each set of matching rules seen so far, by key (a request allocates none after the first). */
  readonly #merged = new Map<string, string[]>()

  constructor(rules: readonly HeaderRule[]) {
    rules.forEach((rule, index) => this.#rules.add(rule.path, { index, regex: compilePattern(rule.path, true), headers: rule.headers }))
  }

  /**
   * The headers for a request path as a flat `[name, value, ...]` list (a name set by several rules
   * is sent once, its values joined by ", "), and a key naming the rules that matched (equal keys:
   * equal headers), '' when none did.
   */
  match(path: string): { key: string; headers: string[] } {
    let key = ''
    for (const rule of this.#rules.candidates(path)) if (rule.regex.test(path)) key += `${rule.index},`
    let headers = this.#merged.get(key)
    if (headers === undefined) {
      const merged = new Map<string, string>()
      for (const rule of this.#rules.candidates(path)) {
        if (!key.split(',').includes(String(rule.index))) continue
        for (const [name, value] of rule.headers) merged.set(name, merged.has(name) ? `${merged.get(name)}, ${value}` : value)
      }
      headers = [...merged].flat()
      // Bounded: a site's own rules decide how many sets there are; past this, they are merged per request.
      if (this.#merged.size < 1000) this.#merged.set(key, headers)
    }
    return { key, headers }
  }
}
