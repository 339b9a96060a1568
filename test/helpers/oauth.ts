import { createHash, randomBytes } from 'node:crypto'
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js'
import { formFields, type Browserless } from './people.js'
import type { TestServer } from './server.js'
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js'

/** What an MCP client keeps between steps of its OAuth flow (in memory here), for the MCP SDK's `auth()`. */
export class MemoryProvider implements OAuthClientProvider {
  info: OAuthClientInformationMixed | undefined
  saved: OAuthTokens | undefined
  verifier = ''
  authorizationUrl: URL | undefined

  constructor(
    readonly name: string,
    readonly redirectUrl: string,
    /** The scope the client registers with; none: the server offers every scope of the resource. */
    readonly scope?: string,
  ) {}

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: this.name,
      redirect_uris: [this.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      ...(this.scope === undefined ? {} : { scope: this.scope }),
    }
  }

  clientInformation() {
    return this.info
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.info = info
  }
  tokens() {
    return this.saved
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier
  }
  codeVerifier() {
    return this.verifier
  }
}

/**
 * An OAuth access token for one of the server's resources (`/v1`: the REST API, `/v1/mcp`: MCP), as an
 * agent gets it: registered, authorized by a signed-in person over plain HTTP, exchanged with PKCE.
 */
export async function oauthToken(
  server: TestServer,
  person: Browserless,
  resource: '/v1' | '/v1/mcp',
  options: { scope?: string; clientName?: string } = {},
): Promise<string> {
  const scope = options.scope ?? 'platform:admin'
  const redirect = 'http://127.0.0.1:9/cb'
  const registered = await fetch(`${server.origin}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ client_name: options.clientName ?? 'Test Agent', redirect_uris: [redirect] }),
  })
  const { client_id } = (await registered.json()) as { client_id: string }
  const verifier = randomBytes(32).toString('base64url')
  const query = new URLSearchParams({
    response_type: 'code',
    client_id,
    redirect_uri: redirect,
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
    scope,
    resource: `http://localhost:${server.plinth.port}${resource}`,
  })
  const page = await (await person.get(`/app/oauth/authorize?${query}`)).text()
  const answer = await person.post('/app/oauth/authorize', { ...formFields(page), decision: 'approve', grant_scope: scope })
  const code = new URL(answer.headers.get('location')!).searchParams.get('code')!
  const token = await fetch(`${server.origin}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'authorization_code', code, client_id, redirect_uri: redirect, code_verifier: verifier }),
  })
  return ((await token.json()) as { access_token: string }).access_token
}
