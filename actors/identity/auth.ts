import type { Clock } from '../../core/clock.js'
import { ApiError } from '../../core/errors.js'
import { API_KEY_PREFIX, hashSecret, secretMatches, SECRET_PREFIXES } from '../../core/ids.js'
import { issuerOnWebsite, principalCan, principalCovers, type Issuer, type Principal } from '../../core/principal.js'
import { weakerRole, type Capability, type PersonRole } from '../../core/roles.js'
import type { PersonRecord } from '../../core/schemas/identity.js'
import type { StoreReader } from '../../core/store/reader.js'
import { SCOPE_ROLES } from './oauth.js'
import type { Registry } from '../registry.js'
import { TICKET_DEPLOY_PATH, unusableTicket } from '../website/deploy-tickets.js'

/** What a request presents, read off HTTP by the caller (this module never sees HTTP). */
export interface Credentials {
  /** The Authorization header ('' when absent). */
  authorization: string
  /** The Cookie header ('' when absent). */
  cookie: string
  /** The Origin header ('' when absent). */
  origin: string
  method: string
  /** The organization a session asks to act in (`X-Organization-Id`; '' for the personal workspace). */
  organization: string
  /** The resource (RFC 8707) the request is made to: an OAuth token must have been issued for exactly it. */
  resource: string
}

/** What authentication needs besides the registry: where the dashboard lives, and its cookie's name. */
export interface AuthSettings {
  /** The only Origin a session's changing request may come from. */
  appOrigin: string
  /** The session cookie's name (PublicUrls.sessionCookie). */
  sessionCookie: string
}

/** Every value of the cookie `name` in a Cookie header (a browser sends one per matching cookie). */
export function cookieValues(header: string, name: string): string[] {
  const out: string[] = []
  for (const part of header.split(';')) {
    const eq = part.indexOf('=')
    if (eq !== -1 && part.slice(0, eq).trim() === name) out.push(part.slice(eq + 1).trim())
  }
  return out
}

/**
 * The session a Cookie header carries: its secret, none, or `ambiguous` when there is more than one
 * session cookie. A site on a sibling or parent domain can set a second one (`Domain=example.com;
 * Path=/app/claim`), which the browser then sends first for that path: a request carrying two is
 * treated as signed out, never as the first one's person.
 */
export function sessionOf(header: string, name: string): { secret: string } | 'none' | 'ambiguous' {
  const values = cookieValues(header, name).filter((v) => v !== '')
  if (values.length === 0) return 'none'
  return values.length === 1 ? { secret: values[0] } : 'ambiguous'
}

/** What a request carrying two session cookies is told. */
export const AMBIGUOUS_SESSION_MESSAGE =
  'This request carried two session cookies, so it is treated as signed out: a site on a domain this one shares may have set one. Clear this domain’s cookies in the browser and sign in again.'

/**
 * Resolves a request's credential to a principal: an API key (`wb_`), an OAuth access token (`wo_`)
 * or a dashboard session cookie. Every check reads committed state (mirrored in memory), so a revoke,
 * a role change or a removed membership takes effect on the very next request.
 */
