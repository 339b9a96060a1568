// A framework site's functions (source files of type `function`, its functions/ folder): compiled and typechecked as a step of the gate.
import { fileIdOf, fileLabel } from '../core/typed-files.js'
import type { Diagnostic, SiteFiles } from './bundle.js'
import { compileFunctions } from './functions/compile.js'
import { FUNCTIONS_DIR, FUNCTIONS_MANIFEST, FUNCTIONS_MAP, FUNCTIONS_SCRIPT } from './functions/files.js'

export type BuiltDocuments = Map<string, { content: string; contentType: string }>

/** A framework site's files split: what the page steps take, and its functions (empty: none). */
export function splitFunctions(files: SiteFiles): { pages: SiteFiles; functions: SiteFiles } {
  const pages = new Map<string, string>()
  const functions = new Map<string, string>()
  for (const [path, text] of files) (fileIdOf(path)?.type === 'function' ? functions : pages).set(path, text)
  return { pages, functions }
}

/** `functions/api/hello.ts` as the site's typed files name it: `function:api/hello`. */
function label(path: string): string {
  const id = fileIdOf(path)
  return id === null ? path : fileLabel(id)
}

/**
 * The functions step: the folder compiled into one script for the isolates (as a static site's is at
 * deploy) and its TypeScript typechecked against Cloudflare's Workers types. Its problems are the
 * step's diagnostics, each naming its file (`function:api/hello`) and line; when there are none, the
 * build's generated files (`_platform/functions.js`, its map and route manifest) to serve with the pages.
 */
export async function functionsStep(
  functions: SiteFiles,
  typecheck: (files: SiteFiles) => Promise<Diagnostic[]>,
): Promise<{ diagnostics: Diagnostic[]; documents: BuiltDocuments }> {
  const documents: BuiltDocuments = new Map()
  const built = await compileFunctions(functions, undefined)
  const fail = (problems: { file: string; line: number | null; column: number | null; message: string }[]) => ({
    diagnostics: problems.map((p) => ({
      step: 'functions',
      severity: 'error' as const,
      file: label(p.file),
      ...(p.line === null ? {} : { line: p.line }),
      ...(p.column === null ? {} : { column: p.column }),
      message: p.message,
    })),
    documents,
  })
  if (!built.ok) return fail(built.problems)
  if (built.manifest.routes.length === 0) {
    // A function file is a function: one that answers nothing (no handler, not a module under a _ folder) is a mistake.
    const routes = [...functions.keys()].filter(
      (p) =>
        !p
          .slice(FUNCTIONS_DIR.length)
          .split('/')
          .some((s) => s.startsWith('_')),
    )
    return fail(
      routes.map((file) => ({
        file,
        line: null,
        column: null,
        message: `${label(file)} exports no handler: export onRequest (or onRequestGet, onRequestPost, …), or name it under a folder starting with _ (_lib/…) if the functions import it`,
      })),
    )
  }
  const types = await typecheck(functions)
  if (types.length > 0)
    return { diagnostics: types.map((d) => ({ ...d, step: 'functions', file: d.file === undefined ? d.file : label(d.file) })), documents }
  documents.set(FUNCTIONS_SCRIPT, { content: built.script, contentType: 'text/javascript; charset=utf-8' })
  documents.set(FUNCTIONS_MAP, { content: built.map, contentType: 'application/json' })
  documents.set(FUNCTIONS_MANIFEST, { content: JSON.stringify(built.manifest), contentType: 'application/json' })
  return { diagnostics: [], documents }
}
