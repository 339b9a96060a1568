import { Type, type TObject, type TSchema } from '@sinclair/typebox'
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js'
import { ApiError, errorBody, errorStatus, type ErrorBody } from '../core/errors.js'
import { JSON_BODY_MAX_BYTES } from '../core/limits.js'
import { personOf, principalCan, type Principal } from '../core/principal.js'
import { checkDepth, checkWellFormed, utf8Error } from '../core/json-text.js'
import { escapeRegExp } from '../core/text.js'
import { API_DESCRIPTION_VERSION } from './openapi.js'
import type { AnyOperation, KeyedOperation } from './operation.js'
import { CORE_TOOLS, enabledToolsets, toolsetOf, TOOLSETS, type Toolset } from './mcp-toolsets.js'
import { check, type Pipeline } from './pipeline.js'
import { connectionAfter, rateLimitedError, sendError } from './respond.js'
import type { Exchange, Headers } from './uws.js'

/** What every deprecated tool says first (spec: new content goes in source files). */
const DEPRECATED_NOTE = 'kept working for sites that already use it; put new content in source files unless the owner asks for the CMS.'

/** JSON-RPC 2.0's error codes this endpoint answers with itself (the SDK's ErrorCode has the same numbers). */
const ErrorCode = { InvalidRequest: -32600, InvalidParams: -32602 } as const

/**
 * The MCP SDK, loaded at the first MCP request: it and zod are about 170 modules, a fifth of a second
 * of every start (and of every process a test spawns) otherwise.
 */
let sdkLoading: Promise<typeof import('./mcp-sdk.js')> | null = null
const loadSdk = () => (sdkLoading ??= import('./mcp-sdk.js'))

/** Room for the JSON-RPC envelope (method, id, tool name) around a tool's arguments. */
const MCP_ENVELOPE_BYTES = 4096

/** One tool as the docs describe it: the tool clients list, its toolset, and its operation's own words. */
export interface ToolCatalogEntry {
  tool: Tool
  toolset: Toolset | 'core'
  summary: string
  /** The operation's description (the tool's, without the note a deprecated tool says first). */
  description: string
  /** Only a person (a session or an OAuth token) may call it: an API key never lists it. */
  personOnly: boolean
  deprecated: boolean
}

interface ToolEntry {
  operation: KeyedOperation
  tool: Tool
  /** Listed by default ('core'), or when the client enables this toolset. */
  toolset: Toolset | 'core'
  /** The merged schema (path, query and body fields) the arguments are validated against. */
  schema: TObject
  paramNames: string[]
  queryNames: string[]
}

/** Whether this caller's credential can call the operation at all (the pipeline decides each call; this only spares listing the impossible). */
function mayCall(caller: Principal, operation: KeyedOperation): boolean {
  if (operation.personOnly === true && personOf(caller) === null) return false
  return principalCan(caller, operation.capability)
}

/** One tool per operation: its arguments are the path, query and body fields side by side. */
function buildTools(operations: readonly AnyOperation[]): Map<string, ToolEntry> {
  const tools = new Map<string, ToolEntry>()
  for (const operation of operations) {
    if (operation.public === true || operation.tool === null) continue
    const query = operation.toolQuery?.schema ?? operation.query
    const parts = [operation.params, query, operation.body as TObject | undefined].filter((p): p is TObject => p !== undefined)
    const properties: Record<string, TSchema> = {}
    const required: string[] = []
    for (const part of parts) {
      for (const [name, property] of Object.entries(part.properties)) {
        if (name in properties) throw new Error(`${operation.operationId}: argument ${name} appears twice`)
        properties[name] = property
      }
      required.push(...(part.required ?? []))
    }
    const schema = Type.Object(properties, { additionalProperties: false })
    if (required.length > 0) (schema as { required?: string[] }).required = required
    else delete (schema as { required?: string[] }).required
    const toolName = operation.tool
    if (tools.has(toolName)) throw new Error(`two operations share the MCP tool name ${operation.tool}`)
    tools.set(toolName, {
      operation,
      toolset: toolsetOf(operation),
      schema,
      paramNames: Object.keys(operation.params?.properties ?? {}),
      queryNames: Object.keys(query?.properties ?? {}),
      tool: {
        name: toolName,
        title: operation.summary,
        description: operation.deprecated === true ? `Deprecated: ${DEPRECATED_NOTE} ${operation.description}` : operation.description,
        inputSchema: forClients(JSON.parse(JSON.stringify(schema))) as Tool['inputSchema'],
        annotations: {
          readOnlyHint: operation.method === 'GET' || operation.readOnly === true,
          destructiveHint: operation.method === 'DELETE',
          idempotentHint: operation.method !== 'POST',
          openWorldHint: false,
        },
      },
    })
  }
  for (const name of CORE_TOOLS) if (!tools.has(name)) throw new Error(`the core MCP tool ${name} is no operation's tool`)
  return tools
}

