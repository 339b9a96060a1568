// How values print in logs and failures, close to Node's util.inspect on one line. Every read of a
// site's object is guarded: a getter or a Proxy trap that throws, or a value of an unexpected kind,
// must give text, never an exception out of console.log or out of describing a failure.

const MAX_DEPTH = 2
const MAX_ITEMS = 100
/** Values visited for one inspection at most: a huge object prints cut, not slowly. */
const MAX_NODES = 2000
const MESSAGE_MAX = 2000
const FRAMES_MAX = 50

/** A method under this symbol gives an object's printable fields (Request, Response, Headers, …). */
export const INSPECT = Symbol('plinth.inspect')

interface Budget {
  nodes: number
}

function get(target: object, key: PropertyKey): unknown {
  try {
    return Reflect.get(target, key)
  } catch {
    return undefined
  }
}

function quote(text: string): string {
  const json = JSON.stringify(text.length > 10_000 ? `${text.slice(0, 10_000)}…` : text)
  if (!text.includes("'")) return `'${json.slice(1, -1).replace(/\\"/g, '"')}'`
  return json
}

function functionText(fn: Function): string {
  let name = ''
  try {
    name = typeof fn.name === 'string' ? fn.name : ''
  } catch {
    // A throwing name getter: anonymous.
  }
  let isClass = false
  try {
    isClass = Function.prototype.toString.call(fn).startsWith('class')
  } catch {
    // Not a real function (a Proxy): print as one.
  }
  if (isClass) return `[class ${name || '(anonymous)'}]`
  return `[Function: ${name || '(anonymous)'}]`
}

function keyText(key: string | symbol): string {
  if (typeof key === 'symbol') return `[${key.toString()}]`
  return /^[A-Za-z_$][\w$]*$/.test(key) ? key : quote(key)
}

function constructorName(value: object): string {
  try {
    const proto = Object.getPrototypeOf(value)
    if (proto === null) return ''
    const ctor = get(proto, 'constructor')
    const name = typeof ctor === 'function' ? get(ctor, 'name') : undefined
    return typeof name === 'string' ? name : ''
  } catch {
    return ''
  }
}

function errorText(error: object, nested: boolean): string {
  const stack = get(error, 'stack')
  const name = get(error, 'name')
  const message = get(error, 'message')
  const head = `${typeof name === 'string' ? name : 'Error'}${typeof message === 'string' && message !== '' ? `: ${message}` : ''}`
  if (nested) return `[${head}]`
  return typeof stack === 'string' && stack !== '' ? stack : head
}

function entriesText(items: string[], open: string, close: string, more: number): string {
  if (more > 0) items.push(`... ${more} more item${more === 1 ? '' : 's'}`)
  return items.length === 0 ? `${open}${close}` : `${open} ${items.join(', ')} ${close}`
}

function format(value: unknown, depth: number, seen: object[], budget: Budget): string {
  if (--budget.nodes < 0) return '…'
  switch (typeof value) {
    case 'string':
      return quote(value)
    case 'number':
      return Object.is(value, -0) ? '-0' : String(value)
    case 'bigint':
      return `${value}n`
    case 'boolean':
    case 'undefined':
      return String(value)
    case 'symbol':
      return value.toString()
    case 'function':
      return functionText(value)
  }
  if (value === null) return 'null'
  const object = value as object
  if (seen.includes(object)) return '[Circular]'
  if (object instanceof Error) return errorText(object, depth > 0)
  if (object instanceof Date) return Number.isNaN(object.getTime()) ? 'Invalid Date' : object.toISOString()
  if (object instanceof RegExp) return String(object)
  if (object instanceof ArrayBuffer) return `ArrayBuffer { byteLength: ${object.byteLength} }`
  if (object instanceof Promise) return 'Promise { <unknown> }'
  if (object instanceof WeakMap || object instanceof WeakSet)
    return `${object instanceof WeakMap ? 'WeakMap' : 'WeakSet'} { <items unknown> }`
  seen.push(object)
  try {
    if (ArrayBuffer.isView(object)) {
      if (object instanceof DataView) return `DataView { byteLength: ${object.byteLength} }`
      const array = object as unknown as ArrayLike<number | bigint>
      const shown = Array.from({ length: Math.min(array.length, MAX_ITEMS) }, (_, i) => format(array[i], depth + 1, seen, budget))
      return `${constructorName(object)}(${array.length}) ${entriesText(shown, '[', ']', array.length - shown.length)}`
    }
    if (Array.isArray(object)) {
      if (depth > MAX_DEPTH) return '[Array]'
      const shown: string[] = []
      for (let i = 0; i < object.length && i < MAX_ITEMS; i++) shown.push(format(object[i], depth + 1, seen, budget))
      return entriesText(shown, '[', ']', object.length - shown.length)
    }
    if (object instanceof Map || object instanceof Set) {
      const label = `${object instanceof Map ? 'Map' : 'Set'}(${object.size})`
      if (depth > MAX_DEPTH) return `[${label}]`
      const shown: string[] = []
      for (const entry of object instanceof Map ? object.entries() : object.values()) {
        if (shown.length >= MAX_ITEMS) break
        shown.push(
          object instanceof Map
            ? `${format((entry as [unknown, unknown])[0], depth + 1, seen, budget)} => ${format((entry as [unknown, unknown])[1], depth + 1, seen, budget)}`
            : format(entry, depth + 1, seen, budget),
        )
      }
      return `${label} ${entriesText(shown, '{', '}', object.size - shown.length)}`
    }
    const name = constructorName(object)
    const hook = get(object, INSPECT)
    if (typeof hook === 'function') return `${name} ${format(hook.call(object), depth, seen, budget)}`
    if (depth > MAX_DEPTH) return `[${name || 'Object'}]`
    const prefix = name === 'Object' ? '' : name === '' ? '[Object: null prototype] ' : `${name} `
    const shown: string[] = []
    let more = 0
    for (const key of Reflect.ownKeys(object)) {
      const descriptor = Reflect.getOwnPropertyDescriptor(object, key)
      if (descriptor === undefined || !descriptor.enumerable) continue
      if (shown.length >= MAX_ITEMS) {
        more++
        continue
      }
      const text =
        descriptor.get !== undefined || descriptor.set !== undefined
          ? `[${descriptor.get ? 'Getter' : ''}${descriptor.get && descriptor.set ? '/' : ''}${descriptor.set ? 'Setter' : ''}]`
          : format(descriptor.value, depth + 1, seen, budget)
      shown.push(`${keyText(key)}: ${text}`)
    }
    return `${prefix}${entriesText(shown, '{', '}', more)}`
  } finally {
    seen.pop()
  }
}

