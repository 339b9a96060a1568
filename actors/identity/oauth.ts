import { createHash, timingSafeEqual } from 'node:crypto'
import { hashSecret, newId, newSecret, SECRET_PREFIXES } from '../../core/ids.js'
import { OAUTH_ACCESS_MS, OAUTH_CODE_MS, OAUTH_REFRESH_MS } from '../../core/limits.js'
import type { OAuthClientRecord, OAuthGrantRecord, OAuthTokenRecord } from '../../core/schemas/identity.js'
import type { Change } from '../../core/store/changes.js'
import { Mailbox } from '../mailbox.js'
import { appendAudit } from '../organization/audit.js'
import type { People } from './people.js'
import { OAUTH_CACHED } from './tables.js'

export { SCOPE_ROLES, SCOPES } from '../../core/roles.js'

/** An OAuth protocol error (RFC 6749 section 5.2): `error` is the registered code, sent as is. */
export class OAuthProblem extends Error {
  constructor(
    readonly error: string,
    readonly description: string,
    readonly status = 400,
  ) {
    super(description)
    this.name = 'OAuthProblem'
  }
}

export interface TokenSet {
  access_token: string
  token_type: 'Bearer'
  expires_in: number
  refresh_token: string
  scope: string
}

/** A live access token's grant, as the authentication step needs it. */
export interface AccessGrant {
  grant: OAuthGrantRecord
  client: OAuthClientRecord
}

/**
 * The authorization server's state: registered clients (RFC 7591), grants (what a person consented
 * to), single-use authorization codes bound to a PKCE S256 challenge and an exact redirect URI,
 * access tokens bound to the grant's resource (RFC 8707), and refresh tokens rotated on every use
 * (a reused one revokes the grant: RFC 9700's reuse detection). Every secret is stored as a hash;
 * live access tokens and grants are mirrored in memory so a request costs a hash and a lookup.
 * Commands run one at a time in the authorization server's mailbox: a code or refresh token is
 * checked unspent and spent with nothing in between, so two requests presenting it at once never
 * both get tokens.
 */
export class OAuth {
  readonly mailbox = new Mailbox()
  readonly #access = new Map<string, { grantId: string; expiresAt: number }>()
  readonly #grants = new Map<string, OAuthGrantRecord>()
  readonly #clients = new Map<string, OAuthClientRecord>()

