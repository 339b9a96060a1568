// What every dashboard page shares: the request as the pages see it, their dependencies, the session cookie and the error page.
import type { Registry } from '../../actors/registry.js'
import Bowser from 'bowser'
import { ApiError } from '../../core/errors.js'
import type { PublicUrls } from '../../core/hostnames.js'
import type { Logger } from '../../core/log.js'
import { EMAIL_MAX_CHARS, PASSWORD_MAX_CHARS, PERSON_NAME_MAX_CHARS } from '../../core/limits.js'
import type { RateLimiter } from '../../core/rate-limit.js'
import type { PersonRecord } from '../../core/schemas/identity.js'
import { html, sendPage, type Html } from '../html.js'
import type { Exchange } from '../uws.js'

/** What the dashboard's pages are drawn from. */
export interface PageDeps {
  registry: Registry
  urls: PublicUrls
  log: Logger
  limiter: RateLimiter
  /** The resources an OAuth token may be bound to; the first is the default. */
  resources: () => string[]
  /** The client's address (behind trusted proxies, from X-Forwarded-For): claims count per network. */
  clientAddress: (exchange: Exchange) => string
}

export interface PageRequest {
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

/** The answer to a page that failed: the error's status and message, or a 500 that is logged. */
export function sendFailure(deps: PageDeps, exchange: Exchange, page: string, error: unknown): void {
  if (exchange.aborted) return
  if (!(error instanceof ApiError)) deps.log.error('dashboard failed', { page, error: (error as Error)?.stack ?? String(error) })
  const status = error instanceof ApiError ? error.status : 500
  const message = error instanceof ApiError ? error.message : 'Something failed on our side; try again.'
  sendPage(
    exchange,
    status,
    'Could not do that',
    html`<h1>Could not do that</h1><p class="error">${message}</p><p><a href="${deps.urls.appPath}">Back to the dashboard</a></p>`,
  )
}

/** The browser and system of a request, as a person recognises them on the account screen ("Chrome 131 on Linux"). */
export function deviceOf(exchange: Exchange): string {
  const agent = exchange.header('user-agent')
  if (agent === '') return ''
  const parsed = Bowser.parse(agent)
  const browser = [parsed.browser.name, parsed.browser.version?.split('.')[0]].filter(Boolean).join(' ')
  const system = parsed.os.name ?? ''
  if (browser === '') return agent.slice(0, 80)
  return system === '' ? browser : `${browser} on ${system}`
}

/** The session cookie's header value (an empty value and 0 sign out). */
export function sessionCookie(urls: PublicUrls, value: string, maxAgeMs: number): string {
  // Host-only (no Domain) and Path=/; over https `__Host-` and Secure (PublicUrls.sessionCookie).
  return `${urls.sessionCookie}=${value}; Path=/; HttpOnly; SameSite=Lax; Max-Age=${Math.floor(maxAgeMs / 1000)}${urls.secureCookies ? '; Secure' : ''}`
}

/** A person's fields on the plain-HTML pages, with the limits the server checks. */
const PERSON_FIELDS = {
  email: { type: 'email', maxlength: EMAIL_MAX_CHARS },
  name: { type: null, maxlength: PERSON_NAME_MAX_CHARS },
  password: { type: 'password', maxlength: PASSWORD_MAX_CHARS },
} as const

/**
 * A labelled input for a person's email, name or password (sign-in, setup, invitation, claim), carrying
 * the server's length limits; `value` is what was typed before (never passed for a password).
 */
export function personField(
  field: keyof typeof PERSON_FIELDS,
  label: string,
  options: { autocomplete: string; required?: boolean; minlength?: number; value?: string },
): Html {
  const { type, maxlength } = PERSON_FIELDS[field]
  return html`<label for="${field}">${label}</label><input id="${field}" name="${field}"${type === null ? '' : html` type="${type}"`}${options.required === true ? html` required` : ''}${options.minlength === undefined ? '' : html` minlength="${options.minlength}"`} maxlength="${maxlength}" autocomplete="${options.autocomplete}"${options.value === undefined ? '' : html` value="${options.value}"`}>`
}

/** Why a form was refused, above it (announced to screen readers), or nothing. */
export function formError(error: string | null): Html | '' {
  return error === null ? '' : html`<p class="error" role="alert">${error}</p>`
}
