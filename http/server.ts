import { PLINTH_VERSION } from '../core/version.js'
import { LOG_FORMAT } from '../core/store/write-set.js'
import { isIP } from 'node:net'
import { HostingPlane } from './hosting.js'
import { FormEndpoint } from './platform/forms.js'
import { TrackerEndpoint } from './platform/tracker.js'
import { SharingPlane } from './platform/storage.js'
import { FunctionsDoor } from './platform/functions.js'
import { MediaPlane } from './platform/media.js'
import { McpEndpoint } from './mcp.js'
import { AnonymousDoor } from './anonymous.js'
import { Dashboard } from './app.js'
import { Docs } from './docs/index.js'
import { apiExamples } from './docs/examples.js'
import { DOOR } from '../core/metrics.js'
import { MetricsEndpoint, METRICS_PATH } from './metrics.js'
import { rateHeaders, sendError } from './respond.js'
import { isOAuthPath, OAuthEndpoints } from './oauth.js'
import { openApiDocument } from './openapi.js'
import { operations } from './operations/index.js'
import { Pipeline, type PipelineDeps } from './pipeline.js'
import { handleRest } from './rest.js'
import { Router } from './router.js'
import type { Exchange, Headers } from './uws.js'
import { PasswordDoor } from './platform/password.js'

/** What the HTTP layer is given: the actors, the clock, the public URLs, the packages sites may import. */
export type HttpDeps = Omit<PipelineDeps, 'publicContext'>

/** A load balancer's health check (GET or HEAD, on the API's host). */
export const HEALTH_PATH = '/_platform/health'

/** CORS on the MCP endpoint and the OAuth endpoints: readable from any origin, credentials never sent. */
const CORS_HEADERS: Headers = {
  'access-control-allow-origin': '*',
  'access-control-expose-headers':
    'www-authenticate, mcp-session-id, mcp-protocol-version, x-ratelimit-limit, x-ratelimit-remaining, retry-after',
}
const CORS_PREFLIGHT: Headers = {
  'access-control-allow-methods': 'GET, POST, OPTIONS',
  'access-control-allow-headers': 'authorization, content-type, accept, mcp-protocol-version, mcp-session-id, last-event-id',
  'access-control-max-age': '86400',
  'cache-control': 'no-store',
}

/**
 * The HTTP application: site hostnames to the hosting plane, everything else to the API (REST,
 * MCP, OpenAPI). Returns the dispatcher the listening socket calls for every request.
 */
