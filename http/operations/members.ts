import { Type } from '@sinclair/typebox'
import { iso } from '../../core/clock.js'
import { EMAIL_MAX_CHARS, LIST_LIMIT_DEFAULT } from '../../core/limits.js'
import { pageByKey } from '../../core/cursor.js'
import { actorOf } from '../../core/principal.js'
import { PERSON_ROLES } from '../../core/roles.js'
import { ListQuery, Page, StringEnum, Timestamp, named } from '../../core/schemas/common.js'
import type { InvitationRecord } from '../../core/schemas/identity.js'
import type { PublicUrls } from '../../core/hostnames.js'
import type { Collaborator, Member } from '../../actors/identity/teams.js'
import { defineOperation, WebsitePathParams, type OperationContext } from '../operation.js'

const UserId = Type.String({ pattern: '^usr_[a-z0-9]{1,64}$', description: 'Person id (`usr_…`)' })
const InvitationId = Type.String({ pattern: '^inv_[a-z0-9]{1,64}$', description: 'Invitation id (`inv_…`)' })

const MemberSchema = named(
  'Member',
  Type.Object({
    userId: UserId,
    email: Type.Union([Type.String(), Type.Null()]),
    name: Type.String(),
    role: StringEnum(PERSON_ROLES),
    joinedAt: Timestamp,
  }),
)

const CollaboratorSchema = named(
  'Collaborator',
  Type.Object({
    userId: UserId,
    email: Type.Union([Type.String(), Type.Null()]),
    name: Type.String(),
    websiteId: Type.String(),
    role: StringEnum(['full_editor', 'content_editor'] as const),
    addedAt: Timestamp,
  }),
)

const InvitationSchema = named(
  'Invitation',
  Type.Object({
    id: InvitationId,
    kind: StringEnum(['member', 'collaborator'] as const),
    email: Type.String(),
    role: StringEnum(['content_editor', 'full_editor', 'admin'] as const),
    websiteId: Type.Union([Type.String(), Type.Null()]),
    status: StringEnum(['pending', 'accepted', 'revoked', 'expired'] as const),
    createdAt: Timestamp,
    expiresAt: Timestamp,
    invitedBy: Type.Object({ kind: Type.String(), id: Type.String(), name: Type.Union([Type.String(), Type.Null()]) }),
  }),
)

const InvitationWithLink = named(
  'InvitationWithLink',
  Type.Composite([
    InvitationSchema,
    Type.Object({
      acceptUrl: Type.String({ description: 'Shown once: `{app_url}/invite#code=…`; the invited person accepts with it' }),
      emailed: Type.Boolean({
        description:
          'true: the link is on its way to the address by email; false: this server sends no email (no SMTP configured), so send acceptUrl yourself',
      }),
    }),
  ]),
)

const Email = Type.String({ minLength: 3, maxLength: EMAIL_MAX_CHARS, description: 'The invited person’s email' })
const Removed = Type.Object({ userId: UserId, removed: Type.Literal(true) })

function member({ person, membership }: Member) {
  return { userId: person.id, email: person.email, name: person.name, role: membership.role, joinedAt: iso(membership.createdAt) }
}

function collaborator({ person, collaboration }: Collaborator) {
  return {
    userId: person.id,
    email: person.email,
    name: person.name,
    websiteId: collaboration.websiteId,
    role: collaboration.role,
    addedAt: iso(collaboration.createdAt),
  }
}

function invitation(record: InvitationRecord, now: number) {
  const status =
    record.acceptedAt !== null ? 'accepted' : record.revokedAt !== null ? 'revoked' : record.expiresAt <= now ? 'expired' : 'pending'
  return {
    id: record.id,
    kind: record.kind,
    email: record.email,
    role: record.role,
    websiteId: record.websiteId,
    status,
    createdAt: iso(record.createdAt),
    expiresAt: iso(record.expiresAt),
    invitedBy: { kind: record.invitedBy.kind, id: record.invitedBy.id, name: record.invitedBy.name },
  } as const
}

