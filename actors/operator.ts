import { ApiError } from '../core/errors.js'
import type { AuditActorValue } from '../core/schemas/audit.js'
import type { Registry } from './registry.js'
import { runMailCommand, type MailCommand } from './mail/commands.js'

/** What an operator can do from the command line; none of it is an API operation. */
export type OperatorCommand =
  | { command: 'suspend'; websiteId: string; reason: string }
  | { command: 'unsuspend'; websiteId: string }
  | { command: 'user-add'; email: string; name: string; password: string }
  | { command: 'user-reset-password'; email?: string; userId?: string; password: string }
  | { command: 'plan-set'; orgId: string; plan: string; comped: boolean }
  | { command: 'feedback' }
  | { command: 'anonymous-invite'; uses: number | null; days: number | null; note: string | null }
  | MailCommand

/** What the command line prints. */
export interface OperatorAnswer {
  message: string
}

/** The audit actor for commands given on the server's own command line. */
export const OPERATOR: AuditActorValue = { kind: 'user', id: 'operator', name: 'Operator (plinth CLI)' }

/** Runs an operator command through the actors, like any other command. */
export async function runOperatorCommand(registry: Registry, command: OperatorCommand): Promise<OperatorAnswer> {
  switch (command.command) {
    case 'mail-list':
    case 'mail-show':
    case 'mail-retry':
    case 'mail-test':
      return runMailCommand(registry.mail, command)
    case 'suspend':
    case 'unsuspend': {
      const website = registry.website(command.websiteId)
      if (website === undefined) throw new ApiError('not_found', `Website ${command.websiteId} not found`)
      let w
      if (command.command === 'suspend') {
        if (command.reason.trim() === '') throw new ApiError('validation', 'a reason is required: --reason "..."')
        w = await website.suspend(OPERATOR, command.reason.trim())
      } else w = await website.unsuspend(OPERATOR)
      return {
        message:
          w.suspendedAt === null
            ? `${w.id} (${w.subdomain}) is not suspended`
            : `${w.id} (${w.subdomain}) is suspended: ${w.suspendedReason}`,
      }
    }
    case 'user-add': {
      const person = await registry.people.addPerson({ email: command.email, name: command.name, password: command.password })
      return {
        message: `Created ${person.id} (${person.email}) with the personal workspace ${person.personalOrgId}; they sign in at the dashboard`,
      }
    }
    case 'user-reset-password': {
      const person =
        command.userId !== undefined ? registry.people.person(command.userId) : registry.people.personByEmail(command.email ?? '')
      if (person === undefined) throw new ApiError('not_found', `No person ${command.userId ?? command.email}`)
      if (person.email === null && command.email === undefined)
        throw new ApiError('validation', `${person.id} has no email yet; give one with --email`)
      const updated = await registry.people.updatePerson(person.id, {
        password: command.password,
        email: command.userId !== undefined ? command.email : undefined,
      })
      return { message: `New password set for ${updated.id} (${updated.email}); their sessions are signed out` }
    }
    case 'plan-set': {
      if (command.plan !== 'free' && command.plan !== 'base' && command.plan !== 'max')
        throw new ApiError('validation', `plan must be free, base or max, not ${command.plan}`)
      const record = await registry.plans.set(OPERATOR, command.orgId, command.plan, { comped: command.comped })
      const note = registry.plans.billing.enabled ? '' : ' (billing is off on this server: plans limit nothing until PLINTH_BILLING=on)'
      return { message: `${command.orgId} is on the ${record.plan} plan${record.comped ? ', comped' : ''}${note}` }
    }
    case 'anonymous-invite': {
      const { code, record } = await registry.anonymous.createInvite({ uses: command.uses, days: command.days, note: command.note })
      const limits = [
        record.usesLeft === null ? 'any number of credentials' : `${record.usesLeft} credential${record.usesLeft === 1 ? '' : 's'}`,
        record.expiresAt === null ? 'no expiry' : `until ${new Date(record.expiresAt).toISOString()}`,
      ]
      return {
        message: `${code}\nAn invite code for anonymous publishing (${limits.join(', ')}); agents send it as X-Invite-Code when they POST /public/v1/anonymous/credentials. It is shown once.`,
      }
    }
    case 'feedback': {
      const lines: string[] = []
      for (const { value } of registry.reads.feedback.range({ start: [0], end: [Number.MAX_SAFE_INTEGER] })) {
        lines.push(
          `${new Date(value.createdAt).toISOString()}  ${value.orgId}  ${value.actor.kind}:${value.actor.id}${value.actor.agent ? ` via ${value.actor.agent}` : ''}\n  ${value.message.replace(/\n/g, '\n  ')}${value.context === null ? '' : `\n  context: ${JSON.stringify(value.context)}`}`,
        )
      }
      return { message: lines.length === 0 ? 'No feedback yet' : lines.join('\n') }
    }
  }
}
