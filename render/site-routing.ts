// A framework site's website_config redirects and headers, checked into the routing its build serves.
import type { SiteRouting as Routing } from '../core/schemas/records.js'
import { fromProblem, HEADER_NAME, OWNED_HEADERS } from '../core/site-rules.js'
import type { Diagnostic } from './bundle.js'

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308])
/** A form's name, as it appears in /_platform/forms/<name>. */
export const FORM_NAME = /^[A-Za-z0-9_-]{1,64}$/
/**
 * Headers website_config may not set: those no site may set (`_headers` refuses the same, for the same
 * reasons), and the caching and indexing of a framework site's pages, which the platform decides.
 */
const FRAMEWORK_OWNED_HEADERS = new Map<string, string>([
  ...OWNED_HEADERS,
  ['cache-control', "the platform caches a framework site's pages and purges them on publish"],
  ['x-robots-tag', 'the platform keeps drafts out of search engines'],
])
/**
 * The ones a build always refused. The rest of the list came later: a site that set one of them still
 * builds, told the header is left out (its builds would otherwise stop at the next deploy or CMS edit).
 */
const REFUSED_SINCE_FIRST = new Set([
  'content-type',
  'content-length',
  'content-encoding',
  'etag',
  'vary',
  'cache-control',
  'accept-ranges',
  'location',
  'x-robots-tag',
])

/** website_config's redirects and headers, checked: problems are `config` diagnostics. */
export function routingOf(config: unknown): { routing: Routing; diagnostics: Diagnostic[] } {
  const diagnostics: Diagnostic[] = []
  const problem = (message: string, severity: 'error' | 'warning' = 'error') =>
    diagnostics.push({ step: 'config', severity, file: 'website_config', message })
  const routing: Routing = { redirects: [], headers: {} }
  const c = (config ?? {}) as { redirects?: unknown; headers?: unknown; forms?: unknown; analytics?: unknown }
  if (c.redirects !== undefined) {
    if (!Array.isArray(c.redirects)) problem('redirects must be an array of { from, to, status? }')
    else
      c.redirects.forEach((r: { from?: unknown; to?: unknown; status?: unknown }, i) => {
        const status = r?.status ?? 301
        if (typeof r?.from !== 'string' || !r.from.startsWith('/') || /[\s\r\n]/.test(r.from))
          problem(`redirects[${i}].from must be a path starting with /`)
        // The pattern rules of `_redirects` (one matcher serves both): `*` only at the end, no placeholder twice.
        else if (fromProblem(r.from) !== null) problem(`redirects[${i}]: ${fromProblem(r.from)}`)
        else if (typeof r.to !== 'string' || r.to === '' || /[\r\n]/.test(r.to)) problem(`redirects[${i}].to must be a path or URL`)
        else if (typeof status !== 'number' || !REDIRECT_STATUSES.has(status))
          problem(`redirects[${i}].status must be one of 301, 302, 303, 307, 308`)
        else routing.redirects.push({ from: r.from, to: r.to, status })
      })
  }
  if (c.headers !== undefined) {
    if (c.headers === null || typeof c.headers !== 'object' || Array.isArray(c.headers))
      problem('headers must be an object of header name to value')
    else
      for (const [name, value] of Object.entries(c.headers)) {
        if (!HEADER_NAME.test(name)) problem(`headers: "${name}" is not a valid header name`)
        else if (FRAMEWORK_OWNED_HEADERS.has(name.toLowerCase())) {
          const why = `headers: ${name} is set by the platform: ${FRAMEWORK_OWNED_HEADERS.get(name.toLowerCase())}`
          if (REFUSED_SINCE_FIRST.has(name.toLowerCase())) problem(why)
          else problem(`${why} (left out)`, 'warning')
        } else if (typeof value !== 'string' || /[\r\n]/.test(value)) problem(`headers.${name} must be a single-line string`)
        else routing.headers[name.toLowerCase()] = value
      }
  }
  if (c.forms !== undefined) {
    routing.forms = {}
    if (c.forms === null || typeof c.forms !== 'object' || Array.isArray(c.forms))
      problem('forms must be an object of form name to { redirect?, webhook?, fields? }')
    else
      for (const [name, raw] of Object.entries(c.forms as Record<string, unknown>)) {
        const form = (raw ?? {}) as { redirect?: unknown; webhook?: unknown; fields?: unknown }
        const at = `forms.${name}`
        if (!FORM_NAME.test(name)) problem(`forms: "${name}" is not a form name (1-64 letters, digits, - and _)`)
        else if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
          problem(`${at} must be an object { redirect?, webhook?, fields? }`)
        else if (
          form.redirect !== undefined &&
          (typeof form.redirect !== 'string' ||
            !form.redirect.startsWith('/') ||
            form.redirect.startsWith('//') ||
            /[\s\\]/.test(form.redirect))
        )
          problem(`${at}.redirect must be a path of this site starting with /`)
        else if (
          form.webhook !== undefined &&
          (typeof form.webhook !== 'string' || !/^https?:\/\/[^\s]+$/.test(form.webhook) || !URL.canParse(form.webhook))
        )
          problem(`${at}.webhook must be an http(s) URL`)
        else if (
          form.fields !== undefined &&
          (!Array.isArray(form.fields) ||
            form.fields.length > 100 ||
            form.fields.some((f) => typeof f !== 'string' || f === '' || f.length > 100))
        )
          problem(`${at}.fields must be a list of field names (at most 100)`)
        else
          routing.forms[name] = {
            ...(form.redirect === undefined ? {} : { redirect: form.redirect as string }),
            ...(form.webhook === undefined ? {} : { webhook: form.webhook as string }),
            ...(form.fields === undefined ? {} : { fields: form.fields as string[] }),
          }
      }
  }
  if (c.analytics !== undefined) {
    const enabled = (c.analytics as { enabled?: unknown } | null)?.enabled
    if (c.analytics === null || typeof c.analytics !== 'object' || typeof enabled !== 'boolean')
      problem('analytics must be { enabled: true } or { enabled: false }')
    else routing.analytics = enabled
  }
  return { routing, diagnostics }
}
