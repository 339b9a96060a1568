import { availableParallelism } from 'node:os'
import { createPrivateKey } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { isAbsolute, relative, resolve } from 'node:path'
import { isIP } from 'node:net'
import {
  CACHE_BYTES_DEFAULT,
  FREE_STORAGE_BYTES,
  IMAGE_VARIANTS_PER_SITE,
  PLAN_WEBSITES_DEFAULT,
  TRACKER_RETENTION_DAYS_DEFAULT,
  WARM_SITES_DEFAULT,
  NAMESPACE_RENAMES_DEFAULT,
  SERVE_THREADS_MAX,
} from './limits.js'
import { hostUnder, sharesCookieScope } from './hostnames.js'
import { parseCluster, parseSecretFile, type ClusterConfig } from './config-cluster.js'
import { parseMail, type MailConfig } from './config-mail.js'
import { ConfigError, parseAddressList, parseBytes, parseCount, parseUrlList, read, type Env } from './config-values.js'

export { ConfigError } from './config-values.js'
export type { ClusterConfig } from './config-cluster.js'
export { CONFIG_VARIABLES, type ConfigVariable } from './config-variables.js'

/**
 * The only module that reads the environment. `loadConfig` validates every variable once and
 * returns a deep-frozen object that the rest of Plinth receives explicitly.
 */

export interface Config {
  readonly port: number
  readonly host: string
  /** Absolute path of the directory that holds everything Plinth stores. */
  readonly dataDir: string
  /** Sites live at `{label}.{siteDomain}` and `draft--{label}.{siteDomain}`. */
  readonly siteDomain: string
  /** Origin used in every URL the API returns; null means `http://localhost:{actual port}`. */
  readonly apiOrigin: string | null
  /** Secret of the first admin key, used only on the first start of an empty data directory. */
  readonly adminKey: string | null
  /**
   * The file holding the installation's secret (PLINTH_SECRET_FILE, or `installation.key` in the data
   * directory, made on the first start). A cluster's nodes must each be given the same one.
   */
  readonly secretFile: string
  /**
   * The backup root the continuous archive appends every commit to (PLINTH_BACKUP_ARCHIVE; null: none):
   * with a base backup there, `plinth restore ROOT --at TIME` restores to any point since.
   */
  readonly backupArchive: string | null
  /** Budget of served content kept in memory, in bytes (the rest is read from LMDB on request). */
  readonly cacheBytes: number
  /** Cache nodes in front (PLINTH_PURGE_URLS), purged when a website's live content changes. */
  readonly purgeUrls: readonly string[]
  /** Framework sites whose warm build state (typecheck programs, esbuild contexts) is kept. */
  readonly warmSites: number
  /** Threads serving sites on the port, the main thread included (1: the main thread alone). */
  readonly serveThreads: number
  /** The dashboard's URL (`{app_url}`); null means `{api_origin}/app`. Plinth serves it under its path. */
  readonly appUrl: string | null
  readonly billing: BillingConfig
  /** Renames of a namespace, and of each site's vanity label, with billing off (with billing on, the plan's). */
  readonly namespaceRenames: number
  /**
   * Cluster mode (PLINTH_CLUSTER_NATS): the NATS servers, this node's name, the URL other nodes reach
   * its HTTP port at, and the lease's lifetime; null: the embedded single server (the default).
   */
  readonly cluster: ClusterConfig | null
  /** Anonymous publishing: `open`, `invite_only` (an operator's invite code is needed) or `off` (404). */
  readonly anonymous: 'open' | 'invite_only' | 'off'
  /**
   * Proxies whose `X-Forwarded-For` is believed (addresses and CIDR ranges); empty: the client is the
   * socket's peer.
   */
  readonly trustedProxies: readonly string[]
  /** Addresses that may scrape /metrics without a key (PLINTH_METRICS_ALLOW). */
  readonly metricsAllow: readonly string[]
  /** Addresses and ranges outbound requests made for users may reach despite being private (tests, internal receivers). */
  readonly outboundAllow: readonly string[]
  /** Custom domains: the CNAME target, the A/AAAA addresses, and the DNS servers verification asks. */
  readonly domains: {
    readonly cnameTarget: string | null
    readonly addresses: readonly string[]
    readonly dnsServers: readonly string[]
    /** Domain Connect's template and signing key (PLINTH_DOMAIN_CONNECT_*), or null. */
    readonly domainConnect: { providerId: string; serviceId: string; privateKey: string; keyHost: string } | null
  }
  /** The edge beacon: on (count published page views) or off; and the trusted header naming the visitor's country. */
  readonly analytics: {
    readonly beacon: boolean
    readonly countryHeader: string
    readonly regionHeader: string
    readonly cityHeader: string
    readonly retentionDays: number
  }
  /** Bytes of form-submission files each website may keep. */
  readonly formFilesBytes: number
  /** Distinct resized variants a website's images may have before widths round up to a ladder. */
  readonly imageVariantsPerSite: number
  /** Sites' functions, per request: CPU and wall time, an isolate's memory, the body read, outgoing fetches (PLINTH_FUNCTION_*). */
  readonly functions: { cpuMs: number; wallMs: number; memoryMb: number; bodyBytes: number; subrequests: number }
  /** Outgoing mail: the relay (PLINTH_SMTP_URL; none: messages held for the operator), From, DKIM and limits. */
  readonly mail: MailConfig
}

