import { getDomain } from 'tldts'
/**
 * The one home of site hostnames: a website with label `acme` serves its published version at
 * `acme.{siteDomain}` and its draft head at `draft--acme.{siteDomain}`. Custom domains join here.
 */

/** The prefix that turns a site's label into its draft host's label. */
export const DRAFT_PREFIX = 'draft--'

/** Whether a label is (or would shadow) a draft host's label. */
export function isDraftLabel(label: string): boolean {
  return label.startsWith(DRAFT_PREFIX)
}

/** Whether a label would shadow a draft host's or a version's own address (`v12--acme`): no website may take it. */
export function isPlatformLabel(label: string): boolean {
  return isDraftLabel(label) || VERSION_LABEL.test(label)
}

/** A version's own address: `v{N}--{label}.{siteDomain}` serves version N of the website `label`. */
const VERSION_LABEL = /^v([1-9][0-9]{0,8})--(.+)$/

/** The label and version a version's own hostname names (lowercase, no port); null for any other host. */
export function versionOfHost(host: string, siteDomain: string): { label: string; version: number } | null {
  const found = VERSION_LABEL.exec(nameUnder(host, siteDomain) ?? '')
  return found === null ? null : { label: found[2]!, version: Number(found[1]) }
}

/** The one label before `.{siteDomain}` in a hostname (lowercase, no port); null for any other host. */
function nameUnder(host: string, siteDomain: string): string | null {
  if (host.length <= siteDomain.length + 1 || !host.endsWith(siteDomain) || host[host.length - siteDomain.length - 1] !== '.') return null
  const name = host.slice(0, -siteDomain.length - 1)
  return name.includes('.') ? null : name
}

/** The two hostnames of a label (lowercase, no port). */
export function siteHostnames(label: string, siteDomain: string): { published: string; draft: string } {
  return { published: `${label}.${siteDomain}`, draft: `${DRAFT_PREFIX}${label}.${siteDomain}` }
}

/**
 * The site label a hostname names, and whether it is the draft host; null when the host is not
 * `{label}.{siteDomain}` or `draft--{label}.{siteDomain}` (lowercase, no port).
 */
export function labelOfHost(host: string, siteDomain: string): { label: string; draft: boolean } | null {
  const name = nameUnder(host, siteDomain)
  if (name === null) return null
  return isDraftLabel(name) ? { label: name.slice(DRAFT_PREFIX.length), draft: true } : { label: name, draft: false }
}

/**
 * Labels no site may take: every label of the platform's own hosts (the API's, the dashboard's) that
 * sits under the site domain. `api.example.com` with sites under `example.com` reserves `api` (and so
 * `draft--api`); `api.plinth.test` with sites under `test` reserves `plinth` too, whose site could
 * otherwise set cookies for `plinth.test`, a parent of the API's host.
 */
export function reservedLabels(origins: readonly (string | null)[], siteDomain: string): Set<string> {
  const reserved = new Set<string>()
  for (const origin of origins) {
    const host = origin === null ? null : hostUnder(new URL(origin).hostname, siteDomain)
    if (host === null) continue
    for (const label of host.split('.')) reserved.add(isDraftLabel(label) ? label.slice(DRAFT_PREFIX.length) : label)
  }
  return reserved
}

/** The part of `host` before `.{siteDomain}` (`api.plinth` for `api.plinth.test` under `test`); null when it is not under it. */
export function hostUnder(host: string, siteDomain: string): string | null {
  const name = host.toLowerCase().replace(/\.$/, '')
  const suffix = `.${siteDomain}`
  return name.length > suffix.length && name.endsWith(suffix) ? name.slice(0, -suffix.length) : null
}

/**
 * Whether hosted sites could set cookies the API or dashboard host receives: a site's host
 * (`{label}.{siteDomain}`) and `host` have the same registrable domain (`api.example.com` and
 * `*.example.com`, or `*.sites.example.com`), so a site's script may set `Domain=example.com`. The
 * registrable domain is the Public Suffix List's (tldts), private registries included as browsers
 * count them (`a.github.io` and `b.github.io` share nothing); an unknown top-level name such as `test`
 * or `localhost` is one label, as Chromium treats it (`x.localhost` cannot set `Domain=localhost`, but
 * `x.plinth.localhost` can set `Domain=plinth.localhost`). IP addresses share nothing.
 */
export function sharesCookieScope(host: string, siteDomain: string): boolean {
  const registrable = (h: string) => getDomain(h.toLowerCase().replace(/\.$/, ''), { allowPrivateDomains: true })
  const api = registrable(host)
  return api !== null && api === registrable(`site.${siteDomain}`)
}

/** The session cookie of a dashboard at `appUrl`: `__Host-plinth_session` over https, `plinth_session` over http. */
export function sessionCookieName(appUrl: string): string {
  return new URL(appUrl).protocol === 'https:' ? '__Host-plinth_session' : 'plinth_session'
}

/**
 * Absolute URLs the API hands out: the API origin and the site hosts. Sites use the API origin's
 * scheme and port, so `http://localhost:8080` gives sites at `http://{label}.localhost:8080`.
 */
export class PublicUrls {
  readonly apiOrigin: string
  readonly siteDomain: string
  readonly #scheme: string
  readonly #port: string

  /** The dashboard (`{app_url}`), without a trailing slash. */
  readonly appUrl: string
  /** The dashboard's path on this server (`/app` by default). */
  readonly appPath: string
  /** The dashboard's origin: the only Origin a session's changing request may come from. */
  readonly appOrigin: string
  /** True when the dashboard is served over https (session cookies are then Secure). */
  readonly secureCookies: boolean
  /**
   * The session cookie's name: `__Host-plinth_session` over https, which a browser accepts only from
   * this very host, Secure, with `Path=/` and no `Domain`, so no site on a sibling or parent domain can
   * plant one; `plinth_session` over plain http (development), where the `__Host-` prefix is refused.
   */
  readonly sessionCookie: string

  constructor(apiOrigin: string, siteDomain: string, appUrl: string | null = null) {
    const url = new URL(apiOrigin)
    this.apiOrigin = url.origin
    this.appUrl = appUrl ?? `${url.origin}/app`
    const app = new URL(this.appUrl)
    this.appPath = app.pathname
    this.appOrigin = app.origin
    this.secureCookies = app.protocol === 'https:'
    this.sessionCookie = sessionCookieName(this.appUrl)
    this.siteDomain = siteDomain
    this.#scheme = url.protocol
    this.#port = url.port === '' ? '' : `:${url.port}`
  }

  /** `{scheme}//{label}.{siteDomain}{:port}` */
  published(label: string): string {
    return `${this.#scheme}//${siteHostnames(label, this.siteDomain).published}${this.#port}`
  }

  /** `{scheme}//{host}{:port}`: another host under the site domain (a vanity address), as the sites' own are given. */
  site(host: string): string {
    return `${this.#scheme}//${host}${this.#port}`
  }

  /** `{scheme}//v{N}--{label}.{siteDomain}{:port}`: version N's own address. */
  version(label: string, version: number): string {
    return `${this.#scheme}//v${version}--${label}.${this.siteDomain}${this.#port}`
  }

  /** `{scheme}//draft--{label}.{siteDomain}{:port}` */
  draft(label: string): string {
    return `${this.#scheme}//${siteHostnames(label, this.siteDomain).draft}${this.#port}`
  }

  api(path: string): string {
    return this.apiOrigin + path
  }

  /** `{app_url}{path}`, e.g. `app('/setup')`. */
  app(path: string): string {
    return this.appUrl + path
  }
}
