import { randomBytes } from 'node:crypto'
import type { Clock } from '../../core/clock.js'
import { sha256 } from '../../core/content.js'
import { ApiError } from '../../core/errors.js'
import { hashSecret, secretMatches } from '../../core/ids.js'
import { STATIC_FILE_MAX_BYTES } from '../../core/limits.js'
import type { AuditActorValue } from '../../core/schemas/audit.js'
import type { LeaseRecord, VersionRecord } from '../../core/schemas/records.js'
import type { WebsiteStore } from './tables.js'
import { fileContentType, fileLabel, filePath, formatterOf, type FileId } from '../../core/typed-files.js'
import { BudgetExceeded, type ToolPool } from '../../render/tool-pool.js'
import type { FormatResult, SearchResult, SearchTask } from '../../render/tool.worker.js'
import { fileTooLarge, type CommitResult, type SourcePlan, type Upload } from './commits.js'
import { applyEdits, type Edit, type Problem } from './str-replace.js'
import type { Manifest } from './versions.js'

/** What FrameworkFiles needs of its website's actor: its mailbox, head and source commits. */
export interface FrameworkFilesHost {
  readonly id: string
  readonly head: VersionRecord
  readText(version: VersionRecord, file: FileId): string | undefined
  requireFramework(operation: string): void
  exclusive<T>(fn: () => Promise<T>): Promise<T>
  commitSource(
    actor: AuditActorValue,
    message: string | null,
    build: (head: VersionRecord) => Promise<SourcePlan>,
    guard: () => void,
    expectedHeadVersion?: number,
  ): Promise<CommitResult>
}

export interface TypedWriteResult extends CommitResult {
  formatted: boolean
  formatError?: FormatResult['formatError']
}

export interface StrReplaceResult extends CommitResult {
  dryRun: boolean
  files: { file: FileId; formatted: boolean; formatError?: FormatResult['formatError'] }[]
}

/**
 * The edit lease and the typed writes of one framework website. Every write runs as one command of
 * the website's actor: the lease check (`guard`) and the commit happen in the same mailbox turn, and
 * formatting or AST edits are awaited inside it, so the head cannot move underneath them.
 */
export class FrameworkFiles {
  #lease: LeaseRecord | null

  constructor(
    private readonly host: FrameworkFilesHost,
    private readonly deps: { store: WebsiteStore; clock: Clock; tools: ToolPool },
  ) {
    this.#lease = deps.store.leases.get(host.id) ?? null
  }

  /** Forgets the lease after a commit removed it (the website moved to another organization). */
  leaseDropped(): void {
    this.#lease = null
  }

  /** A new edit lease, replacing any previous one: the old token stops working at once. */
  acquireLease(actor: AuditActorValue): Promise<{ leaseToken: string; headVersion: number }> {
    const token = `wl_${randomBytes(32).toString('base64url')}`
    return this.host.exclusive(async () => {
      this.host.requireFramework('acquireLease')
      const lease: LeaseRecord = {
        v: 1,
        websiteId: this.host.id,
        tokenHash: hashSecret(token),
        acquiredAt: this.deps.clock.now(),
        acquiredBy: actor,
      }
      await this.deps.store.commit(() => this.deps.store.leases.put(this.host.id, lease))
      this.#lease = lease
      return { leaseToken: token, headVersion: this.host.head.version }
    })
  }

  /** Searches file texts in a worker, stopped (and the pattern refused) past its time limit. */
  search(task: SearchTask): Promise<SearchResult> {
    return this.deps.tools.search(task)
  }

  /** Writes one typed file (formatted first); 201-style result when it made a new version. */
  putSource(
    actor: AuditActorValue,
    leaseToken: string,
    file: FileId,
    content: string,
    message: string | undefined,
  ): Promise<TypedWriteResult> {
    return this.#writeOne(actor, leaseToken, file, message ?? null, async () => content)
  }

