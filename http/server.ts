import { isIP } from 'node:net'
import { ensureInstallation, type Installation } from '../actors/installation.js'
import { Registry } from '../actors/registry.js'
import { systemClock, type Clock } from '../core/clock.js'
import type { Config } from '../core/config.js'
import { SHUTDOWN_DRAIN_MS } from '../core/limits.js'
import { stderrLogger, type Logger } from '../core/log.js'
import { lockDataDir } from '../core/store/lock.js'
import { Store } from '../core/store/store.js'
import { PACKAGE_VERSIONS } from '../render/packages.js'
import { SourcePool, type SourceLimitOptions } from '../render/pool.js'
import { Gate } from '../render/gate.js'
import { RenderPool } from '../render/render-pool.js'
import { startControlSocket } from './control.js'
import { HostingPlane } from './hosting.js'
import { McpEndpoint } from './mcp.js'
import { openApiDocument } from './openapi.js'
import { operations } from './operations/index.js'
import { Pipeline } from './pipeline.js'
import { rateHeaders, sendJson } from './respond.js'
import { handleRest } from './rest.js'
import { Router } from './router.js'
import { PublicUrls } from './urls.js'
import { listen, type Exchange, type HttpServer } from './uws.js'

export const PLINTH_VERSION = '0.1.0'

export interface PlinthOptions {
  config: Config
  clock?: Clock
  log?: Logger
  /** Check every handler result against its response schema (tests). */
  validateResponses?: boolean
  /** How long an idle render process lives (default 60 s; tests shorten it). */
  renderIdleMs?: number
  /** Budgets of the source steps (defaults in render/pool.ts; tests shrink them). */
  sourceLimits?: SourceLimitOptions
}

export interface Plinth {
  readonly port: number
  readonly urls: PublicUrls
  readonly installation: Installation
  readonly registry: Registry
  /** Stops accepting, drains in-flight requests and actor mailboxes, closes the database. */
  close(): Promise<void>
  /**
   * After an uncaught exception: drops every connection and closes the database at once, without
   * draining (nothing unanswered was acknowledged, and a commit is all or nothing).
   */
  halt(): Promise<void>
}

/** Labels a site may not take: the API host's label when the API host sits under the site domain. */
function reservedLabels(config: Config): Set<string> {
  const reserved = new Set<string>()
  if (config.apiOrigin !== null) {
    const host = new URL(config.apiOrigin).hostname
    const suffix = `.${config.siteDomain}`
    if (host.endsWith(suffix)) reserved.add(host.slice(0, -suffix.length).replace(/^draft--/, ''))
  }
  return reserved
}

/** Opens storage, makes the first-start installation if needed, and starts serving. */
export async function startPlinth(options: PlinthOptions): Promise<Plinth> {
  const { config } = options
  const clock = options.clock ?? systemClock
  const log = options.log ?? stderrLogger
  const unlock = lockDataDir(config.dataDir)
  const store = new Store(config.dataDir)
  const source = new SourcePool({ limits: options.sourceLimits })
  const renderer = new RenderPool({ idleMs: options.renderIdleMs })
  let server: HttpServer | undefined
  try {
    const installation = await ensureInstallation(store, clock, config.adminKey)
    const gate = new Gate(source, renderer, log)
    const registry = new Registry({ store, clock, log, siteDomain: config.siteDomain, reservedLabels: reservedLabels(config), source, gate })
    let urls: PublicUrls | undefined
    const getUrls = () => urls!
    const pipeline = new Pipeline({ registry, clock, log, urls: getUrls, validateResponses: options.validateResponses ?? false })
    const router = new Router(operations)
    const mcp = new McpEndpoint(operations, pipeline, PLINTH_VERSION)
    const hosting = new HostingPlane(registry)
    let openApiText: string | undefined
    let apiHost = ''

    const handleApi = (exchange: Exchange): void => {
      const path = exchange.path
      if (path === '/v1/mcp') return mcp.handle(exchange)
      if (path === '/openapi.json' && (exchange.method === 'GET' || exchange.method === 'HEAD')) {
        openApiText ??= JSON.stringify(openApiDocument(operations, getUrls().apiOrigin))
        const headers = rateHeaders(pipeline.takeAnonymousToken(exchange.remoteAddress()))
        exchange.send(200, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-cache', ...headers }, openApiText)
        return
      }
      if (path === '/api' && exchange.method === 'GET') {
        // Public, like /openapi.json: what framework sites may import, React included.
        sendJson(exchange, 200, { packages: PACKAGE_VERSIONS }, rateHeaders(pipeline.takeAnonymousToken(exchange.remoteAddress())))
        return
      }
      if (path === '/' && exchange.method === 'GET') {
        const headers = rateHeaders(pipeline.takeAnonymousToken(exchange.remoteAddress()))
        sendJson(exchange, 200, { name: 'Plinth', version: PLINTH_VERSION, openapi: getUrls().api('/openapi.json'), mcp: getUrls().api('/v1/mcp') }, headers)
        return
      }
      handleRest(exchange, router, pipeline)
    }

    const dispatch = (exchange: Exchange): void => {
      // Site hostnames first: the hot path is one map lookup. Clients send lowercase hosts, so case
      // (and a trailing dot) is folded only on a miss. The API answers on its own host and on bare
      // IP addresses (no site can live there); every other host gets the hosting plane's 404.
      const exact = hosting.channel(exchange.host)
      if (exact !== undefined) return hosting.serve(exchange, exact)
      // A fully qualified name may end in a dot ("site.example.com."): the same host.
      const lower = exchange.host.toLowerCase()
      const host = lower.endsWith('.') ? lower.slice(0, -1) : lower
      if (host !== apiHost) {
        const channel = hosting.channel(host)
        if (channel !== undefined) return hosting.serve(exchange, channel)
        if (host !== '' && isIP(host.replace(/^\[|\]$/g, '')) === 0) return hosting.notFound(exchange)
      }
      return handleApi(exchange)
    }

    server = await listen(config.host, config.port, dispatch, (error) => log.error('request handler failed', { error: String(error) }))
    urls = new PublicUrls(config.apiOrigin ?? `http://localhost:${server.port}`, config.siteDomain)
    apiHost = new URL(urls.apiOrigin).hostname
    const publicUrls = urls
    registry.siteOrigin = (label) => publicUrls.published(label)
    const listening = server
    const control = await startControlSocket(config.dataDir, registry)

    let closing: Promise<void> | undefined
    const close = () =>
      (closing ??= (async () => {
        listening.stopListening()
        await new Promise((resolve) => control.close(resolve))
        const deadline = Date.now() + SHUTDOWN_DRAIN_MS
        while (listening.inflight > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10))
        listening.closeAll()
        await registry.stopBuilds()
        await registry.drained()
        await source.close()
        await renderer.close()
        await gate.close()
        await store.close()
        unlock()
      })())
    const halt = async () => {
      listening.stopListening()
      listening.closeAll()
      control.close()
      await Promise.allSettled([source.close(), renderer.close()])
      await store.close()
      unlock()
    }
    return { port: listening.port, urls, installation, registry, close, halt }
  } catch (error) {
    server?.closeAll()
    await source.close()
    await renderer.close()
    await store.close()
    unlock()
    throw error
  }
}