export function authenticate(registry: Registry, settings: AuthSettings, credentials: Credentials): Principal {
  const { authorization } = credentials
  // A deploy ticket authenticates one request at the deploy endpoints (their resource is
  // TICKET_DEPLOY_PATH), and nothing else does there.
  const ticketDoor = credentials.resource.endsWith(TICKET_DEPLOY_PATH)
  if (authorization !== '') {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization)
    if (match === null)
      throw new ApiError(
        'unauthorized',
        ticketDoor
          ? 'Malformed Authorization header: expected "Bearer wd_…", the ticket begin_deploy (MCP) answered'
          : 'Malformed Authorization header: expected "Bearer <API_KEY>" or "Bearer <OAuth access token>"',
        ticketDoor ? { reason: 'ticket_invalid' } : undefined,
      )
    const secret = match[1]
    if (secret.startsWith(SECRET_PREFIXES.deployTicket)) {
      if (!ticketDoor)
        throw new ApiError(
          'unauthorized',
          `A deploy ticket (wd_…) works only at POST ${TICKET_DEPLOY_PATH}; call the API with an API key or an OAuth token`,
        )
      return ticketPrincipal(registry, secret)
    }
    if (ticketDoor)
      throw new ApiError(
        'unauthorized',
        `POST ${TICKET_DEPLOY_PATH} takes a deploy ticket: call begin_deploy (MCP) for one, then send Authorization: Bearer wd_…`,
        {
          reason: 'ticket_invalid',
        },
      )
    if (secret.startsWith(SECRET_PREFIXES.uploadToken))
      throw new ApiError(
        'unauthorized',
        'An upload token (wu_…) works only in the PUT of the upload it was issued for; call the API with an API key or an OAuth token',
        { reason: 'upload_token_invalid' },
      )
    if (secret.startsWith(SECRET_PREFIXES.access)) return authenticateOAuth(registry, secret, credentials.resource)
    if (secret.startsWith(SECRET_PREFIXES.anonymous)) {
      throw new ApiError(
        'unauthorized',
        'An anonymous token (wa_…) works only on the anonymous endpoints under /public/v1/anonymous/; to use this API, a person claims the site and signs in or connects over OAuth',
      )
    }
    return authenticateApiKey(registry.reads, registry.clock, secret)
  }
  // No ticket at the deploy endpoints: what they take is a ticket, never a session cookie.
  if (ticketDoor)
    throw new ApiError(
      'unauthorized',
      `POST ${TICKET_DEPLOY_PATH} takes a deploy ticket: call begin_deploy (MCP) for one, then send Authorization: Bearer wd_…`,
      { reason: 'ticket_invalid' },
    )
  const session = sessionOf(credentials.cookie, settings.sessionCookie)
  if (session === 'ambiguous') throw new ApiError('unauthorized', AMBIGUOUS_SESSION_MESSAGE, { reason: 'session_ambiguous' })
  if (session !== 'none') return authenticateSession(registry, settings, session.secret, credentials)
  throw new ApiError(
    'unauthorized',
    'Missing API key: send the header Authorization: Bearer <API_KEY> (an OAuth access token works too), or sign in at the dashboard',
  )
}

/**
 * Resolves a bearer secret to a key's principal from committed state, on every request, so a PATCH,
 * rotate or revoke takes effect on the very next request.
 */
function authenticateApiKey(store: StoreReader, clock: Clock, secret: string): Principal {
  if (!secret.startsWith(API_KEY_PREFIX)) {
    throw new ApiError('unauthorized', `Not an API key: API keys start with ${API_KEY_PREFIX}`)
  }
  const keyId = store.keysByHash.get(hashSecret(secret))
  const record = keyId === undefined ? undefined : store.apiKeys.get(keyId)
  if (record === undefined || !secretMatches(secret, record.secretHash)) {
    throw new ApiError('unauthorized', 'Unknown API key: it may have been rotated or revoked; use a current key')
  }
  if (record.revokedAt !== null) throw new ApiError('unauthorized', 'API key revoked; create a new key', { reason: 'key_revoked' })
  if (record.expiresAt !== null && record.expiresAt <= clock.now()) {
    throw new ApiError('unauthorized', `API key expired at ${new Date(record.expiresAt).toISOString()}; create a new key or extend it`, {
      reason: 'key_expired',
    })
  }
  return {
    kind: 'api_key',
    id: record.id,
    name: record.name,
    orgId: record.orgId,
    access: record.access,
    agent: null,
    keyRotatedAt: record.rotatedAt,
  }
}

