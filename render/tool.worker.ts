/**
 * Worker-thread tasks on site source: formatting (prettier), AST edits of page routes and metadata
 * (TypeScript compiler API, so the rest of a file keeps its bytes), and search. Nothing here runs
 * site code; it runs off the main thread because it is CPU work that would stall serving, and so a
 * pathological regular expression can be stopped by ending the thread.
 */
import { readFileSync, readlinkSync } from 'node:fs'
import { createRequire } from 'node:module'
import type * as TS from 'typescript'
import { escapeRegExp } from '../core/text.js'
import { buildCss, type CssDiagnostic } from './css.js'
import { lint as lintFiles, type LintResult } from './lint.js'
import { typecheck as typecheckFiles, typecheckFunctions, type TypecheckDiagnostic } from './typecheck.js'

export const FORMAT_OPTIONS = { singleQuote: true, semi: false, printWidth: 100 } as const

/** Every task carries the slot where its thread is announced (see pool.ts). */
interface Announced {
  thread?: Int32Array
}

/**
 * Tells the pool which OS thread runs this task and the CPU time it had used before it (Linux), so
 * the pool can hold the task to its CPU budget; elsewhere only that it started.
 */
function announce(task: Announced): void {
  const slot = task.thread
  if (slot === undefined) return
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop())
    const stat = readFileSync('/proc/thread-self/stat', 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    Atomics.store(slot, 2, Number(fields[11]) + Number(fields[12]))
    Atomics.store(slot, 1, tid)
  } catch {
    // Not Linux: the pool holds the task to wall-clock time instead.
  }
  Atomics.store(slot, 0, 1)
}

export interface FormatTask extends Announced {
  content: string
  parser: 'typescript' | 'css'
  /** A file name for the parser (tsx vs ts). */
  filepath: string
}

export interface FormatResult {
  content: string
  formatted: boolean
  formatError?: { message: string; line: number | null; column: number | null }
}

/** Formats source; unparseable source comes back unchanged with the parser's error and position. */
export async function format(task: FormatTask): Promise<FormatResult> {
  announce(task)
  const prettier = await import('prettier')
  try {
    const out = await prettier.format(task.content, { ...FORMAT_OPTIONS, parser: task.parser, filepath: task.filepath })
    return { content: out, formatted: out !== task.content }
  } catch (error) {
    const e = error as { message?: string; loc?: { start?: { line?: number; column?: number } } }
    const message = (e.message ?? String(error)).split('\n')[0].replace(/\s*\(\d+:\d+\)$/, '')
    return {
      content: task.content,
      formatted: false,
      formatError: { message, line: e.loc?.start?.line ?? null, column: e.loc?.start?.column ?? null },
    }
  }
}

let ts: typeof TS | undefined
/**
 * TypeScript, loaded once per thread by `require`: an ESM `import()` of its 9 MB CommonJS file scans
 * the whole text for export names first, which cost 0.6 s of CPU more on every cold thread here.
 */
async function typescript(): Promise<typeof TS> {
  ts ??= createRequire(import.meta.url)('typescript') as typeof TS
  return ts
}

export interface EditTask extends Announced {
  content: string
  filepath: string
  /** The property of the default-exported definition to set. */
  property: 'route' | 'metadata'
  /** Its new value as a TypeScript expression. */
  expression: string
}

export type EditResult = { ok: true; content: string } | { ok: false; message: string }

/**
 * Sets one property of the object a module default-exports (`export default definePage({...})`,
 * `export default defineWebsiteConfig({...})`, a plain object, or a const holding either). Only the
 * property's text changes; every other byte of the file stays as it was.
 */
export async function editDefinition(task: EditTask): Promise<EditResult> {
  announce(task)
  const t = await typescript()
  const source = t.createSourceFile(
    task.filepath,
    task.content,
    t.ScriptTarget.Latest,
    true,
    task.filepath.endsWith('x') ? t.ScriptKind.TSX : t.ScriptKind.TS,
  )
  const parseErrors = (source as unknown as { parseDiagnostics?: TS.Diagnostic[] }).parseDiagnostics ?? []
  if (parseErrors.length > 0) {
    const first = parseErrors[0]
    const { line, character } = source.getLineAndCharacterOfPosition(first.start ?? 0)
    return {
      ok: false,
      message: `the file does not parse (line ${line + 1}, column ${character + 1}: ${t.flattenDiagnosticMessageText(first.messageText, ' ')}); fix it first`,
    }
  }
  const object = definitionObject(t, source)
  if (object === null) {
    return { ok: false, message: 'the file has no default-exported definition object (export default definePage({ ... }))' }
  }
  const existing = object.properties.find(
    (p): p is TS.PropertyAssignment =>
      t.isPropertyAssignment(p) && (t.isIdentifier(p.name) || t.isStringLiteral(p.name)) && p.name.text === task.property,
  )
  let content: string
  if (existing !== undefined) {
    const start = existing.initializer.getStart(source)
    content = task.content.slice(0, start) + task.expression + task.content.slice(existing.initializer.getEnd())
  } else {
    const other = object.properties.find((p) => !t.isPropertyAssignment(p) || !(t.isIdentifier(p.name) && p.name.text === task.property))
    if (other === undefined) {
      const open = object.getStart(source) + 1
      content = task.content.slice(0, open) + ` ${task.property}: ${task.expression} ` + task.content.slice(object.getEnd() - 1)
    } else {
      // Insert before the first property, so nothing after it moves.
      const at = object.properties[0].getStart(source)
      content = task.content.slice(0, at) + `${task.property}: ${task.expression},\n  ` + task.content.slice(at)
    }
  }
  return { ok: true, content }
}

