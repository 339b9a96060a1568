import { Type } from '@sinclair/typebox'
import { submissionPayload } from '../../actors/forms/forms.js'
import { iso } from '../../core/clock.js'
import { ApiError } from '../../core/errors.js'
import { LIST_LIMIT_DEFAULT } from '../../core/limits.js'
import { pageByKey } from '../../core/cursor.js'
import { ListQuery, Page, Timestamp, named } from '../../core/schemas/common.js'
import type { SubmissionRecord } from '../../core/schemas/forms.js'
import { defineOperation, type OperationContext } from '../operation.js'

const tag = 'Forms'

const FormParams = Type.Object(
  {
    websiteId: Type.String({ description: 'Website id (`ws_…`)' }),
    form: Type.String({ minLength: 1, maxLength: 64, description: 'The form name in /_platform/forms/<name>' }),
  },
  { additionalProperties: false },
)
const SubmissionParams = Type.Object(
  { ...FormParams.properties, submissionId: Type.String({ description: 'Submission id (`sub_…`)' }) },
  { additionalProperties: false },
)

const Attempt = Type.Object({
  at: Timestamp,
  status: Type.Union([Type.Integer(), Type.Null()]),
  error: Type.Union([Type.String(), Type.Null()]),
})

const Submission = named(
  'FormSubmission',
  Type.Object({
    id: Type.String(),
    form: Type.String(),
    data: Type.Record(Type.String(), Type.Union([Type.String(), Type.Array(Type.String())])),
    files: Type.Array(Type.Object({ field: Type.String(), filename: Type.String(), contentType: Type.String(), size: Type.Integer() })),
    spam: Type.Boolean(),
    read: Type.Boolean(),
    draft: Type.Boolean({ description: 'Posted on the draft host' }),
    createdAt: Timestamp,
    webhook: Type.Object({
      state: Type.Union([Type.Literal('none'), Type.Literal('pending'), Type.Literal('delivered'), Type.Literal('failed')]),
      attempts: Type.Array(Attempt),
    }),
  }),
)

const FormSummary = Type.Object({
  name: Type.String(),
  declared: Type.Boolean({ description: 'In the published website_config.forms (static sites declare none: any name is taken)' }),
  config: Type.Union([
    Type.Object({
      redirect: Type.Optional(Type.String()),
      webhook: Type.Optional(Type.String()),
      fields: Type.Optional(Type.Array(Type.String())),
    }),
    Type.Null(),
  ]),
  submissions: Type.Integer({ description: 'Kept submissions (spam not counted)' }),
  spam: Type.Integer(),
  lastSubmissionAt: Type.Union([Timestamp, Type.Null()]),
  endpoint: Type.String({ description: 'Where the site posts it' }),
})

function submissionView(record: SubmissionRecord) {
  return {
    ...submissionPayload(record),
    webhook: { state: record.webhook, attempts: record.deliveries.map((d) => ({ at: iso(d.at), status: d.status, error: d.error })) },
  }
}

