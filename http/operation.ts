import { Type, type Static, type TObject, type TSchema } from '@sinclair/typebox'
import type { Clock } from '../core/clock.js'
import type { BillingConfig } from '../core/config.js'
import type { AnonBucket, RateClass } from '../core/limits.js'
import type { Principal } from '../core/principal.js'
import type { Capability } from '../core/roles.js'
import type { OrganizationActor } from '../actors/organization/organization.js'
import type { Registry } from '../actors/registry.js'
import type { WebsiteActor } from '../actors/website/actor.js'
import type { PublicUrls } from '../core/hostnames.js'
import type { ErrorKind } from '../core/errors.js'
import type { AnonymousCredentialRecord } from '../core/schemas/anonymous.js'
import type { AuditActorValue } from '../core/schemas/audit.js'
import type { PersonRecord } from '../core/schemas/identity.js'

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'

/** What a handler gets besides its validated input. It never sees HTTP. */
export interface OperationContext {
  principal: Principal
  registry: Registry
  /** The caller's organization. */
  org: OrganizationActor
  /** The website named by `{websiteId}` in the path, already checked against the caller's scope. */
  website: WebsiteActor | undefined
  urls: PublicUrls
  /** Package name to exact version: what framework sites may import. */
  packages: Readonly<Record<string, string>>
  clock: Clock
  /** What operations read of the configuration (billing). */
  config: OperationConfig
}

/** The part of the configuration operations read. */
export interface OperationConfig {
  billing: BillingConfig
  /** Anonymous publishing: open, invite_only or off. */
  anonymous: 'open' | 'invite_only' | 'off'
}

/** What a public operation's handler gets: there is no caller to speak of. */
export interface PublicContext {
  /** Plinth's version. */
  version: string
  urls: PublicUrls
  /** Package name to exact version: what framework sites may import. */
  packages: Readonly<Record<string, string>>
  /** The OpenAPI document of every operation (built once). */
  openApi(): Record<string, unknown>
}

export interface OperationInput<P extends TObject, Q extends TObject, B extends TSchema> {
  params: Static<P>
  query: Static<Q>
  body: Static<B>
  /** With `streamsBody`: the request body, not read yet (REST only). */
  stream?: BodyStream
}

/** A request body an operation reads itself, chunk by chunk (uploads), with the headers that frame it. */
export interface BodyStream {
  contentType: string
  contentRange: string
  contentLength: number | null
  /** Any request header (lowercase name), '' when absent. */
  header(name: string): string
  /** Streams the body into `sink` with backpressure (see Exchange.deferBody); resolves with the bytes read. */
  pipe(limitBytes: number, sink: { write(chunk: Buffer): boolean; onceDrained(resume: () => void): void }): Promise<number>
}

type Empty = TObject<{}>

/** What every operation declares, public or not. */
interface OperationShape<P extends TObject, Q extends TObject, B extends TSchema, R extends TSchema> {
  method: HttpMethod
  /** Path under the API origin, with `{name}` parameters, e.g. `/v1/websites/{websiteId}`. */
  path: string
  /** The spec's operationId, e.g. `websites.create`. */
  operationId: string
  rateClass: RateClass
  /** MCP tool name (snake_case); null when the operation has no MCP form (multipart uploads). */
  tool: string | null
  /** One line for OpenAPI. */
  summary: string
  /** What it does and when to use it, in one or two sentences an agent can act on (MCP tool description). */
  description: string
  /** OpenAPI tag. */
  tag: string
  params?: P
  query?: Q
  body?: B
  response: R
  /**
   * HTTP status of success (default 200); when it depends on the result (201 created vs 200
   * unchanged), every status it can be and the choice.
   */
  status?: number | { values: readonly number[]; of(output: Static<R>): number }
  /** For paths with `{websiteId}`: also reach websites in the trash (get, restore, delete). */
  allowDeletedWebsite?: boolean
  /** Request body limit in bytes; defaults to JSON_BODY_MAX_BYTES. */
  bodyLimitBytes?: number
  /**
   * Query fields that MCP callers send in another shape: the tool's schema for them, and the mapping
   * to the query (read_source_file takes `file: {type, name}`, as every other tool that names a file).
   */
  toolQuery?: { schema: TObject; toQuery(args: Record<string, unknown>): Record<string, unknown> }
  /** Kept working for sites that use it, not for new content (spec: the CMS, the blog, legacy pages): OpenAPI's `deprecated`, and said first in the MCP tool's description. */
  deprecated?: boolean
  /** Changes nothing, though not a GET (a check, a search, a batch read): MCP's readOnlyHint. */
  readOnly?: boolean
  /** The handler reads the body itself as a stream (`input.stream`; uploads of any size): its media type for OpenAPI. */
  streamsBody?: { type: string; description: string }
  /** A body that is not JSON: its media type, parser (to the `body` schema's shape) and wire schema for OpenAPI. */
  bodyMedia?: { type: string; parse(bytes: Buffer, contentType: string): Promise<unknown>; docSchema: TSchema }
}

/**
 * One API operation, declared once. REST routes, OpenAPI and MCP tools are all derived from it. The
 * caller is authenticated (an API key today) and must hold `capability`.
 */
export interface Operation<
  P extends TObject = Empty,
  Q extends TObject = Empty,
  B extends TSchema = Empty,
  R extends TSchema = TSchema,
