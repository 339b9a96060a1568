// A website's functions: their logs (and, as they come, variables, secrets and the key-value store).
import { Type } from '@sinclair/typebox'
import type { FunctionLogEntry } from '../../actors/functions/functions.js'
import { auditActor } from '../../actors/organization/audit.js'
import { FunctionRoute, FunctionWarning } from '../../core/schemas/source.js'
import type { VersionRecord } from '../../core/schemas/records.js'
import { iso } from '../../core/clock.js'
import { ApiError } from '../../core/errors.js'
import { Timestamp } from '../../core/schemas/common.js'
import { defineOperation, WebsitePathParams } from '../operation.js'

const tag = 'Functions'
/** How long a follow waits for a new line at most. */
const WAIT_MAX_SECONDS = 30

const LogLine = Type.Object({
  at: Timestamp,
  type: Type.Union([Type.Literal('console'), Type.Literal('exception'), Type.Literal('invocation')], {
    description:
      'console: a console.* line; exception: an uncaught error with its stack mapped to the site files; invocation: one per request',
  }),
  level: Type.String({ description: 'debug, log, info, warn or error' }),
  message: Type.String(),
  requestId: Type.String({ description: 'One id for every line of one request' }),
  method: Type.String(),
  path: Type.String(),
  status: Type.Optional(Type.Integer({ description: 'invocation: the status answered' })),
  durationMs: Type.Optional(Type.Integer()),
  cpuMs: Type.Optional(Type.Number()),
  cold: Type.Optional(Type.Boolean({ description: "invocation: the site's isolate was started for it" })),
  limit: Type.Optional(Type.String({ description: 'invocation: the limit it went over (cpu, memory, wall, restarted, load)' })),
})

const Variable = Type.Object({
  name: Type.String(),
  secret: Type.Boolean({ description: 'A secret: its value is never shown back' }),
  value: Type.Union([Type.String(), Type.Null()], { description: "A plain variable's value; null for a secret" }),
  updatedAt: Timestamp,
})

const VariableParams = Type.Object(
  {
    websiteId: Type.String({ description: 'Website id (`ws_…`)' }),
    name: Type.String({ minLength: 1, maxLength: 64, description: 'The name functions read as env.NAME' }),
  },
  { additionalProperties: false },
)

const FunctionsOfVersion = Type.Object({
  version: Type.Integer(),
  routes: Type.Array(FunctionRoute),
  typeProblems: Type.Array(FunctionWarning, {
    description: "Type errors of its TypeScript against Cloudflare's Workers types (a static site's functions run anyway); empty when none",
  }),
})

function view({ seq: _, ...entry }: FunctionLogEntry) {
  return { ...entry, at: iso(entry.at) }
}