function definitionObject(t: typeof TS, source: TS.SourceFile): TS.ObjectLiteralExpression | null {
  const unwrap = (expression: TS.Expression | undefined): TS.ObjectLiteralExpression | null => {
    let e = expression
    while (e !== undefined && (t.isParenthesizedExpression(e) || t.isAsExpression(e) || t.isSatisfiesExpression(e))) e = e.expression
    if (e === undefined) return null
    if (t.isObjectLiteralExpression(e)) return e
    if (t.isCallExpression(e) && e.arguments.length > 0) return unwrap(e.arguments[0])
    if (t.isIdentifier(e)) {
      for (const statement of source.statements) {
        if (!t.isVariableStatement(statement)) continue
        for (const declaration of statement.declarationList.declarations) {
          if (t.isIdentifier(declaration.name) && declaration.name.text === e.text) return unwrap(declaration.initializer)
        }
      }
    }
    return null
  }
  for (const statement of source.statements) {
    if (t.isExportAssignment(statement) && !statement.isExportEquals) return unwrap(statement.expression)
  }
  return null
}

export interface SearchTask {
  files: { label: string; content: string }[]
  pattern: string
  isRegex: boolean
  caseSensitive: boolean
  contextLines: number
  maxMatchesPerFile: number
  filesOnly: boolean
  maxMatches: number
}

export interface SearchMatch {
  file: string
  line: number
  column: number
  text: string
  before?: string[]
  after?: string[]
}

export interface SearchResult {
  matches: SearchMatch[]
  files: { file: string; matches: number }[]
  truncated: boolean
}

/** Line by line, like grep; a line may match several times. Stops at the caps and says so. */
export function search(task: SearchTask): SearchResult {
  const source = task.isRegex ? task.pattern : escapeRegExp(task.pattern)
  const regex = new RegExp(source, task.caseSensitive ? 'g' : 'gi')
  const matches: SearchMatch[] = []
  const files: { file: string; matches: number }[] = []
  let truncated = false
  for (const file of task.files) {
    const lines = file.content.split('\n')
    let count = 0
    for (let i = 0; i < lines.length; i++) {
      regex.lastIndex = 0
      let m: RegExpExecArray | null
      while ((m = regex.exec(lines[i])) !== null) {
        if (count === task.maxMatchesPerFile) {
          truncated = true
          break
        }
        count++
        if (!task.filesOnly) {
          if (matches.length === task.maxMatches) {
            truncated = true
            break
          }
          const match: SearchMatch = { file: file.label, line: i + 1, column: m.index + 1, text: lines[i] }
          if (task.contextLines > 0) {
            match.before = lines.slice(Math.max(0, i - task.contextLines), i)
            match.after = lines.slice(i + 1, i + 1 + task.contextLines)
          }
          matches.push(match)
        }
        if (m[0] === '') regex.lastIndex++
      }
      if (count === task.maxMatchesPerFile && truncated) break
    }
    if (count > 0) files.push({ file: file.label, matches: count })
  }
  return { matches, files, truncated }
}

export interface LintTask extends Announced {
  files: { path: string; content: string }[]
  packages: Record<string, string>
}

/** The lint step of the gate. */
export async function lint(task: LintTask): Promise<LintResult> {
  announce(task)
  return lintFiles(await typescript(), task.files, task.packages)
}

export interface TypecheckTask extends Announced {
  /** Identifies the site: its warm program is reused by the next check. */
  siteKey: string
  files: { path: string; content: string }[]
  packages: Record<string, string>
  /** Sites whose warm programs this worker keeps (least recently checked dropped first). */
  warmSites: number
  /** Declarations of `cms` generated from the site's CMS schema ('' : none). */
  cmsTypes?: string
  /** A static site's functions/ folder (Cloudflare's Workers types) instead of a framework site's pages. */
  functions?: boolean
}

/** The typecheck step of the gate. */
export async function typecheck(task: TypecheckTask): Promise<TypecheckDiagnostic[]> {
  announce(task)
  if (task.functions === true) return typecheckFunctions(await typescript(), task.siteKey, task.files, task.warmSites)
  return typecheckFiles(await typescript(), task.siteKey, task.files, task.packages, task.warmSites, task.cmsTypes ?? '')
}

export interface CssTask extends Announced {
  globalCss: string
  sources: string[]
}

/** The css step of the gate. */
export function css(task: CssTask): Promise<{ css: string; diagnostics: CssDiagnostic[] }> {
  announce(task)
  return buildCss(task.globalCss, task.sources)
}
