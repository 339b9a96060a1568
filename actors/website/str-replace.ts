/**
 * The matching rules of str-replace (spec: Framework source, Rules): each `oldStr` must match
 * exactly once unless `replaceAll`; with no exact match, an edit still applies when it matches exactly
 * once ignoring whitespace. Pure functions: the actor decides what to commit.
 */
import { escapeRegExp } from '../../core/text.js'

export interface Edit {
  oldStr: string
  newStr: string
  replaceAll?: boolean
}

export interface Problem {
  file: string
  edit: number
  reason: 'not_found' | 'ambiguous' | 'empty'
  message: string
  count?: number
  /** For an ambiguous edit: the line each match starts on (at most the first 20). */
  lines?: number[]
}

const MAX_LINES_LISTED = 20

/** 1-based line numbers of offsets in `text` (offsets ascending). */
function lineNumbers(text: string, offsets: readonly number[]): number[] {
  const lines: number[] = []
  let line = 1
  let from = 0
  for (const offset of offsets.slice(0, MAX_LINES_LISTED)) {
    for (let i = text.indexOf('\n', from); i !== -1 && i < offset; i = text.indexOf('\n', i + 1)) {
      line++
      from = i + 1
    }
    lines.push(line)
  }
  return lines
}

const onLines = (lines: readonly number[], count: number) =>
  `line${lines.length === 1 ? '' : 's'} ${lines.join(', ')}${count > lines.length ? ', ...' : ''}`

function occurrences(text: string, needle: string): number[] {
  const at: number[] = []
  for (let i = text.indexOf(needle); i !== -1; i = text.indexOf(needle, i + needle.length)) at.push(i)
  return at
}

/**
 * A pattern matching `oldStr` with any whitespace anywhere (or none) between its non-space
 * characters. Linear: each `\s*` is followed by a literal, so there is no nested backtracking.
 */
function looseMatches(text: string, oldStr: string): { index: number; length: number }[] {
  const chars = [...oldStr.replace(/\s+/g, '')]
  if (chars.length === 0) return []
  const pattern = new RegExp(chars.map(escapeRegExp).join('\\s*'), 'g')
  const out: { index: number; length: number }[] = []
  for (const m of text.matchAll(pattern)) out.push({ index: m.index, length: m[0].length })
  return out
}

/** Applies a file's edits in order; returns the new text or the problems (and then nothing applies). */
export function applyEdits(label: string, text: string, edits: readonly Edit[], firstIndex = 0): { text: string; problems: Problem[] } {
  const problems: Problem[] = []
  let current = text
  edits.forEach((edit, i) => {
    const index = firstIndex + i
    if (edit.oldStr === '') {
      problems.push({ file: label, edit: index, reason: 'empty', message: 'oldStr is empty; quote the text to replace' })
      return
    }
    const exact = occurrences(current, edit.oldStr)
    if (exact.length === 1 || (exact.length > 1 && edit.replaceAll === true)) {
      current =
        edit.replaceAll === true
          ? current.split(edit.oldStr).join(edit.newStr)
          : current.slice(0, exact[0]) + edit.newStr + current.slice(exact[0] + edit.oldStr.length)
      return
    }
    if (exact.length > 1) {
      const lines = lineNumbers(current, exact)
      problems.push({
        file: label,
        edit: index,
        reason: 'ambiguous',
        count: exact.length,
        lines,
        message: `oldStr is found ${exact.length} times (${onLines(lines, exact.length)}); add surrounding lines to make it unique, or set replaceAll`,
      })
      return
    }
    const loose = looseMatches(current, edit.oldStr)
    if (loose.length === 1 || (loose.length > 1 && edit.replaceAll === true)) {
      for (const m of [...loose].reverse()) current = current.slice(0, m.index) + edit.newStr + current.slice(m.index + m.length)
      return
    }
    if (loose.length > 1) {
      const lines = lineNumbers(
        current,
        loose.map((m) => m.index),
      )
      problems.push({
        file: label,
        edit: index,
        reason: 'ambiguous',
        count: loose.length,
        lines,
        message: `oldStr is not found exactly, and ignoring whitespace it is found ${loose.length} times (${onLines(lines, loose.length)}); make it unique`,
      })
      return
    }
    problems.push({
      file: label,
      edit: index,
      reason: 'not_found',
      count: 0,
      message: 'oldStr is not found, not even ignoring whitespace; re-read the file and quote it exactly',
    })
  })
  return { text: current, problems }
}