/** One value as text (strings quoted), never throwing. */
export function inspect(value: unknown): string {
  try {
    return format(value, 0, [], { nodes: MAX_NODES })
  } catch {
    return '[a value that cannot be inspected]'
  }
}

/** Console arguments as one line: a first string may hold %s %d %i %f %j %o %O %c, the rest join with spaces. */
export function formatArgs(args: unknown[]): string {
  const parts: string[] = []
  let index = 0
  if (typeof args[0] === 'string' && args.length > 1 && args[0].includes('%')) {
    index = 1
    parts.push(
      args[0].replace(/%([sdifjoOc%])/g, (match, letter: string) => {
        if (letter === '%') return '%'
        if (index >= args.length) return match
        const arg = args[index++]
        try {
          switch (letter) {
            case 's':
              return typeof arg === 'string' ? arg : typeof arg === 'bigint' ? `${arg}n` : inspect(arg)
            case 'd':
            case 'i': {
              if (typeof arg === 'bigint') return `${arg}n`
              if (typeof arg === 'symbol') return 'NaN'
              const number = Number(arg)
              return String(letter === 'i' ? Math.trunc(number) : number)
            }
            case 'f':
              return typeof arg === 'symbol' ? 'NaN' : String(parseFloat(String(arg)))
            case 'j':
              try {
                return String(JSON.stringify(arg))
              } catch {
                return '[Circular]'
              }
            case 'c':
              return ''
            default:
              return inspect(arg)
          }
        } catch {
          return inspect(arg)
        }
      }),
    )
  }
  for (; index < args.length; index++) {
    const arg = args[index]
    parts.push(typeof arg === 'string' ? arg : inspect(arg))
  }
  return parts.join(' ')
}

function capStack(stack: string): string {
  const lines = stack.split('\n')
  const firstFrame = lines.findIndex((line) => /^\s+at /.test(line))
  if (firstFrame < 0) return stack.slice(0, MESSAGE_MAX * 2)
  const head = lines.slice(0, firstFrame).join('\n').slice(0, MESSAGE_MAX)
  const frames = lines.slice(firstFrame)
  const kept = frames.slice(0, FRAMES_MAX).map((line) => line.slice(0, 500))
  if (frames.length > FRAMES_MAX) kept.push(`    ... ${frames.length - FRAMES_MAX} more frames`)
  return [head, ...kept].join('\n')
}

/**
 * A thrown value as the plain strings the host gets: an Error's message and stack, anything else as
 * text. Nothing of the value itself crosses (the host copies only these strings).
 */
export function describeThrown(value: unknown): { message: string; stack: string } {
  let message: string
  let stack = ''
  try {
    if ((typeof value === 'object' && value !== null) || typeof value === 'function') {
      const text = get(value, 'message')
      const trace = get(value, 'stack')
      let isError = false
      try {
        isError = value instanceof Error
      } catch {
        // A Proxy whose prototype trap throws is no Error.
      }
      if (typeof text === 'string' && (isError || typeof trace === 'string')) {
        const name = get(value, 'name')
        message = text !== '' ? text : typeof name === 'string' && name !== '' ? name : 'Error'
      } else message = inspect(value)
      if (typeof trace === 'string') stack = trace
    } else message = typeof value === 'string' ? value : inspect(value)
  } catch {
    message = 'a value was thrown that cannot be described'
  }
  if (message.length > MESSAGE_MAX) message = `${message.slice(0, MESSAGE_MAX - 1)}…`
  return { message, stack: capStack(stack) }
}
