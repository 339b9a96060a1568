import { existsSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import type { PublicUrls } from '../../core/hostnames.js'
import type { ToolCatalogEntry } from '../mcp.js'
import type { Exchange, Headers } from '../uws.js'
import { localize } from './examples.js'
import { llmsFull } from './llms-full.js'
import { docPage, sendDocPage, type DocPage } from './pages.js'
import { referenceMarkdown } from './reference.js'

/** The written guide, llms.txt and llms-full.txt (docs/ in the checkout, beside dist/). */
const WRITTEN = fileURLToPath(new URL('../../../docs/', import.meta.url))

/** A written page with its examples naming this server: its API origin and its sites' hosts. */
function written(file: string, urls: PublicUrls): string {
  const path = `${WRITTEN}${file}`
  const text = existsSync(path) ? readFileSync(path, 'utf8') : `# Plinth\n\nThe ${file} of this server is missing from its checkout (docs/${file}).\n`
  return localize(text, urls)
}

/**
 * The documentation the API origin serves (spec: `GET /docs` guide, Markdown when Accept lacks
 * text/html; `GET /docs/api` reference): the guide and llms.txt as written in docs/, the reference
 * written from the OpenAPI document, and llms-full.txt as written with its tool lines, toolsets, limits
 * and error reasons filled in from the MCP tools and the registries. Each page is rendered once, on its
 * first request.
 */
export class Docs {
  readonly #pages = new Map<string, DocPage>()

  constructor(
    private readonly openApi: () => Record<string, any>,
    private readonly urls: PublicUrls,
    /** The rate-limit headers of the caller's address bucket (every answer carries them). */
    private readonly rateHeaders: (exchange: Exchange) => Headers,
    /** Every MCP tool with its toolset (the MCP endpoint's, built from the operation table). */
    private readonly tools: () => readonly ToolCatalogEntry[],
  ) {}

  owns(path: string): boolean {
    return (
      path === '/docs' ||
      path === '/docs/' ||
      path === '/docs/api' ||
      path === '/docs/api/' ||
      path === '/llms.txt' ||
      path === '/llms-full.txt' ||
      path.startsWith('/docs/screens/')
    )
  }

  handle(exchange: Exchange): void {
    const headers = this.rateHeaders(exchange)
    if (exchange.method !== 'GET' && exchange.method !== 'HEAD') {
      return exchange.send(405, { ...headers, allow: 'GET, HEAD', 'content-type': 'application/json; charset=utf-8' }, JSON.stringify({ kind: 'method_not_allowed', message: `${exchange.method} is not allowed on ${exchange.path}; allowed: GET, HEAD`, details: { allowed: ['GET', 'HEAD'] } }))
    }
    const path = exchange.path.replace(/\/$/, '')
    if (path.startsWith('/docs/screens/')) return this.#screen(exchange, path.slice('/docs/screens/'.length), headers)
    if (path === '/llms.txt' || path === '/llms-full.txt') {
      // llmstxt.org: Markdown, read as text by the agents that fetch it.
      const make =
        path === '/llms.txt'
          ? () => docPage(path, 'llms.txt', written('llms.txt', this.urls))
          : () => docPage(path, 'llms-full.txt', llmsFull(written('llms-full.txt', this.urls), this.tools()))
      const text = this.#page(path, make).markdown
      return exchange.send(200, { ...headers, 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'public, max-age=300', 'x-content-type-options': 'nosniff' }, text)
    }
    const page = path === '/docs/api' ? this.#page(path, () => docPage(path, 'API reference', referenceMarkdown(this.openApi()))) : this.#page(path, () => docPage(path, 'Guide', written('guide.md', this.urls)))
    sendDocPage(exchange, page, headers)
  }

  /** A screenshot of the guide's dashboard walkthrough (docs/screens/, made by `npm run docs:screens`). */
  #screen(exchange: Exchange, name: string, headers: Headers): void {
    const file = /^[a-z0-9-]+\.png$/.test(name) ? `${WRITTEN}screens/${name}` : null
    if (file === null || !existsSync(file))
      return exchange.send(404, { ...headers, 'content-type': 'text/plain; charset=utf-8' }, `No screenshot ${name}; the guide's are under /docs/screens/\n`)
    let bytes = this.#screens.get(name)
    if (bytes === undefined) this.#screens.set(name, (bytes = readFileSync(file)))
    exchange.send(200, { ...headers, 'content-type': 'image/png', 'cache-control': 'public, max-age=300', 'x-content-type-options': 'nosniff' }, bytes)
  }

  readonly #screens = new Map<string, Buffer>()

  #page(path: string, make: () => DocPage): DocPage {
    let page = this.#pages.get(path)
    if (page === undefined) this.#pages.set(path, (page = make()))
    return page
  }
}
