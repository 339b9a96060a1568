import { Type } from '@sinclair/typebox'
import { folderOf } from '../../actors/files/storage-names.js'
import { checkEmail } from '../../actors/identity/people.js'
import { sharedLink } from '../../actors/mail/templates.js'
import { ApiError } from '../../core/errors.js'
import { EMAIL_MAX_CHARS, SHARE_MESSAGE_MAX_CHARS, SHARE_RECIPIENTS_MAX, SITE_PASSWORD_MAX_CHARS } from '../../core/limits.js'
import { personOf } from '../../core/principal.js'
import { StringEnum, named } from '../../core/schemas/common.js'
import { defineOperation, WebsitePathParams, type OperationContext } from '../operation.js'
import { websiteResource } from '../resources.js'
import { folderLinks, objectView } from './storage-shapes.js'

const LINKS = ['published', 'draft', 'folder', 'file'] as const
type LinkKind = (typeof LINKS)[number]

/** What is shared: its link as the server builds it, its words in the message, and the password scopes it sits behind. */
interface Shared {
  link: string
  what: string
  /** Password scopes in front of it (the site's, or protected folders'), outermost first; empty when open. */
  scopes: string[]
}

function shared(ctx: OperationContext, kind: LinkKind, folder: string | undefined, objectId: string | undefined): Shared {
  const website = ctx.website!
  const record = website.record
  const passwords = ctx.registry.sitePasswords
  const siteScope = passwords.locked(record.id) ? [record.id] : []
  if (kind === 'published' || kind === 'draft') {
    if (record.kind === 'storage')
      throw new ApiError(
        'validation',
        `Website ${record.id} is a storage website: share a folder (link: "folder") or a file (link: "file")`,
        {
          field: 'body.link',
        },
      )
    if (kind === 'draft') return { link: ctx.urls.draft(record.subdomain), what: `the draft of ${record.name}`, scopes: siteScope }
    const primary = websiteResource(website, ctx.urls, ctx.registry).urls.primary
    if (primary === null)
      throw new ApiError(
        'conflict',
        `${record.name} is not published, so its live link shows nothing; publish it first (publish_website), or share its draft (link: "draft")`,
      )
    return { link: primary, what: record.name, scopes: siteScope }
  }
  if (record.kind !== 'storage')
    throw new ApiError('validation', `Website ${record.id} is a ${record.kind} site: share its published or draft link`, {
      field: 'body.link',
    })
  if (kind === 'folder') {
    if (folder === undefined)
      throw new ApiError('validation', 'body.folder is required with link: "folder" (list_objects shows each file\'s folder)', {
        field: 'body.folder',
      })
    const path = folderOf(folder, 'body.folder')
    if (path === '' || ctx.registry.files.tree(record.id, path, 1).next().done === true)
      throw new ApiError('not_found', `No shared folder ${folder} in ${record.name}; list_objects shows the folders`, {
        field: 'body.folder',
      })
    const label = ctx.registry.files.folderLabel(record.id, path) ?? path.split('/').pop()!
    return {
      link: folderLinks(ctx, record.subdomain, path).folderUrl,
      what: `the folder ${label}`,
      scopes: [...siteScope, ...passwords.lockedFolders(record.id, path.split('/'))],
    }
  }
  if (objectId === undefined)
    throw new ApiError('validation', 'body.objectId is required with link: "file" (list_objects shows the ids)', { field: 'body.objectId' })
  const object = ctx.registry.files.object(record.id, objectId)
  const view = objectView(ctx, record.subdomain, object)
  return {
    link: view.url,
    what: `the file ${view.label}`,
    scopes: [...siteScope, ...(object.folder === '' ? [] : passwords.lockedFolders(record.id, object.folder.split('/')))],
  }
}

const Recipient = Type.Object({
  email: Type.String(),
  messageId: Type.String({ description: 'The outbox message (`msg_…`)' }),
  state: StringEnum(['held', 'queued'] as const, {
    description: 'queued: on its way to the relay; held: this server sends no email, the operator has it',
  }),
})