/** An invitation with its link, just made or renewed: the answer that shows the code once. */
function withLink(ctx: OperationContext, record: InvitationRecord, code: string) {
  return { ...invitation(record, ctx.clock.now()), acceptUrl: acceptUrl(ctx.urls, code), emailed: ctx.registry.mail.sending }
}

/** The accept link: the code rides in the fragment, never in a query. */
function acceptUrl(urls: PublicUrls, code: string): string {
  return urls.app(`/invite#code=${code}`)
}

function website(ctx: OperationContext) {
  return ctx.website!.record
}

const members = 'Members'
const collaborators = 'Collaborators'

export const memberOperations = [
  defineOperation({
    method: 'GET',
    path: '/v1/members',
    operationId: 'members.list',
    capability: 'members.manage',
    rateClass: 'standard',
    tool: 'list_members',
    tag: members,
    summary: 'List members',
    description: 'Lists the people of the organization with their roles (owner, admin, full_editor, content_editor), newest first.',
    query: Type.Object(ListQuery, { additionalProperties: false }),
    response: Page(MemberSchema),
    handle(ctx, { query }) {
      const page = ctx.registry.teams.members(ctx.org.id, query.limit ?? LIST_LIMIT_DEFAULT, query.cursor)
      return { items: page.items.map(member), nextCursor: page.nextCursor }
    },
  }),
  defineOperation({
    method: 'PATCH',
    path: '/v1/members/{userId}',
    operationId: 'members.update',
    capability: 'members.manage',
    rateClass: 'standard',
    tool: 'update_member',
    tag: members,
    summary: 'Change a member’s role',
    description:
      'Sets a member’s role to admin, full_editor or content_editor. The owner cannot be demoted; the last admin cannot be demoted. Takes effect on the member’s next request.',
    params: Type.Object({ userId: UserId }, { additionalProperties: false }),
    body: Type.Object({ role: StringEnum(['content_editor', 'full_editor', 'admin'] as const) }, { additionalProperties: false }),
    response: MemberSchema,
    async handle(ctx, { params, body }) {
      return member(await ctx.registry.teams.changeRole(actorOf(ctx.principal), ctx.org.id, params.userId, body.role))
    },
  }),
  defineOperation({
    method: 'DELETE',
    path: '/v1/members/{userId}',
    operationId: 'members.remove',
    capability: 'members.manage',
    rateClass: 'standard',
    tool: 'remove_member',
    tag: members,
    summary: 'Remove a member',
    description:
      'Removes a person from the organization: their sessions and OAuth tokens lose it on their next request. The owner cannot be removed; the last admin cannot remove themselves.',
    params: Type.Object({ userId: UserId }, { additionalProperties: false }),
    response: Removed,
    async handle(ctx, { params }) {
      await ctx.registry.teams.removeMember(actorOf(ctx.principal), ctx.org.id, params.userId)
      return { userId: params.userId, removed: true as const }
    },
  }),
  defineOperation({
    method: 'GET',
    path: '/v1/members/invitations',
    operationId: 'members.invitations.list',
    capability: 'members.manage',
    rateClass: 'standard',
    tool: 'list_member_invitations',
    tag: members,
    summary: 'List pending invitations',
    description: 'Lists invitations to the organization that are still pending (not accepted, revoked or expired), newest first.',
    query: Type.Object(ListQuery, { additionalProperties: false }),
    response: Page(InvitationSchema),
    handle(ctx, { query }) {
      const page = ctx.registry.teams.invitations({ orgId: ctx.org.id, websiteId: null }, query.limit ?? LIST_LIMIT_DEFAULT, query.cursor)
      return { items: page.items.map((r) => invitation(r, ctx.clock.now())), nextCursor: page.nextCursor }
    },
  }),
  defineOperation({
    method: 'POST',
    path: '/v1/members/invitations',
    operationId: 'members.invitations.create',
    capability: 'members.manage',
    rateClass: 'standard',
    tool: 'invite_member',
    tag: members,
    summary: 'Invite a member',
    description:
      'Invites an email to the organization with a role: the link goes to the address by email (`emailed`), and is answered once as acceptUrl ({app_url}/invite#code=…, valid 7 days) to pass on by other means too. The person accepts it signed in with that email (or creates the account there).',
    body: Type.Object(
      { email: Email, role: StringEnum(['content_editor', 'full_editor', 'admin'] as const) },
      { additionalProperties: false },
    ),
    response: InvitationWithLink,
    status: 201,
    async handle(ctx, { body }) {
      const { record, code } = await ctx.registry.teams.invite(
        actorOf(ctx.principal),
        { orgId: ctx.org.id, websiteId: null },
        body.email,
        body.role,
      )
      return withLink(ctx, record, code)
    },
  }),
  defineOperation({
    method: 'DELETE',
    path: '/v1/members/invitations/{invitationId}',
    operationId: 'members.invitations.revoke',
    capability: 'members.manage',
    rateClass: 'standard',
    tool: 'revoke_member_invitation',
    tag: members,
    summary: 'Revoke an invitation',
    description: 'Revokes a pending invitation: its link stops working.',
    params: Type.Object({ invitationId: InvitationId }, { additionalProperties: false }),
    response: InvitationSchema,
    async handle(ctx, { params }) {
      return invitation(
        await ctx.registry.teams.revokeInvitation(actorOf(ctx.principal), { orgId: ctx.org.id, websiteId: null }, params.invitationId),
        ctx.clock.now(),
      )
    },
  }),
  defineOperation({
    method: 'POST',
    path: '/v1/members/invitations/{invitationId}/resend',
    operationId: 'members.invitations.resend',
    capability: 'members.manage',
    rateClass: 'standard',
    tool: 'resend_member_invitation',
    tag: members,
    summary: 'Send an invitation again',
    description:
      'Sends a pending invitation again by email with a new link, valid 7 days from now; the link sent before stops working. Answers the new acceptUrl once.',
    params: Type.Object({ invitationId: InvitationId }, { additionalProperties: false }),
    response: InvitationWithLink,
    async handle(ctx, { params }) {
      const { record, code } = await ctx.registry.teams.resendInvitation(
        actorOf(ctx.principal),
        { orgId: ctx.org.id, websiteId: null },
        params.invitationId,
      )
      return withLink(ctx, record, code)
    },
  }),
  // Collaborators
  defineOperation({
    method: 'GET',
    path: '/v1/websites/{websiteId}/collaborators',
    operationId: 'collaborators.list',
    capability: 'websites.manage',
    rateClass: 'standard',
    tool: 'list_collaborators',
    tag: collaborators,
    summary: 'List collaborators',
    description: 'Lists the people outside the organization who work on this one website, with their role.',
    params: WebsitePathParams,
    query: Type.Object(ListQuery, { additionalProperties: false }),
    response: Page(CollaboratorSchema),
    handle(ctx, { query }) {
      const all = ctx.registry.teams.collaborators(website(ctx).id).map(collaborator)
      const page = pageByKey(
        all.sort((a, b) => (a.userId < b.userId ? -1 : a.userId > b.userId ? 1 : 0)),
        (c) => c.userId,
        query.limit ?? LIST_LIMIT_DEFAULT,
        query.cursor,
      )
      return page
    },
  }),
  defineOperation({
    method: 'POST',
    path: '/v1/websites/{websiteId}/collaborators/invitations',
    operationId: 'collaborators.invitations.create',
    capability: 'websites.manage',
    rateClass: 'standard',
    tool: 'invite_collaborator',
    tag: collaborators,
    summary: 'Invite a collaborator',
    description:
      'Invites a person outside the organization to this website only, as full_editor or content_editor: the link goes to the address by email (`emailed`) and is answered once as acceptUrl. They see and act on this website and nothing else of the organization.',
    params: WebsitePathParams,
    body: Type.Object({ email: Email, role: StringEnum(['content_editor', 'full_editor'] as const) }, { additionalProperties: false }),
    response: InvitationWithLink,
    status: 201,
    async handle(ctx, { body }) {
      const w = website(ctx)
      const { record, code } = await ctx.registry.teams.invite(
        actorOf(ctx.principal),
        { orgId: w.orgId, websiteId: w.id },
        body.email,
        body.role,
      )
      return withLink(ctx, record, code)
    },
  }),
  defineOperation({
    method: 'GET',
    path: '/v1/websites/{websiteId}/collaborators/invitations',
    operationId: 'collaborators.invitations.list',
    capability: 'websites.manage',
    rateClass: 'standard',
    tool: 'list_collaborator_invitations',
    tag: collaborators,
    summary: 'List pending collaborator invitations',
    description: 'Lists pending invitations to this website, newest first.',
    params: WebsitePathParams,
    query: Type.Object(ListQuery, { additionalProperties: false }),
    response: Page(InvitationSchema),
    handle(ctx, { query }) {
      const w = website(ctx)
      const page = ctx.registry.teams.invitations({ orgId: w.orgId, websiteId: w.id }, query.limit ?? LIST_LIMIT_DEFAULT, query.cursor)
      return { items: page.items.map((r) => invitation(r, ctx.clock.now())), nextCursor: page.nextCursor }
    },
  }),
  defineOperation({
    method: 'DELETE',
    path: '/v1/websites/{websiteId}/collaborators/invitations/{invitationId}',
    operationId: 'collaborators.invitations.revoke',
    capability: 'websites.manage',
    rateClass: 'standard',
    tool: 'revoke_collaborator_invitation',
    tag: collaborators,
    summary: 'Revoke a collaborator invitation',
    description: 'Revokes a pending invitation to this website.',
    params: Type.Object({ websiteId: WebsitePathParams.properties.websiteId, invitationId: InvitationId }, { additionalProperties: false }),
    response: InvitationSchema,
    async handle(ctx, { params }) {
      const w = website(ctx)
      return invitation(
        await ctx.registry.teams.revokeInvitation(actorOf(ctx.principal), { orgId: w.orgId, websiteId: w.id }, params.invitationId),
        ctx.clock.now(),
      )
    },
  }),
  defineOperation({
    method: 'POST',
    path: '/v1/websites/{websiteId}/collaborators/invitations/{invitationId}/resend',
    operationId: 'collaborators.invitations.resend',
    capability: 'websites.manage',
    rateClass: 'standard',
    tool: 'resend_collaborator_invitation',
    tag: collaborators,
    summary: 'Send a collaborator invitation again',
    description:
      'Sends a pending invitation to this website again by email with a new link, valid 7 days from now; the link sent before stops working.',
    params: Type.Object({ websiteId: WebsitePathParams.properties.websiteId, invitationId: InvitationId }, { additionalProperties: false }),
    response: InvitationWithLink,
    async handle(ctx, { params }) {
      const w = website(ctx)
      const { record, code } = await ctx.registry.teams.resendInvitation(
        actorOf(ctx.principal),
        { orgId: w.orgId, websiteId: w.id },
        params.invitationId,
      )
      return withLink(ctx, record, code)
    },
  }),
  defineOperation({
    method: 'DELETE',
    path: '/v1/websites/{websiteId}/collaborators/{userId}',
    operationId: 'collaborators.remove',
    capability: 'websites.manage',
    rateClass: 'standard',
    tool: 'remove_collaborator',
    tag: collaborators,
    summary: 'Remove a collaborator',
    description: 'Removes a collaborator from this website; they lose it on their next request.',
    params: Type.Object({ websiteId: WebsitePathParams.properties.websiteId, userId: UserId }, { additionalProperties: false }),
    response: Removed,
    async handle(ctx, { params }) {
      const w = website(ctx)
      await ctx.registry.teams.removeCollaborator(actorOf(ctx.principal), w.orgId, w.id, params.userId)
      return { userId: params.userId, removed: true as const }
    },
  }),
]