  /** Removes one typed file as a new version; a file that is not in the head is a 404. */
  deleteSource(actor: AuditActorValue, leaseToken: string, file: FileId, message: string | undefined): Promise<CommitResult> {
    return this.host.commitSource(
      actor,
      message ?? `Delete ${fileLabel(file)}`,
      async (head) => {
        if (head.files[filePath(file)] === undefined) throw missingFile(file, head.version)
        return this.#typedPlan(head.files, [{ file, content: null }])
      },
      () => this.#checkLease(leaseToken),
    )
  }

  /**
   * Replaces the whole source tree with `files` as one version (anonymous sites: no lease, the
   * expected head version guards it). Each file is formatted as a single write is.
   */
  replaceTree(
    actor: AuditActorValue,
    files: { file: FileId; content: string }[],
    expectedHeadVersion: number | undefined,
    message: string,
  ): Promise<CommitResult> {
    return this.host.commitSource(
      actor,
      message,
      async () => {
        const formatted = await Promise.all(
          files.map(async ({ file, content }) => ({ file, content: (await this.#format(file, content)).content })),
        )
        return this.#typedPlan({}, formatted)
      },
      () => this.host.requireFramework('this write'),
      expectedHeadVersion,
    )
  }

  /**
   * Atomic multi-file edit: every edit must apply, or nothing is written (400 with `problems`).
   * `dryRun` checks the edits against the head without a lease and writes nothing.
   */
  strReplace(
    actor: AuditActorValue,
    leaseToken: string | undefined,
    files: { file: FileId; edits: Edit[] }[],
    dryRun: boolean,
  ): Promise<StrReplaceResult> {
    const apply = async (head: VersionRecord) => {
      const problems: Problem[] = []
      const writes: { file: FileId; content: string; before: string }[] = []
      let index = 0
      for (const { file, edits } of files) {
        const text = this.host.readText(head, file)
        if (text === undefined) {
          problems.push({ file: fileLabel(file), edit: index, reason: 'not_found', message: missingFile(file, head.version).message })
        } else {
          const applied = applyEdits(fileLabel(file), text, edits, index)
          problems.push(...applied.problems)
          writes.push({ file, content: applied.text, before: text })
        }
        index += edits.length
      }
      if (problems.length > 0) {
        throw new ApiError('validation', `${problems.length} of the edits cannot apply, so nothing was written; see details.problems`, {
          problems,
        })
      }
      return writes
    }
    if (dryRun) {
      return this.host.exclusive(async () => {
        this.host.requireFramework('strReplace')
        // What a real run would change (before formatting): nothing is written.
        const would = (await apply(this.host.head)).filter((w) => w.content !== w.before)
        return {
          version: this.host.head.version,
          changed: would.length > 0,
          dryRun: true,
          files: would.map((w) => ({ file: w.file, formatted: false })),
        }
      })
    }
    const reports: StrReplaceResult['files'] = []
    return this.host
      .commitSource(
        actor,
        `str-replace in ${files.map((f) => fileLabel(f.file)).join(', ')}`,
        async (head) => {
          const writes = await apply(head)
          const formatted = []
          for (const write of writes) {
            const result = await this.#format(write.file, write.content)
            reports.push({
              file: write.file,
              formatted: result.formatted,
              ...(result.formatError ? { formatError: result.formatError } : {}),
            })
            formatted.push({ file: write.file, content: result.content })
          }
          return this.#typedPlan(head.files, formatted)
        },
        () => this.#checkLease(leaseToken),
      )
      .then((result) => ({ ...result, dryRun: false, files: reports }))
  }

  /**
   * Sets one property of a page's definition (or of website_config) by editing the TypeScript AST,
   * so the rest of the file keeps its bytes; the result is formatted like any write.
   */
  editDefinition(
    actor: AuditActorValue,
    leaseToken: string,
    file: FileId,
    property: 'route' | 'metadata',
    expression: string,
    createWith: string | null,
  ): Promise<TypedWriteResult> {
    return this.#writeOne(actor, leaseToken, file, `Set ${property} of ${fileLabel(file)}`, async (head) => {
      const text = this.host.readText(head, file)
      if (text === undefined) {
        if (createWith === null) throw missingFile(file, head.version)
        return createWith
      }
      const edited = await this.deps.tools
        .editDefinition({ content: text, filepath: filePath(file), property, expression })
        .catch((error: unknown) => {
          if (error instanceof BudgetExceeded)
            return {
              ok: false as const,
              message: `${error.message} (the file is too large or complex to edit this way); edit it with put_source_file or str_replace`,
            }
          throw error
        })
      if (!edited.ok) throw new ApiError('validation', `${fileLabel(file)}: ${edited.message}`, { file })
      return edited.content
    })
  }

  /** One lease-guarded write of one file: its new text (from the head), formatted, committed. */
  #writeOne(
    actor: AuditActorValue,
    leaseToken: string,
    file: FileId,
    message: string | null,
    contentOf: (head: VersionRecord) => Promise<string>,
  ): Promise<TypedWriteResult> {
    let formatting: FormatResult | null = null
    return this.host
      .commitSource(
        actor,
        message,
        async (head) => {
          formatting = await this.#format(file, await contentOf(head))
          return this.#typedPlan(head.files, [{ file, content: formatting.content }])
        },
        () => this.#checkLease(leaseToken),
      )
      .then((result) => ({ ...result, formatted: formatting?.formatted ?? false, formatError: formatting?.formatError }))
  }

  /** The lease check runs inside the same mailbox turn as the write it guards. */
  #checkLease(token: string | undefined): void {
    this.host.requireFramework('this write')
    if (token === undefined || this.#lease === null || !secretMatches(token, this.#lease.tokenHash)) {
      throw new ApiError('conflict', 'Invalid edit lease', {
        hint: `Acquire a new lease (POST /v1/websites/${this.host.id}/source/lease, MCP: acquire_edit_lease), re-read the files you are editing, then retry.`,
      })
    }
  }

