// The dashboard at `{app_url}`: reads the session, checks form posts, and routes each path to its page or to the client's shell.
import { AMBIGUOUS_SESSION_MESSAGE, sessionOf } from '../actors/identity/auth.js'
import type { Registry } from '../actors/registry.js'
import { ApiError } from '../core/errors.js'
import type { PublicUrls } from '../core/hostnames.js'
import type { Logger } from '../core/log.js'
import type { RateLimiter } from '../core/rate-limit.js'
import { html, redirect, sendPage } from './html.js'
import { AppShell } from './app-shell.js'
import type { Exchange } from './uws.js'
import { claim, claimPage } from './pages/claim.js'
import { consentPage, decide } from './pages/consent.js'
import { acceptInvitation, invitePage } from './pages/invitations.js'
import { checkLink } from './pages/link-check.js'
import { sendFailure, type PageDeps, type PageRequest } from './pages/page.js'
import { sharedAnalytics } from './pages/shared-analytics.js'
import { completeSetup, setupPage, signIn, signInPage, signOut } from './pages/sign-in.js'
import { completeReset, forgotPage, requestReset, resetPage } from './pages/reset.js'
import { confirmEmail, confirmEmailPage } from './pages/confirm-email.js'
import { confirmNotify, notifyConfirmPage, UNSUBSCRIBE_PAGE, unsubscribe, unsubscribePage } from './pages/notify.js'

const FORM_MAX_BYTES = 16 * 1024

/**
 * The dashboard at `{app_url}`: pages rendered by Plinth as plain HTML forms posted back to it, so
 * sign-in, owner setup, invitations and the OAuth consent work without JavaScript, for scripts and
 * for tests over plain HTTP. A changing POST made with a session must come from the dashboard's own
 * origin (the Origin header), and a session cookie is HttpOnly, SameSite=Lax and Secure over https.
 */
/** The platform's icon: a plinth (a block on a wider base). */
const FAVICON =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect x="9" y="4" width="14" height="18" rx="2" fill="#1f2328"/>' +
  '<rect x="4" y="23" width="24" height="5" rx="1.5" fill="#1f883d"/></svg>'

export class Dashboard {
  readonly #deps: PageDeps

  constructor(
    registry: Registry,
    urls: PublicUrls,
    log: Logger,
    limiter: RateLimiter,
    resources: () => string[],
    /** The client's address (behind trusted proxies, from X-Forwarded-For): claims count per network. */
    clientAddress: (exchange: Exchange) => string,
  ) {
    this.#deps = { registry, urls, log, limiter, resources, clientAddress }
    this.#shell = new AppShell(urls.appPath)
  }

  /** The client of the REST API that draws every other screen (app/, built into dist/app). */
  readonly #shell: AppShell

  /** True when the path is the dashboard's (and the icon a browser asks its host for). */
  owns(path: string): boolean {
    const base = this.#deps.urls.appPath
    return path === base || path.startsWith(`${base}/`) || path === '/favicon.ico'
  }

