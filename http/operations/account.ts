import { Type } from '@sinclair/typebox'
import { iso } from '../../core/clock.js'
import { ApiError } from '../../core/errors.js'
import { LIST_LIMIT_DEFAULT, PASSWORD_MAX_CHARS, PERSON_NAME_MAX_CHARS } from '../../core/limits.js'
import { personOf, type Principal } from '../../core/principal.js'
import { ListQuery, Page, Timestamp, named } from '../../core/schemas/common.js'
import { pageByKey } from '../../core/cursor.js'
import type { SessionView } from '../../actors/identity/account.js'
import { defineOperation } from '../operation.js'

/** A person's own account: a dashboard session, never an application acting for them or a key. */
function sessionPerson(principal: Principal, what: string): { personId: string; session: string } {
  const personId = personOf(principal)
  if (principal.kind !== 'user' || personId === null || principal.session === undefined)
    throw new ApiError(
      'forbidden',
      `Only you, signed in to the dashboard, may ${what}: an application acting for you or an API key cannot. Open the dashboard's Account page.`,
      { reason: 'session_required' },
    )
  return { personId, session: principal.session }
}

const Password = Type.String({ minLength: 1, maxLength: PASSWORD_MAX_CHARS })

const Session = named(
  'Session',
  Type.Object({
    id: Type.String({ description: 'The session’s id (`ses_…`); its cookie is never shown' }),
    device: Type.Union([Type.String(), Type.Null()], {
      description: 'The browser and system it signed in from; null for sessions older than this field',
    }),
    createdAt: Timestamp,
    lastSeenAt: Timestamp,
    expiresAt: Timestamp,
    current: Type.Boolean({ description: 'The session this request came with' }),
  }),
)

function sessionOut(s: SessionView) {
  return {
    id: s.id,
    device: s.device,
    createdAt: iso(s.createdAt),
    lastSeenAt: iso(s.seenAt),
    expiresAt: iso(s.expiresAt),
    current: s.current,
  }
}

const Person = Type.Object({
  id: Type.String(),
  name: Type.String(),
  email: Type.Union([Type.String(), Type.Null()]),
  pendingEmail: Type.Union([Type.String(), Type.Null()], {
    description: 'An address asked for and not confirmed yet (the link went to it); `email` stays until it is',
  }),
})

