// Site passwords: set_website_password protects every address of a website (published, draft, custom domains).
import { Type } from '@sinclair/typebox'
import { auditActor } from '../../actors/organization/audit.js'
import { SITE_PASSWORD_MAX_CHARS, SITE_PASSWORD_MIN_CHARS } from '../../core/limits.js'
import { folderOf } from '../../actors/files/storage-names.js'
import { ApiError } from '../../core/errors.js'
import { defineOperation, WebsitePathParams, type OperationContext } from '../operation.js'

/** A shared folder's password, set or removed (set_folder_password, and begin_object_upload's `password`). */
export async function setFolderPassword(ctx: OperationContext, folder: string, password: string | null) {
  const website = ctx.website!
  if (website.record.kind !== 'storage')
    throw new ApiError('conflict', `Website ${website.id} is a ${website.record.kind} site; folder passwords are for storage websites`, {
      reason: 'wrong_kind',
    })
  if (password !== null) ctx.registry.plans.assertPaid(website.record.orgId, 'A folder password')
  return ctx.registry.sitePasswords.set(website.record, auditActor(ctx.principal), password, folder)
}

const PasswordField = Type.Union([Type.String({ minLength: SITE_PASSWORD_MIN_CHARS, maxLength: SITE_PASSWORD_MAX_CHARS }), Type.Null()])

export const passwordOperations = [
  defineOperation({
    method: 'PUT',
    path: '/v1/websites/{websiteId}/password',
    operationId: 'websites.setPassword',
    capability: 'websites.manage',
    rateClass: 'standard',
    tool: 'set_website_password',
    tag: 'Websites',
    summary: 'Protect a website with a password (or remove it)',
    description: `password (${SITE_PASSWORD_MIN_CHARS}-${SITE_PASSWORD_MAX_CHARS} characters) protects the whole site on every address, draft included: a visitor gets a password page and stays let in on that address for 7 days; programs send HTTP Basic auth with any user name. null removes it. Only a slow hash is kept, so tell the person the password with the link. With billing on it needs a paid plan (402 plan_required with details.upgradeUrl).`,
    params: WebsitePathParams,
    body: Type.Object({ password: PasswordField }, { additionalProperties: false }),
    response: Type.Object({ websiteId: Type.String(), protected: Type.Boolean(), next: Type.Object({ message: Type.String() }) }),
    extraErrors: ['payment_required'],
    async handle(ctx, { body }) {
      const website = ctx.website!
      if (body.password !== null) ctx.registry.plans.assertPaid(website.record.orgId, 'A site password')
      const result = await ctx.registry.sitePasswords.set(website.record, auditActor(ctx.principal), body.password)
      return {
        websiteId: website.id,
        protected: result.protected,
        next: {
          message: result.protected
            ? 'The site asks for the password on every address now; tell the person the password together with the link (only its hash is kept).'
            : 'The site is open to everyone again.',
        },
      }
    },
  }),
  defineOperation({
    method: 'PUT',
    path: '/v1/websites/{websiteId}/objects/folders/{folder}/password',
    operationId: 'storage.setFolderPassword',
    capability: 'storage.write',
    rateClass: 'standard',
    tool: 'set_folder_password',
    tag: 'Storage',
    summary: 'Protect a shared folder with a password (or remove it)',
    description: `password (${SITE_PASSWORD_MIN_CHARS}-${SITE_PASSWORD_MAX_CHARS} characters) protects the folder link, its files, subfolders and zip: a visitor gets a password page and stays let in for 7 days; programs send HTTP Basic auth with any user name. null removes it. Only a slow hash is kept, so tell the person the password with the link. With billing on it needs a paid plan (402 plan_required with details.upgradeUrl).`,
    params: Type.Object(
      {
        websiteId: Type.String({ description: 'Website id (`ws_…`)' }),
        folder: Type.String({ minLength: 1, maxLength: 1500, description: 'Folder path, URL-encoded' }),
      },
      { additionalProperties: false },
    ),
    body: Type.Object({ password: PasswordField }, { additionalProperties: false }),
    response: Type.Object({ folder: Type.String(), protected: Type.Boolean(), next: Type.Object({ message: Type.String() }) }),
    extraErrors: ['payment_required'],
    async handle(ctx, { params, body }) {
      const folder = folderOf(params.folder, 'path.folder')
      if (folder === '')
        throw new ApiError('validation', 'Name a folder; set_website_password protects the whole site', { field: 'path.folder' })
      const result = await setFolderPassword(ctx, folder, body.password)
      return {
        folder,
        protected: result.protected,
        next: {
          message: result.protected
            ? 'The folder link, its files and its zip ask for the password now; tell the person the password together with the link (only its hash is kept).'
            : 'The folder is open to anyone with its link again.',
        },
      }
    },
  }),
]
