import type { NodeStatus } from './metrics-registry.js'
import type { ArchiveStatus, LastBackup } from '../core/backup/status.js'
import { Type, type TObject, type TSchema } from '@sinclair/typebox'
import { authenticate, principalForWebsite, signedBy, type Credentials } from '../actors/identity/auth.js'
import { unusableUploadToken } from '../actors/files/upload-tokens.js'
import type { ServingThreads } from './serve-thread-protocol.js'
import type { Registry } from '../actors/registry.js'
import { deletedError } from '../actors/website/rules.js'
import type { Clock } from '../core/clock.js'
import { ApiError, errorStatus } from '../core/errors.js'
import type { Logger } from '../core/log.js'
import { ADDRESS_RATE_LIMIT, RATE_LIMITS, UPLOAD_TOKEN_RATE_LIMIT, type RateClass } from '../core/limits.js'
import { personOf, principalCan, principalCovers, type Principal } from '../core/principal.js'
import { RateLimiter, type TakeResult } from '../core/rate-limit.js'
import { ClientAddress } from './client-address.js'
import { describeError, errorField, errorRule, primaryError, validator } from '../core/validation.js'
import type {
  AnonymousContext,
  AnyAnonymousOperation,
  BodyStream,
  KeyedOperation,
  OperationConfig,
  OperationContext,
  PublicContext,
  PublicOperation,
} from './operation.js'
import type { PublicUrls } from '../core/hostnames.js'
import { rateHeaders, rateLimitedError } from './respond.js'
import type { Exchange, Headers } from './uws.js'

/** The body of an operation that takes none: absent, or an empty JSON object. */
const NO_BODY = Type.Object({}, { additionalProperties: false })
/** The query of an operation that takes none. */
const NO_QUERY = Type.Object({}, { additionalProperties: false })

export interface PipelineDeps {
  registry: Registry
  clock: Clock
  log: Logger
  urls: PublicUrls
  /** Package name to exact version: what framework sites may import. */
  packages: Readonly<Record<string, string>>
  /** Check every handler result against the operation's response schema (tests turn this on). */
  validateResponses: boolean
  /**
   * Told of every answer whose status the OpenAPI document does not declare for its operation
   * (tests fail on any); without it statuses are not checked.
   */
  onUndeclaredStatus?: (what: string) => void
  /** What public operations see (the server's version, the OpenAPI document). */
  publicContext: PublicContext
  /** What operations read of the configuration. */
  config: OperationConfig
  /** Reverse proxies whose X-Forwarded-For names the client (PLINTH_TRUSTED_PROXIES). */
  trustedProxies?: readonly string[]
  /** Addresses that may scrape /metrics without a key (PLINTH_METRICS_ALLOW). */
  metricsAllow?: readonly string[]
  /** Waits until every serving thread serves what the last change made (null: nothing on its way; no threads). */
  servingSettled?: () => Promise<void> | null
  /**
   * A cluster's primary: waits (bounded) until every live replica applied what this node committed so
   * far, and names those that did not in time (null: nothing to wait for; not a cluster's primary).
   */
  replicated?: () => Promise<string[]> | null
  /** What each serving thread answered itself and its content cache (the metrics). */
  serveThreads?: ServingThreads
  /** The data directory's last successful backup (the metrics). */
  lastBackup?: () => LastBackup | null
  /** This node of a cluster as /metrics reports it (null: the embedded single server). */
  clusterNode?: () => NodeStatus | null
  /** The continuous archive (the metrics; null: PLINTH_BACKUP_ARCHIVE is not set). */
  backupArchive?: () => ArchiveStatus | null
  /** Who leads the cluster, as this node hears it (the health answer names it; null: no primary heard within two thirds of a lease). */
  clusterLeader?: () => string | null
}

/** What authorization found; its actors are held (never evicted) until `release`. */
export interface Authorized {
  /** The caller as it acts here (a session naming another organization's website acts with what the person holds there). */
  principal: Principal
  org: OperationContext['org']
  website: OperationContext['website']
  /** Lets the actors go once the request is answered (or abandoned). */
  release(): void
}

export interface RawInput {
  params: Record<string, unknown>
  query: Record<string, unknown>
  body: unknown
  stream?: BodyStream
}

/**
 * Everything between an authenticated caller and a handler, shared by REST and MCP:
 * website scope (404), capability (403), input validation (400), then the handler.
 */
