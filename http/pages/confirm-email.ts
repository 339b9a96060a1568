// The page of the link that confirms a new email address (sent to that address by the account screen).
import { html, redirect, sendPage } from '../html.js'
import type { Exchange } from '../uws.js'
import { linkScript } from './link-check.js'
import { formError, type PageDeps, type PageRequest } from './page.js'

/** GET {app}/confirm-email: the token in the fragment, checked when the page opens; one button confirms. */
export function confirmEmailPage(deps: PageDeps, exchange: Exchange, error: string | null = null, status = 200): void {
  sendPage(
    exchange,
    status,
    'Confirm your new email address',
    html`<h1>Confirm your new email address</h1><p id="link-state" role="status"></p>${formError(error)}
<form id="link-form" method="post" action="${deps.urls.appPath}/confirm-email"><input type="hidden" id="token" name="token">
<button type="submit">Use this address</button></form>
<p><a href="${deps.urls.appPath}">Go to the dashboard</a></p>`,
    {},
    linkScript(deps.urls.appPath, 'token', 'email'),
    "'self'",
    error === null ? undefined : `${deps.urls.appPath}/confirm-email`,
  )
}

/**
 * POST {app}/confirm-email: the person signs in with the new address from now on. Opening the link
 * proves the mailbox; it needs no session (it may be opened on a phone), and changes nothing else.
 */
export async function confirmEmail(deps: PageDeps, r: PageRequest): Promise<void> {
  const person = await deps.registry.account.confirmEmail(r.form.get('token') ?? '')
  deps.log.info('email address changed', { personId: person.id })
  const email = encodeURIComponent(person.email ?? '')
  redirect(
    r.exchange,
    r.person?.id === person.id
      ? `${deps.urls.appPath}/account?email_changed=1`
      : `${deps.urls.appPath}/sign-in?email_changed=1&email=${email}`,
  )
}