export type PlanName = 'free' | 'base' | 'max'

export interface StripeConfig {
  readonly secretKey: string
  /** Stripe's API origin; null: api.stripe.com. */
  readonly apiUrl: string | null
  /** The Stripe price id of each paid plan; null: that plan cannot be bought here. */
  readonly prices: Readonly<Record<'base' | 'max', string | null>>
}

export interface BillingConfig {
  /** Off by default: no plans, unlimited websites, nothing held. */
  readonly enabled: boolean
  /** Website slots of each plan (storage websites take none). */
  readonly websiteSlots: Readonly<Record<PlanName, number>>
  /** Shared-file storage of the free plan (paid plans: none); spec: 1 GB. */
  readonly freeStorageBytes: number
  /** Stripe, when a secret key is configured: checkout, portal and sync. */
  readonly stripe: StripeConfig | null
}

const HOSTNAME_LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/
const ADMIN_KEY = /^wb_[A-Za-z0-9_-]{32,}$/

function parsePort(env: Env): number {
  const raw = read(env, 'PORT')
  if (raw === undefined) return 8080
  if (!/^\d+$/.test(raw) || Number(raw) > 65535) {
    throw new ConfigError('PORT', `must be an integer from 0 to 65535, got ${JSON.stringify(raw)}`)
  }
  return Number(raw)
}

function parseHost(env: Env): string {
  const raw = read(env, 'HOST') ?? '127.0.0.1'
  if (isIP(raw) === 0 && !isHostname(raw)) {
    throw new ConfigError('HOST', `must be an IP address or a hostname, got ${JSON.stringify(raw)}`)
  }
  return raw
}

function isHostname(value: string): boolean {
  return value.length <= 253 && value.split('.').every((label) => HOSTNAME_LABEL.test(label))
}

function parseSiteDomain(env: Env): string {
  const raw = (read(env, 'PLINTH_SITE_DOMAIN') ?? 'localhost').toLowerCase()
  if (!isHostname(raw) || isIP(raw) !== 0) {
    throw new ConfigError(
      'PLINTH_SITE_DOMAIN',
      `must be a DNS name such as sites.example.com (lowercase labels of letters, digits and inner hyphens), got ${JSON.stringify(raw)}`,
    )
  }
  return raw
}

/** An absolute http(s) URL from a variable (null when unset); the error names the variable and an example. */
function readHttpUrl(env: Env, name: string, what: string, example: string): URL | null {
  const raw = read(env, name)
  if (raw === undefined) return null
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw new ConfigError(name, `must be an absolute http(s) ${what} such as ${example}, got ${JSON.stringify(raw)}`)
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new ConfigError(name, `must be an absolute http(s) ${what} such as ${example}, got ${JSON.stringify(raw)}`)
  return url
}