  constructor(private readonly people: People) {
    this.#load()
    people.store.changes.listen(OAUTH_CACHED, (changes) => this.#changed(changes))
  }

  /** Takes a change made elsewhere (a cluster's log entry applied here) to clients, grants and tokens, key by key. */
  #changed(changes: readonly Change[]): void {
    const now = this.people.clock.now()
    for (const { table, key, value } of changes) {
      const id = key as string
      if (table === 'oauth-clients') {
        if (value === null) this.#clients.delete(id)
        else this.#clients.set(id, value as OAuthClientRecord)
      } else if (table === 'oauth-grants') {
        const grant = value as OAuthGrantRecord | null
        if (grant !== null && grant.revokedAt === null) this.#grants.set(id, grant)
        else this.#forgetGrant(id)
      } else if (table === 'oauth-tokens') {
        const token = value as OAuthTokenRecord | null
        if (token !== null && token.kind === 'access' && token.expiresAt > now && this.#grants.has(token.grantId))
          this.#access.set(id, { grantId: token.grantId, expiresAt: token.expiresAt })
        else this.#access.delete(id)
      }
    }
  }

  #load(): void {
    const { store, clock } = this.people
    const now = clock.now()
    for (const { value } of store.oauthClients.range({ start: '', end: '\uffff' })) this.#clients.set(value.id, value)
    for (const { value } of store.oauthGrants.range({ start: '', end: '\uffff' }))
      if (value.revokedAt === null) this.#grants.set(value.id, value)
    for (const { key, value } of store.oauthTokens.range({ start: '', end: '\uffff' })) {
      if (value.kind === 'access' && value.expiresAt > now && this.#grants.has(value.grantId))
        this.#access.set(key as string, { grantId: value.grantId, expiresAt: value.expiresAt })
    }
  }

  client(id: string): OAuthClientRecord | undefined {
    return this.#clients.get(id)
  }

  /** Dynamic client registration: public clients only (PKCE, no secret). */
  register(name: string, redirectUris: string[], metadata: Record<string, unknown>): Promise<OAuthClientRecord> {
    return this.mailbox.run(async () => {
      const record: OAuthClientRecord = { v: 1, id: newId('cli'), name, redirectUris, metadata, createdAt: this.people.clock.now() }
      await this.people.store.commit(() => this.people.store.oauthClients.put(record.id, record))
      this.#clients.set(record.id, record)
      return record
    })
  }

  /** The person consented: a grant and its single-use code (10 minutes). */
  authorize(input: {
    client: OAuthClientRecord
    personId: string
    personName: string
    orgId: string
    scope: string
    resource: string
    redirectUri: string
    codeChallenge: string
  }): Promise<string> {
    return this.mailbox.run(async () => {
      const { store, clock } = this.people
      const now = clock.now()
      const code = newSecret(SECRET_PREFIXES.authorizationCode)
      const grant: OAuthGrantRecord = {
        v: 1,
        id: newId('grt'),
        clientId: input.client.id,
        personId: input.personId,
        orgId: input.orgId,
        scope: input.scope,
        resource: input.resource,
        createdAt: now,
        revokedAt: null,
      }
      await store.commit(() => {
        store.oauthGrants.put(grant.id, grant)
        store.oauthCodes.put(hashSecret(code), {
          v: 1,
          grantId: grant.id,
          clientId: input.client.id,
          redirectUri: input.redirectUri,
          codeChallenge: input.codeChallenge,
          expiresAt: now + OAUTH_CODE_MS,
          usedAt: null,
        })
        appendAudit(store, input.orgId, { kind: 'user', id: input.personId, name: input.personName }, now, {
          eventType: 'oauth.client_authorized',
          resourceType: 'oauth_client',
          resourceId: input.client.id,
          websiteId: null,
          metadata: { agent: input.client.name, scope: input.scope, grantId: grant.id },
        })
      })
      this.#grants.set(grant.id, grant)
      return code
    })
  }

  /** authorization_code grant: the code once, its client, its exact redirect URI and the PKCE verifier. */
  exchangeCode(input: {
    code: string
    clientId: string
    redirectUri: string | undefined
    codeVerifier: string | undefined
    resource: string | undefined
  }): Promise<TokenSet> {
    return this.mailbox.run(async () => {
      const { store, clock } = this.people
      const now = clock.now()
      const hash = hashSecret(input.code)
      const code = store.oauthCodes.get(hash)
      if (code === undefined || code.clientId !== input.clientId)
        throw new OAuthProblem('invalid_grant', 'The authorization code is unknown or was issued to another client')
      if (code.usedAt !== null) {
        // A code used twice was stolen or replayed: everything issued from it is revoked.
        await this.#revokeGrant(code.grantId, null)
        throw new OAuthProblem('invalid_grant', 'The authorization code was already used; the tokens issued from it are revoked')
      }
      if (code.expiresAt <= now) throw new OAuthProblem('invalid_grant', 'The authorization code expired; start the authorization again')
      if (input.redirectUri !== code.redirectUri)
        throw new OAuthProblem('invalid_grant', 'redirect_uri does not match the one of the authorization request')
      if (input.codeVerifier === undefined || !pkceMatches(input.codeVerifier, code.codeChallenge))
        throw new OAuthProblem('invalid_grant', 'code_verifier does not match the code_challenge (PKCE S256)')
      const grant = this.#grants.get(code.grantId)
      if (grant === undefined) throw new OAuthProblem('invalid_grant', 'The authorization was revoked')
      if (input.resource !== undefined && input.resource !== grant.resource)
        throw new OAuthProblem('invalid_target', `resource must be ${grant.resource}, the one authorized`)
      return this.#issue(grant, now, () => store.oauthCodes.put(hash, { ...code, usedAt: now }))
    })
  }

  /** refresh_token grant: a new pair; the old refresh token is spent (a second use revokes the grant). */
  refresh(input: { refreshToken: string; clientId: string; resource: string | undefined }): Promise<TokenSet> {
    return this.mailbox.run(async () => {
      const { store, clock } = this.people
      const now = clock.now()
      const hash = hashSecret(input.refreshToken)
      const token = store.oauthTokens.get(hash)
      const grant = token === undefined ? undefined : this.#grants.get(token.grantId)
      if (token === undefined || token.kind !== 'refresh' || grant === undefined || grant.clientId !== input.clientId) {
        throw new OAuthProblem('invalid_grant', 'The refresh token is unknown, revoked or was issued to another client')
      }
      if (token.usedAt !== null) {
        await this.#revokeGrant(grant.id, null)
        throw new OAuthProblem(
          'invalid_grant',
          'The refresh token was already used (rotated); every token of this authorization is revoked, authorize again',
        )
      }
      if (token.expiresAt <= now) throw new OAuthProblem('invalid_grant', 'The refresh token expired; authorize again')
      if (input.resource !== undefined && input.resource !== grant.resource)
        throw new OAuthProblem('invalid_target', `resource must be ${grant.resource}, the one authorized`)
      return this.#issue(grant, now, () => store.oauthTokens.put(hash, { ...token, usedAt: now }))
    })
  }

  async #issue(grant: OAuthGrantRecord, now: number, spend: () => void): Promise<TokenSet> {
    const { store } = this.people
    const access = newSecret(SECRET_PREFIXES.access)
    const refresh = newSecret(SECRET_PREFIXES.refresh)
    const accessHash = hashSecret(access)
    await store.commit(() => {
      if (store.oauthGrants.get(grant.id)?.revokedAt !== null) throw new OAuthProblem('invalid_grant', 'The authorization was revoked')
      spend()
      store.oauthTokens.put(accessHash, { v: 1, kind: 'access', grantId: grant.id, expiresAt: now + OAUTH_ACCESS_MS, usedAt: null })
      store.oauthTokens.put(hashSecret(refresh), {
        v: 1,
        kind: 'refresh',
        grantId: grant.id,
        expiresAt: now + OAUTH_REFRESH_MS,
        usedAt: null,
      })
    })
    this.#access.set(accessHash, { grantId: grant.id, expiresAt: now + OAUTH_ACCESS_MS })
    return { access_token: access, token_type: 'Bearer', expires_in: OAUTH_ACCESS_MS / 1000, refresh_token: refresh, scope: grant.scope }
  }

