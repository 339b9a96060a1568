// The invitation page: accept a workspace invitation, signing in or creating the account on the way.
import { checkEmail, checkPassword } from '../../actors/identity/people.js'
import { SESSION_MAX_MS, SIGN_IN_RATE_LIMIT } from '../../core/limits.js'
import type { PersonRecord } from '../../core/schemas/identity.js'
import { html, redirect, sendPage } from '../html.js'
import { linkScript } from './link-check.js'
import { rateLimitedError } from '../respond.js'
import type { Exchange, Headers } from '../uws.js'
import { deviceOf, formError, personField, sessionCookie, type PageDeps, type PageRequest } from './page.js'

/**
 * The invitation form (the code comes in the URL's fragment). After a failed post it says why and keeps
 * what was typed (`typed`: the posted form; never the password).
 */
export function invitePage(
  deps: PageDeps,
  exchange: Exchange,
  person: PersonRecord | undefined,
  error: string | null,
  status = 200,
  typed = new URLSearchParams(),
): void {
  const who =
    person === undefined
      ? html`<p>Sign in with the invited email, or create your account with it.</p>
${personField('email', 'Email (the invited one)', { autocomplete: 'username', value: typed.get('email') ?? '' })}
${personField('name', 'Your name (new accounts)', { autocomplete: 'name', value: typed.get('name') ?? '' })}
${personField('password', 'Password', { autocomplete: 'current-password' })}`
      : html`<p>You are signed in as ${person.email}.</p>`
  sendPage(
    exchange,
    status,
    'Accept invitation',
    html`<h1>Accept an invitation</h1><p id="link-state" role="status"></p>${formError(error)}<form id="link-form" method="post" action="${deps.urls.appPath}/invite">
<label for="code">Invitation code</label><input id="code" name="code" required autocomplete="off" value="${typed.get('code') ?? ''}">${who}<button type="submit">Accept</button></form>`,
    {},
    linkScript(deps.urls.appPath, 'code', 'invite'),
    "'self'",
    // Refused: a reload asks for the form (the link holds the code) rather than posting it again.
    error === null ? undefined : `${deps.urls.appPath}/invite`,
  )
}

/** Accepts an invitation for the signed-in person, or signs in (or creates) the invited one first. */
export async function acceptInvitation(deps: PageDeps, r: PageRequest): Promise<void> {
  const { exchange, form } = r
  const code = form.get('code') ?? ''
  const invitation = deps.registry.teams.invitationByCode(code)
  let person = r.person
  const headers: Headers = {}
  if (person === undefined) {
    const password = form.get('password') ?? ''
    const existing = deps.registry.people.personByEmail(invitation.email)
    if (existing !== undefined) {
      const byAddress = deps.limiter.take(`sign-in:ip:${deps.clientAddress(exchange)}`, SIGN_IN_RATE_LIMIT)
      if (!byAddress.allowed) throw rateLimitedError(byAddress, 'Too many sign-in attempts')
      const verified = await deps.registry.people.verifyPassword(invitation.email, password)
      if (verified === null) return invitePage(deps, exchange, undefined, 'Wrong email or password.', 401, form)
      person = verified
    } else {
      checkEmail(invitation.email, 'email')
      checkPassword(password, 'password')
      person = await deps.registry.people.addPerson({
        email: invitation.email,
        name: (form.get('name') ?? '').trim() || invitation.email,
        password,
      })
    }
    headers['set-cookie'] = sessionCookie(deps.urls, await deps.registry.people.startSession(person.id, deviceOf(exchange)), SESSION_MAX_MS)
  }
  const accepted = await deps.registry.teams.accept(code, person)
  // A member lands in the workspace joined, now and at the next sign-in (until they use another).
  if (deps.registry.people.role(person.id, accepted.orgId) !== undefined)
    await deps.registry.account.setLastWorkspace(person.id, accepted.orgId)
  // Into the workspace joined (or the website), which says so.
  const into = accepted.websiteId === null ? deps.urls.appPath : `${deps.urls.appPath}/websites/${accepted.websiteId}`
  redirect(exchange, `${into}?workspace=${accepted.orgId}&joined=1`, headers)
}