export class Pipeline {
  readonly limiter: RateLimiter
  readonly #clients: ClientAddress

  constructor(readonly deps: PipelineDeps) {
    this.limiter = new RateLimiter(deps.clock)
    this.#clients = new ClientAddress(deps.trustedProxies ?? [])
  }

  #declared: Map<string, Set<string>> | null = null

  /**
   * With `onUndeclaredStatus`: watches the answer to a request for `operationKey` (`METHOD /path` as
   * the document writes it) and reports a status the document does not declare for it.
   */
  watchStatus(exchange: Exchange, operationKey: string): void {
    const report = this.deps.onUndeclaredStatus
    if (report === undefined) return
    if (this.#declared === null) {
      this.#declared = new Map()
      const paths = this.deps.publicContext.openApi().paths as Record<string, Record<string, { responses: Record<string, unknown> }>>
      for (const [path, item] of Object.entries(paths)) {
        for (const [method, entry] of Object.entries(item))
          this.#declared.set(`${method.toUpperCase()} ${path}`, new Set(Object.keys(entry.responses)))
      }
    }
    const declared = this.#declared.get(operationKey)
    exchange.onResponse = (status) => {
      if (declared === undefined || !declared.has(String(status)))
        report(`${operationKey} answered ${status} (${exchange.method} ${exchange.path})`)
    }
  }

  /** The client's address: the socket's peer, or X-Forwarded-For behind a trusted proxy. */
  clientAddress(exchange: Exchange): string {
    return this.#clients.of(exchange)
  }

  /**
   * The one authentication step of REST and MCP: the caller's principal (an API key today; sessions,
   * OAuth tokens and anonymous credentials plug in here) and a token from its bucket of `rateClass`.
   * Refused (unknown credential, or out of tokens): the error to send, with the rate headers that go
   * with it (an unknown caller spends a token of its address).
   */
  admit(
    exchange: Exchange,
    rateClass: RateClass,
    resource = this.restResource,
  ): { ok: true; principal: Principal; headers: Headers } | { ok: false; error: unknown; headers: Headers } {
    let principal: Principal
    try {
      principal = this.#authenticate(exchange, resource)
    } catch (error) {
      const headers = rateHeaders(this.takeAddressToken(exchange))
      // RFC 9728 5.1: a 401 points the client at the resource's metadata, where its OAuth flow starts
      // (MCP clients and any OAuth client alike).
      if (errorStatus(error) === 401)
        headers['www-authenticate'] =
          `Bearer resource_metadata="${protectedResourceMetadataUrl(resource)}"${exchange.header('authorization') === '' ? '' : ', error="invalid_token"'}`
      return { ok: false, error, headers }
    }
    const rate = this.takeToken(principal, rateClass)
    const headers = rateHeaders(rate)
    if (rate.allowed) return { ok: true, principal, headers }
    // Refused before it did anything: the ticket stays good for the retry after Retry-After.
    this.giveBackTicket(principal)
    return { ok: false, error: rateLimitedError(rate), headers }
  }

  /** A deploy ticket whose request deployed nothing (refused, or failed before its commit) is good again. */
  giveBackTicket(principal: Principal | null): void {
    if (principal?.ticket !== undefined) this.deps.registry.deployTickets.refund(principal.ticket.nonce)
  }

  /**
   * A byte PUT carrying the upload token of its ready command: the token's issuer on that one upload,
   * drawing from the issuer's bucket; null when the request carries another credential.
   */
  admitUploadToken(
    exchange: Exchange,
    params: Record<string, string>,
  ): { ok: true; principal: Principal; headers: Headers } | { ok: false; error: unknown; headers: Headers } | null {
    const match = /^Bearer\s+(wu_\S+)\s*$/i.exec(exchange.header('authorization'))
    if (match === null) return null
    let principal: Principal
    try {
      const { registry } = this.deps
      const signed = registry.uploadTokens.issuer(match[1]!, params.websiteId ?? '', params.objectId ?? '')
      // Its issuer as they are now: a revoked key's tokens stop with it (the operation's capability is checked next).
      principal = signedBy(registry, signed.by, signed.orgId, signed.websiteId, null, unusableUploadToken)
    } catch (error) {
      return { ok: false, error, headers: rateHeaders(this.takeAddressToken(exchange)) }
    }
    // A folder of 1,000 files is 1,000 PUTs: their own bucket, not the 120 burst of the issuer's API calls.
    const rate = this.limiter.take(`upload:${principal.id}`, UPLOAD_TOKEN_RATE_LIMIT)
    const headers = rateHeaders(rate)
    return rate.allowed ? { ok: true, principal, headers } : { ok: false, error: rateLimitedError(rate), headers }
  }

