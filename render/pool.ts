import { availableParallelism } from 'node:os'
import { Piscina } from 'piscina'
import { ApiError } from '../core/errors.js'
import type { LintResult } from './lint.js'
import type { CssDiagnostic } from './css.js'
import type { CssTask, EditResult, EditTask, FormatResult, FormatTask, LintTask, SearchResult, SearchTask, TypecheckTask } from './source.worker.js'
import type { TypecheckDiagnostic } from './typecheck.js'

/** A search that runs longer than this is stopped and refused (issue: answered within a second). */
export const SEARCH_TIME_LIMIT_MS = 800

/**
 * The worker pool for source work (formatting, AST edits, search). Workers start lazily and retire
 * when idle; the main thread only posts tasks and awaits results.
 */
export class SourcePool {
  readonly #pool: Piscina

  constructor() {
    this.#pool = new Piscina({
      filename: new URL('./source.worker.js', import.meta.url).href,
      minThreads: 0,
      maxThreads: Math.max(1, Math.min(2, availableParallelism())),
      idleTimeout: 30_000,
    })
  }

  format(task: FormatTask): Promise<FormatResult> {
    return this.#pool.run(task, { name: 'format' }) as Promise<FormatResult>
  }

  editDefinition(task: EditTask): Promise<EditResult> {
    return this.#pool.run(task, { name: 'editDefinition' }) as Promise<EditResult>
  }

  typecheck(task: TypecheckTask): Promise<TypecheckDiagnostic[]> {
    return this.#pool.run(task, { name: 'typecheck' }) as Promise<TypecheckDiagnostic[]>
  }

  css(task: CssTask): Promise<{ css: string; diagnostics: CssDiagnostic[] }> {
    return this.#pool.run(task, { name: 'css' }) as Promise<{ css: string; diagnostics: CssDiagnostic[] }>
  }

  lint(task: LintTask): Promise<LintResult> {
    return this.#pool.run(task, { name: 'lint' }) as Promise<LintResult>
  }

  /** Runs a search with a time limit; past it the worker thread is stopped and the pattern refused. */
  async search(task: SearchTask): Promise<SearchResult> {
    const controller = new AbortController()
    const timer = setTimeout(() => controller.abort(), SEARCH_TIME_LIMIT_MS)
    try {
      return (await this.#pool.run(task, { name: 'search', signal: controller.signal })) as SearchResult
    } catch (error) {
      if (controller.signal.aborted) {
        throw new ApiError('validation', `The pattern took longer than ${SEARCH_TIME_LIMIT_MS} ms and was stopped; simplify it (avoid nested quantifiers such as (a+)+)`, {
          field: 'body.pattern',
        })
      }
      throw error
    } finally {
      clearTimeout(timer)
    }
  }

  close(): Promise<void> {
    return this.#pool.close({ force: true })
  }
}
