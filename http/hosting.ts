import type { Registry } from '../actors/registry.js'
import { packHeaders, type Channel } from '../actors/website/snapshot.js'
import type { Exchange } from './uws.js'
import { EMPTY_DRAFT_PAGE, NOT_FOUND_HEADERS, NOT_FOUND_PAGE, S404, SiteFiles, UNBUILT_DRAFT_PAGE } from './site-files.js'
import { formName, type FormEndpoint } from './platform/forms.js'
import { COLLECT_PATH, TRACKER_SCRIPT_PATH, type TrackerEndpoint } from './platform/tracker.js'
import type { SharingPlane } from './platform/storage.js'
import { MediaPlane } from './platform/media.js'
import type { PasswordDoor } from './platform/password.js'
import type { FunctionsDoor } from './platform/functions.js'

const METHOD_HEADERS = packHeaders(['allow', 'GET, HEAD', 'content-type', 'text/plain; charset=utf-8', 'cache-control', 'no-store'])
const S405 = Buffer.from('405 Method Not Allowed')

/**
 * The hosting plane: requests whose Host is a site hostname (or any host that is not the API's).
 * One map lookup finds the channel, one more the prepared file; everything else was computed when
 * the snapshot was built. No I/O, no awaits. Sites that are unpublished, deleted or suspended, and
 * unknown hosts, get a small 404 page and nothing of the site.
 */
export class HostingPlane {
  readonly #files: SiteFiles

  constructor(
    private readonly registry: Registry,
    /** The /_platform/ routes that are not files of the site: forms, the tracker's script and collect endpoint. */
    private readonly forms: FormEndpoint,
    private readonly tracker: TrackerEndpoint,
    /** Storage websites' hosts: shared files, folder pages, zips. */
    private readonly sharing: SharingPlane,
    /** Assets and resized images under /_platform/media and /_platform/img. */
    private readonly media: MediaPlane,
    /** Sites behind a password: their page, form and Basic credentials. */
    private readonly password: PasswordDoor,
    /** Paths a version's functions answer (its `_routes.json` rules). */
    private readonly functions: FunctionsDoor,
  ) {
    this.#files = new SiteFiles(registry.beacon, registry.log)
  }

  /** The channel for a Host, if it is a site hostname. */
  channel(host: string): Channel | undefined {
    return this.registry.channelForHost(host)
  }

  /** The platform's 404 page: unknown host, or a site that serves nothing now. */
  notFound(exchange: Exchange): void {
    exchange.sendBlock(S404, NOT_FOUND_HEADERS, NOT_FOUND_PAGE)
  }

  serve(exchange: Exchange, channel: Channel): void {
    // A website's non-primary hostname: everything moves to the primary domain, path and query kept.
    if (channel.redirectOrigin !== null) return this.#toPrimary(exchange, channel.redirectOrigin)
    // A site behind a password (one Map lookup, none while no site has one) lets in a visitor with its cookie or Basic credentials.
    const passwords = this.registry.sitePasswords
    const locked = passwords.locked(channel.websiteId)
    if (locked) {
      const admitted = passwords.admits(channel.websiteId, exchange.header('cookie'), exchange.header('authorization'))
      if (admitted !== true) return this.password.handle(exchange, channel, admitted, () => this.serve(exchange, channel))
    }
    if (channel.sharing) return this.sharing.serve(exchange, channel)
    const snapshot = channel.snapshot
    if (snapshot === null)
      return exchange.sendBlock(
        S404,
        NOT_FOUND_HEADERS,
        channel.waiting === null ? NOT_FOUND_PAGE : channel.waiting === 'empty' ? EMPTY_DRAFT_PAGE : UNBUILT_DRAFT_PAGE,
      )
    // A version with functions: the paths its rules give them, every method (the platform's own routes excepted).
    const functions = snapshot.functions
    if (functions !== null && functions.rules.matches(exchange.path) && !exchange.path.startsWith('/_platform/'))
      return this.functions.handle(exchange, channel, snapshot)
    const method = exchange.method
    if (method !== 'GET' && method !== 'HEAD') {
      // Off the GET path: the platform's own POST routes (forms).
      if (method === 'POST') {
        if (exchange.path === COLLECT_PATH) return this.tracker.collect(exchange, channel)
        const form = formName(exchange.path)
        if (form !== null) return this.forms.handle(exchange, channel, snapshot, form)
      }
      return exchange.sendBlock(
        S405,
        METHOD_HEADERS,
        'Method not allowed: sites answer GET and HEAD (and POST to /_platform/forms/<name> and /_platform/collect)\n',
      )
    }
    const path = exchange.path
    if (path.startsWith('/_platform/')) {
      if (path === TRACKER_SCRIPT_PATH) return this.tracker.script(exchange)
      const media = MediaPlane.matches(path)
      if (media !== null) return this.media.serve(exchange, channel, media)
    }
    this.#files.serve(exchange, channel, snapshot, locked)
  }

  #toPrimary(exchange: Exchange, origin: string): void {
    const query = exchange.query
    // 308 keeps a POST a POST (a form sent to an old address still arrives); GET and HEAD get 301.
    exchange.send(
      exchange.method === 'GET' || exchange.method === 'HEAD' ? 301 : 308,
      {
        location: `${origin}${exchange.path}${query === '' ? '' : `?${query}`}`,
        'cache-control': 'public, max-age=300',
        'content-type': 'text/plain; charset=utf-8',
      },
      `Moved to ${origin}\n`,
    )
  }
}