  /** The resource (RFC 8707) of the REST API: OAuth tokens used on it must name it. */
  get restResource(): string {
    return this.deps.urls.api('/v1')
  }

  /** The request's credential (its headers, method and the resource it is made to) to a principal. */
  authenticate(exchange: Exchange, resource: string): Principal {
    return this.#authenticate(exchange, resource)
  }

  #authenticate(exchange: Exchange, resource: string): Principal {
    const credentials: Credentials = {
      authorization: exchange.header('authorization'),
      cookie: exchange.header('cookie'),
      origin: exchange.header('origin'),
      method: exchange.method,
      organization: exchange.header('x-organization-id'),
      resource,
    }
    return authenticate(
      this.deps.registry,
      { appOrigin: this.deps.urls.appOrigin, sessionCookie: this.deps.urls.sessionCookie },
      credentials,
    )
  }

  /** One token from the caller's bucket of `rateClass`. */
  takeToken(principal: Principal, rateClass: RateClass): TakeResult {
    return this.limiter.take(`key:${principal.id}:${rateClass}`, RATE_LIMITS[rateClass])
  }

  /** One token from the bucket of a caller without a credential: its client address's. */
  takeAddressToken(exchange: Exchange): TakeResult {
    return this.limiter.take(`ip:${this.clientAddress(exchange)}`, ADDRESS_RATE_LIMIT)
  }

  /**
   * What is decided before a body is read: the caller's organization, the website's scope (404, never
   * confirming it exists), the trash (409) and the capability (403). A refused caller's body is never
   * parsed. The organization's and the website's actors are held until `release`, so neither is
   * evicted while the body is read.
   */
  authorize(operation: KeyedOperation, caller: Principal, params: Record<string, unknown>): Authorized {
    const { registry } = this.deps
    let principal = caller
    let website: OperationContext['website']
    // A ticket's operation acts on the ticket's website.
    const websiteId = operation.ticket === true ? caller.access.websiteIds?.[0] : params.websiteId
    if (typeof websiteId === 'string') {
      website = registry.website(websiteId)
      if (website !== undefined) principal = principalForWebsite(registry, caller, website.record) ?? caller
      if (website === undefined || !principalCovers(principal, website.record.orgId, websiteId)) {
        throw new ApiError('not_found', `Website ${websiteId} not found`)
      }
      if (website.record.deletedAt !== null && operation.allowDeletedWebsite !== true) throw deletedError(websiteId)
    }
    const org = registry.organization(principal.orgId)
    if (org === undefined) throw new ApiError('unauthorized', 'The organization of this credential no longer exists')
    if (operation.personOnly === true && personOf(principal) === null) {
      throw new ApiError(
        'forbidden',
        `${operation.operationId} needs a person: sign in at the dashboard, or connect over OAuth; API keys cannot do this`,
        { reason: 'user_required' },
      )
    }
    if (!principalCan(principal, operation.capability)) {
      const who = principal.kind === 'api_key' ? "This API key's role" : 'Your role'
      throw new ApiError('forbidden', `${who} (${principal.access.role}) lacks the capability ${operation.capability}`, {
        capability: operation.capability,
      })
    }
    // Held until the answer, so neither is evicted while the body is read or the handler runs.
    const held = website === undefined ? [org.mailbox] : [org.mailbox, website.mailbox]
    for (const mailbox of held) mailbox.hold()
    let holding = true
    const release = () => {
      if (holding) for (const mailbox of held) mailbox.release()
      holding = false
    }
    return { principal, org, website, release }
  }

  /**
   * Authorizes (unless the caller did, and then it releases), validates the input (400) and runs the
   * handler; returns the HTTP status and the output.
   */
  async run(operation: KeyedOperation, principal: Principal, raw: RawInput, given?: Authorized): Promise<Answer> {
    const authorized = given ?? this.authorize(operation, principal, raw.params)
    try {
      return await this.#run(operation, authorized.principal, raw, authorized)
    } finally {
      if (given === undefined) authorized.release()
    }
  }

  /** Validates the input (400) and runs a public operation's handler: no caller, no website. */
  runPublic(operation: PublicOperation<TObject, TObject, TSchema, TSchema>, raw: RawInput): Promise<Answer> {
    return this.#invoke(operation, raw, (input) => operation.handle(this.deps.publicContext, input as never))
  }

  /** Validates the input (400) and runs an anonymous endpoint's handler. */
  runAnonymous(operation: AnyAnonymousOperation, ctx: AnonymousContext, raw: RawInput): Promise<Answer> {
    return this.#invoke(operation, raw, (input) => operation.handle(ctx, input as never))
  }

  #run(operation: KeyedOperation, principal: Principal, raw: RawInput, authorized: Authorized): Promise<Answer> {
    const ctx: OperationContext = {
      principal,
      registry: this.deps.registry,
      config: this.deps.config,
      org: authorized.org,
      website: authorized.website,
      urls: this.deps.urls,
      packages: this.deps.packages,
      clock: this.deps.clock,
    }
    return this.#invoke(operation, raw, (input) => operation.handle(ctx, input as never))
  }

  /** The one validation of an operation's input, its handler, and (in tests) its response. */
  async #invoke(
    operation: KeyedOperation | PublicOperation<TObject, TObject, TSchema, TSchema> | AnyAnonymousOperation,
    raw: RawInput,
    handle: (input: unknown) => unknown,
  ): Promise<Answer> {
    const input = {
      params: check(operation.params, raw.params, 'path'),
      // An operation without query parameters refuses any (a misspelt or misplaced one is never silently ignored).
      query: check(operation.query ?? NO_QUERY, raw.query, 'query'),
      body: check(operation.body ?? NO_BODY, raw.body ?? {}, 'body'),
      ...(raw.stream === undefined ? {} : { stream: raw.stream }),
    }
    const output = await handle(input)
    // A publish (or any change to what a host serves) is on every serving thread before its answer goes.
    const settling = this.deps.servingSettled?.()
    if (settling) await settling
    // A change is on every live replica too before its answer goes, so the first request after it sees it on any node.
    const replicating = (operation as { method?: string }).method === 'GET' ? null : this.deps.replicated?.()
    const lagging = replicating ? await replicating : []
    if (this.deps.validateResponses) {
      const validate = validator(operation.response)
      if (!validate(output)) {
        throw new Error(`${operation.operationId} answered outside its response schema: ${describeError(validate.errors![0], 'response')}`)
      }
    }
    const status = typeof operation.status === 'object' ? operation.status.of(output as never) : (operation.status ?? 200)
    return lagging.length === 0 ? { status, output } : { status, output, lagging }
  }
}