export const functionOperations = [
  defineOperation({
    method: 'GET',
    path: '/v1/websites/{websiteId}/functions',
    operationId: 'functions.get',
    capability: 'source.read',
    rateClass: 'standard',
    tool: 'get_functions',
    tag,
    summary: "A website's functions at a glance",
    description:
      "The routes the head's and the published version's functions answer (from their functions/ folder), the names of the variables and secrets they read as env (a secret's value never), and the size of the website's key-value store (env.KV).",
    params: WebsitePathParams,
    response: Type.Object({
      head: FunctionsOfVersion,
      published: Type.Union([FunctionsOfVersion, Type.Null()]),
      variables: Type.Array(Variable),
      kv: Type.Object({ keys: Type.Integer(), bytes: Type.Integer() }),
    }),
    handle(ctx) {
      const website = ctx.website!
      const functions = ctx.registry.functions
      const published = website.publishedVersionRecord
      const ofVersion = (version: VersionRecord) => {
        const manifest = website.functionsManifest(version)
        return { version: version.version, routes: manifest?.routes ?? [], typeProblems: manifest?.typeProblems ?? [] }
      }
      return {
        head: ofVersion(website.head),
        published: published === null ? null : ofVersion(published),
        variables: functions.variables.list(website.id).map((v) => ({ ...v, updatedAt: iso(v.updatedAt) })),
        kv: functions.kv.size(website.id),
      }
    },
  }),
  defineOperation({
    method: 'PUT',
    path: '/v1/websites/{websiteId}/functions/variables/{name}',
    operationId: 'functions.setVariable',
    capability: 'source.write',
    rateClass: 'standard',
    tool: 'set_function_variable',
    tag,
    summary: 'Set a variable or secret of the functions',
    description:
      "Sets env.NAME for the website's functions, on the draft and live hosts alike, from their next request on. With secret: true the value is kept sealed and never shown back (lists give its name only). Names: letters, digits and _, up to 64; values up to 5 KiB; 64 a website.",
    params: VariableParams,
    body: Type.Object(
      {
        value: Type.String({ description: 'The value (a secret is never shown back)' }),
        secret: Type.Optional(Type.Boolean({ description: 'Keep it as a secret (default false)' })),
      },
      { additionalProperties: false },
    ),
    response: Variable,
    async handle(ctx, { params, body }) {
      const set = await ctx.registry.functions.variables.set(
        ctx.website!.record,
        auditActor(ctx.principal),
        params.name,
        body.value,
        body.secret === true,
      )
      return { ...set, updatedAt: iso(set.updatedAt) }
    },
  }),
  defineOperation({
    method: 'DELETE',
    path: '/v1/websites/{websiteId}/functions/variables/{name}',
    operationId: 'functions.removeVariable',
    capability: 'source.write',
    rateClass: 'standard',
    tool: 'delete_function_variable',
    tag,
    summary: 'Delete a variable or secret of the functions',
    description: "Removes env.NAME from the website's functions from their next request on.",
    params: VariableParams,
    response: Type.Object({ removed: Type.Boolean() }),
    async handle(ctx, { params }) {
      await ctx.registry.functions.variables.remove(ctx.website!.record, auditActor(ctx.principal), params.name)
      return { removed: true }
    },
  }),
  defineOperation({
    method: 'GET',
    path: '/v1/websites/{websiteId}/functions/logs',
    operationId: 'functions.logs',
    capability: 'source.read',
    rateClass: 'standard',
    tool: 'read_function_logs',
    tag,
    summary: "Read a website's function logs",
    description:
      "The newest lines of the website's functions (console output, uncaught errors with their stack in the site's files, one line per request with its status, duration, CPU time and any limit it went over; on a cluster every node's, each naming its node), oldest first; kept 24 hours, at most 1,000 lines, in memory. To follow, pass the answer's cursor back with wait (seconds): the answer comes as soon as a newer line exists, and no line is missed or repeated while this server runs.",
    params: WebsitePathParams,
    query: Type.Object(
      {
        since: Type.Optional({ ...Timestamp, description: 'Only lines after this time' }),
        cursor: Type.Optional(
          Type.String({
            pattern: '^[0-9a-z]{1,16}\\.[0-9]{1,15}$',
            description:
              'The cursor of an earlier answer: only the lines after the ones it gave (one from before a restart or a change of primary starts again from the newest lines)',
          }),
        ),
        limit: Type.Optional(
          Type.Integer({
            minimum: 1,
            maximum: 1000,
            description:
              'At most this many lines (default 100): the newest, or after a cursor the oldest after it (read on with the next cursor)',
          }),
        ),
        wait: Type.Optional(
          Type.Integer({
            minimum: 0,
            maximum: WAIT_MAX_SECONDS,
            description: 'Seconds to wait for a newer line (after cursor or since) when there is none yet',
          }),
        ),
      },
      { additionalProperties: false },
    ),
    response: Type.Object({
      logs: Type.Array(LogLine),
      cursor: Type.String({ description: 'Pass it back as cursor (with wait to follow) for the lines after these' }),
    }),
    async handle(ctx, { query }) {
      const website = ctx.website!
      const since = query.since === undefined ? undefined : Date.parse(query.since)
      if (since !== undefined && Number.isNaN(since))
        throw new ApiError('validation', 'query.since is not a time; pass the at of the last line you read', { field: 'query.since' })
      const logs = ctx.registry.functions.logs
      const after = query.cursor === undefined ? undefined : logs.after(query.cursor)
      const read = () => logs.list(website.id, { since, after, limit: query.limit ?? 100 })
      let lines = read()
      if (lines.length === 0 && (query.wait ?? 0) > 0) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(done, query.wait! * 1000)
          const stop = logs.follow(website.id, done)
          function done() {
            clearTimeout(timer)
            stop()
            resolve()
          }
        })
        lines = read()
      }
      const cursor = lines.length > 0 ? lines[lines.length - 1]!.seq : (after ?? logs.lastSeq(website.id))
      return { logs: lines.map(view), cursor: logs.cursor(cursor) }
    },
  }),
]
