// The sign-in, sign-out and owner setup pages.
import { PASSWORD_MIN_CHARS, SESSION_MAX_MS, SIGN_IN_RATE_LIMIT } from '../../core/limits.js'
import type { PublicUrls } from '../../core/hostnames.js'
import { html, redirect, sendPage } from '../html.js'
import { linkScript } from './link-check.js'
import type { Exchange, Headers } from '../uws.js'
import { deviceOf, formError, personField, sessionCookie, type PageDeps, type PageRequest } from './page.js'

/** Only a path of the dashboard itself, so the sign-in page is no open redirect. */
function safeNext(urls: PublicUrls, next: string): string {
  return next.startsWith(`${urls.appPath}/`) && !next.startsWith('//') && !/[\\\s]/.test(next) ? next : urls.appPath
}

/** The sign-in form, with an error above it when there is one. */
export function signInPage(
  deps: PageDeps,
  exchange: Exchange,
  status: number,
  next: string,
  email: string,
  error: string | null,
  headers: Headers = {},
  /** A refused post: a reload asks for the sign-in page (with `next`) instead of posting again. */
  refused = false,
  /** What happened before (a password just reset), said above the form. */
  notice: string | null = null,
): void {
  sendPage(
    exchange,
    status,
    'Sign in',
    html`<h1>Sign in to Plinth</h1>${notice === null ? '' : html`<p class="notice" role="status">${notice}</p>`}${formError(error)}
<form method="post" action="${deps.urls.appPath}/sign-in"><input type="hidden" name="next" value="${next}">
${personField('email', 'Email', { autocomplete: 'username', required: true, value: email })}
${personField('password', 'Password', { autocomplete: 'current-password', required: true })}
<button type="submit">Sign in</button></form>
<p><a href="${deps.urls.appPath}/forgot">Forgot your password?</a></p>`,
    headers,
    undefined,
    undefined,
    refused ? `${deps.urls.appPath}/sign-in${next === '' ? '' : `?next=${encodeURIComponent(next)}`}` : undefined,
  )
}

/** Signs in with email and password, within the per-address and per-email buckets. */
export async function signIn(deps: PageDeps, r: PageRequest): Promise<void> {
  const { exchange, form } = r
  const email = (form.get('email') ?? '').trim()
  const next = form.get('next') ?? ''
  // Per address and per email: guessing passwords stays slow from one place and against one account.
  const byAddress = deps.limiter.take(`sign-in:ip:${deps.clientAddress(exchange)}`, SIGN_IN_RATE_LIMIT)
  const byEmail = deps.limiter.take(`sign-in:email:${email.toLowerCase()}`, SIGN_IN_RATE_LIMIT)
  if (!byAddress.allowed || !byEmail.allowed) {
    const wait = Math.max(byAddress.retryAfterSeconds, byEmail.retryAfterSeconds)
    return signInPage(
      deps,
      exchange,
      429,
      next,
      email,
      `Too many sign-in attempts; try again in ${wait} seconds.`,
      { 'retry-after': String(wait) },
      true,
    )
  }
  const person = await deps.registry.people.verifyPassword(email, form.get('password') ?? '')
  // Never says whether the email exists.
  if (person === null) return signInPage(deps, exchange, 401, next, email, 'Wrong email or password.', {}, true)
  const session = await deps.registry.people.startSession(person.id, deviceOf(exchange))
  // Without a page to return to, into the workspace the person used last (one they joined, say).
  let to = safeNext(deps.urls, next)
  const last = person.lastWorkspaceId
  if (to === deps.urls.appPath && last !== undefined && deps.registry.people.role(person.id, last) !== undefined)
    to = `${deps.urls.appPath}?workspace=${encodeURIComponent(last)}`
  redirect(exchange, to, { 'set-cookie': sessionCookie(deps.urls, session, SESSION_MAX_MS) })
}

/**
 * Ends the request's session and goes back to the sign-in page; with `next` (a page of the dashboard,
 * such as the OAuth consent a "Not you?" left), signing in again returns there.
 */
export async function signOut(deps: PageDeps, r: PageRequest): Promise<void> {
  const { exchange, form } = r
  if (r.session !== '') await deps.registry.people.endSession(r.session)
  const next = safeNext(deps.urls, form.get('next') ?? '')
  const back = next === deps.urls.appPath ? '' : `?next=${encodeURIComponent(next)}`
  redirect(exchange, `${deps.urls.appPath}/sign-in${back}`, { 'set-cookie': sessionCookie(deps.urls, '', 0) })
}

/**
 * The owner's setup form (the setup code comes in the URL's fragment). After a failed post it says why
 * and keeps what was typed (`typed`: the posted form; never the password).
 */
export function setupPage(
  deps: PageDeps,
  exchange: Exchange,
  error: string | null = null,
  status = 200,
  typed = new URLSearchParams(),
): void {
  sendPage(
    exchange,
    status,
    'Set up your account',
    html`<h1>Set up the owner's account</h1><p>Choose the email and password you will sign in with. This link works once, for 24 hours.</p><p id="link-state" role="status"></p>${formError(error)}
<form id="link-form" method="post" action="${deps.urls.appPath}/setup"><label for="token">Setup code</label><input id="token" name="token" required autocomplete="off" value="${typed.get('token') ?? ''}">
${personField('name', 'Your name', { autocomplete: 'name', value: typed.get('name') ?? '' })}
${personField('email', 'Email', { autocomplete: 'email', required: true, value: typed.get('email') ?? '' })}
${personField('password', `Password (at least ${PASSWORD_MIN_CHARS} characters)`, { autocomplete: 'new-password', required: true, minlength: PASSWORD_MIN_CHARS })}
<button type="submit">Save and sign in</button></form>`,
    {},
    linkScript(deps.urls.appPath, 'token', 'setup'),
    "'self'",
    // Refused: a reload asks for the form (the link holds the code) rather than posting it again.
    error === null ? undefined : `${deps.urls.appPath}/setup`,
  )
}

/** Completes the owner's setup and signs them in. */
export async function completeSetup(deps: PageDeps, r: PageRequest): Promise<void> {
  const { exchange, form } = r
  const { person: set, session } = await deps.registry.people.completeSetup(
    form.get('token') ?? '',
    {
      email: form.get('email') ?? '',
      name: form.get('name') ?? undefined,
      password: form.get('password') ?? '',
    },
    deviceOf(exchange),
  )
  deps.log.info('owner setup completed', { personId: set.id })
  redirect(exchange, deps.urls.appPath, { 'set-cookie': sessionCookie(deps.urls, session, SESSION_MAX_MS) })
}
