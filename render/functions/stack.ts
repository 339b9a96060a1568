// A function's stack trace, its frames in the compiled script mapped back to the site's own files through the script's source map.
import { originalPositionFor, TraceMap } from '@jridgewell/trace-mapping'

const FRAME = /file:\/\/\/functions\.js:(\d+):(\d+)/g

/** The stack with each frame of the compiled script named by the site's file, line and column (frames it cannot map are kept). */
export function mapStack(stack: string, map: string | null): string {
  if (map === null || stack === '') return stack
  let traced: TraceMap
  try {
    traced = new TraceMap(map)
  } catch {
    return stack
  }
  return stack.replace(FRAME, (frame, line: string, column: string) => {
    const original = originalPositionFor(traced, { line: Number(line), column: Number(column) - 1 })
    if (original.source === null || original.line === null) return frame
    const file = original.source.replace(/^.*?site:/, '')
    return `${file}:${original.line}:${original.column + 1}`
  })
}