> extends OperationShape<P, Q, B, R> {
  public?: false
  /**
   * Authenticated by a deploy ticket (begin_deploy) and nothing else: the caller is the ticket's
   * issuer on the ticket's one website, which is the operation's website (no `{websiteId}` in the path).
   */
  ticket?: boolean
  /**
   * Also authenticated by the upload token (`wu_`) of the ready command begin_object_upload answered,
   * for the upload in the path (`{websiteId}`, `{objectId}`) only.
   */
  uploadToken?: boolean
  /** Capability the caller's role must grant (`x-capability`). */
  capability: Capability
  /** It adds a website to an organization: 402 `plan_limit` when the plan is full (billing on). */
  mayNeedPlanRoom?: boolean
  /** It calls a service outside Plinth (Stripe): 502 `upstream` when that service fails. */
  callsUpstream?: boolean
  /** Error kinds it answers besides the common ones (a claim's 410 for a spent credential). */
  extraErrors?: ErrorKind[]
  /** The output as CSV, for a REST caller whose Accept asks for text/csv (a list exported). */
  csv?: (output: unknown) => string
  /** Only a person may call it (a session or an OAuth token); API keys get 403 `user_required`. */
  personOnly?: boolean
  handle(ctx: OperationContext, input: OperationInput<P, Q, B>): Promise<Static<R>> | Static<R>
}

/**
 * An operation anyone may call without credentials (the service description, the package list):
 * it draws on the caller's address's rate-limit bucket and has no MCP tool.
 */
export interface PublicOperation<
  P extends TObject = Empty,
  Q extends TObject = Empty,
  B extends TSchema = Empty,
  R extends TSchema = TSchema,
> extends OperationShape<P, Q, B, R> {
  public: true
  capability?: undefined
  tool: null
  /** Response headers besides the JSON defaults (the OpenAPI document may be cached, revalidated). */
  headers?: Readonly<Record<string, string>>
  handle(ctx: PublicContext, input: OperationInput<P, Q, B>): Promise<Static<R>> | Static<R>
}

/**
 * An anonymous endpoint (spec: Anonymous endpoints, at `{api_origin}`, not under `/v1`): no API key
 * or principal. `token`: the bearer is an anonymous credential (`wa_…`, never from a query string);
 * `none`: no credential at all (issuing one); `claim`: a person by session or OAuth token, or a claim
 * code in the body. No MCP tool (MCP callers are signed in).
 */
export interface AnonymousOperation<
  P extends TObject = Empty,
  Q extends TObject = Empty,
  B extends TSchema = Empty,
  R extends TSchema = TSchema,
> extends OperationShape<P, Q, B, R> {
  public: true
  anonymous: 'token' | 'none' | 'claim'
  capability?: undefined
  tool: null
  /**
   * The spec's anonymous buckets the handler draws from (`ctx.limit`), besides the `reads` bucket the
   * door takes of every request: quoted with the spec's figures in OpenAPI (`x-rate-limits`).
   */
  rateLimits?: readonly AnonBucket[]
  /** The bucket a known credential's request draws from first: `reads` unless set (shared-file bytes: `uploadBytes`). */
  credentialBucket?: AnonBucket
  handle(ctx: AnonymousContext, input: OperationInput<P, Q, B>): Promise<Static<R>> | Static<R>
}

/** What an anonymous endpoint's handler gets. */
export interface AnonymousContext {
  registry: Registry
  urls: PublicUrls
  clock: Clock
  config: OperationConfig
  /** The caller's network: its IPv4 address, or the /64 of its IPv6 address (spec: Anonymous limits). */
  network: string
  /** The bearer's credential (`token` endpoints), in whatever state: handlers say what a spent one means. */
  credential: AnonymousCredentialRecord | null
  /** The signed-in person of a `claim` request (a dashboard session from a trusted Origin, or an OAuth token), or null. */
  person: { record: PersonRecord; actor: AuditActorValue } | null
  /**
   * Takes one token from the caller's `bucket` (of its credential or its network, as the spec counts
   * it): 429 with Retry-After when it is empty. Only buckets the operation declares.
   */
  limit(bucket: AnonBucket): void
  /** The `X-Invite-Code` header ('' when absent): an operator's invite code, in invite-only mode. */
  inviteCode: string
}

/** An authenticated operation with its type parameters erased. */
export type KeyedOperation = Operation<TObject, TObject, TSchema, TSchema>
export type AnyAnonymousOperation = AnonymousOperation<TObject, TObject, TSchema, TSchema>
/** Any operation with its type parameters erased, as the router holds it. */
export type AnyOperation = KeyedOperation | PublicOperation<TObject, TObject, TSchema, TSchema> | AnyAnonymousOperation

/** True for the anonymous endpoints. */
export function isAnonymous(operation: AnyOperation): operation is AnyAnonymousOperation {
  return 'anonymous' in operation && operation.anonymous !== undefined
}

/** Declares an operation with full type inference of its input and output. */
export function defineOperation<
  P extends TObject = Empty,
  Q extends TObject = Empty,
  B extends TSchema = Empty,
  R extends TSchema = TSchema,
>(operation: Operation<P, Q, B, R>): AnyOperation {
  return operation as unknown as AnyOperation
}

/** Declares an anonymous endpoint. */
export function defineAnonymousOperation<
  P extends TObject = Empty,
  Q extends TObject = Empty,
  B extends TSchema = Empty,
  R extends TSchema = TSchema,
>(operation: AnonymousOperation<P, Q, B, R>): AnyOperation {
  return operation as unknown as AnyOperation
}

/** Declares a public operation (no credentials). */
export function definePublicOperation<
  P extends TObject = Empty,
  Q extends TObject = Empty,
  B extends TSchema = Empty,
  R extends TSchema = TSchema,
>(operation: PublicOperation<P, Q, B, R>): AnyOperation {
  return operation as unknown as AnyOperation
}

/** The `{websiteId}` path parameter. */
export const WebsitePathParams = Type.Object(
  { websiteId: Type.String({ description: 'Website id (`ws_…`)' }) },
  { additionalProperties: false },
)
