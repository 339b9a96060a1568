import { ApiError } from '../../core/errors.js'
import { hashSecret, newId, newSecret, SECRET_PREFIXES } from '../../core/ids.js'
import { INVITATION_MS } from '../../core/limits.js'
import { cursorBelow, pageDescending } from '../../core/cursor.js'
import { roleAtLeast, type Role } from '../../core/roles.js'
import type { AuditActorValue } from '../../core/schemas/audit.js'
import type { CollaboratorRecord, InvitationRecord, MembershipRecord, PersonRecord } from '../../core/schemas/identity.js'
import type { Mail } from '../mail/mail.js'
import { invitation as invitationMail } from '../mail/templates.js'
import { appendAudit } from '../organization/audit.js'
import { checkEmail, emailKey, insertMembership, type People } from './people.js'

export interface Member {
  person: PersonRecord
  membership: MembershipRecord
}

export interface Collaborator {
  person: PersonRecord
  collaboration: CollaboratorRecord
}

/** Where an invitation leads: an organization, or one website of it. */
export interface InvitationTarget {
  orgId: string
  websiteId: string | null
}

/**
 * Members, collaborators and invitations of organizations. Writes go through the People mailbox
 * (the one writer of memberships), each with its audit entry in the same commit; People's in-memory
 * roles follow after the commit, so a removed member's session or token loses the organization on
 * its very next request.
 */
export class Teams {
  constructor(
    private readonly people: People,
    private readonly mail: Mail,
  ) {}

