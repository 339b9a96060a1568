import { checkDepth } from '../core/json-text.js'
import { OAuthProblem, SCOPES } from '../actors/identity/oauth.js'
import type { Registry } from '../actors/registry.js'
import type { PublicUrls } from '../core/hostnames.js'
import type { Logger } from '../core/log.js'
import type { TakeResult } from '../core/rate-limit.js'
import { rateHeaders } from './respond.js'
import type { Exchange, Headers } from './uws.js'

/** Where MCP clients find the protected-resource metadata of `/v1/mcp` (RFC 9728 section 3.1). */
export const PROTECTED_RESOURCE_PATH = '/.well-known/oauth-protected-resource/v1/mcp'
const AUTHORIZATION_SERVER_PATH = '/.well-known/oauth-authorization-server'
/** Bodies of registration, token and revocation requests: small forms and JSON. */
const OAUTH_BODY_MAX_BYTES = 16 * 1024

/** The paths this module answers (dispatched before the operation table, like `/v1/mcp`). */
export function isOAuthPath(path: string): boolean {
  return path.startsWith('/.well-known/oauth-') || path.startsWith('/oauth/')
}

/** A redirect URI a client may register: https, or http on a loopback host (OAuth 2.1 section 2.3.1), never with a fragment. */
export function acceptableRedirectUri(text: string): boolean {
  let url: URL
  try {
    url = new URL(text)
  } catch {
    return false
  }
  if (url.hash !== '' || url.username !== '') return false
  if (url.protocol === 'https:') return true
  return url.protocol === 'http:' && (url.hostname === 'localhost' || url.hostname === '127.0.0.1' || url.hostname === '[::1]')
}

/**
 * The OAuth 2.1 authorization server MCP clients expect (MCP authorization specification): RFC 9728
 * protected-resource metadata, RFC 8414 server metadata, RFC 7591 dynamic registration, the token
 * endpoint (authorization code with PKCE S256, refresh tokens rotated on use) and RFC 7009
 * revocation. The authorization endpoint is the consent page of the dashboard (`app.ts`). These
 * endpoints speak OAuth's wire format (forms in, `{error, error_description}` out), not the API's.
 */
export class OAuthEndpoints {
  constructor(
    private readonly registry: Registry,
    private readonly urls: PublicUrls,
    private readonly log: Logger,
    private readonly takeAddressToken: (exchange: Exchange) => TakeResult,
  ) {}

  /** The resources tokens may be issued for: the MCP endpoint and the REST API. */
  get resources(): string[] {
    return [this.urls.api('/v1/mcp'), this.urls.api('/v1')]
  }

