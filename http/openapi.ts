import type { TObject, TSchema } from '@sinclair/typebox'
import { ERROR_KINDS, ERROR_STATUS, type ErrorKind } from '../core/errors.js'
import { ANON_RATE_LIMITS, type AnonBucket } from '../core/limits.js'
import { sessionCookieName } from '../core/hostnames.js'
import { NAMED_SCHEMAS } from '../core/schemas/common.js'
import { roleGrants, SCOPE_ROLES, SCOPES } from '../core/roles.js'
import { isAnonymous, type AnyOperation } from './operation.js'
import { TOOLSETS, toolsetOf } from './mcp-toolsets.js'
import { curlCommand, type ApiExample } from './docs/examples.js'

/** The version of the API description (spec: Versioning). */
export const API_DESCRIPTION_VERSION = '0.3.0'

const TAG_DESCRIPTIONS: Record<string, string> = {
  Account: 'Who is calling (a key, or a person and their own account: name, password, email, sessions).',
  Sharing: 'Links sent to people by email (email_link).',
  Websites: 'Create, list, update, delete and restore websites; rename their subdomain.',
  'API keys': 'Scoped API keys: create, list, change, rotate and revoke.',
  'Audit log': 'Who changed what, and when.',
  Source: 'Static deploys, files and the version history.',
  Publishing: 'Publish, unpublish, roll back, restore the head; build status.',
  'Framework source': 'Typed source files under an edit lease: read, write, str-replace, routes, metadata, search, diff.',
  MCP: 'The remote MCP endpoint: every operation with an x-mcp-tool, as a tool.',
}

/** `x-capability` of an operation that needs none: public ones, and the anonymous endpoints (spec: every operation carries one). */
export const NO_CAPABILITY = 'none'

const MCP_PATH = '/v1/mcp'
const MCP_TAG = 'MCP'
const MCP_ERRORS: ErrorKind[] = [
  'validation',
  'unauthorized',
  'forbidden',
  'not_found',
  'request_timeout',
  'payload_too_large',
  'rate_limited',
  'internal',
]

/**
 * The remote MCP endpoint (spec: `POST /v1/mcp`, and every operation carries x-capability and
 * x-rate-limit-class). Its tools are the operations with an `x-mcp-tool`; each call needs that
 * operation's capability and draws from its rate class, and the request itself takes a standard token.
 */
function mcpEntry(): Record<string, unknown> {
  const rpc = {
    type: 'object',
    required: ['jsonrpc'],
    properties: {
      jsonrpc: { const: '2.0' },
      id: { type: ['string', 'integer', 'null'] },
      method: { type: 'string' },
      params: { type: 'object' },
    },
    additionalProperties: true,
  }
  const errors: Record<string, unknown> = {}
  for (const kind of MCP_ERRORS) errors[String(ERROR_STATUS[kind])] = { $ref: `#/components/responses/${kind}` }
  return {
    operationId: 'mcp.request',
    summary: 'The remote MCP server (Streamable HTTP, stateless)',
    description:
      "JSON-RPC 2.0 over POST, as MCP's Streamable HTTP transport (stateless: no session, no server-sent stream; send Accept: application/json, text/event-stream). tools/list lists the tools of the everyday tasks (x-mcp-toolset core) and those of the toolsets the toolsets query parameter enables (each operation that names an x-mcp-tool has one; any tool may be called by name), only those the credential may call (an API key lists no tool only a person may use, and a key or OAuth token none its role lacks the x-capability for); tools/call runs it through the same validation, scope, capability and rate limits as REST, and a failure is a tool result with isError and the error body {kind, message, details}. The request needs only a credential (every role holds websites.read); each tool call needs its operation's x-capability and draws from its x-rate-limit-class. A 401 carries WWW-Authenticate with resource_metadata, where an OAuth client starts.",
    tags: [MCP_TAG],
    'x-capability': 'websites.read',
    'x-rate-limit-class': 'standard',
    security: [{ apiKey: [] }, { oauth2: [] }, { session: [] }],
    parameters: [
      {
        name: 'toolsets',
        in: 'query',
        required: false,
        description: `Toolsets whose tools tools/list adds to the everyday ones, comma-separated, or all: ${Object.keys(TOOLSETS).join(', ')}. Each operation's x-mcp-toolset says where its tool is (core: always listed).`,
        schema: { type: 'string', examples: ['cms,admin', 'all'] },
      },
    ],
    requestBody: {
      required: true,
      content: { 'application/json': { schema: { oneOf: [rpc, { type: 'array', items: rpc, minItems: 1 }] } } },
    },
    responses: {
      200: {
        description: 'The JSON-RPC response (a tool failure is a result with isError, not an HTTP error)',
        headers: {
          'X-RateLimit-Limit': { $ref: '#/components/headers/X-RateLimit-Limit' },
          'X-RateLimit-Remaining': { $ref: '#/components/headers/X-RateLimit-Remaining' },
        },
        content: { 'application/json': { schema: { type: 'object', additionalProperties: true } } },
      },
      202: { description: 'A notification or response from the client, accepted (no body)' },
      406: {
        description: 'Accept names neither application/json nor text/event-stream (a JSON-RPC error body)',
        content: { 'application/json': { schema: { type: 'object', additionalProperties: true } } },
      },
      415: {
        description: 'The body is not application/json (a JSON-RPC error body)',
        content: { 'application/json': { schema: { type: 'object', additionalProperties: true } } },
      },
      ...errors,
    },
  }
}