/**
 * A tool's input schema as every MCP client accepts it: a map of any keys (TypeBox's Record, which
 * JSON Schema writes as `patternProperties` of `^(.*)$`) becomes `additionalProperties` of the value
 * schema, which says the same; some clients refuse `patternProperties`. The arguments are still
 * validated against the operation's own schema.
 */
function forClients(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(forClients)
  if (schema === null || typeof schema !== 'object') return schema
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(schema)) out[key] = forClients(value)
  const patterns = out.patternProperties as Record<string, unknown> | undefined
  if (patterns !== undefined) {
    const keys = Object.keys(patterns)
    if (keys.length !== 1 || !/^\^\(?\.\*\)?\$$/.test(keys[0]!)) throw new Error(`a tool schema uses patternProperties ${keys.join(', ')}`)
    delete out.patternProperties
    out.additionalProperties = patterns[keys[0]!]
  }
  return out
}

/** A JSON-RPC error outside any request (its id is unknown before the body is parsed: null). */
function sendRpcError(
  exchange: Exchange,
  status: number,
  headers: Headers,
  code: number,
  message: string,
  data?: unknown,
  cause?: ApiError,
): void {
  const error = data === undefined ? { code, message } : { code, message, data }
  const { close, connection } = connectionAfter(cause)
  exchange.send(
    status,
    { ...headers, ...connection, 'content-type': 'application/json' },
    JSON.stringify({ jsonrpc: '2.0', error, id: null }),
    close,
  )
}

/**
 * An MCP caller sent path, query and body fields as one arguments object, so an error raised behind
 * the pipeline (actors, uploads) names `arguments.files[1].path` where REST says `body.files[1].path`.
 */
function asArgumentNames(body: ErrorBody): ErrorBody {
  const field = body.details?.field
  if (typeof field !== 'string' || !/^(?:body|params|path|query)\b/.test(field)) return body
  const named = field.replace(/^(?:body|params|path|query)/, 'arguments')
  const message = body.message.replace(new RegExp(`${escapeRegExp(field)}(?![\\w$])`, 'g'), named)
  return { ...body, message, details: { ...body.details, field: named } }
}

function toolError(error: unknown, pipeline: Pipeline): CallToolResult {
  if (!(error instanceof ApiError))
    pipeline.deps.log.error('unexpected error in MCP tool', { error: (error as Error)?.stack ?? String(error) })
  const body = asArgumentNames(errorBody(error))
  return {
    isError: true,
    content: [{ type: 'text', text: JSON.stringify(body) }],
    structuredContent: body as unknown as Record<string, unknown>,
  }
}

/**
 * The remote MCP endpoint (Streamable HTTP, stateless): each POST gets a fresh low-level Server and
 * transport, authenticated by the same API keys, running the same pipeline as REST.
 */
export class McpEndpoint {
  readonly #tools: Map<string, ToolEntry>
  /** Tool lists by the toolsets a client enabled: at most one per subset of the nine toolsets, made on first use. */
  readonly #lists = new Map<string, Tool[]>()
  /** The largest body any tool takes (deploy_files); each tool's own limit is checked per call. */
  readonly #bodyLimitBytes: number

  constructor(
    operations: readonly AnyOperation[],
    private readonly pipeline: Pipeline,
    private readonly serverVersion: string,
  ) {
    this.#tools = buildTools(operations)
    this.#bodyLimitBytes = Math.max(...[...this.#tools.values()].map((t) => t.operation.bodyLimitBytes ?? JSON_BODY_MAX_BYTES))
  }

