import { AMBIGUOUS_SESSION_MESSAGE, sessionOf } from '../actors/auth.js'
import { SCOPE_ROLES, SCOPES } from '../actors/identity/oauth.js'
import { checkEmail, checkPassword } from '../actors/identity/people.js'
import type { Registry } from '../actors/registry.js'
import { ApiError } from '../core/errors.js'
import type { PublicUrls } from '../core/hostnames.js'
import { ANON_RATE_LIMITS, SESSION_MAX_MS, SIGN_IN_RATE_LIMIT } from '../core/limits.js'
import { networkOf } from './client-address.js'
import { anonymousBucketKey } from './anonymous.js'
import type { Logger } from '../core/log.js'
import type { RateLimiter } from '../core/rate-limit.js'
import { roleAtLeast } from '../core/roles.js'
import type { OAuthClientRecord, PersonRecord } from '../core/schemas/identity.js'
import { fragmentScript, Html, html, redirect, sendPage } from './html.js'
import { overview } from '../actors/analytics/overview.js'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { acceptableRedirectUri } from './oauth.js'
import { AppShell } from './app-shell.js'
import type { Exchange, Headers } from './uws.js'

const FORM_MAX_BYTES = 16 * 1024

/** uPlot (a small, well-kept chart library), inlined into the shared analytics page under its nonce; read on the first such page, not at start. */
let uplot: { js: string; css: string } | undefined
function uplotFiles(): { js: string; css: string } {
  if (uplot === undefined) {
    const dir = createRequire(import.meta.url)
      .resolve('uplot/dist/uPlot.iife.min.js')
      .replace(/uPlot\.iife\.min\.js$/, '')
    uplot = { js: readFileSync(`${dir}uPlot.iife.min.js`, 'utf8'), css: readFileSync(`${dir}uPlot.min.css`, 'utf8') }
  }
  return uplot
}

/** The parameters of an authorization request, as the consent form carries them along. */
const AUTHORIZE_PARAMS = [
  'response_type',
  'client_id',
  'redirect_uri',
  'code_challenge',
  'code_challenge_method',
  'state',
  'scope',
  'resource',
] as const

interface PageRequest {
  exchange: Exchange
  /** Path below the dashboard's path: '' for the dashboard itself, '/sign-in', … */
  page: string
  query: URLSearchParams
  form: URLSearchParams
  person: PersonRecord | undefined
  session: string
  /** The request carried two session cookies (one may be planted): treated as signed out, and told so. */
  ambiguous: boolean
}

/**
 * The dashboard at `{app_url}`: pages rendered by Plinth as plain HTML forms posted back to it, so
 * sign-in, owner setup, invitations and the OAuth consent work without JavaScript, for scripts and
 * for tests over plain HTTP. A changing POST made with a session must come from the dashboard's own
 * origin (the Origin header), and a session cookie is HttpOnly, SameSite=Lax and Secure over https.
 */
export class Dashboard {
  constructor(
    private readonly registry: Registry,
    private readonly urls: PublicUrls,
    private readonly log: Logger,
    private readonly limiter: RateLimiter,
    private readonly resources: () => string[],
    /** The client's address (behind trusted proxies, from X-Forwarded-For): claims count per network. */
    private readonly clientAddress: (exchange: Exchange) => string,
  ) {
    this.#shell = new AppShell(urls.appPath)
  }

  /** The client of the REST API that draws every other screen (app/, built into dist/app). */
  readonly #shell: AppShell

  /** True when the path is the dashboard's. */
  owns(path: string): boolean {
    const base = this.urls.appPath
    return path === base || path.startsWith(`${base}/`)
  }

