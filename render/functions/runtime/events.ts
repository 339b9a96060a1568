// Event, EventTarget, AbortController and AbortSignal, written here: the npm shims for them
// (event-target-shim, abort-controller) predate AbortSignal's reason, throwIfAborted, timeout() and
// any(), which Workers code uses; what is needed without a DOM tree (no capture or bubble phases) is short.
import { DOMException } from './dom-exception.js'
import { reportError } from './console.js'

interface EventInit {
  bubbles?: boolean
  cancelable?: boolean
  composed?: boolean
}

type Listener = ((event: Event) => unknown) | { handleEvent(event: Event): unknown }

let dispatchTo: (event: Event, target: EventTarget | null) => void
let stoppedImmediately: (event: Event) => boolean

export class Event {
  static readonly NONE = 0
  static readonly CAPTURING_PHASE = 1
  static readonly AT_TARGET = 2
  static readonly BUBBLING_PHASE = 3

  readonly #type: string
  readonly #bubbles: boolean
  readonly #cancelable: boolean
  readonly #composed: boolean
  readonly #timeStamp = Date.now()
  #target: EventTarget | null = null
  #dispatching = false
  #canceled = false
  #stop = false
  #stopImmediate = false

  constructor(type: string, init?: EventInit) {
    if (arguments.length === 0) throw new TypeError("Failed to construct 'Event': 1 argument required, but only 0 present.")
    this.#type = String(type)
    this.#bubbles = Boolean(init?.bubbles)
    this.#cancelable = Boolean(init?.cancelable)
    this.#composed = Boolean(init?.composed)
  }

  static {
    dispatchTo = (event, target) => {
      event.#target = target
      event.#dispatching = target !== null
      if (target === null) event.#stopImmediate = event.#stop = false
    }
    stoppedImmediately = (event) => event.#stopImmediate
  }

  get type(): string {
    return this.#type
  }
  get bubbles(): boolean {
    return this.#bubbles
  }
  get cancelable(): boolean {
    return this.#cancelable
  }
  get composed(): boolean {
    return this.#composed
  }
  get target(): EventTarget | null {
    return this.#target
  }
  get currentTarget(): EventTarget | null {
    return this.#dispatching ? this.#target : null
  }
  get srcElement(): EventTarget | null {
    return this.#target
  }
  get eventPhase(): number {
    return this.#dispatching ? Event.AT_TARGET : Event.NONE
  }
  get defaultPrevented(): boolean {
    return this.#canceled
  }
  get returnValue(): boolean {
    return !this.#canceled
  }
  get timeStamp(): number {
    return this.#timeStamp
  }
  get isTrusted(): boolean {
    return false
  }
  get cancelBubble(): boolean {
    return this.#stop
  }
  set cancelBubble(value: boolean) {
    if (value) this.#stop = true
  }
  composedPath(): EventTarget[] {
    return this.#dispatching && this.#target !== null ? [this.#target] : []
  }
  preventDefault(): void {
    if (this.#cancelable) this.#canceled = true
  }
  stopPropagation(): void {
    this.#stop = true
  }
  stopImmediatePropagation(): void {
    this.#stop = this.#stopImmediate = true
  }
  get [Symbol.toStringTag](): string {
    return 'Event'
  }
}

interface Registration {
  listener: Listener
  capture: boolean
  once: boolean
  removed: boolean
}

interface ListenerOptions {
  capture?: boolean
  once?: boolean
  passive?: boolean
  signal?: AbortSignal
}

export class EventTarget {
  readonly #listeners = new Map<string, Registration[]>()

  addEventListener(type: string, listener: Listener | null, options?: boolean | ListenerOptions): void {
    if (listener === null || listener === undefined) return
    if (typeof listener !== 'function' && (typeof listener !== 'object' || typeof listener.handleEvent !== 'function'))
      throw new TypeError('The listener must be a function or an object with a handleEvent method')
    const capture = typeof options === 'boolean' ? options : Boolean(options?.capture)
    const once = typeof options === 'object' && options !== null && Boolean(options.once)
    const signal = typeof options === 'object' && options !== null ? options.signal : undefined
    if (signal?.aborted) return
    type = String(type)
    let list = this.#listeners.get(type)
    if (list === undefined) this.#listeners.set(type, (list = []))
    if (list.some((r) => r.listener === listener && r.capture === capture)) return
    list.push({ listener, capture, once, removed: false })
    signal?.addEventListener('abort', () => this.removeEventListener(type, listener, { capture }), { once: true })
  }

  removeEventListener(type: string, listener: Listener | null, options?: boolean | ListenerOptions): void {
    const list = this.#listeners.get(String(type))
    if (list === undefined) return
    const capture = typeof options === 'boolean' ? options : Boolean(options?.capture)
    const index = list.findIndex((r) => r.listener === listener && r.capture === capture)
    if (index < 0) return
    list[index].removed = true
    list.splice(index, 1)
  }

