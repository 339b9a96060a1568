import type { Routing } from '../../render/gate.js'
import {
  FUNCTIONS_DIR,
  FUNCTIONS_MANIFEST,
  FUNCTIONS_MAP,
  FUNCTIONS_SCRIPT,
  GENERATED_FILES,
  ROUTES_FILE,
  type FunctionRoute,
  type FunctionsManifest,
} from '../../render/functions/files.js'
import { FunctionRules } from '../../render/functions/route-rules.js'
import type { FormConfig, ManifestEntry } from '../../core/schemas/records.js'
import type { ContentCache } from '../content-cache.js'
import { siteRoutes, type SitePath } from './routes.js'
import {
  fromProblem,
  HEADERS_FILE,
  isRuleFile,
  HeaderMatcher,
  parseHeaders,
  parseRedirects,
  REDIRECTS_FILE,
  RedirectMatcher,
  type RedirectRule,
  type RuleHit,
} from '../../core/site-rules.js'
import type { CountedPages, Tally } from '../analytics/beacon-tally.js'
import { CACHE, packHeaders, PreparedFile, VERSION_HEADER, type ChannelKind, type HeaderBlock } from './prepared-file.js'

export { packHeaders, PreparedFile, VERSION_HEADER, type ChannelKind, type Encoding, type HeaderBlock } from './prepared-file.js'

/** A version's functions as its snapshot holds them: the compiled script's and map's hashes, and which paths run it. */
export interface SnapshotFunctions {
  readonly script: string
  readonly map: string | null
  /** The class of site it belongs to (the functions metrics' label). */
  readonly site: 'static' | 'framework'
  readonly rules: FunctionRules
  readonly routes: readonly FunctionRoute[]
}

/** Files of a version with functions that are never served: the sources, `_routes.json` and the compiled output. */
function isFunctionsFile(path: string): boolean {
  return path.startsWith(FUNCTIONS_DIR) || path === ROUTES_FILE || GENERATED_FILES.includes(path)
}

/** What a snapshot serves: a version's files (static) or a build's output (framework). */
export interface ServedFiles {
  version: number
  /** Identifies this exact content: a rebuilt version gets a new key. */
  key: string
  files: Readonly<Record<string, ManifestEntry>>
  /** website_config redirects and extra HTML headers (framework builds). */
  routing?: Routing
}

/** A prepared redirect: status line, headers and a small body. */
export interface PreparedRedirect {
  readonly status: Buffer
  readonly headers: HeaderBlock
  readonly body: Buffer
}

const REDIRECT_TEXT: Record<number, string> = {
  301: 'Moved Permanently',
  302: 'Found',
  303: 'See Other',
  307: 'Temporary Redirect',
  308: 'Permanent Redirect',
}

function redirectResponse(status: number, location: string, channel: ChannelKind, version: number): PreparedRedirect {
  return {
    status: Buffer.from(`${status} ${REDIRECT_TEXT[status]}`),
    headers: packHeaders([
      'location',
      location,
      'content-type',
      'text/plain; charset=utf-8',
      VERSION_HEADER,
      String(version),
      ...CACHE[channel],
    ]),
    body: Buffer.from(`Redirecting to ${location}\n`),
  }
}

/**
 * A request path a snapshot answers: its file, and for an HTML page its number for the beacon's
 * counters (else -1); or another spelling of a page's path, which moves to the one it answers at.
 */
export interface Route {
  readonly file: PreparedFile
  readonly page: number
  /** The canonical request path this one moves to with a 308 (routes.ts); null: answered here. */
  readonly movedTo: string | null
}

/**
 * An immutable view of one version on one channel: request path to prepared file. A site swaps
 * from one snapshot to another by one pointer assignment, so no request sees a mix of versions.
 */
export class Snapshot implements CountedPages {
  readonly version: number
  readonly key: string
  readonly channel: ChannelKind
  /** The forms website_config declares (framework builds); null: a static site, which takes any form name. */
  readonly forms: Readonly<Record<string, FormConfig>> | null
  /** Decoded request path to the file path it serves, replaced by its route once prepared (one lookup per request). */
  readonly #routes: Map<string, SitePath | Route>
  /** The request paths of the HTML pages served so far, by page number (the beacon's counters). */
  readonly #pagePaths: string[] = []
  /** The edge beacon's counters of this snapshot for the current flush period (beacon-tally.ts). */
  beaconTally: Tally | null = null
  readonly #manifest: Readonly<Record<string, ManifestEntry>>
  /** Files prepared so far (on their first request), by file path. */
  readonly #prepared = new Map<string, PreparedFile>()
  readonly #extra: readonly string[]
  /**
   * The site's redirect rules (a static site's `_redirects`, a framework site's website_config
   * redirects, which apply even where a file exists); null: none, and a request pays nothing for them.
   */
  readonly rules: RedirectMatcher | null
  /** A static site's `_headers`, by request path; null: none. */
  readonly #headerRules: HeaderMatcher | null
  /** A version's functions (render/functions/): null when it has none, and no request pays for them. */
  readonly functions: SnapshotFunctions | null
  #cache: ContentCache | null