export const accountOperations = [
  defineOperation({
    method: 'PATCH',
    path: '/v1/me',
    operationId: 'me.update',
    capability: 'websites.read',
    personOnly: true,
    rateClass: 'standard',
    tool: null,
    tag: 'Account',
    summary: 'Change your name or landing workspace',
    description:
      'Changes the name the person is shown by, and the workspace a sign-in lands in (`lastWorkspaceId`: one of their workspaces, null for their own). A person only.',
    body: Type.Object(
      {
        name: Type.Optional(Type.String({ minLength: 1, maxLength: PERSON_NAME_MAX_CHARS })),
        lastWorkspaceId: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 64 }), Type.Null()])),
      },
      { additionalProperties: false, minProperties: 1 },
    ),
    response: Person,
    async handle(ctx, { body }) {
      const personId = personOf(ctx.principal)!
      const { account, people } = ctx.registry
      if (body.name !== undefined) await account.rename(personId, body.name)
      if (body.lastWorkspaceId !== undefined) await account.setLastWorkspace(personId, body.lastWorkspaceId)
      const person = people.person(personId)!
      return { id: person.id, name: person.name, email: person.email, pendingEmail: person.pendingEmail?.email ?? null }
    },
  }),
  defineOperation({
    method: 'PUT',
    path: '/v1/me/password',
    operationId: 'me.password.change',
    capability: 'websites.read',
    personOnly: true,
    rateClass: 'standard',
    tool: null,
    tag: 'Account',
    summary: 'Change your password',
    description:
      'Sets a new password after checking the current one. Every other session of the person is signed out; this one stays. A dashboard session only (403 `session_required` otherwise).',
    body: Type.Object({ currentPassword: Password, newPassword: Password }, { additionalProperties: false }),
    response: Type.Object({ changed: Type.Literal(true), otherSessionsEnded: Type.Integer() }),
    async handle(ctx, { body }) {
      const { personId, session } = sessionPerson(ctx.principal, 'change your password')
      const before = ctx.registry.people.sessionsOf(personId).length
      await ctx.registry.account.changePassword(personId, body.currentPassword, body.newPassword, session)
      return { changed: true as const, otherSessionsEnded: before - ctx.registry.people.sessionsOf(personId).length }
    },
  }),
  defineOperation({
    method: 'POST',
    path: '/v1/me/email',
    operationId: 'me.email.change',
    capability: 'websites.read',
    personOnly: true,
    rateClass: 'standard',
    tool: null,
    tag: 'Account',
    summary: 'Change your email address',
    description:
      'Sends a link to the new address; the person signs in with it once the link is opened (within 24 hours). The old address keeps working until then and is told of the request. A new request replaces the last one. A dashboard session only, with the current password.',
    body: Type.Object({ email: Type.String({ minLength: 3, maxLength: 254 }), currentPassword: Password }, { additionalProperties: false }),
    status: 202,
    response: Type.Object({
      email: Type.Union([Type.String(), Type.Null()], { description: 'The address you sign in with until the new one is confirmed' }),
      pendingEmail: Type.String(),
      expiresAt: Timestamp,
      mailSent: Type.Boolean({ description: 'false: this server sends no email, and the operator holds the link (plinth mail list)' }),
    }),
    async handle(ctx, { body }) {
      const { personId } = sessionPerson(ctx.principal, 'change your email address')
      const asked = await ctx.registry.account.requestEmailChange(personId, body.email, body.currentPassword)
      return {
        email: ctx.registry.people.person(personId)!.email,
        pendingEmail: asked.email,
        expiresAt: iso(asked.expiresAt),
        mailSent: ctx.registry.mail.sending,
      }
    },
  }),
  defineOperation({
    method: 'GET',
    path: '/v1/me/sessions',
    operationId: 'me.sessions.list',
    capability: 'websites.read',
    personOnly: true,
    rateClass: 'standard',
    tool: null,
    tag: 'Account',
    summary: 'Your dashboard sessions',
    description:
      'Where the person is signed in to the dashboard, newest first: device, when it began and was last seen, and which one is asking.',
    query: Type.Object(ListQuery, { additionalProperties: false }),
    response: Page(Session),
    handle(ctx, { query }) {
      const personId = personOf(ctx.principal)!
      // Newest first: the key orders by the start, then the id.
      const all = ctx.registry.account.sessions(personId, ctx.principal.session ?? null)
      const page = pageByKey(
        all.map((s) => ({ key: `${String(1e15 - s.createdAt).padStart(16, '0')}${s.id}`, s })),
        (e) => e.key,
        query.limit ?? LIST_LIMIT_DEFAULT,
        query.cursor,
      )
      return { items: page.items.map(({ s }) => sessionOut(s)), nextCursor: page.nextCursor }
    },
  }),
  defineOperation({
    method: 'DELETE',
    path: '/v1/me/sessions/{sessionId}',
    operationId: 'me.sessions.end',
    capability: 'websites.read',
    personOnly: true,
    rateClass: 'standard',
    tool: null,
    tag: 'Account',
    summary: 'Sign a session out',
    description: 'Ends one of the person’s dashboard sessions at once (its browser is signed out on its next request).',
    params: Type.Object({ sessionId: Type.String({ minLength: 1, maxLength: 64 }) }, { additionalProperties: false }),
    response: Type.Object({ id: Type.String(), ended: Type.Literal(true) }),
    async handle(ctx, { params }) {
      await ctx.registry.account.endSession(personOf(ctx.principal)!, params.sessionId)
      return { id: params.sessionId, ended: true as const }
    },
  }),
]
