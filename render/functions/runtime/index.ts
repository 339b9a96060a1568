/**
 * The functions runtime: the Web APIs of a Cloudflare Pages Function, installed on a bare V8 context
 * (isolated-vm gives the JavaScript built-ins and nothing else) before the site's compiled code runs,
 * and __plinthInvoke, through which the host hands in each request. Bundled into one script by
 * runtime-script.ts; host.ts (imported first) takes the host's functions off the global.
 */
import './host.js'
import structuredCloneValue from '@ungap/structured-clone'
import URL from 'core-js-pure/stable/url/index.js'
import URLSearchParams from 'core-js-pure/stable/url-search-params/index.js'
import {
  ByteLengthQueuingStrategy,
  CountQueuingStrategy,
  ReadableByteStreamController,
  ReadableStream,
  ReadableStreamBYOBReader,
  ReadableStreamBYOBRequest,
  ReadableStreamDefaultController,
  ReadableStreamDefaultReader,
  TransformStream,
  TransformStreamDefaultController,
  WritableStream,
  WritableStreamDefaultController,
  WritableStreamDefaultWriter,
} from 'web-streams-polyfill'
import { Blob, File } from './blob.js'
import { console } from './console.js'
import { Crypto, CryptoKey, SubtleCrypto, crypto } from './crypto.js'
import { DOMException } from './dom-exception.js'
import { TextDecoder, TextDecoderStream, TextEncoder, TextEncoderStream, atob, btoa } from './encoding.js'
import { AbortController, AbortSignal, Event, EventTarget, useTimer } from './events.js'
import { fetch } from './fetch.js'
import { FormData } from './form-data.js'
import { Headers } from './headers.js'
import { INSPECT } from './inspect.js'
import { invoke } from './invoke.js'
import { Request, Response } from './request.js'
import { clearInterval, clearTimeout, queueMicrotask, scheduler, setInterval, setTimeout } from './timers.js'

function structuredClone(value: unknown, options?: { transfer?: unknown[] }): unknown {
  if (arguments.length === 0) throw new TypeError("Failed to execute 'structuredClone': 1 argument required, but only 0 present.")
  void options
  // The streams polyfill "transfers" chunk buffers through here (V8 here has no ArrayBuffer.prototype.transfer): a plain copy.
  if (value instanceof ArrayBuffer) return value.slice(0)
  try {
    return structuredCloneValue(value)
  } catch (error) {
    throw new DOMException(error instanceof Error ? error.message : String(error), 'DataCloneError')
  }
}

useTimer((callback, ms) => void setTimeout(callback, ms))

// Workers' performance: milliseconds since the isolate started (on the wall clock, as theirs is).
const timeOrigin = Date.now()
const performance = Object.freeze({ timeOrigin, now: () => Date.now() - timeOrigin })

// How URLs print in logs (the library's objects have no fields of their own to show).
Object.defineProperty(URL.prototype, INSPECT, {
  value: function (this: URL) {
    return { href: this.href }
  },
})
Object.defineProperty(URLSearchParams.prototype, INSPECT, {
  value: function (this: URLSearchParams) {
    return Object.fromEntries(this)
  },
})

const globals: Record<string, unknown> = {
  AbortController,
  AbortSignal,
  Blob,
  ByteLengthQueuingStrategy,
  CountQueuingStrategy,
  Crypto,
  CryptoKey,
  DOMException,
  Event,
  EventTarget,
  File,
  FormData,
  Headers,
  ReadableByteStreamController,
  ReadableStream,
  ReadableStreamBYOBReader,
  ReadableStreamBYOBRequest,
  ReadableStreamDefaultController,
  ReadableStreamDefaultReader,
  Request,
  Response,
  SubtleCrypto,
  TextDecoder,
  TextDecoderStream,
  TextEncoder,
  TextEncoderStream,
  TransformStream,
  TransformStreamDefaultController,
  URL,
  URLSearchParams,
  WritableStream,
  WritableStreamDefaultController,
  WritableStreamDefaultWriter,
  atob,
  btoa,
  clearInterval,
  clearTimeout,
  console,
  crypto,
  fetch,
  navigator: Object.freeze({ userAgent: 'Plinth' }),
  performance,
  queueMicrotask,
  scheduler,
  self: globalThis,
  setInterval,
  setTimeout,
  structuredClone,
}

// As WebIDL installs them: writable and configurable, not enumerable.
for (const name of Object.keys(globals))
  Object.defineProperty(globalThis, name, { value: globals[name], writable: true, configurable: true, enumerable: false })

Object.defineProperty(globalThis, '__plinthInvoke', {
  value: (id: number, head: string, body: ArrayBuffer | undefined) => invoke(id, head, body),
  writable: false,
  configurable: false,
  enumerable: false,
})