export const shareOperations = [
  defineOperation({
    method: 'POST',
    path: '/v1/websites/{websiteId}/email-link',
    operationId: 'websites.emailLink',
    capability: 'publishing.manage',
    rateClass: 'standard',
    tool: 'email_link',
    tag: 'Sharing',
    summary: 'Email a link to people',
    description: `Emails a site's published or draft link, or a storage website's folder or file link, to up to ${SHARE_RECIPIENTS_MAX} addresses with an optional plain-text message. The server builds the link. Confirm the recipients (and the message) with the person before calling: each address gets a message at once. A protected link's password goes in the mail only when you pass it (only if the person wants it sent); otherwise the mail says to ask them for it. Counts against the server's mail limits per address and per workspace (429 mail_limit). With billing on it needs a paid plan (402 plan_required).`,
    params: WebsitePathParams,
    body: named(
      'EmailLink',
      Type.Object(
        {
          to: Type.Array(Type.String({ minLength: 3, maxLength: EMAIL_MAX_CHARS }), {
            minItems: 1,
            maxItems: SHARE_RECIPIENTS_MAX,
            description: `Up to ${SHARE_RECIPIENTS_MAX} email addresses`,
          }),
          link: StringEnum(LINKS, { description: 'published or draft (a site), folder or file (a storage website)' }),
          folder: Type.Optional(
            Type.String({ minLength: 1, maxLength: 1500, description: 'link: folder: the folder path (as list_objects shows it)' }),
          ),
          objectId: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'link: file: the shared file (`obj_…`)' })),
          message: Type.Optional(Type.String({ maxLength: SHARE_MESSAGE_MAX_CHARS, description: 'Plain text, shown above the link' })),
          password: Type.Optional(
            Type.String({
              minLength: 1,
              maxLength: SITE_PASSWORD_MAX_CHARS,
              description: "A protected link's password, to put in the mail (checked first)",
            }),
          ),
        },
        { additionalProperties: false },
      ),
    ),
    response: Type.Object({
      link: Type.String({ description: 'The link the messages carry' }),
      recipients: Type.Array(Recipient),
      next: Type.Object({ message: Type.String() }),
    }),
    extraErrors: ['payment_required'],
    async handle(ctx, { body }) {
      const website = ctx.website!.record
      ctx.registry.plans.assertPaid(website.orgId, 'Emailing a link')
      // Each address once (as given the first time), each checked by the sign-up rules.
      const to = [...new Map(body.to.map((a, i) => [a.trim().toLowerCase(), checkEmail(a, `body.to[${i}]`)])).values()]
      const target = shared(ctx, body.link, body.folder, body.objectId)
      let lock: { password: string | null } | null = null
      if (target.scopes.length > 0) {
        if (body.password !== undefined) {
          const checks = await Promise.all(target.scopes.map((scope) => ctx.registry.sitePasswords.check(scope, body.password!)))
          if (!checks.some(Boolean))
            throw new ApiError('validation', 'body.password is not the password of this link; leave it out to send the link without it', {
              field: 'body.password',
            })
        }
        lock = { password: body.password ?? null }
      } else if (body.password !== undefined)
        throw new ApiError('validation', 'body.password was given but this link asks for none; leave it out', { field: 'body.password' })
      const personId = personOf(ctx.principal)
      const person = personId === null ? undefined : ctx.registry.people.person(personId)
      const sender = person?.name ?? ctx.org.record.name
      const composed = sharedLink(
        ctx.registry.mail.server(),
        sender,
        target.what,
        target.link,
        body.message ?? '',
        lock,
        person?.email ?? null,
      )
      const queued = await ctx.registry.mail.queueEach('link', website.orgId, to, composed)
      const held = !ctx.registry.mail.sending
      return {
        link: target.link,
        recipients: queued.map((m) => ({ email: m.to, messageId: m.id, state: held ? ('held' as const) : ('queued' as const) })),
        next: {
          message: held
            ? 'This server sends no email (no SMTP relay configured): the messages wait for its operator (plinth mail list). Give the person the link to pass on themselves.'
            : `The link is on its way to ${to.length === 1 ? to[0] : `${to.length} addresses`}. Tell the person who was sent what.`,
        },
      }
    },
  }),
]