/** An operation's answer; `lagging`: replicas of a cluster that had not applied the change when it went. */
export interface Answer {
  status: number
  output: unknown
  lagging?: string[]
}

/**
 * The protected-resource metadata URL of a resource (RFC 9728 3.1): the well-known path inserted
 * between the origin and the resource's path (`/v1/mcp` has `/.well-known/oauth-protected-resource/v1/mcp`).
 */
export function protectedResourceMetadataUrl(resource: string): string {
  const url = new URL(resource)
  return `${url.origin}/.well-known/oauth-protected-resource${url.pathname === '/' ? '' : url.pathname}`
}

/** Validates one part of an operation's input, naming the first bad field under `root` (400). */
export function check(schema: TSchema | undefined, value: unknown, root: string): unknown {
  if (schema === undefined) return {}
  const validate = validator(schema)
  if (!validate(value)) {
    const error = primaryError(validate.errors!)
    throw new ApiError('validation', describeError(error, root), { field: errorField(error, root), ...errorRule(error) })
  }
  return value
}

/** Query string to an object; a repeated name joins its values with commas. */
export function parseQuery(query: string): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [name, value] of new URLSearchParams(query)) out[name] = name in out ? `${out[name]},${value}` : value
  return out
}

/** Converts query-string text to the types the query schema declares (integers, booleans). */
export function coerceQuery(schema: TObject | undefined, query: Record<string, string>): Record<string, unknown> {
  if (schema === undefined) return query
  const out: Record<string, unknown> = {}
  for (const [name, text] of Object.entries(query)) {
    const type = (schema.properties[name] as { type?: string } | undefined)?.type
    if ((type === 'integer' || type === 'number') && /^-?\d+(\.\d+)?$/.test(text)) out[name] = Number(text)
    else if (type === 'boolean' && (text === 'true' || text === 'false')) out[name] = text === 'true'
    else out[name] = text
  }
  return out
}