function authenticateOAuth(registry: Registry, secret: string, resource: string): Principal {
  const found = registry.oauth.accessGrant(secret)
  if (found === 'expired')
    throw new ApiError('unauthorized', 'OAuth access token expired; refresh it with your refresh token', { reason: 'token_expired' })
  if (found === undefined) throw new ApiError('unauthorized', 'Unknown or revoked OAuth access token; authorize again')
  const { grant, client } = found
  if (grant.resource !== resource) {
    throw new ApiError(
      'unauthorized',
      `This OAuth access token was issued for ${grant.resource}, not for ${resource}; request a token with resource=${resource}`,
    )
  }
  const person = registry.people.person(grant.personId)
  const role = registry.people.role(grant.personId, grant.orgId)
  if (person === undefined || role === undefined) {
    throw new ApiError(
      'unauthorized',
      'The person of this OAuth token is no longer a member of the organization it was authorized for; authorize again with another workspace',
      { reason: 'not_a_member' },
    )
  }
  const scopeRole = SCOPE_ROLES[grant.scope] ?? 'content_editor'
  return { ...personPrincipal(person, 'oauth', grant.orgId, weakerRole(scopeRole, role), client.name), grantId: grant.id }
}

/**
 * A deploy ticket spent: its issuer as they are now, on its one website, with what the ticket carries.
 * A ticket whose request then deploys nothing is given back (http/rest.ts, http/pipeline.ts).
 */
function ticketPrincipal(registry: Registry, secret: string): Principal {
  const { claims, expiresAt } = registry.deployTickets.spend(secret)
  try {
    const principal = signedBy(registry, claims.by, claims.orgId, claims.websiteId, 'source.write', unusableTicket)
    return { ...principal, ticket: { headVersion: claims.headVersion, nonce: claims.nonce, chainExpiresAt: claims.first ?? expiresAt } }
  } catch (error) {
    registry.deployTickets.refund(claims.nonce)
    throw error
  }
}

/**
 * The principal a signed token (a deploy ticket, an upload token) acts as at this use: its issuer on
 * its one website, with the weaker of the role the token was issued with and the one they hold now.
 * A signature proves who asked, not that they still may: a revoked or expired key, a person no longer
 * a member (or collaborator) with `capability`, a disconnected OAuth application, or a website trashed,
 * suspended or moved to another organization makes the token useless at once (401 through `refuse`).
 */
export function signedBy(
  registry: Registry,
  by: Issuer,
  orgId: string,
  websiteId: string,
  capability: Capability | null,
  refuse: (why: string) => ApiError,
): Principal {
  const website = registry.reads.websites.get(websiteId)
  if (website === undefined || website.orgId !== orgId) throw refuse('The website of this token was deleted or moved to another workspace')
  if (website.deletedAt !== null) throw refuse('The website of this token is in the trash')
  if (website.suspendedAt !== null) throw refuse('The website of this token was taken down by the platform')
  const now = issuerNow(registry, by, orgId, websiteId, refuse)
  if (!principalCovers(now, orgId, websiteId) || (capability !== null && !principalCan(now, capability)))
    throw refuse(
      `${by.kind === 'api_key' ? 'The API key' : 'The person'} that asked for this token may no longer ${capability === null ? 'work on' : `use ${capability} on`} this website`,
    )
  return issuerOnWebsite({ ...by, role: weakerRole(by.role, now.access.role) }, orgId, websiteId)
}