/** What the description of an anonymous endpoint says of its buckets, with the spec's figures (spec: Anonymous limits). */
function anonymousRateLimits(buckets: readonly AnonBucket[]): { text: string; buckets: unknown[] } {
  const all: AnonBucket[] = ['reads', ...buckets]
  const text = `Rate limits (spec: Anonymous limits; X-RateLimit-* report the bucket nearest to empty): ${all.map((b) => `${ANON_RATE_LIMITS[b].spec} per ${ANON_RATE_LIMITS[b].per}${b === 'reads' ? ' for every request' : ''}`).join('; ')}.`
  return {
    text,
    buckets: all.map((b) => ({
      bucket: b,
      per: ANON_RATE_LIMITS[b].per,
      burst: ANON_RATE_LIMITS[b].burst,
      perMinute: ANON_RATE_LIMITS[b].perMinute,
      spec: ANON_RATE_LIMITS[b].spec,
    })),
  }
}

/** Plain JSON Schema of a TypeBox schema, with named schemas replaced by `$ref` (except `self`). */
function toJsonSchema(schema: TSchema, self?: TSchema): unknown {
  const name = NAMED_SCHEMAS.get(schema)
  if (name !== undefined && schema !== self) return { $ref: `#/components/schemas/${name}` }
  if (Array.isArray(schema)) return schema.map((s) => toJsonSchema(s as TSchema))
  if (schema === null || typeof schema !== 'object') return schema
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(schema)) {
    out[key] = value !== null && typeof value === 'object' ? toJsonSchema(value as TSchema) : value
  }
  return out
}

function parameters(schema: TObject | undefined, location: 'path' | 'query'): unknown[] {
  if (schema === undefined) return []
  const required = new Set(schema.required ?? [])
  return Object.entries(schema.properties).map(([name, property]) => {
    const { description, ...rest } = toJsonSchema(property) as { description?: string }
    return { name, in: location, required: location === 'path' || required.has(name), description, schema: rest }
  })
}

/** The error statuses an operation can answer, as the pipeline and its handler produce them. */
function errorResponses(operation: AnyOperation): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  if (isAnonymous(operation)) {
    // The anonymous endpoints refuse in every way the spec's anonymous rows list (402: a claim of shared files needs storage room).
    const kinds: ErrorKind[] = [
      'validation',
      'unauthorized',
      'forbidden',
      'not_found',
      'payment_required',
      'conflict',
      'gone',
      'payload_too_large',
      'request_timeout',
      'rate_limited',
      'unavailable',
      'internal',
    ]
    for (const kind of kinds) out[String(ERROR_STATUS[kind])] = { $ref: `#/components/responses/${kind}` }
    return out
  }
  // A public operation has no caller to refuse, no website and no body.
  if (operation.public === true) return { 500: { $ref: '#/components/responses/internal' } }
  const kinds: ErrorKind[] = [
    'validation',
    'unauthorized',
    'forbidden',
    'not_found',
    'rate_limited',
    'internal',
    ...(operation.extraErrors ?? []),
  ]
  // Writes conflict (taken names, stale versions and leases, a build running); anything under a
  // website in the trash is a 409 too, reads included.
  const inTrash = operation.path.includes('{websiteId}') && operation.allowDeletedWebsite !== true
  if (operation.method !== 'GET' || inTrash) kinds.push('conflict')
  // Adding a website to a full plan (billing on); or writing to a held claimed site after its preview (`claim_held`).
  if (operation.mayNeedPlanRoom === true || (operation.path.includes('{websiteId}') && operation.method !== 'GET'))
    kinds.push('payment_required')
  if (operation.callsUpstream === true) kinds.push('upstream')
  // Every method but GET reads a body, even where none is expected (a stray one is refused), and a
  // body over the operation's limit is a 413.
  if (operation.method !== 'GET') kinds.push('request_timeout', 'payload_too_large')
  for (const kind of new Set(kinds)) out[String(ERROR_STATUS[kind])] = { $ref: `#/components/responses/${kind}` }
  return out
}