  constructor(
    version: ServedFiles,
    channel: ChannelKind,
    cache: ContentCache,
    /** Its website: the surrogate key its published files carry for a cache tier in front. */
    readonly websiteId: string,
  ) {
    this.version = version.version
    this.key = version.key
    this.channel = channel
    this.#cache = cache
    this.#manifest = version.files
    // website_config headers come on top of the platform defaults (they cannot replace them).
    this.#extra = Object.entries(version.routing?.headers ?? {}).flat()
    this.forms = version.routing === undefined ? null : (version.routing.forms ?? {})
    // Rules are compiled here, once per snapshot (parsed and checked at deploy; a bad line was reported then and is skipped).
    const redirects: RedirectRule[] =
      version.routing === undefined
        ? parseRedirects(this.#ruleText(REDIRECTS_FILE)).rules
        : version.routing.redirects
            // A build stored before its patterns were checked may hold one the matcher cannot compile: left out.
            .filter((r) => fromProblem(r.from) === null)
            .map((r, i) => ({ line: i, from: r.from, to: r.to, status: r.status as RedirectRule['status'], force: true }))
    this.rules = redirects.length === 0 ? null : new RedirectMatcher(redirects)
    const headers = version.routing === undefined ? parseHeaders(this.#ruleText(HEADERS_FILE)).rules : []
    this.#headerRules = headers.length === 0 ? null : new HeaderMatcher(headers)
    // A version with functions (a static deploy's, a framework build's): its compiled script (by hash, for the isolate pool) and which paths run it.
    this.functions = this.#functions(version.routing === undefined ? 'static' : 'framework')
    // A static site's rule files are read by the platform, never served; nor are functions' sources and compiled output.
    // A framework build holds no sources: only its generated functions files are hidden (a page may live at /functions/…).
    const paths = Object.keys(version.files).filter((path) =>
      version.routing !== undefined
        ? !GENERATED_FILES.includes(path)
        : !isRuleFile(path) && (this.functions === null || !isFunctionsFile(path)),
    )
    this.#routes = siteRoutes(paths, version.routing === undefined ? 'folders' : 'pages')
  }

  #functions(site: SnapshotFunctions['site']): SnapshotFunctions | null {
    const script = this.#manifest[FUNCTIONS_SCRIPT]
    const text = script === undefined ? '' : this.#ruleText(FUNCTIONS_MANIFEST)
    if (text === '') return null
    const manifest = JSON.parse(text) as FunctionsManifest
    return {
      script: script.hash,
      map: this.#manifest[FUNCTIONS_MAP]?.hash ?? null,
      site,
      rules: new FunctionRules(manifest),
      routes: manifest.routes,
    }
  }

  /** The text of a rule file of the version ('' when it has none, or it is a large file kept on disk). */
  #ruleText(path: string): string {
    const entry = this.#manifest[path]
    const cache = this.#cache
    if (entry === undefined || cache === null) return ''
    const held = cache.acquire(entry.hash)
    try {
      return held.disk === null ? cache.read(held).identity.toString('utf8') : ''
    } finally {
      cache.release(held)
    }
  }