function parseApiOrigin(env: Env): string | null {
  const url = readHttpUrl(env, 'PLINTH_API_ORIGIN', 'origin', 'https://api.example.com')
  if (url === null) return null
  const raw = read(env, 'PLINTH_API_ORIGIN')
  if (url.pathname !== '/' || url.search || url.hash || url.username) {
    throw new ConfigError(
      'PLINTH_API_ORIGIN',
      `must be an origin only (scheme, host, optional port; no path, query or credentials), got ${JSON.stringify(raw)}`,
    )
  }
  return url.origin
}

function parseAdminKey(env: Env): string | null {
  const raw = read(env, 'PLINTH_ADMIN_KEY')
  if (raw === undefined) return null
  if (!ADMIN_KEY.test(raw)) {
    // Never echo the value: it is a secret.
    throw new ConfigError('PLINTH_ADMIN_KEY', 'must start with wb_ followed by at least 32 characters of A-Z, a-z, 0-9, - or _')
  }
  return raw
}

function parseWarmSites(env: Env): number {
  const raw = read(env, 'PLINTH_WARM_SITES')
  if (raw === undefined) return WARM_SITES_DEFAULT
  if (!/^\d+$/.test(raw) || Number(raw) < 1 || Number(raw) > 10_000) {
    throw new ConfigError('PLINTH_WARM_SITES', `must be a whole number of sites from 1 to 10000, got ${JSON.stringify(raw)}`)
  }
  return Number(raw)
}

function parseServeThreads(env: Env): number {
  const raw = read(env, 'PLINTH_SERVE_THREADS')
  if (raw === undefined) return Math.min(SERVE_THREADS_MAX, availableParallelism())
  if (!/^\d+$/.test(raw) || Number(raw) < 1 || Number(raw) > SERVE_THREADS_MAX)
    throw new ConfigError(
      'PLINTH_SERVE_THREADS',
      `must be a whole number of threads from 1 to ${SERVE_THREADS_MAX}, got ${JSON.stringify(raw)}`,
    )
  return Number(raw)
}

function parseCacheBytes(env: Env): number {
  const bytes = parseBytes(env, 'PLINTH_CACHE_BYTES', CACHE_BYTES_DEFAULT)
  if (bytes < 1024 * 1024)
    throw new ConfigError(
      'PLINTH_CACHE_BYTES',
      `must be at least 1 MiB, got ${JSON.stringify(read(env, 'PLINTH_CACHE_BYTES'))} (${bytes} bytes)`,
    )
  return bytes
}

/** Paths Plinth answers itself: the dashboard may not live under them. */
const RESERVED_APP_PATHS = /^\/(?:v1|public|\.well-known|oauth|openapi\.json|api)(?:\/|$)/

function parseAppUrl(env: Env): string | null {
  const url = readHttpUrl(env, 'PLINTH_APP_URL', 'URL', 'https://api.example.com/app')
  if (url === null) return null
  const raw = read(env, 'PLINTH_APP_URL')
  const path = url.pathname.replace(/\/+$/, '')
  if (url.search || url.hash || url.username || path === '' || RESERVED_APP_PATHS.test(path)) {
    throw new ConfigError(
      'PLINTH_APP_URL',
      `must be an http(s) URL with a path of its own (such as /app; not /, /v1, /oauth or /.well-known) and no query, got ${JSON.stringify(raw)}`,
    )
  }
  return url.origin + path
}