/**
 * Who may call an operation: an API key, an OAuth token with the narrowest scope whose role grants the
 * capability, or a dashboard session; a person-only operation leaves the API key out.
 */
function security(operation: AnyOperation): unknown[] {
  if (isAnonymous(operation)) {
    if (operation.anonymous === 'token') return [{ anonymousToken: [] }]
    // A claim: a person (OAuth or session), or nothing but a claim code in the body.
    if (operation.anonymous === 'claim') return [{ oauth2: [] }, { session: [] }, {}]
    return []
  }
  if (operation.public === true) return []
  if (operation.ticket === true) return [{ deployTicket: [] }]
  const scope = SCOPES.find((s) => roleGrants(SCOPE_ROLES[s], operation.capability))
  const people = [{ oauth2: scope === undefined ? [] : [scope] }, { session: [] }]
  return operation.personOnly === true ? people : [{ apiKey: [] }, ...people]
}

/** A JSON media type with its example: the recorded call's body or answer. */
function withExample(media: Record<string, unknown>, value: unknown, summary: string): Record<string, unknown> {
  return { ...media, examples: { example: { summary, value } } }
}

/**
 * The OpenAPI 3.1 document of every operation, derived from the operation table; `examples`: each
 * operation's recorded call and answer (docs/api-examples.json, naming this server), shown as the
 * request body's and the success answer's `examples` and as a curl command in `x-codeSamples`.
 */
