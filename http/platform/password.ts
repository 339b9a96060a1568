// The door of a site behind a password: its 401 page, the form it posts, and HTTP Basic for programs.
import type { Registry } from '../../actors/registry.js'
import { folderScope, PASSWORD_COOKIE } from '../../actors/website/passwords.js'
import type { Channel } from '../../actors/website/snapshot.js'
import { SITE_PASSWORD_RATE_LIMIT } from '../../core/limits.js'
import type { Logger } from '../../core/log.js'
import type { RateLimiter } from '../../core/rate-limit.js'
import type { Exchange } from '../uws.js'

/** Where the password page posts, on the site's own host. */
export const PASSWORD_PATH = '/_platform/password'

const escape = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!)

/** A plain HTML form (no script): it works in every browser and reader. `folder`: a shared folder's page, '' for a site's. */
function page(next: string, message: string | null, folder: string): string {
  return (
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="robots" content="noindex">' +
    '<meta name="viewport" content="width=device-width,initial-scale=1"><title>Password required</title></head>' +
    '<body style="font-family:system-ui,sans-serif;max-width:26rem;margin:4rem auto;padding:0 1rem"><main>' +
    `<h1>Password required</h1><p>${folder === '' ? 'This site is' : 'These shared files are'} protected. Enter the password to continue.</p>` +
    (message === null ? '' : `<p role="alert" style="color:#cf222e;font-weight:600">${escape(message)}</p>`) +
    `<form method="post" action="${PASSWORD_PATH}"><input type="hidden" name="next" value="${escape(next)}">` +
    `<input type="hidden" name="folder" value="${escape(folder)}">` +
    '<label for="password">Password</label><br>' +
    '<input id="password" name="password" type="password" autocomplete="current-password" required autofocus style="width:100%;padding:.5rem;margin:.25rem 0 1rem">' +
    '<button type="submit" style="padding:.5rem 1rem">Continue</button></form>' +
    // Browsers get no Basic prompt (see #refuse); a program reading this page learns the way in.
    '<p style="color:#57606a;font-size:.875rem">Programs: send the password as HTTP Basic credentials, with any user name.</p></main></body></html>'
  )
}

/** A path on this host to go back to: only a local absolute path (never `//other.host`). */
function localPath(next: string): string {
  return next.startsWith('/') && !next.startsWith('//') && !next.startsWith('/\\') ? next : '/'
}

/**
 * What a site with a password answers before it serves anything: the 401 page with its form, the
 * form's POST (a correct password sets a cookie on this host only and goes back; wrong ones are
 * rate limited per address and site), and HTTP Basic credentials (any user name) checked once off
 * the serving path, then remembered.
 */
export class PasswordDoor {
  constructor(
    private readonly registry: Registry,
    private readonly limiter: RateLimiter,
    private readonly clientAddress: (exchange: Exchange) => string,
    private readonly secureCookies: boolean,
    private readonly log: Logger,
  ) {}

  /**
   * `scope`: the website's, or a shared folder's (`folder` names it); `admitted`: false (nothing sent)
   * or 'basic' (Basic credentials to check); `serve` runs once they pass.
   */
  handle(exchange: Exchange, channel: Channel, admitted: false | 'basic', serve: () => void, folder = ''): void {
    const passwords = this.registry.sitePasswords
    const scope = folder === '' ? channel.websiteId : folderScope(channel.websiteId, folder)
    if (exchange.path === PASSWORD_PATH && exchange.method === 'POST') return this.post(exchange, channel)
    // Where the visitor was going, read now: the query is gone once the request is detached.
    const query = exchange.query
    const next = exchange.path === PASSWORD_PATH ? '/' : `${exchange.path}${query === '' ? '' : `?${query}`}`
    if (admitted === 'basic') {
      // Credentials not checked yet draw from the same bucket as the form: a program may not guess faster than a person.
      const rate = this.limiter.take(`site-password:${channel.websiteId}:${this.clientAddress(exchange)}`, SITE_PASSWORD_RATE_LIMIT)
      if (!rate.allowed)
        return this.#refuse(exchange, next, `Too many tries; wait ${rate.retryAfterSeconds} seconds and try again.`, folder, 429, {
          'retry-after': String(rate.retryAfterSeconds),
        })
      const authorization = exchange.header('authorization')
      exchange.detach()
      passwords
        .checkBasic(scope, authorization)
        .then((ok) => (ok ? serve() : this.#refuse(exchange, next, 'Wrong password.', folder)))
        .catch((error: unknown) => {
          this.log.error('checking a site password failed', { error: String(error) })
          this.#refuse(exchange, next, 'The password could not be checked; try again.', folder)
        })
      return
    }
    this.#refuse(exchange, next, null, folder)
  }

  #refuse(
    exchange: Exchange,
    next: string,
    message: string | null,
    folder: string,
    status = 401,
    extra: Record<string, string> = {},
  ): void {
    exchange.send(
      status,
      {
        'content-type': 'text/html; charset=utf-8',
        'cache-control': 'no-store',
        'x-robots-tag': 'noindex',
        'x-frame-options': 'DENY',
        // A scheme browsers do not prompt for: they show the page and its form; programs send Basic.
        'www-authenticate': 'Form realm="site", charset="UTF-8"',
        ...extra,
      },
      page(next, message, folder),
    )
  }

  /** The password form's POST: the site's password, or (its `folder` field) a shared folder's. */
  post(exchange: Exchange, channel: Channel): void {
    const rate = this.limiter.take(`site-password:${channel.websiteId}:${this.clientAddress(exchange)}`, SITE_PASSWORD_RATE_LIMIT)
    exchange.detach()
    exchange
      .readBody(4096)
      .then(async (bytes) => {
        const form = new URLSearchParams(bytes.toString('utf8'))
        const next = localPath(form.get('next') ?? '/')
        const folder = form.get('folder') ?? ''
        const passwords = this.registry.sitePasswords
        // A folder's form lets into that folder only, and only one that has a password.
        const scope = folder === '' ? channel.websiteId : folderScope(channel.websiteId, folder)
        if (!passwords.locked(scope)) return this.#refuse(exchange, next, 'Nothing here asks for a password.', '', 400)
        if (!rate.allowed)
          return this.#refuse(exchange, next, `Too many tries; wait ${rate.retryAfterSeconds} seconds and try again.`, folder, 429, {
            'retry-after': String(rate.retryAfterSeconds),
          })
        if (!(await passwords.check(scope, form.get('password') ?? ''))) return this.#refuse(exchange, next, 'Wrong password.', folder)
        const cookie = passwords.cookieFor(scope)
        // `/<folder>` matches the folder's page with or without its slash and everything under it, never `/<folder>x` (RFC 6265 5.1.4).
        const path = folder === '' ? '/' : `/${folder.split('/').map(encodeURIComponent).join('/')}`
        exchange.send(303, {
          location: next,
          'cache-control': 'no-store',
          // Host-only (no Domain): it lets this host in (a folder's, that folder), never a sibling site or the dashboard.
          'set-cookie': `${PASSWORD_COOKIE}=${cookie.value}; Path=${path}; Max-Age=${cookie.maxAgeSeconds}; HttpOnly; SameSite=Lax${this.secureCookies ? '; Secure' : ''}`,
        })
      })
      .catch((error: unknown) => {
        if (!exchange.aborted) this.#refuse(exchange, '/', error instanceof Error ? error.message : 'The form could not be read.', '', 400)
      })
  }
}
