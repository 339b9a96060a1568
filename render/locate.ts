import { originalPositionFor, TraceMap } from '@jridgewell/trace-mapping'
import { escapeRegExp } from '../core/text.js'
import { fileIdOf, fileLabel } from '../core/typed-files.js'

/**
 * Where the site's own files sit in a bundle: esbuild names files of a plugin namespace
 * `namespace:path`, in diagnostics and in source maps alike.
 */
export const SITE = 'site'

/** The server bundle's file name: in its source map, and (as BUNDLE_URL) in stack traces of renders. */
export const SERVER_BUNDLE_FILE = 'server.js'
export const BUNDLE_URL = `file:///${SERVER_BUNDLE_FILE}`
/** A stack frame in the server bundle: its line and column. */
const BUNDLE_FRAME = new RegExp(`${escapeRegExp(BUNDLE_URL)}:(\\d+):(\\d+)`, 'g')

/** An esbuild file name as the user knows the file: `site:pages/home.tsx` is `page:home`. */
export function labelOf(file: string): string {
  if (!file.startsWith(`${SITE}:`)) return file
  const path = file.slice(SITE.length + 1)
  const id = fileIdOf(path)
  return id === null ? path : fileLabel(id)
}

export interface SourceLocation {
  /** The file's label, as in diagnostics: `page:home`, `component:Card`. */
  file: string
  line: number
  column: number
}

/** The bundle's source map, parsed on first use and then reused (one per render task). */
export function sourceTracer(map: string | null): () => TraceMap | null {
  let traced: TraceMap | null | undefined
  return () => (traced ??= map === null ? null : new TraceMap(map))
}

/**
 * The innermost frame of a stack trace that lies in the site's own files, mapped through the
 * bundle's source map; frames in React, packages and the platform's harness are passed over.
 * null when the trace has no such frame (or there is no map).
 */
export function locate(stack: string, tracer: () => TraceMap | null): SourceLocation | null {
  for (const [, line, column] of stack.matchAll(BUNDLE_FRAME)) {
    const traced = tracer()
    if (traced === null) return null
    const original = originalPositionFor(traced, { line: Number(line), column: Number(column) - 1 })
    if (original.source === null || original.line === null) continue
    const at = original.source.indexOf(`${SITE}:`)
    if (at === -1) continue
    return { file: labelOf(original.source.slice(at)), line: original.line, column: original.column + 1 }
  }
  return null
}
