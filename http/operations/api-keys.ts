import { Type } from '@sinclair/typebox'
import { iso, type Clock } from '../../core/clock.js'
import { LIST_LIMIT_DEFAULT } from '../../core/limits.js'
import { ApiKey, ApiKeyWithSecret, CreateApiKeyBody, UpdateApiKeyBody, type ApiKeyResource } from '../../core/schemas/api-key.js'
import { ApiKeyId, ListQuery, Page, StringEnum, WebsiteId } from '../../core/schemas/common.js'
import type { ApiKeyRecord } from '../../core/schemas/records.js'
import { defineOperation } from '../operation.js'

/** The API resource of a key record; never the secret or its hash. */
export function apiKeyResource(record: ApiKeyRecord, clock: Clock): ApiKeyResource {
  const status = record.revokedAt !== null ? 'revoked' : record.expiresAt !== null && record.expiresAt <= clock.now() ? 'expired' : 'active'
  return {
    id: record.id,
    name: record.name,
    access: record.access,
    status,
    secretHint: record.secretHint,
    createdAt: iso(record.createdAt),
    updatedAt: iso(record.updatedAt),
    expiresAt: record.expiresAt === null ? null : iso(record.expiresAt),
    revokedAt: record.revokedAt === null ? null : iso(record.revokedAt),
    rotatedAt: record.rotatedAt === null ? null : iso(record.rotatedAt),
  }
}

const KeyParams = Type.Object({ keyId: ApiKeyId }, { additionalProperties: false })
const tag = 'API keys'

export const apiKeyOperations = [
  defineOperation({
    method: 'POST',
    path: '/v1/api-keys',
    operationId: 'apiKeys.create',
    capability: 'apiKeys.manage',
    rateClass: 'standard',
    tool: 'create_api_key',
    tag,
    summary: 'Create an API key',
    description:
      'Creates an API key with an access scope (organization, or a list of websites) and a role (content_editor, full_editor, admin). The secret is in this response only: store it at once.',
    body: CreateApiKeyBody,
    response: ApiKeyWithSecret,
    status: 201,
    async handle(ctx, { body }) {
      const { record, secret } = await ctx.org.createKey(ctx.principal, body)
      return { ...apiKeyResource(record, ctx.clock), secret }
    },
  }),
  defineOperation({
    method: 'GET',
    path: '/v1/api-keys',
    operationId: 'apiKeys.list',
    capability: 'apiKeys.manage',
    rateClass: 'standard',
    tool: 'list_api_keys',
    tag,
    summary: 'List API keys',
    description:
      'Lists API keys of the organization, newest first (secrets are never shown). Revoked keys are left out unless status=all; websiteId keeps only keys that reach that website.',
    query: Type.Object(
      {
        ...ListQuery,
        status: Type.Optional(StringEnum(['active', 'all'] as const, { description: 'all includes revoked keys' })),
        websiteId: Type.Optional(WebsiteId),
      },
      { additionalProperties: false },
    ),
    response: Page(ApiKey),
    handle(ctx, { query }) {
      const page = ctx.org.listKeys({
        includeRevoked: query.status === 'all',
        websiteId: query.websiteId,
        limit: query.limit ?? LIST_LIMIT_DEFAULT,
        cursor: query.cursor,
      })
      return { items: page.items.map((r) => apiKeyResource(r, ctx.clock)), nextCursor: page.nextCursor }
    },
  }),
  defineOperation({
    method: 'GET',
    path: '/v1/api-keys/{keyId}',
    operationId: 'apiKeys.get',
    capability: 'apiKeys.manage',
    rateClass: 'standard',
    tool: 'get_api_key',
    tag,
    summary: 'Get an API key',
    description: 'Returns one API key: its name, access scope, status and dates (never the secret).',
    params: KeyParams,
    response: ApiKey,
    handle: (ctx, { params }) => apiKeyResource(ctx.org.getKey(params.keyId), ctx.clock),
  }),
  defineOperation({
    method: 'PATCH',
    path: '/v1/api-keys/{keyId}',
    operationId: 'apiKeys.update',
    capability: 'apiKeys.manage',
    rateClass: 'standard',
    tool: 'update_api_key',
    tag,
    summary: 'Change name, access or expiry',
    description:
      "Changes an API key's name, access scope or expiry (null removes it). The change applies to the very next request made with the key.",
    params: KeyParams,
    body: UpdateApiKeyBody,
    response: ApiKey,
    async handle(ctx, { params, body }) {
      return apiKeyResource(await ctx.org.updateKey(ctx.principal, params.keyId, body), ctx.clock)
    },
  }),
  defineOperation({
    method: 'POST',
    path: '/v1/api-keys/{keyId}/rotate',
    operationId: 'apiKeys.rotate',
    capability: 'apiKeys.manage',
    rateClass: 'standard',
    tool: 'rotate_api_key',
    tag,
    summary: 'Rotate the secret',
    description: 'Issues a new secret for an API key; the old secret stops working at once. The new secret is in this response only.',
    params: KeyParams,
    response: ApiKeyWithSecret,
    async handle(ctx, { params }) {
      const { record, secret } = await ctx.org.rotateKey(ctx.principal, params.keyId)
      return { ...apiKeyResource(record, ctx.clock), secret }
    },
  }),
  defineOperation({
    method: 'DELETE',
    path: '/v1/api-keys/{keyId}',
    operationId: 'apiKeys.revoke',
    capability: 'apiKeys.manage',
    rateClass: 'standard',
    tool: 'revoke_api_key',
    tag,
    summary: 'Revoke an API key',
    description: 'Revokes an API key permanently; its secret stops working at once. The key stays listed with status=all.',
    params: KeyParams,
    response: ApiKey,
    async handle(ctx, { params }) {
      return apiKeyResource(await ctx.org.revokeKey(ctx.principal, params.keyId), ctx.clock)
    },
  }),
]