  /** RFC 7009: revoking either token of a grant revokes the grant (every token of it). Unknown tokens are ignored. */
  revokeToken(token: string, clientId: string | undefined): Promise<void> {
    return this.mailbox.run(async () => {
      const record = this.people.store.oauthTokens.get(hashSecret(token))
      if (record === undefined) return
      const grant = this.#grants.get(record.grantId)
      if (grant === undefined || (clientId !== undefined && grant.clientId !== clientId)) return
      await this.#revokeGrant(grant.id, null)
    })
  }

  /** The dashboard's "disconnect": revokes one of the person's grants. */
  disconnect(personId: string, grantId: string): Promise<boolean> {
    return this.mailbox.run(async () => {
      const grant = this.#grants.get(grantId)
      if (grant === undefined || grant.personId !== personId) return false
      await this.#revokeGrant(grantId, personId)
      return true
    })
  }

  /** A live grant by id (undefined once revoked). */
  liveGrant(id: string): OAuthGrantRecord | undefined {
    return this.#grants.get(id)
  }

  /** The person's connected applications (live grants), newest first. */
  grantsOf(personId: string): AccessGrant[] {
    const out: AccessGrant[] = []
    for (const grant of this.#grants.values()) {
      const client = this.#clients.get(grant.clientId)
      if (grant.personId === personId && client !== undefined) out.push({ grant, client })
    }
    return out.sort((a, b) => b.grant.createdAt - a.grant.createdAt)
  }