  /** The route of a decoded request path, its file prepared on its first request; undefined: none. */
  route(path: string): Route | undefined {
    const found = this.#routes.get(path)
    if (found === undefined || (typeof found !== 'string' && typeof found.file !== 'string')) return found as Route | undefined
    let route: Route
    if (typeof found === 'string') {
      const file = this.#file(found, path)
      route = { file, page: file.html ? this.#pagePaths.push(path) - 1 : -1, movedTo: null }
    } else route = { file: this.#file(found.file as string, path), page: -1, movedTo: found.movedTo }
    this.#routes.set(path, route)
    return route
  }

  /**
   * A rule's file: the route of `target` served for the request path `path` (a rewrite or a rule's
   * 404 page), with the `_headers` of `path`; its page views count under `target`.
   */
  routeAs(target: string, path: string): Route | undefined {
    let route = this.route(target)
    if (route?.movedTo != null) route = this.route(route.movedTo) // `/index.html` names the page at `/`
    if (route === undefined || this.#headerRules === null) return route
    return { file: this.#file(route.file.path, path), page: route.page, movedTo: null }
  }

  /** The 308 a path's other spelling answers (Route.movedTo), the request's query kept. */
  movedRedirect(route: Route, query: string): PreparedRedirect {
    const location = encodeURI(route.movedTo!) + (query === '' ? '' : `?${query}`)
    return redirectResponse(308, location, this.channel, this.version)
  }

  /** What a redirect rule answers. */
  redirectFor(hit: Extract<RuleHit, { kind: 'redirect' }>): PreparedRedirect {
    return redirectResponse(hit.status, hit.location, this.channel, this.version)
  }

  /** The file at `filePath` as answered for the request path `path` (its `_headers`), prepared once per set of rules that match. */
  #file(filePath: string, path: string): PreparedFile {
    if (this.#headerRules === null) return this.#prepared.get(filePath) ?? this.#prepare(filePath, filePath, [])
    const { key, headers } = this.#headerRules.match(path)
    const id = key === '' ? filePath : `${filePath}\n${key}`
    return this.#prepared.get(id) ?? this.#prepare(id, filePath, headers)
  }

  /** How many HTML pages have been served so far (CountedPages). */
  get pageCount(): number {
    return this.#pagePaths.length
  }

  /** The request path of page number `page` (CountedPages). */
  pagePath(page: number): string {
    return this.#pagePaths[page]
  }

  /** The site's `404.html`, served with status 404 for a missing path (with that path's `_headers`); null when it has none. */
  notFound(path: string): PreparedFile | null {
    if (this.#manifest['404.html'] === undefined) return null
    return this.#file('404.html', path)
  }

  #prepare(id: string, path: string, ruleHeaders: readonly string[]): PreparedFile {
    const cache = this.#cache
    if (cache === null) throw new Error(`snapshot ${this.key} was disposed and asked for ${path}`)
    const entry = this.#manifest[path]
    const file = new PreparedFile(
      path,
      entry.size,
      entry.contentType,
      cache.acquire(entry.hash),
      cache,
      this.channel,
      this.#extra,
      this.websiteId,
      this.version,
      ruleHeaders,
    )
    this.#prepared.set(id, file)
    return file
  }

  /** Lets go of the content this snapshot held; call once nothing can reach it any more. */
  dispose(): void {
    const cache = this.#cache
    if (cache === null) return
    this.#cache = null
    for (const file of this.#prepared.values()) cache.release(file.entry)
  }
}

/**
 * What a hostname points at: swapped, never mutated in place. A channel is pointed at what it will
 * serve (`point`); its snapshot is prepared on its first request (synchronously: content comes from
 * LMDB's memory map), so a site whose draft host nobody visits never prepares a draft snapshot.
 */
export class Channel {
  #snapshot: Snapshot | null = null
  /** What the channel serves or will serve (null: nothing). */
  #served: ServedFiles | null = null
  /** The cache of what `#served` names until its snapshot is prepared (on the first request). */
  #pending: ContentCache | null = null
  /**
   * Why a draft channel of a live site serves nothing (its page says so): the head has no files, or
   * no build of it is ready yet. null otherwise, and always on published channels, whose empty
   * answer must not tell a visitor that a site exists.
   */
  waiting: 'empty' | 'building' | null = null
  /** Served since the registry's last look (its actor is not idle); set by every request. */
  used = true
  /**
   * Set on the channel of a host that only redirects (a website's non-primary hostnames): the
   * origin visitors are sent to with 301, path and query kept. Such a channel never has a snapshot.
   */
  redirectOrigin: string | null = null
  /** Set on a storage website's host: it serves shared files (folder pages, files, zips), never a snapshot. */
  sharing = false

  constructor(
    readonly kind: ChannelKind,
    /** The website it belongs to (the /_platform/ routes act on it). */
    readonly websiteId: string,
  ) {}

  /** The snapshot this channel serves, prepared now if it was only pointed at; null: nothing. */
  get snapshot(): Snapshot | null {
    this.used = true
    const pending = this.#pending
    if (pending !== null) {
      this.#pending = null
      this.#snapshot = new Snapshot(this.#served!, this.kind, pending, this.websiteId)
    }
    return this.#snapshot
  }

  /** The key of what the channel serves or will serve (null: nothing), without preparing it. */
  get key(): string | null {
    return this.#served?.key ?? null
  }

  /** What the channel serves or will serve (null: nothing): what a serving thread points its own copy at. */
  get served(): ServedFiles | null {
    return this.#served
  }

  /** Points the channel at `served` (prepared on first request), or at nothing; what it held before is let go. */
  point(served: ServedFiles | null, cache: ContentCache): void {
    if (served !== null && served.key === this.key) return
    this.#served = served
    this.#pending = served === null ? null : cache
    const previous = this.#snapshot
    this.#snapshot = null
    previous?.dispose()
  }
}