export function httpApp(deps: HttpDeps): (exchange: Exchange) => void {
  const { registry } = deps
  let openApi: Record<string, unknown> | undefined
  const pipeline = new Pipeline({
    ...deps,
    publicContext: {
      version: PLINTH_VERSION,
      urls: deps.urls,
      packages: deps.packages,
      openApi: () => (openApi ??= openApiDocument(operations, deps.urls.apiOrigin, deps.urls.appUrl, apiExamples(deps.urls))),
    },
  })
  const router = new Router(operations)
  const mcp = new McpEndpoint(operations, pipeline, PLINTH_VERSION)
  const door = new AnonymousDoor(pipeline)
  const clientAddress = (exchange: Exchange) => pipeline.clientAddress(exchange)
  const passwordDoor = new PasswordDoor(registry, pipeline.limiter, clientAddress, deps.urls.secureCookies, deps.log)
  const hosting = new HostingPlane(
    registry,
    new FormEndpoint(registry, pipeline.limiter, clientAddress, deps.log),
    new TrackerEndpoint(registry, pipeline.limiter, clientAddress, deps.log),
    new SharingPlane(registry, deps.log, passwordDoor),
    new MediaPlane(registry, deps.log),
    passwordDoor,
    new FunctionsDoor(registry, new URL(deps.urls.published('x')).protocol),
  )
  const apiHost = new URL(deps.urls.apiOrigin).hostname
  const oauth = new OAuthEndpoints(registry, deps.urls, deps.log, (exchange) => pipeline.takeAddressToken(exchange))
  const docs = new Docs(
    () => pipeline.deps.publicContext.openApi(),
    deps.urls,
    (exchange) => rateHeaders(pipeline.takeAddressToken(exchange)),
    () => mcp.catalog,
  )
  const dashboard = new Dashboard(registry, deps.urls, deps.log, pipeline.limiter, () => oauth.resources, clientAddress)

  /**
   * Caddy's on-demand TLS asks here before it gets a certificate for a name (`ask` in the README's
   * Caddyfile): 200 for an active custom domain, a site's own hostname (label or draft), a version's own
   * address it serves (`v{N}--{label}`) and the API's host; 404 for anything else, so nobody makes the
   * proxy request certificates for names it does not serve.
   */
  const tlsAsk = (exchange: Exchange): void => {
    const domain = (new URLSearchParams(exchange.query).get('domain') ?? '').trim().toLowerCase().replace(/\.$/, '')
    const ours =
      domain !== '' && (domain === apiHost || registry.hostnames.websiteOfHost(domain) !== undefined || registry.servesVersionHost(domain))
    // A vanity address asked for: its namespace's addresses are getting their certificates (get_namespace says so).
    const vanity = ours ? registry.hostnames.vanityOfHost(domain) : undefined
    if (vanity !== undefined) registry.namespaces.certified(vanity.orgId)
    exchange.send(
      ours ? 200 : 404,
      { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' },
      ours ? 'ok\n' : 'not a host of this server\n',
    )
  }

  /**
   * GET /_platform/health on the API's host: 200 while this process answers (a load balancer's check;
   * a stopping server closes its port first, so the check fails then). A cluster's node also says its
   * name, its role and who leads (how far it applied the log is in /metrics, which is not public: it
   * counts every tenant's writes): a replica cut off from NATS still answers 200, since it goes on
   * serving its sites. `primary` is null when no primary was heard renewing its lease lately (two thirds
   * of a lease): a dead or cut-off one, or an election under way. `logFormat`: the log entry format its
   * build writes (a rolling upgrade shows which nodes run the newer build).
   */
  const health = (exchange: Exchange): void => {
    const node = deps.clusterNode?.() ?? null
    const body =
      node === null
        ? { status: 'ok' }
        : {
            status: 'ok',
            node: node.node,
            role: node.primary ? 'primary' : 'replica',
            primary: deps.clusterLeader?.() ?? null,
            // Which nodes run the newer build during a rolling upgrade (core/store/write-set.ts).
            logFormat: LOG_FORMAT,
          }
    exchange.send(200, { 'content-type': 'application/json', 'cache-control': 'no-store' }, JSON.stringify(body) + '\n')
  }

  // Its registry (and prom-client) is made at the first scrape: a server nobody scrapes keeps none.
  const metrics = new MetricsEndpoint(
    registry,
    deps.metricsAllow ?? [],
    deps.serveThreads,
    deps.lastBackup,
    deps.clusterNode,
    deps.backupArchive,
  )
  const scrape = (exchange: Exchange): void => {
    exchange.enter(DOOR.metrics)
    try {
      metrics.handle(exchange, pipeline.clientAddress(exchange), () => pipeline.authenticate(exchange, pipeline.restResource))
    } catch (error) {
      sendError(exchange, error, deps.log, rateHeaders(pipeline.takeAddressToken(exchange)))
    }
  }

  const handleApi = (exchange: Exchange): void => {
    if (exchange.path === '/_platform/tls/ask' && exchange.method === 'GET') return tlsAsk(exchange)
    if (exchange.path === HEALTH_PATH && (exchange.method === 'GET' || exchange.method === 'HEAD')) return health(exchange)
    if (exchange.path === METRICS_PATH) return scrape(exchange)
    const mcpPath = exchange.path === '/v1/mcp'
    if (mcpPath || isOAuthPath(exchange.path)) {
      // MCP clients that run in a browser (the MCP Inspector's web UI, web agents) call these across
      // origins. They carry bearer tokens, never cookies, so any origin may read the answers.
      exchange.alwaysHeaders = CORS_HEADERS
      if (exchange.method === 'OPTIONS') return exchange.send(204, CORS_PREFLIGHT)
    }
    // The MCP endpoint is the transport of every operation (its tools are the operation table), not one of them.
    if (mcpPath) {
      exchange.enter(DOOR.mcp)
      return mcp.handle(exchange)
    }
    // OAuth speaks its own wire format (RFC 6749 forms and errors); the dashboard is HTML pages.
    if (isOAuthPath(exchange.path)) {
      exchange.enter(DOOR.oauth)
      return oauth.handle(exchange)
    }
    if (dashboard.owns(exchange.path)) {
      exchange.enter(DOOR.app)
      return dashboard.handle(exchange)
    }
    if (docs.owns(exchange.path)) {
      exchange.enter(DOOR.docs)
      return docs.handle(exchange)
    }
    exchange.enter(DOOR.api)
    handleRest(exchange, router, pipeline, door)
  }

  const dispatch = (exchange: Exchange): void => {
    // Site hostnames first: the hot path is one map lookup. Clients send lowercase hosts, so case
    // (and a trailing dot) is folded only on a miss. The API answers on its own host and on bare
    // IP addresses (no site can live there); every other host gets the hosting plane's 404.
    const exact = hosting.channel(exchange.host)
    if (exact !== undefined) {
      exchange.enter(DOOR.hosting)
      return hosting.serve(exchange, exact)
    }
    // A fully qualified name may end in a dot ("site.example.com."): the same host.
    const lower = exchange.host.toLowerCase()
    const host = lower.endsWith('.') ? lower.slice(0, -1) : lower
    if (host !== apiHost) {
      const channel = hosting.channel(host)
      if (channel !== undefined) {
        exchange.enter(DOOR.hosting)
        return hosting.serve(exchange, channel)
      }
      if (host !== '' && isIP(host.replace(/^\[|\]$/g, '')) === 0) return hosting.notFound(exchange)
    }
    return handleApi(exchange)
  }
  return dispatch
}
