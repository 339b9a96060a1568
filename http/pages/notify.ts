// The pages of a form's notification mail: confirming an address (the link sent to it), and unsubscribing (one click, RFC 8058).
import { html, sendPage } from '../html.js'
import type { Exchange } from '../uws.js'
import { linkScript } from './link-check.js'
import { formError, type PageDeps, type PageRequest } from './page.js'

/** The path of an unsubscribe link below the dashboard: `/unsubscribe/{what it names}.{its MAC}`. */
export const UNSUBSCRIBE_PAGE = /^\/unsubscribe\/([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)$/

/** GET {app}/notify-confirm: the token in the fragment, checked when the page opens; one button confirms. */
export function notifyConfirmPage(deps: PageDeps, exchange: Exchange, error: string | null = null, status = 200): void {
  sendPage(
    exchange,
    status,
    'Receive form submissions',
    html`<h1>Receive a form's submissions</h1><p id="link-state" role="status"></p>${formError(error)}
<form id="link-form" method="post" action="${deps.urls.appPath}/notify-confirm"><input type="hidden" id="token" name="token">
<button type="submit">Send them to me</button></form>`,
    {},
    linkScript(deps.urls.appPath, 'token', 'notify'),
    "'self'",
    error === null ? undefined : `${deps.urls.appPath}/notify-confirm`,
  )
}

/** POST {app}/notify-confirm: the address receives the form's submissions from now on. */
export async function confirmNotify(deps: PageDeps, r: PageRequest): Promise<void> {
  const done = await deps.registry.forms.notifications.confirm(r.form.get('token') ?? '')
  const site = deps.registry.website(done.websiteId)?.record.name ?? 'the site'
  sendPage(
    r.exchange,
    200,
    'Confirmed',
    html`<h1>Confirmed</h1><p class="notice" role="status">${done.email} receives the submissions of the form ${done.form} on ${site} from now on. Each message has a link to stop them.</p>`,
  )
}

/** GET {app}/unsubscribe/{token}: what the link stops, and a button (a link opened is never an unsubscribe by itself). */
export function unsubscribePage(deps: PageDeps, exchange: Exchange, token: string): void {
  const named = deps.registry.forms.notifications.unsubscribeOf(token)
  if (named === null)
    return sendPage(
      exchange,
      404,
      'Not a valid link',
      html`<h1>Not a valid link</h1><p class="error">This unsubscribe link is not valid; the message it came in has another.</p>`,
    )
  const site = deps.registry.website(named.websiteId)?.record.name ?? 'a site'
  sendPage(
    exchange,
    200,
    'Stop these messages',
    html`<h1>Stop these messages</h1><p>Stop sending the submissions of the form ${named.form} on ${site} to ${named.email}?</p>
<form method="post" action="${deps.urls.appPath}/unsubscribe/${token}"><button type="submit">Stop them</button></form>`,
  )
}

/**
 * POST {app}/unsubscribe/{token}: the address is off the form's notifications. A mail client's one-click
 * post (`List-Unsubscribe=One-Click`, RFC 8058) and the page's button both land here.
 */
export async function unsubscribe(deps: PageDeps, r: PageRequest, token: string): Promise<void> {
  const done = await deps.registry.forms.notifications.unsubscribe(token)
  const site = deps.registry.website(done.websiteId)?.record.name ?? 'the site'
  sendPage(
    r.exchange,
    200,
    'Unsubscribed',
    html`<h1>Unsubscribed</h1><p class="notice" role="status">${done.removed ? `${done.email} no longer receives the submissions of the form ${done.form} on ${site}.` : `${done.email} was not receiving the submissions of the form ${done.form} on ${site}.`}</p>`,
  )
}
