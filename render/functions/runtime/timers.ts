// Timers on the host's clock: each wait is a 'sleep' call the host answers after the delay. A cleared
// timer is forgotten here, so its callback never runs when the host's answer comes anyway; a timer of
// a request that has finished does not run either (Workers drop a finished request's timers too).
import { reportError } from './console.js'
import { enter, hostCall, isLive, requireRequest } from './host.js'

interface Timer {
  callback: (...args: unknown[]) => void
  args: unknown[]
  ms: number
  request: number
  repeat: boolean
}

const MAX_DELAY = 2 ** 31 - 1
const timers = new Map<number, Timer>()
let lastId = 0

function delayOf(ms: unknown): number {
  const delay = Number(ms)
  return Number.isFinite(delay) && delay > 0 ? Math.min(Math.floor(delay), MAX_DELAY) : 0
}

function wait(id: number, timer: Timer): void {
  hostCall(timer.request, 'sleep', `{"ms":${timer.ms}}`).then(
    () => fire(id),
    () => timers.delete(id),
  )
}

function fire(id: number): void {
  const timer = timers.get(id)
  if (timer === undefined) return
  if (!isLive(timer.request)) {
    timers.delete(id)
    return
  }
  if (!timer.repeat) timers.delete(id)
  enter(timer.request)
  try {
    timer.callback(...timer.args)
  } catch (error) {
    reportError(error)
  }
  if (timer.repeat && timers.get(id) === timer) wait(id, timer)
}

function start(callback: unknown, ms: unknown, args: unknown[], repeat: boolean, what: string): number {
  if (typeof callback !== 'function') throw new TypeError(`${what}() needs a function (code given as a string is not run)`)
  const request = requireRequest(`${what}()`)
  const id = ++lastId
  const timer: Timer = { callback: callback as Timer['callback'], args, ms: delayOf(ms), request, repeat }
  timers.set(id, timer)
  wait(id, timer)
  return id
}

export function setTimeout(callback: unknown, ms?: unknown, ...args: unknown[]): number {
  return start(callback, ms, args, false, 'setTimeout')
}

export function setInterval(callback: unknown, ms?: unknown, ...args: unknown[]): number {
  return start(callback, ms, args, true, 'setInterval')
}

export function clearTimeout(id?: unknown): void {
  if (typeof id === 'number') timers.delete(id)
}

export const clearInterval = clearTimeout

/** A callback after the current task, before any timer; an exception in it is logged, not thrown on. */
export function queueMicrotask(callback: unknown): void {
  if (typeof callback !== 'function') throw new TypeError('queueMicrotask() needs a function')
  void Promise.resolve().then(() => {
    try {
      ;(callback as () => void)()
    } catch (error) {
      reportError(error)
    }
  })
}

/** Workers' scheduler.wait(ms): a promise that settles after the delay. */
export const scheduler = {
  wait(ms: unknown): Promise<void> {
    return new Promise((resolve) => setTimeout(resolve, ms))
  },
}