  handle(exchange: Exchange): void {
    if (exchange.path === '/favicon.ico') {
      // Every page load of the dashboard, the docs and the sign-in pages asks for it: an icon, not a 404.
      return exchange.send(
        200,
        { 'content-type': 'image/svg+xml', 'cache-control': 'public, max-age=86400', 'x-content-type-options': 'nosniff' },
        FAVICON,
      )
    }
    const page = exchange.path.slice(this.#deps.urls.appPath.length).replace(/\/$/, '')
    const query = new URLSearchParams(exchange.query)
    const found = sessionOf(exchange.header('cookie'), this.#deps.urls.sessionCookie)
    const session = typeof found === 'object' ? found.secret : ''
    const person = session === '' ? undefined : this.#deps.registry.people.sessionPerson(session)
    const request: PageRequest = { exchange, page, query, form: new URLSearchParams(), person, session, ambiguous: found === 'ambiguous' }
    if (exchange.method === 'GET' || exchange.method === 'HEAD') return this.#get(request)
    if (exchange.method !== 'POST')
      return sendPage(exchange, 405, 'Method not allowed', html`<p>Use GET or POST.</p>`, { allow: 'GET, HEAD, POST' })
    const origin = exchange.header('origin')
    const contentType = exchange.header('content-type')
    // Kept for after the body arrives (the client's address behind a trusted proxy is in a header).
    exchange.captureHeaders()
    exchange.detach()
    exchange
      .readBody(FORM_MAX_BYTES)
      .then(async (body) => {
        // Forms from elsewhere never act: a browser sends Origin with every POST.
        if (origin !== '' && origin !== this.#deps.urls.appOrigin)
          throw new ApiError('forbidden', `This form may only be posted from ${this.#deps.urls.appOrigin}`, {
            reason: 'origin_not_trusted',
          })
        if (origin === '' && person !== undefined)
          throw new ApiError('forbidden', 'A signed-in form post must carry an Origin header', { reason: 'origin_not_trusted' })
        if (!/^application\/x-www-form-urlencoded\b/i.test(contentType))
          throw new ApiError('validation', 'Send the form as application/x-www-form-urlencoded')
        request.form = new URLSearchParams(body.toString('utf8'))
        await this.#post(request)
      })
      .catch((error: unknown) => this.#failed(request, error))
  }

  /** A form post that failed: the setup and invitation forms again, saying why and keeping what was typed. */
  #failed(r: PageRequest, error: unknown): void {
    const { exchange, page } = r
    if (error instanceof ApiError && !exchange.aborted) {
      // "password must be 10 to 200 characters long" → "Password must …": said to a person, not a program.
      const said = error.message.charAt(0).toUpperCase() + error.message.slice(1)
      if (page === '/invite') return invitePage(this.#deps, exchange, r.person, said, error.status, r.form)
      if (page === '/setup') return setupPage(this.#deps, exchange, said, error.status, r.form)
      if (page === '/reset') return resetPage(this.#deps, exchange, said, error.status)
      if (page === '/confirm-email') return confirmEmailPage(this.#deps, exchange, said, error.status)
      if (page === '/notify-confirm') return notifyConfirmPage(this.#deps, exchange, said, error.status)
    }
    sendFailure(this.#deps, exchange, page, error)
  }

  #get(r: PageRequest): void {
    const { exchange, page, query, person } = r
    switch (page) {
      case '/sign-in':
        return signInPage(
          this.#deps,
          exchange,
          200,
          query.get('next') ?? '',
          query.get('email') ?? '',
          r.ambiguous ? AMBIGUOUS_SESSION_MESSAGE : null,
          {},
          false,
          query.get('reset') === '1'
            ? 'Your password was changed and every session of your account was signed out: sign in with the new one.'
            : query.get('email_changed') === '1'
              ? 'Your new email address is confirmed: sign in with it from now on.'
              : null,
        )
      case '/setup':
        return setupPage(this.#deps, exchange)
      case '/forgot':
        return forgotPage(this.#deps, exchange)
      case '/reset':
        return resetPage(this.#deps, exchange)
      case '/confirm-email':
        return confirmEmailPage(this.#deps, exchange)
      case '/notify-confirm':
        return notifyConfirmPage(this.#deps, exchange)
      case '/invite':
        return invitePage(this.#deps, exchange, person, null)
      case '/oauth/authorize':
        return consentPage(this.#deps, r)
      case '/claim':
        return claimPage(this.#deps, exchange, person, null)
      default: {
        const shared = /^\/share\/analytics\/(ws_[a-z0-9]+)\/([A-Za-z0-9_-]{43})$/.exec(page)
        if (shared !== null) return sharedAnalytics(this.#deps, exchange, shared[1], shared[2])
        const unsubscribing = UNSUBSCRIBE_PAGE.exec(page)
        if (unsubscribing !== null) return unsubscribePage(this.#deps, exchange, unsubscribing[1])
        if (this.#shell.isAsset(page)) return this.#shell.asset(exchange, page)
        // Every other page is a screen of the client (app/), which calls the REST API with this session.
        if (person === undefined) {
          const here = `${exchange.path}${exchange.query === '' ? '' : `?${exchange.query}`}`
          return redirect(exchange, `${this.#deps.urls.appPath}/sign-in${page === '' ? '' : `?next=${encodeURIComponent(here)}`}`)
        }
        return this.#shell.page(exchange)
      }
    }
  }

  async #post(r: PageRequest): Promise<void> {
    const { exchange, page, person } = r
    switch (page) {
      case '/sign-in':
        return signIn(this.#deps, r)
      case '/sign-out':
        return signOut(this.#deps, r)
      case '/setup':
        return completeSetup(this.#deps, r)
      case '/forgot':
        return requestReset(this.#deps, r)
      case '/reset':
        return completeReset(this.#deps, r)
      case '/confirm-email':
        return confirmEmail(this.#deps, r)
      case '/notify-confirm':
        return confirmNotify(this.#deps, r)
      case '/invite':
        return acceptInvitation(this.#deps, r)
      case '/link-check':
        return checkLink(this.#deps, r)
      case '/oauth/authorize':
        return decide(this.#deps, r)
      case '/claim':
        return claim(this.#deps, r)
      default: {
        const unsubscribing = UNSUBSCRIBE_PAGE.exec(page)
        if (unsubscribing !== null) return unsubscribe(this.#deps, r, unsubscribing[1])
        if (person === undefined) return redirect(exchange, `${this.#deps.urls.appPath}/sign-in`)
        throw new ApiError('not_found', 'No such dashboard page: the dashboard changes things through the REST API')
      }
    }
  }
}
