import { Type } from '@sinclair/typebox'
import { ApiError } from '../../core/errors.js'
import { EMAIL_MAX_CHARS, FORM_NOTIFY_PER_MINUTE, FORM_NOTIFY_RECIPIENTS_MAX } from '../../core/limits.js'
import { personOf } from '../../core/principal.js'
import { StringEnum, named } from '../../core/schemas/common.js'
import { defineOperation, type OperationContext } from '../operation.js'

const FormParams = Type.Object(
  {
    websiteId: Type.String({ description: 'Website id (`ws_…`)' }),
    form: Type.String({ minLength: 1, maxLength: 64, description: 'The form name in /_platform/forms/<name>' }),
  },
  { additionalProperties: false },
)

const Notifications = named(
  'FormNotifications',
  Type.Object({
    form: Type.String(),
    recipients: Type.Array(
      Type.Object({
        email: Type.String(),
        state: StringEnum(['active', 'pending'] as const, {
          description: 'active: mailed each submission; pending: not a member, so a confirmation link went to the address first',
        }),
      }),
    ),
    perMinute: Type.Integer({ description: 'Submissions mailed one by one a minute; past it, one digest at the minute’s end' }),
    mailSent: Type.Boolean({ description: 'false: this server sends no email (no SMTP relay configured)' }),
  }),
)

/** The form must be one the site takes: a framework site's declared forms; any name on a static site. */
function checkForm(ctx: OperationContext, form: string): void {
  const declared = ctx.website!.published.snapshot?.forms ?? null
  if (declared !== null && !Object.hasOwn(declared, form))
    throw new ApiError(
      'not_found',
      `The published site declares no form ${form} (website_config.forms has ${Object.keys(declared).join(', ') || 'none'})`,
      { field: 'path.form' },
    )
}

export const formNotificationOperations = [
  defineOperation({
    method: 'GET',
    path: '/v1/websites/{websiteId}/forms/{form}/notifications',
    operationId: 'forms.getNotifications',
    capability: 'forms.read',
    rateClass: 'standard',
    tool: 'get_form_notifications',
    tag: 'Forms',
    summary: 'Who is emailed a form’s submissions',
    description:
      'The addresses each kept (not spam) submission of the form is mailed to, and whether each is active or waiting for its confirmation.',
    params: FormParams,
    response: Notifications,
    handle(ctx, { params }) {
      return {
        ...ctx.registry.forms.notifications.view(ctx.website!.id, params.form),
        perMinute: FORM_NOTIFY_PER_MINUTE,
        mailSent: ctx.registry.mail.sending,
      }
    },
  }),
  defineOperation({
    method: 'PUT',
    path: '/v1/websites/{websiteId}/forms/{form}/notifications',
    operationId: 'forms.setNotifications',
    capability: 'forms.manage',
    rateClass: 'standard',
    tool: 'set_form_notifications',
    tag: 'Forms',
    summary: 'Email a form’s submissions to people',
    description: `Sets the addresses (up to ${FORM_NOTIFY_RECIPIENTS_MAX}; [] for none) that each kept submission of the form is mailed to, with its fields, file names, a link to the dashboard and Reply-To from an \`email\` field. A member’s or collaborator’s address is active at once; any other address first gets a link to confirm (7 days) and receives nothing until it is opened. Past ${FORM_NOTIFY_PER_MINUTE} submissions a minute, one digest at the minute’s end instead. Every message has a one-click unsubscribe.`,
    params: FormParams,
    body: Type.Object(
      {
        recipients: Type.Array(Type.String({ minLength: 3, maxLength: EMAIL_MAX_CHARS }), {
          maxItems: FORM_NOTIFY_RECIPIENTS_MAX,
          description: 'Email addresses',
        }),
      },
      { additionalProperties: false },
    ),
    response: Notifications,
    async handle(ctx, { params, body }) {
      checkForm(ctx, params.form)
      const record = ctx.website!.record
      const personId = personOf(ctx.principal)
      const by = (personId === null ? undefined : ctx.registry.people.person(personId)?.name) ?? ctx.org.record.name
      const view = await ctx.registry.forms.notifications.set(
        { id: record.id, orgId: record.orgId, name: record.name },
        params.form,
        body.recipients,
        by,
      )
      return { ...view, perMinute: FORM_NOTIFY_PER_MINUTE, mailSent: ctx.registry.mail.sending }
    },
  }),
]
