import { newId } from '../../core/ids.js'
import { actorOf, type Principal } from '../../core/principal.js'
import type { AuditRecord } from '../../core/schemas/records.js'
import type { AuditEventType, AuditResourceType, AuditActorValue } from '../../core/schemas/audit.js'
import type { StoreFor } from '../../core/store/reader.js'
import type { StoreReader } from '../../core/store/reader.js'
import { cursorBelow, encodeCursor } from '../../core/cursor.js'
import { AUDIT_SCAN_MAX } from '../../core/limits.js'

export interface AuditEvent {
  eventType: AuditEventType
  resourceType: AuditResourceType
  resourceId: string
  websiteId: string | null
  metadata?: Record<string, unknown>
}

/** The audit actor for a principal. */
export function auditActor(principal: Principal): AuditActorValue {
  return actorOf(principal)
}

/** Appends one audit entry; call only inside `store.commit` so it lands with the change it records. */
/** What `appendAudit` writes, inside any concern's commit. */
export type AuditWrites = 'audit' | 'nextSeq'

export function appendAudit(store: StoreFor<AuditWrites>, orgId: string, actor: AuditActorValue, at: number, event: AuditEvent): void {
  const seq = store.nextSeq()
  const record: AuditRecord = {
    v: 1,
    id: newId('aud'),
    orgId,
    seq,
    at,
    eventType: event.eventType,
    resourceType: event.resourceType,
    resourceId: event.resourceId,
    websiteId: event.websiteId,
    actor,
    metadata: actor.agent === undefined ? (event.metadata ?? {}) : { ...event.metadata, agent: actor.agent },
  }
  store.audit.put([orgId, seq], record)
}

export interface AuditFilter {
  eventType?: string[]
  resourceType?: string[]
  websiteId?: string[]
  actorId?: string[]
  actorKind?: string[]
}

/**
 * Audit entries of an organization, newest first, filtered; each filter takes several values. A page
 * passes over at most AUDIT_SCAN_MAX entries that do not match, so it may hold fewer than `limit`
 * items with a nextCursor: only a null nextCursor means the end.
 */
export function listAudit(
  store: StoreReader,
  orgId: string,
  filter: AuditFilter,
  limit: number,
  cursor: string | undefined,
): { items: AuditRecord[]; nextCursor: string | null } {
  const start = [orgId, cursorBelow(cursor)]
  const matches = (r: AuditRecord) =>
    (filter.eventType === undefined || filter.eventType.includes(r.eventType)) &&
    (filter.resourceType === undefined || filter.resourceType.includes(r.resourceType)) &&
    (filter.websiteId === undefined || (r.websiteId !== null && filter.websiteId.includes(r.websiteId))) &&
    (filter.actorId === undefined || filter.actorId.includes(r.actor.id)) &&
    (filter.actorKind === undefined || filter.actorKind.includes(r.actor.kind))
  const items: AuditRecord[] = []
  let resumeAfter: number | null = null
  let skipped = 0
  // Exclusive start: a reverse range starts at `start` itself, so skip an exact cursor match.
  for (const { value } of store.audit.range({ start, end: [orgId, 0], reverse: true })) {
    if (cursor !== undefined && value.seq === start[1]) continue
    if (!matches(value)) {
      if (++skipped < AUDIT_SCAN_MAX) continue
      resumeAfter = value.seq // everything down to here was looked at
      break
    }
    if (items.length === limit) {
      resumeAfter = items[items.length - 1].seq
      break
    }
    items.push(value)
  }
  return { items, nextCursor: resumeAfter === null ? null : encodeCursor([resumeAfter]) }
}