  dispatchEvent(event: Event): boolean {
    if (!(event instanceof Event)) throw new TypeError("Failed to execute 'dispatchEvent': parameter 1 is not of type 'Event'.")
    if (event.currentTarget !== null) throw new DOMException('The event is already being dispatched.', 'InvalidStateError')
    const list = this.#listeners.get(event.type)
    dispatchTo(event, this)
    try {
      // A copy: listeners added while dispatching wait for the next event, removed ones are skipped.
      for (const registration of list === undefined ? [] : [...list]) {
        if (registration.removed) continue
        if (registration.once) this.removeEventListener(event.type, registration.listener, { capture: registration.capture })
        try {
          const listener = registration.listener
          if (typeof listener === 'function') listener.call(this, event)
          else listener.handleEvent(event)
        } catch (error) {
          reportError(error)
        }
        if (stoppedImmediately(event)) break
      }
    } finally {
      dispatchTo(event, null)
    }
    return !event.defaultPrevented
  }

  get [Symbol.toStringTag](): string {
    return 'EventTarget'
  }
}

const CONSTRUCTING = Symbol('constructing')
let abortSignal: (signal: AbortSignal, reason: unknown) => void
/** Steps run when a signal aborts, before its listeners (fetch uses them to reject); the result forgets them. */
let followSignal: (signal: AbortSignal, steps: () => void) => () => void
let setTimer: (callback: () => void, ms: number) => void = () => {
  throw new Error('timers are not installed')
}

export function useTimer(timer: (callback: () => void, ms: number) => void): void {
  setTimer = timer
}

export class AbortSignal extends EventTarget {
  #aborted = false
  #reason: unknown = undefined
  #steps: (() => void)[] = []
  #onabort: ((event: Event) => unknown) | null = null
  #handlerAdded = false

  constructor(key?: symbol) {
    super()
    if (key !== CONSTRUCTING) throw new TypeError('Illegal constructor')
  }

  static {
    abortSignal = (signal, reason) => {
      if (signal.#aborted) return
      signal.#aborted = true
      signal.#reason = reason === undefined ? new DOMException('This operation was aborted', 'AbortError') : reason
      const steps = signal.#steps
      signal.#steps = []
      for (const step of steps) step()
      signal.dispatchEvent(new Event('abort'))
    }
    followSignal = (signal, steps) => {
      if (signal.#aborted) return () => undefined
      signal.#steps.push(steps)
      return () => {
        signal.#steps = signal.#steps.filter((s) => s !== steps)
      }
    }
  }

  get aborted(): boolean {
    return this.#aborted
  }
  get reason(): unknown {
    return this.#reason
  }
  throwIfAborted(): void {
    if (this.#aborted) throw this.#reason
  }
  get onabort(): ((event: Event) => unknown) | null {
    return this.#onabort
  }
  set onabort(handler: ((event: Event) => unknown) | null) {
    this.#onabort = typeof handler === 'function' ? handler : null
    // An event handler attribute is one listener, registered where it was first set.
    if (!this.#handlerAdded) {
      this.#handlerAdded = true
      this.addEventListener('abort', (event) => this.#onabort?.call(this, event))
    }
  }

  static abort(reason?: unknown): AbortSignal {
    const signal = new AbortSignal(CONSTRUCTING)
    abortSignal(signal, reason)
    return signal
  }

  static timeout(ms: number): AbortSignal {
    const delay = Number(ms)
    if (!Number.isFinite(delay) || delay < 0) throw new TypeError('AbortSignal.timeout() needs a non-negative number of milliseconds')
    const signal = new AbortSignal(CONSTRUCTING)
    setTimer(() => abortSignal(signal, new DOMException('The operation was aborted due to timeout', 'TimeoutError')), delay)
    return signal
  }

  static any(signals: Iterable<AbortSignal>): AbortSignal {
    const list = [...signals]
    const signal = new AbortSignal(CONSTRUCTING)
    const aborted = list.find((s) => s.aborted)
    if (aborted !== undefined) abortSignal(signal, aborted.reason)
    else for (const each of list) followSignal(each, () => abortSignal(signal, each.reason))
    return signal
  }

  override get [Symbol.toStringTag](): string {
    return 'AbortSignal'
  }
}

export class AbortController {
  readonly #signal = new AbortSignal(CONSTRUCTING)

  get signal(): AbortSignal {
    return this.#signal
  }
  abort(reason?: unknown): void {
    abortSignal(this.#signal, reason)
  }
  get [Symbol.toStringTag](): string {
    return 'AbortController'
  }
}

/** A signal that never aborts, for a Request made without one. */
export function quietSignal(): AbortSignal {
  return new AbortSignal(CONSTRUCTING)
}

export { followSignal }