  async #revokeGrant(grantId: string, byPerson: string | null): Promise<void> {
    const { store, clock } = this.people
    const now = clock.now()
    const grant = store.oauthGrants.get(grantId)
    if (grant === undefined || grant.revokedAt !== null) return
    const client = this.#clients.get(grant.clientId)
    await store.commit(() => {
      store.oauthGrants.put(grantId, { ...grant, revokedAt: now })
      const person = this.people.person(grant.personId)
      appendAudit(store, grant.orgId, { kind: 'user', id: byPerson ?? grant.personId, name: person?.name ?? null }, now, {
        eventType: 'oauth.client_revoked',
        resourceType: 'oauth_client',
        resourceId: grant.clientId,
        websiteId: null,
        metadata: { agent: client?.name ?? null, grantId, by: byPerson === null ? 'revocation' : 'dashboard' },
      })
    })
    this.#forgetGrant(grantId)
  }

  /** A grant revoked or gone: it and its access tokens leave memory. */
  #forgetGrant(grantId: string): void {
    this.#grants.delete(grantId)
    for (const [hash, token] of this.#access) if (token.grantId === grantId) this.#access.delete(hash)
  }

  /**
   * Removes expired codes and tokens from the store and expired access tokens from memory (a token
   * never presented again would otherwise stay for good). A spent refresh token is kept until it
   * expires, so its reuse is recognised as long as it could matter. Returns how many records went.
   */
  sweepExpired(): Promise<number> {
    return this.mailbox.run(async () => {
      const { store, clock } = this.people
      const now = clock.now()
      const codes: string[] = []
      const tokens: string[] = []
      for (const { key, value } of store.oauthCodes.range({ start: '', end: '\uffff' }))
        if (value.expiresAt <= now) codes.push(key as string)
      for (const { key, value } of store.oauthTokens.range({ start: '', end: '\uffff' }))
        if (value.expiresAt <= now) tokens.push(key as string)
      for (const [hash, token] of this.#access) if (token.expiresAt <= now) this.#access.delete(hash)
      if (codes.length + tokens.length === 0) return 0
      await store.commit(() => {
        for (const hash of codes) store.oauthCodes.remove(hash)
        for (const hash of tokens) store.oauthTokens.remove(hash)
      })
      return codes.length + tokens.length
    })
  }

  /** A live access token's grant and client, or undefined (unknown, expired or revoked). One hash, two lookups. */
  accessGrant(secret: string): AccessGrant | 'expired' | undefined {
    const token = this.#access.get(hashSecret(secret))
    if (token === undefined) return undefined
    if (token.expiresAt <= this.people.clock.now()) return 'expired'
    const grant = this.#grants.get(token.grantId)
    const client = grant === undefined ? undefined : this.#clients.get(grant.clientId)
    return grant === undefined || client === undefined ? undefined : { grant, client }
  }
}

/** PKCE S256 (RFC 7636 section 4.6): BASE64URL(SHA256(verifier)) equals the challenge. */
export function pkceMatches(verifier: string, challenge: string): boolean {
  if (!/^[A-Za-z0-9._~-]{43,128}$/.test(verifier)) return false
  const computed = Buffer.from(createHash('sha256').update(verifier).digest('base64url'))
  const expected = Buffer.from(challenge)
  return computed.length === expected.length && timingSafeEqual(computed, expected)
}
