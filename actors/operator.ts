import { ApiError } from '../core/errors.js'
import type { AuditActorValue } from '../core/schemas/audit.js'
import type { WebsiteRecord } from '../core/schemas/records.js'
import type { Registry } from './registry.js'

/** What an operator can do from the command line; none of it is an API operation. */
export type OperatorCommand =
  | { command: 'suspend'; websiteId: string; reason: string }
  | { command: 'unsuspend'; websiteId: string }

/** The audit actor for commands given on the server's own command line. */
export const OPERATOR: AuditActorValue = { kind: 'user', id: 'operator', name: 'Operator (plinth CLI)' }

/** Runs an operator command through the website's actor, like any other command. */
export async function runOperatorCommand(registry: Registry, command: OperatorCommand): Promise<WebsiteRecord> {
  const website = registry.website(command.websiteId)
  if (website === undefined) throw new ApiError('not_found', `Website ${command.websiteId} not found`)
  if (command.command === 'suspend') {
    if (command.reason.trim() === '') throw new ApiError('validation', 'a reason is required: --reason "..."')
    return website.suspend(OPERATOR, command.reason.trim())
  }
  return website.unsuspend(OPERATOR)
}
