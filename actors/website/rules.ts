import { ApiError } from '../../core/errors.js'
import type { WebsiteRecord } from '../../core/schemas/records.js'

/*
 * The website's rules and the errors that say what to do instead: pure functions of its record and
 * versions, shared by the actor's parts.
 */

/** The error for a command on a website in the trash. */
export function deletedError(id: string): ApiError {
  return new ApiError('conflict', `website ${id} is in the trash; restore it with POST /v1/websites/${id}/restore first`, {
    reason: 'website_deleted',
  })
}

/** 409 when the caller's idea of the head is out of date. */
export function checkExpectedHead(expected: number | undefined, head: number): void {
  if (expected !== undefined && expected !== head) {
    throw new ApiError('conflict', `expectedHeadVersion is ${expected} but the head is version ${head}; read the head again and retry`, {
      headVersion: head,
      expectedHeadVersion: expected,
    })
  }
}

export function missingPath(path: string, head: number, field: string): ApiError {
  return new ApiError('validation', `${field}: "${path}" is not a file of the head version ${head}`, { field, path })
}

export function missingVersion(number: number, head: number): ApiError {
  return new ApiError(
    'not_found',
    `Version ${number} does not exist; versions run from 1 to ${head} (list them with GET .../source/versions)`,
  )
}

/** What to do about an empty version, by kind: the API and MCP names of the first write. */
export function firstWrite(record: WebsiteRecord): string {
  return record.kind === 'framework'
    ? `write a page with PUT /v1/websites/${record.id}/source/file (MCP: put_source_file, e.g. file {type: "page", name: "home"}), check it with POST .../head/check (MCP: check_head)`
    : `deploy files with POST /v1/websites/${record.id}/deploy/json or the multipart .../deploy (MCP: deploy_files)`
}

export function emptyError(record: WebsiteRecord, version: number): ApiError {
  return new ApiError(
    'validation',
    `Version ${version} has no files, so there is nothing to publish; ${firstWrite(record)}, then publish`,
    {
      diagnostics: [{ step: 'publish', severity: 'error', message: `Version ${version} has no files` }],
      renderFailures: [],
    },
  )
}

/** Refuses (400 naming what to use instead) unless this is a static website. */
export function requireStatic(record: WebsiteRecord, operation: string): void {
  if (record.kind === 'static') return
  if (record.kind === 'framework') {
    throw new ApiError(
      'validation',
      `${operation} is for static websites; this is a framework website: acquire a lease (POST /v1/websites/${record.id}/source/lease) and write typed files with PUT /v1/websites/${record.id}/source/file (MCP: acquire_edit_lease, put_source_file)`,
      { kind: record.kind },
    )
  }
  refuseStorage(record, operation)
}

/** Refuses (400 naming what to use instead) unless this is a framework website. */
export function requireFramework(record: WebsiteRecord, operation: string): void {
  if (record.kind === 'framework') return
  refuseStorage(record, operation)
  throw new ApiError(
    'validation',
    `${operation} is for framework websites; this is a static website: deploy files with POST /v1/websites/${record.id}/deploy/json (MCP: deploy_files)`,
    { kind: record.kind },
  )
}

/** Storage websites have no source, build or publish: 400 saying what they do have. */
export function refuseStorage(record: WebsiteRecord, operation: string): void {
  if (record.kind === 'storage') {
    throw new ApiError(
      'validation',
      `${operation} does not apply to storage websites: they share files, are live at once and have no source, build or publish; share files with begin_object_upload (MCP) or POST /v1/websites/${record.id}/objects/uploads`,
      { kind: 'storage' },
    )
  }
}

/** Publishing (and rollback) need a kind that publishes and a site the platform has not taken down. */
export function checkPublishable(record: WebsiteRecord, operation: string): void {
  refuseStorage(record, operation)
  if (record.suspendedAt !== null) {
    throw new ApiError(
      'forbidden',
      `This website was taken down by the platform (${record.suspendedReason ?? 'no reason given'}); it cannot be published`,
      {
        reason: 'suspended',
      },
    )
  }
}

/**
 * A claimed anonymous site held on a plan without room is read-only once its 24-hour preview ended:
 * 402 `claim_held` until it is activated (a Base or Max slot).
 */
export function assertNotHeld(record: WebsiteRecord, now: number): void {
  if (record.held !== true || record.previewUntil == null || now < record.previewUntil) return
  throw new ApiError(
    'payment_required',
    `Website ${record.id} was claimed onto a plan without room and its preview has ended, so it is offline and read-only; upgrade to Base or Max, then activate it (POST /v1/websites/${record.id}/activate, MCP: activate_website)`,
    {
      reason: 'claim_held',
    },
  )
}
