import type { Exchange, Headers } from '../uws.js'
import { docPage, sendDocPage, type DocPage } from './pages.js'
import { referenceMarkdown } from './reference.js'

/**
 * The documentation the API origin serves (spec: `GET /docs/api` reference): pages written from the
 * OpenAPI document once, on their first request, and answered as HTML or Markdown.
 */
export class Docs {
  #reference: DocPage | undefined

  constructor(
    private readonly openApi: () => Record<string, any>,
    /** The rate-limit headers of the caller's address bucket (every answer carries them). */
    private readonly rateHeaders: (exchange: Exchange) => Headers,
  ) {}

  owns(path: string): boolean {
    return path === '/docs/api' || path === '/docs/api/'
  }

  handle(exchange: Exchange): void {
    const headers = this.rateHeaders(exchange)
    if (exchange.method !== 'GET' && exchange.method !== 'HEAD') {
      return exchange.send(405, { ...headers, allow: 'GET, HEAD', 'content-type': 'application/json; charset=utf-8' }, JSON.stringify({ kind: 'method_not_allowed', message: `${exchange.method} is not allowed on ${exchange.path}; allowed: GET, HEAD`, details: { allowed: ['GET', 'HEAD'] } }))
    }
    this.#reference ??= docPage('/docs/api', 'API reference', referenceMarkdown(this.openApi()))
    sendDocPage(exchange, this.#reference, headers)
  }
}