  authorizationServerMetadata(): Record<string, unknown> {
    return {
      issuer: this.urls.apiOrigin,
      authorization_endpoint: this.urls.app('/oauth/authorize'),
      token_endpoint: this.urls.api('/oauth/token'),
      registration_endpoint: this.urls.api('/oauth/register'),
      revocation_endpoint: this.urls.api('/oauth/revoke'),
      scopes_supported: SCOPES,
      response_types_supported: ['code'],
      response_modes_supported: ['query'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      code_challenge_methods_supported: ['S256'],
      token_endpoint_auth_methods_supported: ['none'],
      revocation_endpoint_auth_methods_supported: ['none'],
      authorization_response_iss_parameter_supported: true,
      service_documentation: this.urls.api('/openapi.json'),
    }
  }

  protectedResourceMetadata(resource: string): Record<string, unknown> {
    return {
      resource,
      authorization_servers: [this.urls.apiOrigin],
      scopes_supported: SCOPES,
      bearer_methods_supported: ['header'],
      resource_name: 'Plinth',
      resource_documentation: this.urls.api('/openapi.json'),
    }
  }

  handle(exchange: Exchange): void {
    const rate = this.takeAddressToken(exchange)
    const headers: Headers = { ...rateHeaders(rate), 'cache-control': 'no-store', 'content-type': 'application/json; charset=utf-8' }
    const { path, method } = exchange
    const json = (status: number, value: unknown, extra: Headers = {}) =>
      exchange.send(status, { ...headers, ...extra }, JSON.stringify(value))
    if (!rate.allowed)
      return json(429, {
        error: 'too_many_requests',
        error_description: `Too many requests from this address; retry after ${rate.retryAfterSeconds} s`,
      })
    if (method === 'GET' || method === 'HEAD') {
      const cacheable = { 'cache-control': 'public, max-age=300' }
      if (path === AUTHORIZATION_SERVER_PATH) return json(200, this.authorizationServerMetadata(), cacheable)
      if (path === PROTECTED_RESOURCE_PATH || path === '/.well-known/oauth-protected-resource')
        return json(200, this.protectedResourceMetadata(this.urls.api('/v1/mcp')), cacheable)
      if (path === '/.well-known/oauth-protected-resource/v1')
        return json(200, this.protectedResourceMetadata(this.urls.api('/v1')), cacheable)
    }
    const post =
      method === 'POST'
        ? ({ '/oauth/register': this.#register, '/oauth/token': this.#token, '/oauth/revoke': this.#revoke } as const)[path]
        : undefined
    if (post === undefined) {
      const known = [
        AUTHORIZATION_SERVER_PATH,
        PROTECTED_RESOURCE_PATH,
        '/.well-known/oauth-protected-resource',
        '/.well-known/oauth-protected-resource/v1',
        '/oauth/register',
        '/oauth/token',
        '/oauth/revoke',
      ].includes(path)
      return json(known ? 405 : 404, {
        error: 'invalid_request',
        error_description: known
          ? `${method} is not allowed on ${path}`
          : `No OAuth endpoint ${path}; see ${this.urls.api(AUTHORIZATION_SERVER_PATH)}`,
      })
    }
    const contentType = exchange.header('content-type')
    exchange.detach()
    exchange
      .readBody(OAUTH_BODY_MAX_BYTES)
      .then((body) => post.call(this, body, contentType))
      .then(({ status, value }) => json(status, value))
      .catch((error: unknown) => {
        if (exchange.aborted) return
        if (error instanceof OAuthProblem) return json(error.status, { error: error.error, error_description: error.description })
        const status = (error as { status?: number }).status
        if (status === 413 || status === 408) return json(status, { error: 'invalid_request', error_description: (error as Error).message })
        this.log.error('OAuth endpoint failed', { path, error: (error as Error)?.stack ?? String(error) })
        json(500, { error: 'server_error', error_description: 'The server failed; try again' })
      })
  }

  /** RFC 7591: a public client (no secret; PKCE protects its codes). */
  async #register(body: Buffer, contentType: string): Promise<{ status: number; value: unknown }> {
    if (!/^application\/json\b/i.test(contentType))
      throw new OAuthProblem('invalid_client_metadata', 'Send the client metadata as application/json')
    let input: unknown
    try {
      input = JSON.parse(body.toString('utf8'))
      checkDepth(input, 'body')
    } catch {
      throw new OAuthProblem('invalid_client_metadata', 'The body is not JSON, or nests too deeply')
    }
    // The SDK's schema (zod) loads at the first registration, not at every start.
    const { OAuthClientMetadataSchema } = await import('@modelcontextprotocol/sdk/shared/auth.js')
    const parsed = OAuthClientMetadataSchema.safeParse(input)
    if (!parsed.success)
      throw new OAuthProblem(
        'invalid_client_metadata',
        parsed.error.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; '),
      )
    const metadata = parsed.data
    const redirectUris = metadata.redirect_uris.map(String)
    // RFC 7591 2: a client of the authorization code grant registers at least one redirect URI.
    if (redirectUris.length === 0)
      throw new OAuthProblem(
        'invalid_redirect_uri',
        'redirect_uris must name at least one redirect URI (https, or http on localhost/127.0.0.1)',
      )
    const bad = redirectUris.find((uri) => !acceptableRedirectUri(uri))
    if (bad !== undefined)
      throw new OAuthProblem(
        'invalid_redirect_uri',
        `redirect_uri ${bad} must be https, or http on localhost/127.0.0.1, without a fragment`,
      )
    if (metadata.grant_types !== undefined && metadata.grant_types.some((g) => g !== 'authorization_code' && g !== 'refresh_token')) {
      throw new OAuthProblem('invalid_client_metadata', 'grant_types may be authorization_code and refresh_token only')
    }
    const name = (metadata.client_name ?? '').trim().slice(0, 100) || new URL(redirectUris[0]).host
    const stored = {
      ...metadata,
      redirect_uris: redirectUris,
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
    }
    const client = await this.registry.oauth.register(name, redirectUris, stored as Record<string, unknown>)
    return {
      status: 201,
      value: { ...stored, client_name: name, client_id: client.id, client_id_issued_at: Math.floor(client.createdAt / 1000) },
    }
  }

  async #token(body: Buffer, contentType: string): Promise<{ status: number; value: unknown }> {
    const form = readForm(body, contentType)
    const clientId = form.get('client_id') ?? undefined
    if (clientId === undefined || this.registry.oauth.client(clientId) === undefined)
      throw new OAuthProblem('invalid_client', 'Unknown client_id; register the client first', 401)
    const resource = form.get('resource') ?? undefined
    const grantType = form.get('grant_type')
    if (grantType === 'authorization_code') {
      const code = form.get('code')
      if (code === null) throw new OAuthProblem('invalid_request', 'code is required')
      return {
        status: 200,
        value: await this.registry.oauth.exchangeCode({
          code,
          clientId,
          redirectUri: form.get('redirect_uri') ?? undefined,
          codeVerifier: form.get('code_verifier') ?? undefined,
          resource,
        }),
      }
    }
    if (grantType === 'refresh_token') {
      const refreshToken = form.get('refresh_token')
      if (refreshToken === null) throw new OAuthProblem('invalid_request', 'refresh_token is required')
      return { status: 200, value: await this.registry.oauth.refresh({ refreshToken, clientId, resource }) }
    }
    throw new OAuthProblem('unsupported_grant_type', 'grant_type must be authorization_code or refresh_token')
  }

  /** RFC 7009: 200 whether or not the token was known. */
  async #revoke(body: Buffer, contentType: string): Promise<{ status: number; value: unknown }> {
    const form = readForm(body, contentType)
    const token = form.get('token')
    if (token === null) throw new OAuthProblem('invalid_request', 'token is required')
    await this.registry.oauth.revokeToken(token, form.get('client_id') ?? undefined)
    return { status: 200, value: {} }
  }
}

/** An `application/x-www-form-urlencoded` body; a parameter given twice is refused (RFC 6749 section 3.1). */
function readForm(body: Buffer, contentType: string): URLSearchParams {
  if (!/^application\/x-www-form-urlencoded\b/i.test(contentType))
    throw new OAuthProblem('invalid_request', 'Send the parameters as application/x-www-form-urlencoded')
  const form = new URLSearchParams(body.toString('utf8'))
  for (const name of new Set(form.keys()))
    if (form.getAll(name).length > 1) throw new OAuthProblem('invalid_request', `${name} is given more than once`)
  return form
}
