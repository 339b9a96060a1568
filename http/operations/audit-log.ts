import { Type } from '@sinclair/typebox'
import { listAudit, type AuditFilter } from '../../actors/organization/audit.js'
import { iso } from '../../core/clock.js'
import { ApiError } from '../../core/errors.js'
import { LIST_LIMIT_DEFAULT } from '../../core/limits.js'
import { ACTOR_KINDS, AUDIT_EVENT_TYPES, AUDIT_RESOURCE_TYPES, AuditEntry } from '../../core/schemas/audit.js'
import { ListQuery, Page } from '../../core/schemas/common.js'
import { defineOperation } from '../operation.js'

const Values = (description: string) => Type.Optional(Type.String({ minLength: 1, maxLength: 2000, description }))

/** Comma-separated values of one filter; values outside `allowed` are a 400 that lists the allowed ones. */
function split(text: string | undefined, field: string, allowed?: readonly string[]): string[] | undefined {
  if (text === undefined) return undefined
  const values = text
    .split(',')
    .map((v) => v.trim())
    .filter((v) => v !== '')
  for (const value of values) {
    if (allowed !== undefined && !allowed.includes(value)) {
      throw new ApiError('validation', `query.${field} "${value}" is not one of ${allowed.join(', ')}`, { field: `query.${field}` })
    }
  }
  return values
}

export const auditLogOperations = [
  defineOperation({
    method: 'GET',
    path: '/v1/audit-log',
    operationId: 'auditLog.list',
    capability: 'auditLog.read',
    rateClass: 'standard',
    tool: 'list_audit_log',
    tag: 'Audit log',
    summary: 'Read the audit log',
    description:
      'Lists audit entries of the organization, newest first: who created, changed, deleted or restored websites and API keys, and when. Filter by eventType, resourceType, websiteId, actorId or actorKind (comma-separated for several values). A rare filter on a long log may answer a page with fewer entries than limit, even none, and a nextCursor: keep following nextCursor until it is null.',
    query: Type.Object(
      {
        ...ListQuery,
        eventType: Values(`Comma-separated: ${AUDIT_EVENT_TYPES.join(', ')}`),
        resourceType: Values(`Comma-separated: ${AUDIT_RESOURCE_TYPES.join(', ')}`),
        websiteId: Values('Comma-separated website ids'),
        actorId: Values('Comma-separated actor ids (API key or person ids)'),
        actorKind: Values(`Comma-separated: ${ACTOR_KINDS.join(', ')}`),
      },
      { additionalProperties: false },
    ),
    response: Page(AuditEntry),
    handle(ctx, { query }) {
      const filter: AuditFilter = {
        eventType: split(query.eventType, 'eventType', AUDIT_EVENT_TYPES),
        resourceType: split(query.resourceType, 'resourceType', AUDIT_RESOURCE_TYPES),
        websiteId: split(query.websiteId, 'websiteId'),
        actorId: split(query.actorId, 'actorId'),
        actorKind: split(query.actorKind, 'actorKind', ACTOR_KINDS),
      }
      const page = listAudit(ctx.registry.reads, ctx.org.id, filter, query.limit ?? LIST_LIMIT_DEFAULT, query.cursor)
      return {
        items: page.items.map((r) => ({
          id: r.id,
          at: iso(r.at),
          eventType: r.eventType,
          resourceType: r.resourceType,
          resourceId: r.resourceId,
          websiteId: r.websiteId,
          actor: r.actor,
          metadata: r.metadata,
        })),
        nextCursor: page.nextCursor,
      }
    },
  }),
]