export function openApiDocument(
  operations: readonly AnyOperation[],
  apiOrigin: string,
  appUrl = `${apiOrigin}/app`,
  examples: Readonly<Record<string, ApiExample>> = {},
): Record<string, unknown> {
  const sessionCookie = sessionCookieName(appUrl)
  const paths: Record<string, Record<string, unknown>> = {}
  for (const operation of operations) {
    const successes = typeof operation.status === 'object' ? operation.status.values : [operation.status ?? 200]
    const success = {
      description: operation.summary,
      headers: {
        'X-RateLimit-Limit': { $ref: '#/components/headers/X-RateLimit-Limit' },
        'X-RateLimit-Remaining': { $ref: '#/components/headers/X-RateLimit-Remaining' },
      },
      content: {
        'application/json': { schema: toJsonSchema(operation.response) },
        ...(operation.public !== true && operation.csv !== undefined
          ? { 'text/csv': { schema: { type: 'string', description: 'With Accept: text/csv: the page as CSV' } } }
          : {}),
      },
    }
    const example = examples[operation.operationId]
    const anonymousLimits = isAnonymous(operation) ? anonymousRateLimits(operation.rateLimits ?? []) : null
    const entry: Record<string, unknown> = {
      operationId: operation.operationId,
      summary: operation.summary,
      description: anonymousLimits === null ? operation.description : `${operation.description} ${anonymousLimits.text}`,
      ...(operation.deprecated === true ? { deprecated: true } : {}),
      tags: [operation.tag],
      // Operations that need no capability (public ones, the anonymous endpoints) say so: `none`.
      'x-capability': operation.public === true ? NO_CAPABILITY : operation.capability,
      'x-rate-limit-class': operation.rateClass,
      ...(anonymousLimits === null ? {} : { 'x-rate-limits': anonymousLimits.buckets }),
      ...(operation.tool === null ? {} : { 'x-mcp-tool': operation.tool, 'x-mcp-toolset': toolsetOf(operation) }),
      security: security(operation),
      parameters: [...parameters(operation.params, 'path'), ...parameters(operation.query, 'query')],
      responses: {
        ...Object.fromEntries(
          successes.map((status) => {
            const response =
              successes.length === 1
                ? success
                : { ...success, description: `${operation.summary}: ${status === 201 ? 'a new version was created' : 'nothing changed'}` }
            if (example?.status !== status) return [String(status), response]
            const json = withExample(response.content['application/json'], example.answer, 'The answer of the curl example (x-codeSamples)')
            return [String(status), { ...response, content: { ...response.content, 'application/json': json } }]
          }),
        ),
        ...errorResponses(operation),
      },
    }
    if (operation.streamsBody !== undefined) {
      entry.requestBody = {
        required: true,
        description: operation.streamsBody.description,
        content: { [operation.streamsBody.type]: { schema: { type: 'string', format: 'binary' } } },
      }
    } else if (operation.bodyMedia !== undefined) {
      entry.requestBody = {
        required: true,
        content: { [operation.bodyMedia.type]: { schema: toJsonSchema(operation.bodyMedia.docSchema) } },
      }
    } else if (operation.body !== undefined) {
      const media = { schema: toJsonSchema(operation.body) }
      entry.requestBody = {
        required: true,
        content: {
          'application/json':
            example?.request.json === undefined
              ? media
              : withExample(media, example.request.json, 'The body of the curl example (x-codeSamples)'),
        },
      }
    }
    // Redoc's and Scalar's convention: `lang` is the highlighting, `label` the tab.
    if (example !== undefined) entry['x-codeSamples'] = [{ lang: 'Shell', label: 'curl', source: curlCommand(example.request, apiOrigin) }]
    ;(paths[operation.path] ??= {})[operation.method.toLowerCase()] = entry
  }
  paths[MCP_PATH] = { post: mcpEntry() }
  const schemas: Record<string, unknown> = {}
  for (const [schema, name] of NAMED_SCHEMAS) schemas[name] = toJsonSchema(schema, schema)
  const used = new Set([
    ...operations.flatMap((o) => Object.values(errorResponses(o)).map((r) => (r as { $ref: string }).$ref.split('/').pop())),
    ...MCP_ERRORS,
  ])
  const responses: Record<string, unknown> = {}
  for (const kind of (Object.keys(ERROR_STATUS) as ErrorKind[]).filter((k) => used.has(k))) {
    const response: Record<string, unknown> = {
      description: ERROR_KINDS[kind].when,
      content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
    }
    if (kind === 'rate_limited') response.headers = { 'Retry-After': { $ref: '#/components/headers/Retry-After' } }
    responses[kind] = response
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Plinth Site Publishing API',
      version: API_DESCRIPTION_VERSION,
      description: 'Create, preview, publish and roll back websites. Every operation is also an MCP tool at POST /v1/mcp.',
      license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' },
    },
    servers: [{ url: apiOrigin }],
    tags: [...new Set([...operations.map((o) => o.tag), MCP_TAG])].map((name) => ({ name, description: TAG_DESCRIPTIONS[name] ?? name })),
    security: [{ apiKey: [] }, { oauth2: [] }, { session: [] }],
    paths,
    components: {
      securitySchemes: {
        apiKey: { type: 'http', scheme: 'bearer', description: 'API key (`wb_…`) as `Authorization: Bearer <API_KEY>`' },
        oauth2: {
          type: 'oauth2',
          description:
            'A person, through an application (`wo_…` access tokens as `Authorization: Bearer`). Dynamic client registration at /oauth/register; PKCE S256 required; the `resource` must be this API (`/v1`) or the MCP endpoint (`/v1/mcp`), and a token works only there. Metadata: /.well-known/oauth-authorization-server.',
          flows: {
            authorizationCode: {
              authorizationUrl: `${appUrl}/oauth/authorize`,
              tokenUrl: `${apiOrigin}/oauth/token`,
              refreshUrl: `${apiOrigin}/oauth/token`,
              scopes: {
                'platform:content': 'as content_editor',
                'platform:edit': 'as full_editor',
                'platform:admin': 'as admin (never more than the person’s own role)',
              },
            },
          },
        },
        deployTicket: {
          type: 'http',
          scheme: 'bearer',
          description:
            'A deploy ticket (`wd_…`, from begin_deploy) as `Authorization: Bearer`: one request at /public/v1/deploys, within 5 minutes',
        },
        anonymousToken: {
          type: 'http',
          scheme: 'bearer',
          description:
            'An anonymous credential (`wa_…`, from POST /public/v1/anonymous/credentials) as `Authorization: Bearer`; only on /public/v1/anonymous/, never in a URL',
        },
        session: {
          type: 'apiKey',
          in: 'cookie',
          name: sessionCookie,
          description:
            'A person signed in to the dashboard (`__Host-plinth_session` over https, `plinth_session` over plain http); a request that changes anything must carry the dashboard’s Origin, and a request carrying two session cookies is signed out',
        },
      },
      headers: {
        'X-RateLimit-Limit': { description: 'Burst size of the bucket this request drew from', schema: { type: 'integer' } },
        'X-RateLimit-Remaining': { description: 'Tokens left in that bucket', schema: { type: 'integer' } },
        'Retry-After': { description: 'Seconds until a request may succeed', schema: { type: 'integer' } },
      },
      responses,
      schemas,
    },
  }
}
