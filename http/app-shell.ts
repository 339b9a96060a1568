import { createHash } from 'node:crypto'
import { existsSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import type { Exchange, Headers } from './uws.js'

/**
 * The dashboard's client (app/, built by `npm run build` into dist/app): the page shell every
 * dashboard screen answers with, and its assets, named by content hash, precompressed at build time
 * and cached for good by browsers. Read once, at start.
 */

interface Asset {
  type: string
  etag: string
  identity: Buffer
  gzip: Buffer | null
  br: Buffer | null
}

interface Manifest {
  js: string
  css: string
  preload: string[]
  files: string[]
}

const TYPES: Record<string, string> = { js: 'text/javascript; charset=utf-8', css: 'text/css; charset=utf-8', map: 'application/json' }

/** Where the build put the dashboard: dist/app beside dist/http. */
const BUILT = fileURLToPath(new URL('../app/', import.meta.url))

export class AppShell {
  readonly #assets = new Map<string, Asset>()
  readonly #page: string | null
  readonly #etag: string

  constructor(appPath: string) {
    const manifestFile = `${BUILT}manifest.json`
    if (!existsSync(manifestFile)) {
      this.#page = null
      this.#etag = '"none"'
      return
    }
    const manifest = JSON.parse(readFileSync(manifestFile, 'utf8')) as Manifest
    for (const file of manifest.files) {
      const path = `${BUILT}assets/${file}`
      const identity = readFileSync(path)
      const read = (suffix: string) => (existsSync(`${path}${suffix}`) ? readFileSync(`${path}${suffix}`) : null)
      this.#assets.set(file, {
        type: TYPES[file.split('.').pop() ?? ''] ?? 'application/octet-stream',
        etag: `"${file}"`,
        identity,
        gzip: read('.gz'),
        br: read('.br'),
      })
    }
    const asset = (file: string) => `${appPath}/assets/${file}`
    this.#page =
      '<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">' +
      '<meta name="referrer" content="same-origin"><title>Plinth</title>' +
      `<link rel="stylesheet" href="${asset(manifest.css)}">` +
      manifest.preload.map((file) => `<link rel="modulepreload" href="${asset(file)}">`).join('') +
      `<script type="module" src="${asset(manifest.js)}"></script></head>` +
      '<body><div id="root"></div><noscript><p>The dashboard needs JavaScript. Everything it does is also in the API: <a href="/docs">the docs</a>.</p></noscript></body></html>'
    this.#etag = `"${createHash('sha256').update(this.#page).digest('base64url').slice(0, 16)}"`
  }

  /** Whether the path (below the dashboard's) is one of the client's assets. */
  isAsset(page: string): boolean {
    return page.startsWith('/assets/')
  }

  /** An asset: immutable (its name is its content's hash), in the encoding the client takes. */
  asset(exchange: Exchange, page: string): void {
    const asset = this.#assets.get(page.slice('/assets/'.length))
    if (asset === undefined) {
      return exchange.send(
        404,
        { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' },
        'No such dashboard file; reload the dashboard\n',
      )
    }
    const headers: Headers = {
      'content-type': asset.type,
      'cache-control': 'public, max-age=31536000, immutable',
      etag: asset.etag,
      vary: 'Accept-Encoding',
      'x-content-type-options': 'nosniff',
    }
    if (exchange.header('if-none-match') === asset.etag) return exchange.send(304, headers)
    const accept = exchange.header('accept-encoding')
    if (asset.br !== null && /\bbr\b/.test(accept)) return exchange.send(200, { ...headers, 'content-encoding': 'br' }, asset.br)
    if (asset.gzip !== null && /\bgzip\b/.test(accept)) return exchange.send(200, { ...headers, 'content-encoding': 'gzip' }, asset.gzip)
    exchange.send(200, headers, asset.identity)
  }

  /**
   * The page every screen of the client answers with; the client's router draws the screen. Scripts
   * and styles come only from this origin's files: no inline script, nothing from elsewhere.
   */
  page(exchange: Exchange): void {
    const headers: Headers = {
      'content-type': 'text/html; charset=utf-8',
      'cache-control': 'no-cache',
      etag: this.#etag,
      'x-frame-options': 'DENY',
      'referrer-policy': 'same-origin',
      'x-content-type-options': 'nosniff',
      'content-security-policy':
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    }
    if (this.#page === null) {
      return exchange.send(
        503,
        { ...headers, 'cache-control': 'no-store' },
        '<!doctype html><title>Plinth</title><p>The dashboard is not built: run <code>npm run build</code>. The API works without it.</p>',
      )
    }
    if (exchange.header('if-none-match') === this.#etag) return exchange.send(304, headers)
    exchange.send(200, headers, this.#page)
  }
}
