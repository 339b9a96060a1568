// console, sent line by line to the host's log with the request it belongs to (0 at the top level).
import { currentRequest, hostLog } from './host.js'
import { formatArgs, inspect } from './inspect.js'

/** A line longer than this is cut before it crosses to the host (which caps lines itself too). */
const LINE_MAX = 16 * 1024

let indent = ''
const counts = new Map<string, number>()
const timers = new Map<string, number>()

function emit(level: 'log' | 'info' | 'warn' | 'error' | 'debug', args: unknown[]): void {
  let text = formatArgs(args)
  if (indent !== '') text = indent + text.split('\n').join(`\n${indent}`)
  if (text.length > LINE_MAX) text = `${text.slice(0, LINE_MAX)}…`
  hostLog(currentRequest(), level, text)
}

/** An exception nobody caught (a listener's, a timer's, a waitUntil promise's), logged as an error. */
export function reportError(error: unknown): void {
  emit('error', ['Uncaught', error])
}

function label(value: unknown): string {
  return value === undefined ? 'default' : String(value)
}

export const console = {
  log: (...args: unknown[]) => emit('log', args),
  info: (...args: unknown[]) => emit('info', args),
  debug: (...args: unknown[]) => emit('debug', args),
  warn: (...args: unknown[]) => emit('warn', args),
  error: (...args: unknown[]) => emit('error', args),
  dir: (value: unknown) => emit('log', [inspect(value)]),
  dirxml: (...args: unknown[]) => emit('log', args),
  table: (value: unknown) => emit('log', [inspect(value)]),
  trace: (...args: unknown[]) => {
    const stack = new Error().stack ?? ''
    emit('log', [`Trace${args.length > 0 ? `: ${formatArgs(args)}` : ''}\n${stack.split('\n').slice(2).join('\n')}`])
  },
  assert: (condition?: unknown, ...args: unknown[]) => {
    if (!condition) emit('error', args.length > 0 ? [`Assertion failed: ${formatArgs(args)}`] : ['Assertion failed'])
  },
  count: (name?: unknown) => {
    const key = label(name)
    const count = (counts.get(key) ?? 0) + 1
    counts.set(key, count)
    emit('log', [`${key}: ${count}`])
  },
  countReset: (name?: unknown) => void counts.delete(label(name)),
  time: (name?: unknown) => void timers.set(label(name), Date.now()),
  timeLog: (name?: unknown, ...args: unknown[]) => {
    const started = timers.get(label(name))
    if (started !== undefined) emit('log', [`${label(name)}: ${Date.now() - started}ms`, ...args])
  },
  timeEnd: (name?: unknown) => {
    const started = timers.get(label(name))
    timers.delete(label(name))
    if (started !== undefined) emit('log', [`${label(name)}: ${Date.now() - started}ms`])
  },
  group: (...args: unknown[]) => {
    if (args.length > 0) emit('log', args)
    indent += '  '
  },
  groupCollapsed: (...args: unknown[]) => {
    if (args.length > 0) emit('log', args)
    indent += '  '
  },
  groupEnd: () => {
    indent = indent.slice(2)
  },
}