  /** Every tool, whatever its toolset. */
  get tools(): readonly Tool[] {
    return this.toolList('all')
  }

  /** Every tool with its toolset and its operation's facts: what /llms-full.txt writes its tool lines from. */
  get catalog(): readonly ToolCatalogEntry[] {
    return [...this.#tools.values()].map(({ tool, toolset, operation }) => ({
      tool,
      toolset,
      summary: operation.summary,
      description: operation.description,
      personOnly: operation.personOnly === true,
      deprecated: operation.deprecated === true,
    }))
  }

  /**
   * The tools a client with these toolsets enabled lists: the core tools, then each enabled set's;
   * with a caller, only those it may ever call (as GitHub's MCP server lists by permission): an API
   * key never lists a person's tool, and a key or an OAuth token never lists a tool its role lacks the
   * capability for. A dashboard session is not narrowed: a collaboration may grant it more on a website.
   */
  toolList(enabled: ReadonlySet<Toolset> | 'all', caller?: Principal): Tool[] {
    const narrowed = caller !== undefined && caller.kind !== 'user'
    const who = !narrowed ? 'any' : `${personOf(caller) === null ? 'key' : 'person'}:${caller.access.role}`
    const key = `${enabled === 'all' ? 'all' : [...enabled].sort().join(',')}|${who}`
    let list = this.#lists.get(key)
    if (list === undefined) {
      list = [...this.#tools.values()]
        .filter((t) => enabled === 'all' || t.toolset === 'core' || enabled.has(t.toolset))
        .filter((t) => !narrowed || mayCall(caller, t.operation))
        .map((t) => t.tool)
      this.#lists.set(key, list)
    }
    return list
  }

  handle(exchange: Exchange): void {
    const { log, urls } = this.pipeline.deps
    if (exchange.method === 'POST') this.pipeline.watchStatus(exchange, 'POST /v1/mcp')
    const admitted = this.pipeline.admit(exchange, 'standard', urls.api('/v1/mcp'))
    if (!admitted.ok) {
      // MCP authorization: a 401 points the client at the protected-resource metadata (RFC 9728), where its OAuth flow starts.
      sendError(exchange, admitted.error, log, admitted.headers)
      return
    }
    const { principal, headers } = admitted
    if (exchange.method !== 'POST') {
      // Stateless: no server-initiated stream and no session to delete.
      sendRpcError(
        exchange,
        405,
        { ...headers, allow: 'POST' },
        -32000,
        'Method not allowed: this MCP endpoint is stateless; send JSON-RPC with POST',
      )
      return
    }
    let enabled: ReadonlySet<Toolset> | 'all'
    try {
      enabled = enabledToolsets(exchange.query)
    } catch (error) {
      const body = errorBody(error)
      sendRpcError(exchange, errorStatus(error), headers, ErrorCode.InvalidRequest, body.message, body, error as ApiError)
      return
    }
    const requestHeaders = exchange.captureHeaders()
    const url = this.pipeline.deps.urls.api(exchange.path)
    exchange.detach()
    exchange
      .readBody(this.#bodyLimitBytes)
      .then(async (body) => {
        // The SDK decodes leniently: arguments whose bytes are not UTF-8 are refused here, named.
        const notUtf8 = utf8Error(body, (request) => (request as { params?: { arguments?: unknown } })?.params?.arguments, 'arguments')
        if (notUtf8 !== null) throw notUtf8
        const request = new Request(url, { method: 'POST', headers: requestHeaders, body })
        const response = await this.#serve(principal, request, body.length, enabled)
        const out: Headers = { ...headers }
        response.headers.forEach((value, name) => (out[name] = value))
        const bytes = new Uint8Array(await response.arrayBuffer())
        exchange.send(response.status, out, bytes)
      })
      .catch((error: unknown) => {
        if (exchange.aborted) return
        if (!(error instanceof ApiError)) return sendError(exchange, error, log, headers)
        // Still JSON-RPC, so an MCP client can read it.
        const body = errorBody(error)
        sendRpcError(exchange, errorStatus(error), headers, ErrorCode.InvalidRequest, body.message, body, error)
      })
  }

  async #serve(principal: Principal, request: Request, bodyBytes: number, enabled: ReadonlySet<Toolset> | 'all'): Promise<Response> {
    const { Server, WebStandardStreamableHTTPServerTransport, ListToolsRequestSchema, CallToolRequestSchema, McpError } = await loadSdk()
    const server = new Server({ name: 'plinth', version: this.serverVersion }, { capabilities: { tools: {} }, instructions: INSTRUCTIONS })
    server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: this.toolList(enabled, principal) }))
    server.setRequestHandler(CallToolRequestSchema, (call) =>
      this.#call(principal, call.params.name, call.params.arguments ?? {}, bodyBytes, McpError),
    )
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true })
    await server.connect(transport)
    try {
      return await transport.handleRequest(request)
    } finally {
      void server.close()
    }
  }

  async #call(
    principal: Principal,
    name: string,
    args: Record<string, unknown>,
    bodyBytes: number,
    McpError: (typeof import('./mcp-sdk.js'))['McpError'],
  ): Promise<CallToolResult> {
    const entry = this.#tools.get(name)
    if (entry === undefined)
      throw new McpError(ErrorCode.InvalidParams, `Unknown tool ${name}; call tools/list for the tools this server offers`)
    // The tool's own body limit, as over REST (the JSON-RPC envelope around the arguments is small).
    const limitBytes = entry.operation.bodyLimitBytes ?? JSON_BODY_MAX_BYTES
    if (bodyBytes > limitBytes + MCP_ENVELOPE_BYTES) {
      return toolError(
        new ApiError(
          'payload_too_large',
          `${name}: the request is ${bodyBytes} bytes; this tool takes at most ${limitBytes} bytes of arguments`,
          { limitBytes },
        ),
        this.pipeline,
      )
    }
    try {
      checkDepth(args, 'arguments')
    } catch (error) {
      return toolError(error, this.pipeline)
    }
    const input = structuredClone(args)
    // The arguments are split into path, query and body fields and validated once, by the pipeline,
    // as REST input is; an unknown argument lands in the body and is refused there. Bad arguments are
    // a tool result like every other failure (named `arguments.…`), so the agent sees what to fix.
    const params: Record<string, unknown> = {}
    let query: Record<string, unknown> = {}
    const body: Record<string, unknown> = {}
    for (const [key, value] of Object.entries(input)) {
      if (entry.paramNames.includes(key)) params[key] = value
      else if (entry.queryNames.includes(key)) query[key] = value
      else body[key] = value
    }
    try {
      checkWellFormed(input, 'arguments')
      const toolQuery = entry.operation.toolQuery
      if (toolQuery !== undefined) {
        // Query fields in the tool's own shape are checked in that shape, then mapped to the query.
        query = toolQuery.toQuery(check(toolQuery.schema, query, 'arguments') as Record<string, unknown>)
      }
      if (entry.operation.rateClass !== 'standard') {
        const rate = this.pipeline.takeToken(principal, entry.operation.rateClass)
        if (!rate.allowed) throw rateLimitedError(rate)
      }
      const { output } = await this.pipeline.run(entry.operation, principal, { params, query, body })
      const structured =
        output !== null && typeof output === 'object' && !Array.isArray(output) ? (output as Record<string, unknown>) : { result: output }
      return { content: [{ type: 'text', text: JSON.stringify(output) }], structuredContent: structured }
    } catch (error) {
      return toolError(error, this.pipeline)
    }
  }
}

export const MCP_API_VERSION = API_DESCRIPTION_VERSION

const INSTRUCTIONS =
  'Plinth publishes websites. Start with whoami to see your scope and capabilities, then list_websites or create_website. ' +
  'Failures come back as tool results with isError and a JSON body {kind, message, details}; the message says what to do next. ' +
  `The tool list holds the everyday tasks; more tools come in toolsets a client enables on the URL (/v1/mcp?toolsets=cms,admin, or all): ${Object.entries(
    TOOLSETS,
  )
    .map(([name, holds]) => `${name} (${holds})`)
    .join('; ')}. A tool of a toolset not enabled can still be called by name.`
