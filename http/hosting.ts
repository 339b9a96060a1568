import type { Registry } from '../actors/registry.js'
import type { Exchange } from './uws.js'

const NOT_FOUND_PAGE = Buffer.from(
  '<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="robots" content="noindex">' +
    '<title>Site not found</title></head><body style="font-family:system-ui,sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem">' +
    '<h1>Site not found</h1><p>There is no published site at this address.</p></body></html>',
)

const NOT_FOUND_HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
  'x-robots-tag': 'noindex',
}

/**
 * The hosting plane: requests whose Host is a site hostname. Until sites carry content, every
 * site hostname answers a small 404 page; nothing of an unpublished site is ever served.
 */
export class HostingPlane {
  readonly #suffix: string

  constructor(
    private readonly registry: Registry,
    siteDomain: string,
  ) {
    this.#suffix = `.${siteDomain}`
  }

  /** True when `host` is `{label}.{siteDomain}` or `draft--{label}.{siteDomain}`. */
  isSiteHost(host: string): boolean {
    return host.endsWith(this.#suffix) && host.length > this.#suffix.length && !host.slice(0, -this.#suffix.length).includes('.')
  }

  handle(exchange: Exchange): void {
    exchange.send(404, NOT_FOUND_HEADERS, NOT_FOUND_PAGE)
  }
}