  /**
   * The text to store: formatted, unless it does not parse, or formatting would take it over the
   * file size limit (deeply nested code formats to many indented lines): then as sent, with
   * formatError saying why. The limit applies to what was sent first.
   */
  async #format(file: FileId, content: string): Promise<FormatResult> {
    const sent = Buffer.byteLength(content)
    if (sent > STATIC_FILE_MAX_BYTES) throw fileTooLarge(fileLabel(file), sent)
    const parser = formatterOf(file)
    if (parser === null) return { content, formatted: false }
    let result: FormatResult
    try {
      result = await this.deps.tools.format({ content, parser, filepath: filePath(file) })
    } catch (error) {
      if (!(error instanceof BudgetExceeded)) throw error
      return {
        content,
        formatted: false,
        formatError: { message: `${error.message}; the file is stored as sent`, line: null, column: null },
      }
    }
    const formattedBytes = Buffer.byteLength(result.content)
    if (formattedBytes <= STATIC_FILE_MAX_BYTES) return result
    const message = `formatting would make the file ${formattedBytes} bytes, over the limit of ${STATIC_FILE_MAX_BYTES} bytes (you sent ${sent}); it is stored as sent. Deeply nested code formats to many indented lines: flatten it`
    return { content, formatted: false, formatError: { message, line: null, column: null } }
  }

  /** Uploads and manifest changes for typed writes (`content: null` deletes). */
  #typedPlan(base: Manifest, writes: { file: FileId; content: string | null }[]): SourcePlan {
    const files: Manifest = { ...base }
    const uploads: Upload[] = []
    for (const { file, content } of writes) {
      const path = filePath(file)
      if (content === null) {
        delete files[path]
        continue
      }
      const bytes = Buffer.from(content, 'utf8')
      if (bytes.length > STATIC_FILE_MAX_BYTES) throw fileTooLarge(fileLabel(file), bytes.length)
      const hash = sha256(bytes)
      const contentType = fileContentType(file)
      files[path] = { hash, size: bytes.length, contentType }
      uploads.push({ path, bytes, hash, contentType, fresh: !this.deps.store.hasBlob(hash), variants: null })
    }
    return { files, uploads }
  }
}

function missingFile(file: FileId, head: number): ApiError {
  return new ApiError('not_found', `${fileLabel(file)} is not a file of the head version ${head}`)
}
