import { Type, type Static } from '@sinclair/typebox'
import { API_KEY_NAME_MAX_CHARS } from '../limits.js'
import { ROLES } from '../roles.js'
import { ApiKeyId, NullableTimestamp, StringEnum, Timestamp, WebsiteId, named } from './common.js'

export const RoleSchema = StringEnum(ROLES, {
  description: 'content_editor within full_editor within admin (admin only for organization scope)',
})

export const Access = named(
  'ApiKeyAccess',
  Type.Object(
    {
      kind: StringEnum(['organization', 'websites'] as const, {
        description: 'organization: every website of the organization; websites: only `websiteIds`',
      }),
      role: RoleSchema,
      websiteIds: Type.Optional(Type.Array(WebsiteId, { minItems: 1, maxItems: 1000, uniqueItems: true })),
    },
    { additionalProperties: false },
  ),
)
export type AccessScope = Static<typeof Access>

export const ApiKey = named(
  'ApiKey',
  Type.Object({
    id: ApiKeyId,
    name: Type.Union([Type.String(), Type.Null()]),
    access: Access,
    status: StringEnum(['active', 'expired', 'revoked'] as const),
    secretHint: Type.String({ description: 'First characters of the secret, to recognise the key; never the secret' }),
    createdAt: Timestamp,
    updatedAt: Timestamp,
    expiresAt: NullableTimestamp,
    revokedAt: NullableTimestamp,
    rotatedAt: NullableTimestamp,
  }),
)
export type ApiKeyResource = Static<typeof ApiKey>

export const ApiKeyWithSecret = named(
  'ApiKeyWithSecret',
  Type.Composite([ApiKey, Type.Object({ secret: Type.String({ description: 'Shown exactly once; store it now' }) })]),
)

const KeyName = Type.String({ minLength: 1, maxLength: API_KEY_NAME_MAX_CHARS })

export const CreateApiKeyBody = Type.Object(
  { name: Type.Optional(KeyName), access: Access, expiresAt: Type.Optional(Timestamp) },
  { additionalProperties: false },
)
export type CreateApiKeyInput = Static<typeof CreateApiKeyBody>

export const UpdateApiKeyBody = Type.Object(
  {
    name: Type.Optional(Type.Union([KeyName, Type.Null()])),
    access: Type.Optional(Access),
    expiresAt: Type.Optional(Type.Union([Timestamp, Type.Null()])),
  },
  { additionalProperties: false, minProperties: 1 },
)
export type UpdateApiKeyInput = Static<typeof UpdateApiKeyBody>
