// The OAuth consent page (the authorization endpoint): check the request, ask the person, issue the code.
import { SCOPE_ROLES, SCOPES } from '../../actors/identity/oauth.js'
import { ApiError } from '../../core/errors.js'
import { roleAtLeast } from '../../core/roles.js'
import type { OAuthClientRecord } from '../../core/schemas/identity.js'
import { html, redirect, sendPage } from '../html.js'
import { acceptableRedirectUri } from '../oauth.js'
import type { PageDeps, PageRequest } from './page.js'

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

/**
 * Checks an authorization request. A bad client or redirect URI is shown here and never redirected
 * to (no code is issued to an unregistered address); other problems go back to the client.
 */
function authorizeRequest(
  deps: PageDeps,
  params: URLSearchParams,
):
  | { ok: true; client: OAuthClientRecord; redirectUri: string; scope: string; resource: string }
  | { ok: false; page: string }
  | { ok: false; redirect: string } {
  const client = deps.registry.oauth.client(params.get('client_id') ?? '')
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
    url.searchParams.set('iss', deps.urls.apiOrigin)
    return { ok: false as const, redirect: url.href }
  }
  if (params.get('response_type') !== 'code') return back('unsupported_response_type', 'response_type must be code')
  if ((params.get('code_challenge') ?? '') === '' || params.get('code_challenge_method') !== 'S256') {
    return back('invalid_request', 'PKCE is required with code_challenge_method=S256 (plain is refused)')
  }
  if (!/^[A-Za-z0-9_-]{43}$/.test(params.get('code_challenge')!))
    return back('invalid_request', 'code_challenge must be a base64url SHA-256 (43 characters)')
  const resource = params.get('resource') ?? deps.resources()[0]
  if (!deps.resources().includes(resource)) return back('invalid_target', `resource must be one of ${deps.resources().join(', ')}`)
  const requested = (params.get('scope') ?? '').split(' ').filter((s) => s !== '')
  const unknown = requested.find((s) => !SCOPES.includes(s))
  if (unknown !== undefined) return back('invalid_scope', `Unknown scope ${unknown}; scopes are ${SCOPES.join(', ')}`)
  // Several scopes: the strongest asked for is what the person may grant (or lower).
  const scope = requested.length === 0 ? 'platform:edit' : requested.reduce((a, b) => (roleAtLeast(SCOPE_ROLES[b], SCOPE_ROLES[a]) ? b : a))
  return { ok: true, client, redirectUri, scope, resource }
}

/** Shows the consent form, or sends the person to sign in first. */
export function consentPage(deps: PageDeps, r: PageRequest): void {
  const { exchange, query, person } = r
  const checked = authorizeRequest(deps, query)
  if (!checked.ok) {
    if ('redirect' in checked) return redirect(exchange, checked.redirect)
    return sendPage(exchange, 400, 'Authorization refused', html`<h1>Authorization refused</h1><p class="error">${checked.page}</p>`)
  }
  if (person === undefined) {
    const next = `${deps.urls.appPath}/oauth/authorize?${query.toString()}`
    return redirect(exchange, `${deps.urls.appPath}/sign-in?next=${encodeURIComponent(next)}`)
  }
  const workspaces = deps.registry.people.workspaces(person.id)
  const hidden = AUTHORIZE_PARAMS.map((name) =>
    query.get(name) === null ? '' : html`<input type="hidden" name="${name}" value="${query.get(name)!}">`,
  )
  sendPage(
    exchange,
    200,
    'Authorize application',
    html`<h1>Connect ${checked.client.name}?</h1><p><strong>${checked.client.name}</strong> wants to act for you, ${person.name}, on Plinth: it asks for <code>${checked.scope}</code>. It will be able to do what the scope allows, never more than your own role.</p>
<p class="muted">It will be sent back to ${new URL(checked.redirectUri).origin}.</p>
<p>Signed in as <strong>${person.name}</strong>${person.email === null || person.email === undefined ? '' : html` (${person.email})`}.</p><form method="post" action="${deps.urls.appPath}/sign-out"><input type="hidden" name="next" value="${`${deps.urls.appPath}/oauth/authorize?${query.toString()}`}"><button class="secondary" type="submit">Not you? Sign out</button></form>
<form method="post" action="${deps.urls.appPath}/oauth/authorize">${hidden}
<label for="organization">Workspace</label><select id="organization" name="organization">${workspaces.map((w) => html`<option value="${w.id}">${w.name} (${w.role})</option>`)}</select>
<label for="grant_scope">Access</label><select id="grant_scope" name="grant_scope">${SCOPES.filter((s) =>
      roleAtLeast(SCOPE_ROLES[checked.scope], SCOPE_ROLES[s]),
    ).map((s) => html`<option value="${s}"${s === checked.scope ? html` selected` : ''}>${s}: ${describeScope(s)}</option>`)}</select>
<button type="submit" name="decision" value="approve">Allow</button> <button class="secondary" type="submit" name="decision" value="deny">Deny</button></form>`,
  )
}

/** Carries out the person's decision: back to the client with a code, or with access_denied. */
export async function decide(deps: PageDeps, r: PageRequest): Promise<void> {
  const { exchange, form, person } = r
  const checked = authorizeRequest(deps, form)
  if (!checked.ok) {
    if ('redirect' in checked) return redirect(exchange, checked.redirect)
    throw new ApiError('validation', checked.page)
  }
  if (person === undefined) throw new ApiError('unauthorized', 'Sign in first, then authorize the application again')
  const back = new URL(checked.redirectUri)
  const state = form.get('state')
  if (state !== null) back.searchParams.set('state', state)
  back.searchParams.set('iss', deps.urls.apiOrigin)
  if (form.get('decision') !== 'approve') {
    back.searchParams.set('error', 'access_denied')
    back.searchParams.set('error_description', 'The person denied the request')
    return redirect(exchange, back.href)
  }
  const orgId = form.get('organization') ?? person.personalOrgId
  const role = deps.registry.people.role(person.id, orgId)
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
  const code = await deps.registry.oauth.authorize({
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

function describeScope(scope: string): string {
  return (
    {
      'platform:content': 'content only (CMS items, assets)',
      'platform:edit': 'edit and publish websites',
      'platform:admin': 'everything, including API keys and members',
    }[scope] ?? scope
  )
}
