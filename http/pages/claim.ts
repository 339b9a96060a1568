// The claim page: a person keeps a site published anonymously, signing in or creating the account on the way.
import { checkEmail, checkPassword } from '../../actors/identity/people.js'
import { ANON_RATE_LIMITS, PASSWORD_MIN_CHARS, SESSION_MAX_MS, SIGN_IN_RATE_LIMIT } from '../../core/limits.js'
import type { PersonRecord } from '../../core/schemas/identity.js'
import { anonymousBucketKey } from '../anonymous.js'
import { networkOf } from '../client-address.js'
import { fragmentScript, html, sendPage } from '../html.js'
import { rateLimitedError } from '../respond.js'
import type { Exchange, Headers } from '../uws.js'
import { deviceOf, formError, personField, sessionCookie, type PageDeps, type PageRequest } from './page.js'

/**
 * The claim form; a script shows what the token would claim (the form works without it). A signed-in
 * person is told whom the site goes to, with a way out ("Not you? Sign out") that keeps the token.
 */
export function claimPage(
  deps: PageDeps,
  exchange: Exchange,
  person: PersonRecord | undefined,
  error: string | null,
  status = 200,
  token = '',
  headers: Headers = {},
): void {
  const who =
    person === undefined
      ? html`<p>Sign in to keep this site, or create your account (a new email creates one).</p>
${personField('email', 'Email', { autocomplete: 'username' })}
${personField('name', 'Your name (new accounts)', { autocomplete: 'name' })}
${personField('password', `Password (at least ${PASSWORD_MIN_CHARS} characters for a new account)`, { autocomplete: 'current-password' })}`
      : html`<p>Signed in as <strong>${person.name}</strong>${person.email === null || person.email === undefined ? '' : html` (${person.email})`}: the site goes to your personal workspace.</p>`
  // Posts the token back with the sign-out, so the signed-out page still holds it (it never goes in a URL).
  const notYou =
    person === undefined
      ? ''
      : html`<form method="post" action="${deps.urls.appPath}/claim"><input type="hidden" name="token" value="${token}"><button class="secondary" type="submit" name="intent" value="sign-out">Not you? Sign out</button></form>`
  const status_ = deps.urls.api('/public/v1/anonymous/sites/current')
  // Shows what is being claimed; the form works without it.
  const preview = `${fragmentScript('token')};(()=>{const i=document.querySelector('input[name=token]');const t=i&&i.value;if(!t)return;fetch(${JSON.stringify(status_)},{headers:{authorization:'Bearer '+t}}).then(r=>r.json()).then(s=>{const p=document.getElementById('site');if(!p)return;if(s.name){p.textContent='';const b=document.createElement('strong');b.textContent=s.name;p.append(b,' ',s.urls&&s.urls.published?s.urls.published:'(offline until claimed)')}else if(s.message){p.textContent=s.message}}).catch(()=>{})})()`
  sendPage(
    exchange,
    status,
    'Claim a website',
    html`<h1>Claim a website</h1>${formError(error)}<p id="site" class="muted">A website published by an agent without an account.</p>
<form method="post" action="${deps.urls.appPath}/claim"><label for="token">Site token</label><input id="token" name="token" required autocomplete="off" value="${token}">${who}<button type="submit">Claim website</button></form>${notYou}`,
    headers,
    preview,
    `'self' ${new URL(status_).origin}`,
  )
}

/** Claims the token's sites for the signed-in person, or signs in (or creates) the person first. */
export async function claim(deps: PageDeps, r: PageRequest): Promise<void> {
  const { exchange, form } = r
  const token = (form.get('token') ?? '').trim()
  if (form.get('intent') === 'sign-out') {
    // "Not you?": the session ends and the same page asks who is claiming, the token kept in the form.
    if (r.session !== '') await deps.registry.people.endSession(r.session)
    return claimPage(deps, exchange, undefined, null, 200, token, { 'set-cookie': sessionCookie(deps.urls, '', 0) })
  }
  const byNetwork = deps.limiter.take(
    anonymousBucketKey('networkClaims', `net:${networkOf(deps.clientAddress(exchange))}`),
    ANON_RATE_LIMITS.networkClaims,
  )
  if (!byNetwork.allowed) throw rateLimitedError(byNetwork, 'Too many claims from your network')
  // The token first: nothing happens to accounts for a token that claims nothing.
  const credential = deps.registry.anonymous.byToken(token)
  if (credential === undefined)
    return claimPage(
      deps,
      exchange,
      r.person,
      'No website has this token. Check that the whole link was copied, #token= part included.',
      404,
      token,
    )
  let person = r.person
  const headers: Headers = {}
  if (person === undefined) {
    // A spent or empty credential is refused before any sign-in or account is made for it.
    deps.registry.anonymous.usable(credential)
    if (credential.websiteId === null && credential.storageId === null)
      return claimPage(deps, exchange, undefined, 'This token has published nothing yet, so there is nothing to claim.', 404, token)
    const email = (form.get('email') ?? '').trim()
    const password = form.get('password') ?? ''
    // The sign-in page's buckets: per address (account creation included) and per email.
    const byAddress = deps.limiter.take(`sign-in:ip:${deps.clientAddress(exchange)}`, SIGN_IN_RATE_LIMIT)
    const byEmail = deps.limiter.take(`sign-in:email:${email.toLowerCase()}`, SIGN_IN_RATE_LIMIT)
    if (!byAddress.allowed || !byEmail.allowed) {
      const wait = Math.max(byAddress.retryAfterSeconds, byEmail.retryAfterSeconds)
      return claimPage(deps, exchange, undefined, `Too many sign-in attempts; try again in ${wait} seconds.`, 429, token)
    }
    if (deps.registry.people.personByEmail(email) !== undefined) {
      const verified = await deps.registry.people.verifyPassword(email, password)
      if (verified === null) return claimPage(deps, exchange, undefined, 'Wrong email or password.', 401, token)
      person = verified
    } else {
      checkEmail(email, 'email')
      checkPassword(password, 'password')
      person = await deps.registry.people.addPerson({ email, name: (form.get('name') ?? '').trim() || email, password })
    }
    headers['set-cookie'] = sessionCookie(deps.urls, await deps.registry.people.startSession(person.id, deviceOf(exchange)), SESSION_MAX_MS)
  }
  const outcome = await deps.registry.anonymous.claim(token, person, { kind: 'user', id: person.id, name: person.name })
  const website = outcome.website
  const live = website === null || website.offline != null ? null : deps.urls.published(website.subdomain)
  const held = website?.held === true
  sendPage(
    exchange,
    200,
    'Website claimed',
    html`<h1>${outcome.alreadyClaimed ? 'Already yours' : 'Website claimed'}</h1><p><strong>${website?.name ?? 'Your shared files'}</strong> ${outcome.alreadyClaimed ? 'was already claimed into' : 'is now in'} ${outcome.workspace.name}${live === null ? '' : html`, at <a href="${live}">${live}</a>`}.</p>
${held ? html`<p class="notice">Your plan has no room for it, so it is held: it stays online until its 24-hour preview ends, then goes offline until you upgrade and activate it. <a href="${deps.urls.appPath}/billing">Upgrade</a></p>` : ''}
<p><a href="${deps.urls.appPath}">Go to the dashboard</a></p>`,
    headers,
  )
}