  /** The invitation's mail, queued inside the commit that makes or renews its code. */
  #queueMail(record: InvitationRecord, code: string): void {
    const { store } = this.people
    const workspace = store.organizations.get(record.orgId)?.name ?? 'a workspace'
    const website = record.websiteId === null ? undefined : store.websites.get(record.websiteId)?.name
    const where = website === undefined ? `the workspace ${workspace}` : `the website ${website} (workspace ${workspace})`
    const link = this.mail.link(`/invite#code=${code}`)
    const composed = invitationMail(
      this.mail.server(),
      record.invitedBy.name ?? 'Someone',
      where,
      record.role.replace(/_/g, ' '),
      link,
      INVITATION_MS / 86_400_000,
    )
    this.mail.outbox.queue({ kind: 'invitation', organizationId: record.orgId, to: record.email, ...composed })
  }

  // Members

  members(orgId: string, limit: number, cursor: string | undefined): { items: Member[]; nextCursor: string | null } {
    const { store } = this.people
    const all: Member[] = []
    for (const { value } of store.memberships.range({ start: [orgId, ''], end: [orgId, '\uffff'] })) {
      const person = this.people.person(value.personId)
      if (person !== undefined) all.push({ person, membership: value })
    }
    all.sort((a, b) => b.membership.seq - a.membership.seq)
    return pageDescending(all, { numberOf: (m) => m.membership.seq, below: cursorBelow(cursor), limit })
  }

  member(orgId: string, personId: string): Member {
    const membership = this.people.store.memberships.get([orgId, personId])
    const person = this.people.person(personId)
    if (membership === undefined || person === undefined)
      throw new ApiError('not_found', `Member ${personId} not found in this organization`)
    return { person, membership }
  }

  changeRole(actor: AuditActorValue, orgId: string, personId: string, role: Role): Promise<Member> {
    return this.people.mailbox.run(async () => {
      const { store, clock } = this.people
      const now = clock.now()
      const next = await store.commit(() => {
        const { membership } = this.member(orgId, personId)
        if (membership.role === 'owner')
          throw new ApiError('conflict', 'The owner cannot be demoted; the owner stays the owner of the organization', {
            field: 'path.userId',
          })
        if (membership.role === role) return membership
        if (membership.role === 'admin' && !this.#otherAdmin(orgId, personId)) {
          throw new ApiError('conflict', 'This is the last admin; make another member admin first')
        }
        const next: MembershipRecord = { ...membership, role }
        store.memberships.put([orgId, personId], next)
        appendAudit(store, orgId, actor, now, {
          eventType: 'member.role_changed',
          resourceType: 'member',
          resourceId: personId,
          websiteId: null,
          metadata: { from: membership.role, to: role },
        })
        return next
      })
      this.people.mirrorMembership(personId, orgId, next.role)
      return { person: this.people.person(personId)!, membership: next }
    })
  }

  removeMember(actor: AuditActorValue, orgId: string, personId: string): Promise<void> {
    return this.people.mailbox.run(async () => {
      const { store, clock } = this.people
      const now = clock.now()
      await store.commit(() => {
        const { membership } = this.member(orgId, personId)
        if (membership.role === 'owner') throw new ApiError('conflict', 'The owner cannot be removed from the organization')
        if (roleAtLeast(membership.role, 'admin') && actor.id === personId && !this.#otherAdmin(orgId, personId)) {
          throw new ApiError('conflict', 'You are the last admin; make another member admin before leaving')
        }
        store.memberships.remove([orgId, personId])
        store.membershipsByPerson.remove([personId, orgId])
        appendAudit(store, orgId, actor, now, {
          eventType: 'member.removed',
          resourceType: 'member',
          resourceId: personId,
          websiteId: null,
          metadata: { role: membership.role },
        })
      })
      this.people.mirrorMembership(personId, orgId, null)
    })
  }

  /** True when someone besides `personId` is admin or owner. */
  #otherAdmin(orgId: string, personId: string): boolean {
    for (const { value } of this.people.store.memberships.range({ start: [orgId, ''], end: [orgId, '\uffff'] })) {
      if (value.personId !== personId && roleAtLeast(value.role, 'admin')) return true
    }
    return false
  }

  // Collaborators

  collaborators(websiteId: string): Collaborator[] {
    const out: Collaborator[] = []
    for (const { value } of this.people.store.collaborators.range({ start: [websiteId, ''], end: [websiteId, '\uffff'] })) {
      const person = this.people.person(value.personId)
      if (person !== undefined) out.push({ person, collaboration: value })
    }
    return out.sort((a, b) => b.collaboration.seq - a.collaboration.seq)
  }

  removeCollaborator(actor: AuditActorValue, orgId: string, websiteId: string, personId: string): Promise<void> {
    return this.people.mailbox.run(async () => {
      const { store, clock } = this.people
      const now = clock.now()
      const removed = await store.commit(() => {
        const record = store.collaborators.get([websiteId, personId])
        if (record === undefined) throw new ApiError('not_found', `Collaborator ${personId} not found on this website`)
        store.collaborators.remove([websiteId, personId])
        store.collaborationsByPerson.remove([personId, websiteId])
        appendAudit(store, orgId, actor, now, {
          eventType: 'collaborator.removed',
          resourceType: 'collaborator',
          resourceId: personId,
          websiteId,
          metadata: { role: record.role },
        })
        return record
      })
      this.people.mirrorCollaboration(removed, false)
    })
  }

  /** Drops every collaboration on a website (it moved to another organization); inside `store.commit`. */
  dropCollaborators(websiteId: string): CollaboratorRecord[] {
    const { store } = this.people
    const dropped: CollaboratorRecord[] = []
    for (const { value } of store.collaborators.range({ start: [websiteId, ''], end: [websiteId, '\uffff'] })) {
      store.collaborators.remove([websiteId, value.personId])
      store.collaborationsByPerson.remove([value.personId, websiteId])
      dropped.push(value)
    }
    return dropped
  }

  // Invitations

  /** Invites an email to the organization or a website; the code is returned once (the accept link carries it). */
  invite(
    actor: AuditActorValue,
    target: InvitationTarget,
    emailInput: string,
    role: Role,
  ): Promise<{ record: InvitationRecord; code: string }> {
    const email = checkEmail(emailInput, 'body.email')
    return this.people.mailbox.run(async () => {
      const { store, clock } = this.people
      const now = clock.now()
      const existing = this.people.personByEmail(email)
      if (existing !== undefined) {
        if (target.websiteId === null && this.people.role(existing.id, target.orgId) !== undefined) {
          throw new ApiError(
            'conflict',
            `${email} is already a member of this organization; change their role with PATCH /v1/members/${existing.id}`,
            { field: 'body.email' },
          )
        }
        if (target.websiteId !== null && this.people.role(existing.id, target.orgId) !== undefined) {
          throw new ApiError(
            'conflict',
            `${email} is a member of this organization and already reaches every website; collaborators are people outside it`,
            { field: 'body.email' },
          )
        }
        if (target.websiteId !== null && this.people.collaboration(existing.id, target.websiteId) !== undefined) {
          throw new ApiError('conflict', `${email} already collaborates on this website`, { field: 'body.email' })
        }
      }
      this.mail.outbox.checkLimits([email], target.orgId)
      const code = newSecret(SECRET_PREFIXES.invitation)
      const kind = target.websiteId === null ? 'member' : 'collaborator'
      const record = await store.commit(() => {
        const record: InvitationRecord = {
          v: 1,
          id: newId('inv'),
          kind,
          orgId: target.orgId,
          websiteId: target.websiteId,
          email,
          role,
          codeHash: hashSecret(code),
          seq: store.nextSeq(),
          createdAt: now,
          expiresAt: now + INVITATION_MS,
          acceptedAt: null,
          acceptedBy: null,
          revokedAt: null,
          invitedBy: actor,
        }
        store.invitations.put(record.id, record)
        store.invitationsByCode.put(record.codeHash, record.id)
        store.invitationsByOwner.put([target.orgId, target.websiteId ?? '', record.seq], record.id)
        appendAudit(store, target.orgId, actor, now, {
          eventType: kind === 'member' ? 'member.invited' : 'collaborator.invited',
          resourceType: 'invitation',
          resourceId: record.id,
          websiteId: target.websiteId,
          metadata: { email, role },
        })
        this.#queueMail(record, code)
        return record
      })
      return { record, code }
    })
  }

  /**
   * Sends a pending invitation again with a new link, valid for the full time again; the link sent
   * before stops working (only its hash was kept, so it cannot be sent twice).
   */
  resendInvitation(
    actor: AuditActorValue,
    target: InvitationTarget,
    invitationId: string,
  ): Promise<{ record: InvitationRecord; code: string }> {
    return this.people.mailbox.run(async () => {
      const { store, clock } = this.people
      const now = clock.now()
      this.mail.outbox.checkLimits([this.#pendingInvitation(target, invitationId, now).email], target.orgId)
      const code = newSecret(SECRET_PREFIXES.invitation)
      const record = await store.commit(() => {
        const current = this.#pendingInvitation(target, invitationId, now)
        const next: InvitationRecord = { ...current, codeHash: hashSecret(code), expiresAt: now + INVITATION_MS }
        store.invitationsByCode.remove(current.codeHash)
        store.invitationsByCode.put(next.codeHash, next.id)
        store.invitations.put(next.id, next)
        appendAudit(store, next.orgId, actor, now, {
          eventType: next.kind === 'member' ? 'member.invitation_resent' : 'collaborator.invitation_resent',
          resourceType: 'invitation',
          resourceId: next.id,
          websiteId: next.websiteId,
          metadata: { email: next.email },
        })
        this.#queueMail(next, code)
        return next
      })
      return { record, code }
    })
  }

  /** Pending invitations (not accepted, revoked or expired), newest first. */
  invitations(
    target: InvitationTarget,
    limit: number,
    cursor: string | undefined,
  ): { items: InvitationRecord[]; nextCursor: string | null } {
    const { store, clock } = this.people
    const now = clock.now()
    const below = cursorBelow(cursor)
    const owner = target.websiteId ?? ''
    const records = function* () {
      for (const { value } of store.invitationsByOwner.range({
        start: [target.orgId, owner, below],
        end: [target.orgId, owner, 0],
        reverse: true,
      })) {
        const record = store.invitations.get(value)
        if (record !== undefined) yield record
      }
    }
    return pageDescending(records(), { numberOf: (r) => r.seq, below, limit, include: (r) => invitationPending(r, now) })
  }

  revokeInvitation(actor: AuditActorValue, target: InvitationTarget, invitationId: string): Promise<InvitationRecord> {
    return this.people.mailbox.run(async () => {
      const { store, clock } = this.people
      const now = clock.now()
      return store.commit(() => {
        const record = this.#pendingInvitation(target, invitationId, now)
        const next = { ...record, revokedAt: now }
        store.invitations.put(record.id, next)
        store.invitationsByCode.remove(record.codeHash)
        appendAudit(store, record.orgId, actor, now, {
          eventType: record.kind === 'member' ? 'member.invitation_revoked' : 'collaborator.invitation_revoked',
          resourceType: 'invitation',
          resourceId: record.id,
          websiteId: record.websiteId,
          metadata: { email: record.email },
        })
        return next
      })
    })
  }

  /** A pending invitation of the target by its id, or a 404 (another target's is as unknown as a missing one). */
  #pendingInvitation(target: InvitationTarget, invitationId: string, now: number): InvitationRecord {
    const record = this.people.store.invitations.get(invitationId)
    if (record === undefined || record.orgId !== target.orgId || record.websiteId !== target.websiteId || !invitationPending(record, now))
      throw new ApiError('not_found', `Invitation ${invitationId} not found (or no longer pending)`)
    return record
  }

  /** A pending invitation by its code, or a 404 that never says whether it was wrong, used, revoked or expired. */
  invitationByCode(code: string): InvitationRecord {
    const { store, clock } = this.people
    const id = store.invitationsByCode.get(hashSecret(code))
    const record = id === undefined ? undefined : store.invitations.get(id)
    if (record === undefined || !invitationPending(record, clock.now())) {
      throw new ApiError('not_found', 'This invitation is unknown, used, revoked or expired; ask for a new one')
    }
    return record
  }

  /**
   * What an invitation link holds, for its page to say when it is opened: pending (with the record),
   * expired, revoked, or unknown (never issued, or used: a used code is forgotten).
   */
  invitationLink(code: string): { state: 'pending' | 'expired' | 'revoked' | 'unknown'; record?: InvitationRecord } {
    const { store, clock } = this.people
    const id = code === '' ? undefined : store.invitationsByCode.get(hashSecret(code))
    const record = id === undefined ? undefined : store.invitations.get(id)
    if (record === undefined || record.acceptedAt !== null) return { state: 'unknown' }
    if (record.revokedAt !== null) return { state: 'revoked', record }
    if (record.expiresAt <= clock.now()) return { state: 'expired', record }
    return { state: 'pending', record }
  }

  /** Accepts an invitation as the signed-in person, whose email must be the invited one. */
  accept(code: string, person: PersonRecord): Promise<InvitationRecord> {
    return this.people.mailbox.run(async () => {
      const { store, clock } = this.people
      const now = clock.now()
      const invitation = this.invitationByCode(code)
      if (person.email === null || emailKey(person.email) !== emailKey(invitation.email)) {
        throw new ApiError(
          'forbidden',
          `This invitation is for ${invitation.email}; sign in as that person (or create their account) to accept it`,
        )
      }
      const actor: AuditActorValue = { kind: 'user', id: person.id, name: person.name }
      let membership: MembershipRecord | undefined
      let collaboration: CollaboratorRecord | undefined
      await store.commit(() => {
        store.invitations.put(invitation.id, { ...invitation, acceptedAt: now, acceptedBy: person.id })
        store.invitationsByCode.remove(invitation.codeHash)
        if (invitation.kind === 'member') {
          const current = store.memberships.get([invitation.orgId, person.id])
          if (current === undefined) membership = insertMembership(store, invitation.orgId, person.id, invitation.role, now)
          appendAudit(store, invitation.orgId, actor, now, {
            eventType: 'member.joined',
            resourceType: 'member',
            resourceId: person.id,
            websiteId: null,
            metadata: { role: invitation.role, invitationId: invitation.id },
          })
        } else {
          const website = store.websites.get(invitation.websiteId!)
          if (website === undefined || website.orgId !== invitation.orgId)
            throw new ApiError('not_found', 'The website of this invitation is gone')
          collaboration = {
            v: 1,
            websiteId: website.id,
            orgId: website.orgId,
            personId: person.id,
            role: invitation.role === 'content_editor' ? 'content_editor' : 'full_editor',
            seq: store.nextSeq(),
            createdAt: now,
          }
          store.collaborators.put([website.id, person.id], collaboration)
          store.collaborationsByPerson.put([person.id, website.id], website.id)
          appendAudit(store, invitation.orgId, actor, now, {
            eventType: 'collaborator.added',
            resourceType: 'collaborator',
            resourceId: person.id,
            websiteId: website.id,
            metadata: { role: collaboration.role, invitationId: invitation.id },
          })
        }
      })
      if (membership !== undefined) this.people.mirrorMembership(person.id, membership.orgId, membership.role)
      if (collaboration !== undefined) this.people.mirrorCollaboration(collaboration, true)
      return invitation
    })
  }
}

export function invitationPending(record: InvitationRecord, now: number): boolean {
  return record.acceptedAt === null && record.revokedAt === null && record.expiresAt > now
}