function parseBilling(env: Env): BillingConfig {
  const raw = (read(env, 'PLINTH_BILLING') ?? 'off').toLowerCase()
  if (raw !== 'on' && raw !== 'off') throw new ConfigError('PLINTH_BILLING', `must be on or off, got ${JSON.stringify(raw)}`)
  const slots: Record<PlanName, number> = { ...PLAN_WEBSITES_DEFAULT }
  const plans = read(env, 'PLINTH_PLAN_WEBSITES')
  if (plans !== undefined) {
    for (const part of plans.split(',')) {
      const match = /^\s*(free|base|max)\s*=\s*(\d{1,6})\s*$/.exec(part)
      if (match === null)
        throw new ConfigError('PLINTH_PLAN_WEBSITES', `must be plan=slots pairs such as free=1,base=5,max=25, got ${JSON.stringify(plans)}`)
      slots[match[1] as PlanName] = Number(match[2])
    }
  }
  const secretKey = read(env, 'PLINTH_STRIPE_SECRET_KEY')
  const apiUrl = read(env, 'PLINTH_STRIPE_API_URL') ?? null
  if (apiUrl !== null && !/^https?:\/\/[^/?#]+\/?$/.test(apiUrl))
    throw new ConfigError('PLINTH_STRIPE_API_URL', `must be an http(s) origin, got ${JSON.stringify(apiUrl)}`)
  return Object.freeze({
    enabled: raw === 'on',
    websiteSlots: Object.freeze(slots),
    freeStorageBytes: parseBytes(env, 'PLINTH_FREE_STORAGE_BYTES', FREE_STORAGE_BYTES),
    stripe:
      secretKey === undefined
        ? null
        : Object.freeze({
            secretKey,
            apiUrl,
            prices: Object.freeze({
              base: read(env, 'PLINTH_STRIPE_PRICE_BASE') ?? null,
              max: read(env, 'PLINTH_STRIPE_PRICE_MAX') ?? null,
            }),
          }),
  })
}

/**
 * Refuses an API or dashboard served over plain http on a host that shares a parent domain with the
 * sites (`http://api.plinth.test` beside `*.plinth.test`), or lies under the site domain at all
 * (`http://api.plinth.test` with sites under `test`, `localhost`, `github.io` or `co.uk`: under a
 * public suffix every `x.test` is its own registrable domain, yet the site `plinth` is `plinth.test`). A hosted site's script can then set a
 * session cookie for the parent domain (`Domain=plinth.test`), and a request cannot tell it from one the
 * dashboard set: a person with no session of their own would act as the site's author (claim a site
 * into their workspace, approve an OAuth application). Over https the cookie is `__Host-`, which only
 * the dashboard's own host can set; on a domain of their own the sites cannot reach it at all.
 */
function checkSessionLayout(siteDomain: string, apiOrigin: string | null, appUrl: string | null): void {
  for (const [name, value] of [
    ['PLINTH_APP_URL', appUrl],
    ['PLINTH_API_ORIGIN', apiOrigin],
  ] as const) {
    if (value === null) continue
    const url = new URL(value)
    if (url.protocol !== 'http:') continue
    const under = hostUnder(url.hostname, siteDomain) !== null
    if (!under && !sharesCookieScope(url.hostname, siteDomain)) continue
    throw new ConfigError(
      name,
      `is plain http on ${url.hostname}, which ${under ? `lies under the sites' domain (*.${siteDomain}; whatever the Public Suffix List says of it, a site named after a label of ${url.hostname} is one of its parents)` : `shares a parent domain with the sites (*.${siteDomain})`}: a hosted site's script could set a session cookie for that domain and the dashboard would act on it for whoever opens it. Serve the API and dashboard over https (${name}=https://${url.host}${url.pathname === '/' ? '' : url.pathname}; the session cookie is then __Host-, which no other host can set), or give the sites a domain of their own (PLINTH_SITE_DOMAIN, as github.io and netlify.app are); see the README, "Sites on their own domain"`,
    )
  }
}

/**
 * Reads and validates the environment. Throws ConfigError naming the first bad variable. An operator's
 * command (`plinth user add`, `plinth backup`, …) reads it `asOperator`: it talks to the running node
 * over its control socket (or opens a stopped one's data directory), so a cluster's node settings
 * (PLINTH_CLUSTER_*, PLINTH_NODE_*) are not its business and `cluster` is null.
 */
export function loadConfig(env: Env = process.env, options: { asOperator?: boolean } = {}): Config {
  const siteDomain = parseSiteDomain(env)
  const apiOrigin = parseApiOrigin(env)
  const appUrl = parseAppUrl(env)
  checkSessionLayout(siteDomain, apiOrigin, appUrl)
  const dataDir = resolve(read(env, 'PLINTH_DATA_DIR') ?? './data')
  const cluster = options.asOperator === true ? null : parseCluster(env)
  if (cluster !== null && apiOrigin === null)
    throw new ConfigError(
      'PLINTH_API_ORIGIN',
      "must be set on every node of a cluster, the same on each: the address clients reach the cluster at (the load balancer's, e.g. https://api.example.com). Without it each node names its own port in every URL it returns, and those change when the primary does",
    )
  return Object.freeze({
    port: parsePort(env),
    host: parseHost(env),
    dataDir,
    siteDomain,
    apiOrigin,
    adminKey: parseAdminKey(env),
    secretFile: parseSecretFile(env, dataDir, cluster !== null),
    backupArchive: parseBackupArchive(env, dataDir),
    cacheBytes: parseCacheBytes(env),
    purgeUrls: parseUrlList(env, 'PLINTH_PURGE_URLS'),
    warmSites: parseWarmSites(env),
    serveThreads: parseServeThreads(env),
    appUrl,
    billing: parseBilling(env),
    namespaceRenames: parseCount(env, 'PLINTH_NAMESPACE_RENAMES', NAMESPACE_RENAMES_DEFAULT),
    cluster,
    anonymous: parseAnonymous(env),
    trustedProxies: parseAddressList(env, 'PLINTH_TRUSTED_PROXIES'),
    metricsAllow: parseAddressList(env, 'PLINTH_METRICS_ALLOW'),
    outboundAllow: parseAddressList(env, 'PLINTH_OUTBOUND_ALLOW'),
    domains: parseDomains(env),
    analytics: parseAnalytics(env),
    formFilesBytes: parseBytes(env, 'PLINTH_FORM_FILES_BYTES', 1 << 30),
    imageVariantsPerSite: parseCount(env, 'PLINTH_IMAGE_VARIANTS_PER_SITE', IMAGE_VARIANTS_PER_SITE),
    functions: {
      cpuMs: parseCount(env, 'PLINTH_FUNCTION_CPU_MS', 50),
      wallMs: parseCount(env, 'PLINTH_FUNCTION_WALL_MS', 30_000),
      memoryMb: parseCount(env, 'PLINTH_FUNCTION_MEMORY_MB', 128),
      bodyBytes: parseBytes(env, 'PLINTH_FUNCTION_BODY_BYTES', 10 * 1024 * 1024),
      subrequests: parseCount(env, 'PLINTH_FUNCTION_SUBREQUESTS', 50),
    },
    mail: parseMail(env),
  })
}

function parseBackupArchive(env: Env, dataDir: string): string | null {
  const given = read(env, 'PLINTH_BACKUP_ARCHIVE')
  if (given === undefined) return null
  const root = resolve(given)
  const inside = relative(dataDir, root)
  if (inside === '' || (!inside.startsWith('..') && !isAbsolute(inside)))
    throw new ConfigError(
      'PLINTH_BACKUP_ARCHIVE',
      `names ${root}, inside the data directory ${dataDir}: choose a backup root outside it (on another disk, ideally)`,
    )
  return root
}

function parseAnalytics(env: Env): Config['analytics'] {
  const beacon = read(env, 'PLINTH_ANALYTICS_BEACON') ?? 'on'
  if (beacon !== 'on' && beacon !== 'off')
    throw new ConfigError('PLINTH_ANALYTICS_BEACON', `must be on or off, got ${JSON.stringify(beacon)}`)
  const headerOf = (name: string) => {
    const header = read(env, name) ?? ''
    if (header !== '' && !/^[A-Za-z0-9-]{1,64}$/.test(header))
      throw new ConfigError(name, `must be a header name, got ${JSON.stringify(header)}`)
    return header.toLowerCase()
  }
  const days = read(env, 'PLINTH_ANALYTICS_RETENTION_DAYS') ?? String(TRACKER_RETENTION_DAYS_DEFAULT)
  if (!/^\d{1,5}$/.test(days) || Number(days) < 1)
    throw new ConfigError('PLINTH_ANALYTICS_RETENTION_DAYS', `must be a whole number of days (at least 1), got ${JSON.stringify(days)}`)
  return Object.freeze({
    beacon: beacon === 'on',
    countryHeader: headerOf('PLINTH_COUNTRY_HEADER'),
    regionHeader: headerOf('PLINTH_REGION_HEADER'),
    cityHeader: headerOf('PLINTH_CITY_HEADER'),
    retentionDays: Number(days),
  })
}

function parseDomains(env: Env): Config['domains'] {
  const target = read(env, 'PLINTH_DOMAIN_TARGET')
  if (target !== undefined && !/^[a-z0-9.-]+$/i.test(target))
    throw new ConfigError('PLINTH_DOMAIN_TARGET', `must be a host name, got ${JSON.stringify(target)}`)
  const addresses = (read(env, 'PLINTH_DOMAIN_ADDRESSES') ?? '')
    .split(',')
    .map((a) => a.trim())
    .filter((a) => a !== '')
  for (const address of addresses)
    if (isIP(address) === 0) throw new ConfigError('PLINTH_DOMAIN_ADDRESSES', `must be IP addresses, got ${JSON.stringify(address)}`)
  const servers = (read(env, 'PLINTH_DNS_SERVERS') ?? '')
    .split(',')
    .map((a) => a.trim())
    .filter((a) => a !== '')
  for (const server of servers) {
    const host = server.startsWith('[')
      ? server.slice(1, server.indexOf(']'))
      : server.split(':').length === 2
        ? server.split(':')[0]
        : server
    if (isIP(host) === 0) throw new ConfigError('PLINTH_DNS_SERVERS', `must be ip or ip:port entries, got ${JSON.stringify(server)}`)
  }
  return Object.freeze({
    cnameTarget: target?.toLowerCase().replace(/\.$/, '') ?? null,
    addresses: Object.freeze(addresses),
    dnsServers: Object.freeze(servers),
    domainConnect: parseDomainConnect(env),
  })
}

/**
 * PLINTH_DOMAIN_CONNECT_TEMPLATE (`providerId/serviceId`), _KEY (a PEM private key file) and _KEY_HOST
 * (where providers find its public key): all three or none.
 */
function parseDomainConnect(env: Env): Config['domains']['domainConnect'] {
  const template = read(env, 'PLINTH_DOMAIN_CONNECT_TEMPLATE')
  const keyFile = read(env, 'PLINTH_DOMAIN_CONNECT_KEY')
  const keyHost = read(env, 'PLINTH_DOMAIN_CONNECT_KEY_HOST')
  if (template === undefined && keyFile === undefined && keyHost === undefined) return null
  if (template === undefined || keyFile === undefined || keyHost === undefined)
    throw new ConfigError(
      template === undefined
        ? 'PLINTH_DOMAIN_CONNECT_TEMPLATE'
        : keyFile === undefined
          ? 'PLINTH_DOMAIN_CONNECT_KEY'
          : 'PLINTH_DOMAIN_CONNECT_KEY_HOST',
      'is needed with the other PLINTH_DOMAIN_CONNECT_ settings: the template (providerId/serviceId), the signing key file and the host its public key is published at',
    )
  const [providerId, serviceId, ...rest] = template.split('/')
  if (providerId === undefined || serviceId === undefined || providerId === '' || serviceId === '' || rest.length > 0)
    throw new ConfigError('PLINTH_DOMAIN_CONNECT_TEMPLATE', `must be providerId/serviceId, got ${JSON.stringify(template)}`)
  let privateKey: string
  try {
    privateKey = readFileSync(keyFile, 'utf8')
    createPrivateKey(privateKey)
  } catch (error) {
    throw new ConfigError('PLINTH_DOMAIN_CONNECT_KEY', `must be a readable PEM private key file: ${(error as Error).message}`)
  }
  return Object.freeze({ providerId, serviceId, privateKey, keyHost })
}

function parseAnonymous(env: Env): Config['anonymous'] {
  const raw = read(env, 'PLINTH_ANONYMOUS') ?? 'open'
  if (raw !== 'open' && raw !== 'invite_only' && raw !== 'off')
    throw new ConfigError('PLINTH_ANONYMOUS', `must be open, invite_only or off, got ${JSON.stringify(raw)}`)
  return raw
}
