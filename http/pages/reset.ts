// "Forgot your password?": the request page, and the page of the link the mail carries.
import { PASSWORD_MIN_CHARS, SIGN_IN_RATE_LIMIT } from '../../core/limits.js'
import { html, redirect, sendPage } from '../html.js'
import type { Exchange } from '../uws.js'
import { linkScript } from './link-check.js'
import { formError, personField, type PageDeps, type PageRequest } from './page.js'

/** What the request page says when this server sends no mail: who can help instead. */
function mailOff(deps: PageDeps): string | null {
  return deps.registry.mail.sending
    ? null
    : 'This server sends no email (its operator has not set PLINTH_SMTP_URL). The reset link still waits for you there: ask the operator, who can print it with plinth mail list and plinth mail show, or set a new password for you with plinth user reset-password.'
}

/** GET {app}/forgot: an email field; what happens next said before it is filled. */
export function forgotPage(
  deps: PageDeps,
  exchange: Exchange,
  status = 200,
  said: string | null = null,
  error: string | null = null,
  email = '',
): void {
  const off = mailOff(deps)
  sendPage(
    exchange,
    status,
    'Forgot your password?',
    html`<h1>Forgot your password?</h1>${said === null ? '' : html`<p class="notice" role="status">${said}</p>`}${formError(error)}
<p>Give the email address you sign in with: a link to choose a new password is sent to it, and works for 30 minutes.</p>${off === null ? '' : html`<p class="notice">${off}</p>`}
<form method="post" action="${deps.urls.appPath}/forgot">
${personField('email', 'Email', { autocomplete: 'username', required: true, value: email })}
<button type="submit">Send the link</button></form>
<p><a href="${deps.urls.appPath}/sign-in">Back to sign-in</a></p>`,
  )
}

/**
 * POST {app}/forgot: the same answer whether or not the address has an account, given before the
 * lookup and the mail are done (so it takes the same time either way); limited per client and per address.
 */
export function requestReset(deps: PageDeps, r: PageRequest): void {
  const { exchange, form } = r
  const email = (form.get('email') ?? '').trim()
  const byAddress = deps.limiter.take(`reset:ip:${deps.clientAddress(exchange)}`, SIGN_IN_RATE_LIMIT)
  const byEmail = deps.limiter.take(`reset:email:${email.toLowerCase()}`, SIGN_IN_RATE_LIMIT)
  if (!byAddress.allowed || !byEmail.allowed) {
    const wait = Math.max(byAddress.retryAfterSeconds, byEmail.retryAfterSeconds)
    return forgotPage(deps, exchange, 429, null, `Too many requests; try again in ${wait} seconds.`, email)
  }
  void deps.registry.resets
    .request(email)
    .catch((error: unknown) => deps.log.error('a password reset request failed', { error: (error as Error)?.stack ?? String(error) }))
  forgotPage(
    deps,
    exchange,
    200,
    `If an account signs in with ${email}, a link to choose a new password is on its way to it. It works once, for 30 minutes. Nothing came? Look in the spam folder, or ask again in a few minutes.`,
  )
}

/** GET {app}/reset: the link's page (the token in the fragment, checked when the page opens). */
export function resetPage(deps: PageDeps, exchange: Exchange, error: string | null = null, status = 200): void {
  sendPage(
    exchange,
    status,
    'Choose a new password',
    html`<h1>Choose a new password</h1><p id="link-state" role="status"></p>${formError(error)}
<form id="link-form" method="post" action="${deps.urls.appPath}/reset"><input type="hidden" id="token" name="token">
${personField('password', `New password (at least ${PASSWORD_MIN_CHARS} characters)`, { autocomplete: 'new-password', required: true, minlength: PASSWORD_MIN_CHARS })}
<button type="submit">Save the new password</button></form>
<p><a href="${deps.urls.appPath}/forgot">Ask for a new link</a></p>`,
    {},
    linkScript(deps.urls.appPath, 'token', 'reset'),
    "'self'",
    error === null ? undefined : `${deps.urls.appPath}/reset`,
  )
}

/** POST {app}/reset: spends the link, sets the password (every session ends), and goes to sign-in saying so. */
export async function completeReset(deps: PageDeps, r: PageRequest): Promise<void> {
  const { exchange, form } = r
  const person = await deps.registry.resets.reset(form.get('token') ?? '', form.get('password') ?? '')
  deps.log.info('password reset', { personId: person.id })
  redirect(exchange, `${deps.urls.appPath}/sign-in?reset=1&email=${encodeURIComponent(person.email ?? '')}`)
}