/** The issuer of a signed token as a principal of today: their key, membership or grant, or `refuse`. */
function issuerNow(registry: Registry, by: Issuer, orgId: string, websiteId: string, refuse: (why: string) => ApiError): Principal {
  if (by.kind === 'api_key') {
    const key = registry.reads.apiKeys.get(by.id)
    if (key === undefined || key.revokedAt !== null) throw refuse('The API key that asked for this token was revoked')
    if (key.expiresAt !== null && key.expiresAt <= registry.clock.now()) throw refuse('The API key that asked for this token expired')
    // A rotation ends what the old secret made, as a revocation does.
    if (key.rotatedAt !== (by.rotatedAt ?? null))
      throw refuse(
        'The API key that asked for this token was rotated since: what its old secret made ended with it; ask again with the new secret',
      )
    return { kind: 'api_key', id: key.id, name: key.name, orgId: key.orgId, access: key.access, agent: null, keyRotatedAt: key.rotatedAt }
  }
  const person = registry.people.person(by.id)
  const gone = () => refuse('The person who asked for this token is no longer a member of its workspace')
  if (person === undefined) throw gone()
  if (by.kind === 'oauth') {
    const grant = by.grant === undefined ? undefined : registry.oauth.liveGrant(by.grant)
    if (by.grant !== undefined && (grant === undefined || grant.orgId !== orgId))
      throw refuse('The application that asked for this token was disconnected')
    const role = registry.people.role(person.id, orgId)
    if (role === undefined) throw gone()
    const scopeRole = grant === undefined ? role : (SCOPE_ROLES[grant.scope] ?? 'content_editor')
    return personPrincipal(person, 'oauth', orgId, weakerRole(scopeRole, role), by.agent)
  }
  const held = heldOnWebsite(registry, person, { id: websiteId, orgId })
  if (held === undefined) throw gone()
  return held
}

function authenticateSession(registry: Registry, settings: AuthSettings, secret: string, credentials: Credentials): Principal {
  const person = registry.people.sessionPerson(secret)
  if (person === undefined)
    throw new ApiError('unauthorized', 'Your session ended (signed out or expired); sign in again at the dashboard', {
      reason: 'session_expired',
    })
  // Cookies ride along on cross-site requests: a changing request must come from the dashboard itself.
  if (credentials.method !== 'GET' && credentials.method !== 'HEAD' && credentials.origin !== settings.appOrigin) {
    throw new ApiError(
      'forbidden',
      `A session may change things only from the dashboard (Origin ${settings.appOrigin}); this request came from ${credentials.origin === '' ? 'no Origin' : credentials.origin}`,
      {
        reason: 'origin_not_trusted',
      },
    )
  }
  const orgId = credentials.organization === '' ? person.personalOrgId : credentials.organization
  const role = registry.people.role(person.id, orgId)
  if (role === undefined) {
    // A workspace asked for by id that the person is not a member of: as if it did not exist.
    throw new ApiError('not_found', `Organization ${orgId} not found among your workspaces; GET /v1/me lists them`)
  }
  return { ...personPrincipal(person, 'user', orgId, role, null), session: hashSecret(secret) }
}

/** A person acting in an organization with a role (organization-wide). */
export function personPrincipal(
  person: PersonRecord,
  kind: 'oauth' | 'user',
  orgId: string,
  role: PersonRole,
  agent: string | null,
): Principal {
  return { kind, id: person.id, name: person.name, orgId, access: { kind: 'organization', role }, agent }
}

/**
 * A session (keys and OAuth tokens are bound to one organization) that names a website of another
 * organization acts there with what the person holds in it: their membership's role, or a
 * collaboration on that one website. Undefined when they hold nothing.
 */
export function principalForWebsite(
  registry: Registry,
  principal: Principal,
  website: { id: string; orgId: string },
): Principal | undefined {
  if (principal.orgId === website.orgId || principal.kind !== 'user') return undefined
  const person = registry.people.person(principal.id)
  return person === undefined ? undefined : heldOnWebsite(registry, person, website)
}

/** What a person holds on a website: their membership's role in its organization, or a collaboration on it. */
function heldOnWebsite(registry: Registry, person: PersonRecord, website: { id: string; orgId: string }): Principal | undefined {
  const role = registry.people.role(person.id, website.orgId)
  if (role !== undefined) return personPrincipal(person, 'user', website.orgId, role, null)
  const collaboration = registry.people.collaboration(person.id, website.id)
  if (collaboration === undefined || collaboration.orgId !== website.orgId) return undefined
  return {
    ...personPrincipal(person, 'user', website.orgId, collaboration.role, null),
    access: { kind: 'websites', role: collaboration.role, websiteIds: [website.id] },
  }
}