/** Submissions as CSV (Accept: text/csv): one row each, a column per field seen, RFC 4180 quoting. */
function submissionsCsv(page: { items: ReturnType<typeof submissionView>[] }): string {
  const fields = [...new Set(page.items.flatMap((s) => Object.keys(s.data)))].sort()
  const quote = (value: string) =>
    /[",\r\n]/.test(value) || /^[=+\-@\t]/.test(value) ? `"${(/^[=+\-@\t]/.test(value) ? `'${value}` : value).replace(/"/g, '""')}"` : value
  const header = ['id', 'createdAt', 'spam', 'read', 'draft', ...fields, 'files'].map(quote).join(',')
  const rows = page.items.map((s) =>
    [
      s.id,
      s.createdAt,
      String(s.spam),
      String(s.read),
      String(s.draft),
      ...fields.map((f) => (Array.isArray(s.data[f]) ? (s.data[f] as string[]).join('; ') : ((s.data[f] as string | undefined) ?? ''))),
      s.files.map((f) => f.filename).join('; '),
    ]
      .map(quote)
      .join(','),
  )
  return `${[header, ...rows].join('\r\n')}\r\n`
}

/** The forms the published build declares (null: a static site, which declares none). */
function declaredForms(ctx: OperationContext) {
  return ctx.website!.published.snapshot?.forms ?? null
}

export const formOperations = [
  defineOperation({
    method: 'GET',
    path: '/v1/websites/{websiteId}/forms',
    operationId: 'forms.list',
    capability: 'forms.read',
    rateClass: 'standard',
    tool: 'list_forms',
    tag,
    summary: 'List the forms of a website',
    description:
      'Every form the published website_config declares and every form name that received submissions, with counts, the last submission and the configuration; plus the secret webhooks are signed with.',
    params: Type.Object({ websiteId: FormParams.properties.websiteId }, { additionalProperties: false }),
    query: Type.Object(ListQuery, { additionalProperties: false }),
    response: Type.Object({
      ...Page(FormSummary).properties,
      webhookSigning: Type.Object({
        secret: Type.String({ description: 'HMAC-SHA256 key of this website’s webhooks' }),
        header: Type.String({ description: 'The header carrying `t=<unix seconds>,v1=<hex HMAC of "<t>.<body>">`' }),
      }),
    }),
    handle(ctx, { query }) {
      const website = ctx.website!
      const declared = declaredForms(ctx) ?? {}
      const stats = new Map(ctx.registry.forms.stats(website.id).map((s) => [s.form, s]))
      const page = pageByKey(
        [...new Set([...Object.keys(declared), ...stats.keys()])].sort(),
        (name) => name,
        query.limit ?? LIST_LIMIT_DEFAULT,
        query.cursor,
      )
      return {
        nextCursor: page.nextCursor,
        items: page.items.map((name) => {
          const s = stats.get(name)
          return {
            name,
            declared: name in declared,
            config: declared[name] ?? null,
            submissions: s?.submissions ?? 0,
            spam: s?.spam ?? 0,
            lastSubmissionAt: s?.lastSubmissionAt == null ? null : iso(s.lastSubmissionAt),
            endpoint: `/_platform/forms/${name}`,
          }
        }),
        webhookSigning: { secret: ctx.registry.forms.webhookSecret(website.id), header: 'X-Platform-Signature' },
      }
    },
  }),
  defineOperation({
    method: 'GET',
    path: '/v1/websites/{websiteId}/forms/{form}/submissions',
    operationId: 'forms.listSubmissions',
    capability: 'forms.read',
    rateClass: 'standard',
    tool: 'list_form_submissions',
    tag,
    summary: 'List a form’s submissions',
    description: 'Newest first; spam=true or false filters. With Accept: text/csv the page comes as CSV (one column per field).',
    params: FormParams,
    query: Type.Object({ ...ListQuery, spam: Type.Optional(Type.Boolean()) }, { additionalProperties: false }),
    response: Page(Submission),
    csv: submissionsCsv as (output: unknown) => string,
    handle(ctx, { params, query }) {
      const page = ctx.registry.forms.list(ctx.website!.id, params.form, {
        spam: query.spam,
        limit: query.limit ?? LIST_LIMIT_DEFAULT,
        cursor: query.cursor,
      })
      return { items: page.items.map(submissionView), nextCursor: page.nextCursor }
    },
  }),
  defineOperation({
    method: 'GET',
    path: '/v1/websites/{websiteId}/forms/{form}/submissions/{submissionId}',
    operationId: 'forms.getSubmission',
    capability: 'forms.read',
    rateClass: 'standard',
    tool: 'get_form_submission',
    tag,
    summary: 'Get a submission',
    description: 'One submission with its fields, files and webhook delivery attempts.',
    params: SubmissionParams,
    response: Submission,
    handle: (ctx, { params }) => submissionView(ctx.registry.forms.get(ctx.website!.id, params.form, params.submissionId)),
  }),
  defineOperation({
    method: 'PATCH',
    path: '/v1/websites/{websiteId}/forms/{form}/submissions/{submissionId}',
    operationId: 'forms.updateSubmission',
    capability: 'forms.manage',
    rateClass: 'standard',
    tool: 'update_form_submission',
    tag,
    summary: 'Mark a submission spam or read',
    description: 'Sets spam and/or read; the form’s counts follow.',
    params: SubmissionParams,
    body: Type.Object({ spam: Type.Optional(Type.Boolean()), read: Type.Optional(Type.Boolean()) }, { additionalProperties: false }),
    response: Submission,
    async handle(ctx, { params, body }) {
      if (body.spam === undefined && body.read === undefined) throw new ApiError('validation', 'Send spam, read or both', { field: 'body' })
      return submissionView(await ctx.registry.forms.update(ctx.website!.id, params.form, params.submissionId, body))
    },
  }),
  defineOperation({
    method: 'DELETE',
    path: '/v1/websites/{websiteId}/forms/{form}/submissions/{submissionId}',
    operationId: 'forms.deleteSubmission',
    capability: 'forms.manage',
    rateClass: 'standard',
    tool: 'delete_form_submission',
    tag,
    summary: 'Delete a submission',
    description: 'Removes the submission and its files for good.',
    params: SubmissionParams,
    response: Type.Object({ deleted: Type.Boolean() }),
    async handle(ctx, { params }) {
      await ctx.registry.forms.remove(ctx.website!.id, params.form, params.submissionId)
      return { deleted: true }
    },
  }),
  defineOperation({
    method: 'POST',
    path: '/v1/websites/{websiteId}/forms/webhook-secret',
    operationId: 'forms.rotateWebhookSecret',
    capability: 'forms.manage',
    rateClass: 'standard',
    tool: 'rotate_webhook_secret',
    tag,
    summary: 'Rotate the webhook signing secret',
    description:
      'Makes a new secret for this website’s form webhooks; deliveries from now on are signed with it and the old one stops verifying. A transfer rotates it by itself.',
    params: Type.Object({ websiteId: FormParams.properties.websiteId }, { additionalProperties: false }),
    response: Type.Object({ secret: Type.String(), header: Type.String() }),
    async handle(ctx) {
      return { secret: await ctx.registry.forms.rotateWebhookSecret(ctx.website!.id), header: 'X-Platform-Signature' }
    },
  }),
]