  handle(exchange: Exchange): void {
    const page = exchange.path.slice(this.urls.appPath.length).replace(/\/$/, '')
    const query = new URLSearchParams(exchange.query)
    const found = sessionOf(exchange.header('cookie'), this.urls.sessionCookie)
    const session = typeof found === 'object' ? found.secret : ''
    const person = session === '' ? undefined : this.registry.people.sessionPerson(session)
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
        if (origin !== '' && origin !== this.urls.appOrigin)
          throw new ApiError('forbidden', `This form may only be posted from ${this.urls.appOrigin}`, { reason: 'origin_not_trusted' })
        if (origin === '' && person !== undefined)
          throw new ApiError('forbidden', 'A signed-in form post must carry an Origin header', { reason: 'origin_not_trusted' })
        if (!/^application\/x-www-form-urlencoded\b/i.test(contentType))
          throw new ApiError('validation', 'Send the form as application/x-www-form-urlencoded')
        request.form = new URLSearchParams(body.toString('utf8'))
        await this.#post(request)
      })
      .catch((error: unknown) => this.#failed(exchange, page, error))
  }

  #failed(exchange: Exchange, page: string, error: unknown): void {
    if (exchange.aborted) return
    if (!(error instanceof ApiError)) this.log.error('dashboard failed', { page, error: (error as Error)?.stack ?? String(error) })
    const status = error instanceof ApiError ? error.status : 500
    const message = error instanceof ApiError ? error.message : 'Something failed on our side; try again.'
    sendPage(
      exchange,
      status,
      'Could not do that',
      html`<h1>Could not do that</h1><p class="error">${message}</p><p><a href="${this.urls.appPath}">Back to the dashboard</a></p>`,
    )
  }

  #get(r: PageRequest): void {
    const { exchange, page, query, person } = r
    switch (page) {
      case '/sign-in':
        return this.#signInPage(
          exchange,
          200,
          query.get('next') ?? '',
          query.get('email') ?? '',
          r.ambiguous ? AMBIGUOUS_SESSION_MESSAGE : null,
        )
      case '/setup':
        return sendPage(
          exchange,
          200,
          'Set up your account',
          html`<h1>Set up the owner's account</h1><p>Choose the email and password you will sign in with. This link works once, for 24 hours.</p>
<form method="post" action="${this.urls.appPath}/setup"><label for="token">Setup code</label><input id="token" name="token" required autocomplete="off">
<label for="name">Your name</label><input id="name" name="name" autocomplete="name">
<label for="email">Email</label><input id="email" name="email" type="email" required autocomplete="email">
<label for="password">Password (at least 10 characters)</label><input id="password" name="password" type="password" required minlength="10" autocomplete="new-password">
<button type="submit">Save and sign in</button></form>`,
          {},
          fragmentScript('token'),
        )
      case '/invite':
        return this.#invitePage(exchange, person, null)
      case '/oauth/authorize':
        return this.#consentPage(r)
      case '/claim':
        return this.#claimPage(exchange, person, null)
      default: {
        const shared = /^\/share\/analytics\/(ws_[a-z0-9]+)\/([A-Za-z0-9_-]{43})$/.exec(page)
        if (shared !== null) return this.#sharedAnalytics(exchange, shared[1], shared[2])
        if (this.#shell.isAsset(page)) return this.#shell.asset(exchange, page)
        // Every other page is a screen of the client (app/), which calls the REST API with this session.
        if (person === undefined) {
          const here = `${exchange.path}${exchange.query === '' ? '' : `?${exchange.query}`}`
          return redirect(exchange, `${this.urls.appPath}/sign-in${page === '' ? '' : `?next=${encodeURIComponent(here)}`}`)
        }
        return this.#shell.page(exchange)
      }
    }
  }

  // Shared analytics

  /**
   * A website's read-only analytics dashboard behind its unguessable link (no sign-in): the last 30
   * days of page views drawn with uPlot, and the top pages, referrers, countries and devices. A wrong or
   * revoked link is the same 404 as an unknown page.
   */
  #sharedAnalytics(exchange: Exchange, websiteId: string, secret: string): void {
    const website = this.registry.website(websiteId)
    if (website === undefined || !this.registry.analyticsShares.matches(websiteId, secret)) {
      return sendPage(
        exchange,
        404,
        'Not found',
        html`<h1>Not found</h1><p>This dashboard link is not valid (it may have been revoked).</p>`,
      )
    }
    exchange.detach()
    Promise.all([this.registry.beacon.flush(), this.registry.tracker.flush()])
      .then(() => {
        const now = this.registry.clock.now()
        const from = now + 1 - 30 * 24 * 60 * 60 * 1000
        // Page views as the edge beacon counted them; the site's tracker adds visitors, bounces, browsers and events.
        const top = overview(this.registry.reads, {
          websiteId,
          from,
          to: now + 1,
          topN: 10,
          beacon: this.registry.beacon.enabled,
          tracker: this.registry.tracker.has(websiteId),
        })
        const series = top.series
        const table = (title: string, rows: { name: string; pageviews?: number; events?: number }[]) =>
          html`<section><h2>${title}</h2>${rows.length === 0 ? html`<p class="muted">Nothing yet.</p>` : html`<table>${rows.map((r) => html`<tr><td>${r.name}</td><td class="n">${String(r.pageviews ?? r.events ?? 0)}</td></tr>`)}</table>`}</section>`
        const data = JSON.stringify({ x: series.map((p) => p.x / 1000), y: series.map((p) => p.y) })
        const draw = `${uplotFiles().js};(()=>{const d=${data.replace(/</g, '\\u003c')};const el=document.getElementById('chart');new uPlot({width:Math.min(720,el.clientWidth||720),height:240,series:[{},{label:'Page views',stroke:'#0969da',fill:'rgba(9,105,218,0.1)'}],axes:[{},{}]},[d.x,d.y],el)})()`
        const t = top.totals
        const totals =
          t.visitors === null || t.bounces === null
            ? html`<p><strong id="total">${String(t.pageviews)}</strong> page views · ${String(t.visits)} visits</p>`
            : html`<p><strong id="total">${String(t.pageviews)}</strong> page views · <strong id="visitors">${String(t.visitors)}</strong> visitors · ${String(t.visits)} visits · ${t.visits === 0 ? '0' : String(Math.round((100 * t.bounces) / t.visits))}% bounce</p>`
        sendPage(
          exchange,
          200,
          `Analytics · ${website.record.name}`,
          html`<style>${new Html(uplotFiles().css)} table{border-collapse:collapse;width:100%}td{padding:.2rem .4rem;border-bottom:1px solid #d0d7de}td.n{text-align:right}section{margin-top:1.5rem}</style>
<h1>${website.record.name}</h1><p class="muted">${top.sources.visitors === null ? 'Page views of the last 30 days, counted at the edge (bots and previews left out).' : "The last 30 days: page views counted at the edge, visitors and events from the site's own tracker (no cookies; bots and previews left out)."} Read-only.</p>
${totals}<div id="chart"></div>
${table('Pages', top.pages)}${table('Referrers', top.referrers)}${table('Countries', top.countries)}${table('Devices', top.devices)}${top.browsers === null ? '' : table('Browsers', top.browsers)}${top.events === null ? '' : table('Events', top.events)}`,
          { 'x-robots-tag': 'noindex' },
          draw,
        )
      })
      .catch((error: unknown) => this.#failed(exchange, '/share/analytics', error))
  }

  async #post(r: PageRequest): Promise<void> {
    const { exchange, page, form, person } = r
    switch (page) {
      case '/sign-in':
        return this.#signIn(r)
      case '/sign-out':
        if (r.session !== '') await this.registry.people.endSession(r.session)
        return redirect(exchange, `${this.urls.appPath}/sign-in`, { 'set-cookie': this.#cookie('', 0) })
      case '/setup': {
        const { person: set, session } = await this.registry.people.completeSetup(form.get('token') ?? '', {
          email: form.get('email') ?? '',
          name: form.get('name') ?? undefined,
          password: form.get('password') ?? '',
        })
        this.log.info('owner setup completed', { personId: set.id })
        return redirect(exchange, this.urls.appPath, { 'set-cookie': this.#cookie(session, SESSION_MAX_MS) })
      }
      case '/invite':
        return this.#acceptInvitation(r)
      case '/oauth/authorize':
        return this.#decide(r)
      case '/claim':
        return this.#claim(r)
      default: {
        if (person === undefined) return redirect(exchange, `${this.urls.appPath}/sign-in`)
        throw new ApiError('not_found', 'No such dashboard page: the dashboard changes things through the REST API')
      }
    }
  }

  #cookie(value: string, maxAgeMs: number): string {
    // Host-only (no Domain) and Path=/; over https `__Host-` and Secure (PublicUrls.sessionCookie).
    return `${this.urls.sessionCookie}=${value}; Path=/; HttpOnly; SameSite=Lax; Max-Age=${Math.floor(maxAgeMs / 1000)}${this.urls.secureCookies ? '; Secure' : ''}`
  }

  /** Only a path of the dashboard itself, so the sign-in page is no open redirect. */
  #safeNext(next: string): string {
    return next.startsWith(`${this.urls.appPath}/`) && !next.startsWith('//') && !/[\\\s]/.test(next) ? next : this.urls.appPath
  }

  // Sign-in

  #signInPage(exchange: Exchange, status: number, next: string, email: string, error: string | null, headers: Headers = {}): void {
    sendPage(
      exchange,
      status,
      'Sign in',
      html`<h1>Sign in to Plinth</h1>${error === null ? '' : html`<p class="error" role="alert">${error}</p>`}
<form method="post" action="${this.urls.appPath}/sign-in"><input type="hidden" name="next" value="${next}">
<label for="email">Email</label><input id="email" name="email" type="email" required autocomplete="username" value="${email}">
<label for="password">Password</label><input id="password" name="password" type="password" required autocomplete="current-password">
<button type="submit">Sign in</button></form>`,
      headers,
    )
  }

  async #signIn(r: PageRequest): Promise<void> {
    const { exchange, form } = r
    const email = (form.get('email') ?? '').trim()
    const next = form.get('next') ?? ''
    // Per address and per email: guessing passwords stays slow from one place and against one account.
    const byAddress = this.limiter.take(`sign-in:ip:${this.clientAddress(exchange)}`, SIGN_IN_RATE_LIMIT)
    const byEmail = this.limiter.take(`sign-in:email:${email.toLowerCase()}`, SIGN_IN_RATE_LIMIT)
    if (!byAddress.allowed || !byEmail.allowed) {
      const wait = Math.max(byAddress.retryAfterSeconds, byEmail.retryAfterSeconds)
      return this.#signInPage(exchange, 429, next, email, `Too many sign-in attempts; try again in ${wait} seconds.`, {
        'retry-after': String(wait),
      })
    }
    const person = await this.registry.people.verifyPassword(email, form.get('password') ?? '')
    // Never says whether the email exists.
    if (person === null) return this.#signInPage(exchange, 401, next, email, 'Wrong email or password.')
    const session = await this.registry.people.startSession(person.id)
    redirect(exchange, this.#safeNext(next), { 'set-cookie': this.#cookie(session, SESSION_MAX_MS) })
  }

  // Home

  #claimPage(exchange: Exchange, person: PersonRecord | undefined, error: string | null, status = 200): void {
    const who =
      person === undefined
        ? html`<p>Sign in to keep this site, or create your account (a new email creates one).</p>
<label for="email">Email</label><input id="email" name="email" type="email" autocomplete="username">
<label for="name">Your name (new accounts)</label><input id="name" name="name" autocomplete="name">
<label for="password">Password (at least 10 characters for a new account)</label><input id="password" name="password" type="password" autocomplete="current-password">`
        : html`<p>Signed in as ${person.email ?? person.name}: the site goes to your personal workspace.</p>`
    const status_ = this.urls.api('/public/v1/anonymous/sites/current')
    // Shows what is being claimed; the form works without it.
    const preview = `${fragmentScript('token')};(()=>{const i=document.querySelector('input[name=token]');const t=i&&i.value;if(!t)return;fetch(${JSON.stringify(status_)},{headers:{authorization:'Bearer '+t}}).then(r=>r.json()).then(s=>{const p=document.getElementById('site');if(!p)return;if(s.name){p.textContent='';const b=document.createElement('strong');b.textContent=s.name;p.append(b,' ',s.urls&&s.urls.published?s.urls.published:'(offline until claimed)')}else if(s.message){p.textContent=s.message}}).catch(()=>{})})()`
    sendPage(
      exchange,
      status,
      'Claim a website',
      html`<h1>Claim a website</h1>${error === null ? '' : html`<p class="error">${error}</p>`}<p id="site" class="muted">A website published by an agent without an account.</p>
<form method="post" action="${this.urls.appPath}/claim"><label for="token">Site token</label><input id="token" name="token" required autocomplete="off">${who}<button type="submit">Claim website</button></form>`,
      {},
      preview,
      `'self' ${new URL(status_).origin}`,
    )
  }

  async #claim(r: PageRequest): Promise<void> {
    const { exchange, form } = r
    const token = (form.get('token') ?? '').trim()
    const byNetwork = this.limiter.take(
      anonymousBucketKey('networkClaims', `net:${networkOf(this.clientAddress(exchange))}`),
      ANON_RATE_LIMITS.networkClaims,
    )
    if (!byNetwork.allowed)
      throw new ApiError('rate_limited', `Too many claims from your network; try again in ${byNetwork.retryAfterSeconds} seconds`)
    // The token first: nothing happens to accounts for a token that claims nothing.
    const credential = this.registry.anonymous.byToken(token)
    if (credential === undefined)
      return this.#claimPage(
        exchange,
        r.person,
        'No website has this token. Check that the whole link was copied, #token= part included.',
        404,
      )
    let person = r.person
    const headers: Headers = {}
    if (person === undefined) {
      // A spent or empty credential is refused before any sign-in or account is made for it.
      this.registry.anonymous.usable(credential)
      if (credential.websiteId === null && credential.storageId === null)
        return this.#claimPage(exchange, undefined, 'This token has published nothing yet, so there is nothing to claim.', 404)
      const email = (form.get('email') ?? '').trim()
      const password = form.get('password') ?? ''
      // The sign-in page's buckets: per address (account creation included) and per email.
      const byAddress = this.limiter.take(`sign-in:ip:${this.clientAddress(exchange)}`, SIGN_IN_RATE_LIMIT)
      const byEmail = this.limiter.take(`sign-in:email:${email.toLowerCase()}`, SIGN_IN_RATE_LIMIT)
      if (!byAddress.allowed || !byEmail.allowed) {
        const wait = Math.max(byAddress.retryAfterSeconds, byEmail.retryAfterSeconds)
        return this.#claimPage(exchange, undefined, `Too many sign-in attempts; try again in ${wait} seconds.`, 429)
      }
      if (this.registry.people.personByEmail(email) !== undefined) {
        const verified = await this.registry.people.verifyPassword(email, password)
        if (verified === null) return this.#claimPage(exchange, undefined, 'Wrong email or password.', 401)
        person = verified
      } else {
        checkEmail(email, 'email')
        checkPassword(password, 'password')
        person = await this.registry.people.addPerson({ email, name: (form.get('name') ?? '').trim() || email, password })
      }
      headers['set-cookie'] = this.#cookie(await this.registry.people.startSession(person.id), SESSION_MAX_MS)
    }
    const outcome = await this.registry.anonymous.claim(token, person, { kind: 'user', id: person.id, name: person.name })
    const website = outcome.website
    const live = website === null || website.offline != null ? null : this.urls.published(website.subdomain)
    const held = website?.held === true
    sendPage(
      exchange,
      200,
      'Website claimed',
      html`<h1>${outcome.alreadyClaimed ? 'Already yours' : 'Website claimed'}</h1><p><strong>${website?.name ?? 'Your shared files'}</strong> ${outcome.alreadyClaimed ? 'was already claimed into' : 'is now in'} ${outcome.workspace.name}${live === null ? '' : html`, at <a href="${live}">${live}</a>`}.</p>
${held ? html`<p class="notice">Your plan has no room for it, so it is held: it stays online until its 24-hour preview ends, then goes offline until you upgrade and activate it. <a href="${this.urls.appPath}/billing">Upgrade</a></p>` : ''}
<p><a href="${this.urls.appPath}">Go to the dashboard</a></p>`,
      headers,
    )
  }

  // Invitations

  #invitePage(exchange: Exchange, person: PersonRecord | undefined, error: string | null, status = 200): void {
    const who =
      person === undefined
        ? html`<p>Sign in with the invited email, or create your account with it.</p>
<label for="email">Email (the invited one)</label><input id="email" name="email" type="email" autocomplete="username">
<label for="name">Your name (new accounts)</label><input id="name" name="name" autocomplete="name">
<label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password">`
        : html`<p>You are signed in as ${person.email}.</p>`
    sendPage(
      exchange,
      status,
      'Accept invitation',
      html`<h1>Accept an invitation</h1>${error === null ? '' : html`<p class="error">${error}</p>`}<form method="post" action="${this.urls.appPath}/invite">
<label for="code">Invitation code</label><input id="code" name="code" required autocomplete="off">${who}<button type="submit">Accept</button></form>`,
      {},
      fragmentScript('code'),
    )
  }

  async #acceptInvitation(r: PageRequest): Promise<void> {
    const { exchange, form } = r
    const code = form.get('code') ?? ''
    const invitation = this.registry.teams.invitationByCode(code)
    let person = r.person
    const headers: Headers = {}
    if (person === undefined) {
      const password = form.get('password') ?? ''
      const existing = this.registry.people.personByEmail(invitation.email)
      if (existing !== undefined) {
        const byAddress = this.limiter.take(`sign-in:ip:${this.clientAddress(exchange)}`, SIGN_IN_RATE_LIMIT)
        if (!byAddress.allowed)
          throw new ApiError('rate_limited', `Too many sign-in attempts; try again in ${byAddress.retryAfterSeconds} seconds`)
        const verified = await this.registry.people.verifyPassword(invitation.email, password)
        if (verified === null) return this.#invitePage(exchange, undefined, 'Wrong email or password.', 401)
        person = verified
      } else {
        checkEmail(invitation.email, 'email')
        checkPassword(password, 'password')
        person = await this.registry.people.addPerson({
          email: invitation.email,
          name: (form.get('name') ?? '').trim() || invitation.email,
          password,
        })
      }
      headers['set-cookie'] = this.#cookie(await this.registry.people.startSession(person.id), SESSION_MAX_MS)
    }
    await this.registry.teams.accept(code, person)
    redirect(exchange, this.urls.appPath, headers)
  }

  // OAuth consent (the authorization endpoint)

  /**
   * Checks an authorization request. A bad client or redirect URI is shown here and never redirected
   * to (no code is issued to an unregistered address); other problems go back to the client.
   */
  #authorizeRequest(
    params: URLSearchParams,
  ):
    | { ok: true; client: OAuthClientRecord; redirectUri: string; scope: string; resource: string }
    | { ok: false; page: string }
    | { ok: false; redirect: string } {
    const client = this.registry.oauth.client(params.get('client_id') ?? '')
    if (client === undefined)
      return { ok: false, page: 'Unknown client_id: the application must register first (dynamic client registration).' }
    const redirectUri = params.get('redirect_uri') ?? (client.redirectUris.length === 1 ? client.redirectUris[0] : '')
    if (!client.redirectUris.includes(redirectUri) || !acceptableRedirectUri(redirectUri)) {
      return { ok: false, page: 'redirect_uri does not exactly match a redirect URI the application registered; no code is issued.' }
    }
    const back = (error: string, description: string) => {
      const url = new URL(redirectUri)
      url.searchParams.set('error', error)
      url.searchParams.set('error_description', description)
      const state = params.get('state')
      if (state !== null) url.searchParams.set('state', state)
      url.searchParams.set('iss', this.urls.apiOrigin)
      return { ok: false as const, redirect: url.href }
    }
    if (params.get('response_type') !== 'code') return back('unsupported_response_type', 'response_type must be code')
    if ((params.get('code_challenge') ?? '') === '' || params.get('code_challenge_method') !== 'S256') {
      return back('invalid_request', 'PKCE is required with code_challenge_method=S256 (plain is refused)')
    }
    if (!/^[A-Za-z0-9_-]{43}$/.test(params.get('code_challenge')!))
      return back('invalid_request', 'code_challenge must be a base64url SHA-256 (43 characters)')
    const resource = params.get('resource') ?? this.resources()[0]
    if (!this.resources().includes(resource)) return back('invalid_target', `resource must be one of ${this.resources().join(', ')}`)
    const requested = (params.get('scope') ?? '').split(' ').filter((s) => s !== '')
    const unknown = requested.find((s) => !SCOPES.includes(s))
    if (unknown !== undefined) return back('invalid_scope', `Unknown scope ${unknown}; scopes are ${SCOPES.join(', ')}`)
    // Several scopes: the strongest asked for is what the person may grant (or lower).
    const scope =
      requested.length === 0 ? 'platform:edit' : requested.reduce((a, b) => (roleAtLeast(SCOPE_ROLES[b], SCOPE_ROLES[a]) ? b : a))
    return { ok: true, client, redirectUri, scope, resource }
  }

  #consentPage(r: PageRequest): void {
    const { exchange, query, person } = r
    const checked = this.#authorizeRequest(query)
    if (!checked.ok) {
      if ('redirect' in checked) return redirect(exchange, checked.redirect)
      return sendPage(exchange, 400, 'Authorization refused', html`<h1>Authorization refused</h1><p class="error">${checked.page}</p>`)
    }
    if (person === undefined) {
      const next = `${this.urls.appPath}/oauth/authorize?${query.toString()}`
      return redirect(exchange, `${this.urls.appPath}/sign-in?next=${encodeURIComponent(next)}`)
    }
    const workspaces = this.registry.people.workspaces(person.id)
    const hidden = AUTHORIZE_PARAMS.map((name) =>
      query.get(name) === null ? '' : html`<input type="hidden" name="${name}" value="${query.get(name)!}">`,
    )
    sendPage(
      exchange,
      200,
      'Authorize application',
      html`<h1>Connect ${checked.client.name}?</h1><p><strong>${checked.client.name}</strong> wants to act for you, ${person.name}, on Plinth: it asks for <code>${checked.scope}</code>. It will be able to do what the scope allows, never more than your own role.</p>
<p class="muted">It will be sent back to ${new URL(checked.redirectUri).origin}.</p>
<form method="post" action="${this.urls.appPath}/oauth/authorize">${hidden}
<label for="organization">Workspace</label><select id="organization" name="organization">${workspaces.map((w) => html`<option value="${w.id}">${w.name} (${w.role})</option>`)}</select>
<label for="grant_scope">Access</label><select id="grant_scope" name="grant_scope">${SCOPES.filter((s) =>
        roleAtLeast(SCOPE_ROLES[checked.scope], SCOPE_ROLES[s]),
      ).map((s) => html`<option value="${s}"${s === checked.scope ? html` selected` : ''}>${s}: ${describeScope(s)}</option>`)}</select>
<button type="submit" name="decision" value="approve">Allow</button> <button class="secondary" type="submit" name="decision" value="deny">Deny</button></form>`,
    )
  }

  async #decide(r: PageRequest): Promise<void> {
    const { exchange, form, person } = r
    const checked = this.#authorizeRequest(form)
    if (!checked.ok) {
      if ('redirect' in checked) return redirect(exchange, checked.redirect)
      throw new ApiError('validation', checked.page)
    }
    if (person === undefined) throw new ApiError('unauthorized', 'Sign in first, then authorize the application again')
    const back = new URL(checked.redirectUri)
    const state = form.get('state')
    if (state !== null) back.searchParams.set('state', state)
    back.searchParams.set('iss', this.urls.apiOrigin)
    if (form.get('decision') !== 'approve') {
      back.searchParams.set('error', 'access_denied')
      back.searchParams.set('error_description', 'The person denied the request')
      return redirect(exchange, back.href)
    }
    const orgId = form.get('organization') ?? person.personalOrgId
    const role = this.registry.people.role(person.id, orgId)
    if (role === undefined) throw new ApiError('not_found', `Workspace ${orgId} is not one of yours`)
    const scope = form.get('grant_scope') ?? checked.scope
    if (!SCOPES.includes(scope) || !roleAtLeast(SCOPE_ROLES[checked.scope], SCOPE_ROLES[scope]))
      throw new ApiError('validation', `Access ${scope} is not one the application asked for`)
    if (!roleAtLeast(role, SCOPE_ROLES[scope])) {
      throw new ApiError(
        'forbidden',
        `Your role in this workspace is ${role}; ${scope} needs ${SCOPE_ROLES[scope]}. Choose a narrower access.`,
      )
    }
    const code = await this.registry.oauth.authorize({
      client: checked.client,
      personId: person.id,
      personName: person.name,
      orgId,
      scope,
      resource: checked.resource,
      redirectUri: checked.redirectUri,
      codeChallenge: form.get('code_challenge')!,
    })
    back.searchParams.set('code', code)
    redirect(exchange, back.href)
  }
}

function describeScope(scope: string): string {
  return (
    {
      'platform:content': 'content only (CMS items, assets)',
      'platform:edit': 'edit and publish websites',
      'platform:admin': 'everything, including API keys and members',
    }[scope] ?? scope
  )
}
