/**
 * The functions runtime as one script (render/functions/runtime, bundled from the compiled JS next to
 * this file): what a fresh isolate context runs before a site's code. Bundled once per process.
 */
import { build } from 'esbuild'
import type { ExternalCopy, Isolate, Script } from 'isolated-vm'
import { fileURLToPath } from 'node:url'

let script: Promise<string> | undefined
let codeCache: ExternalCopy<ArrayBuffer> | undefined

async function bundle(): Promise<string> {
  const result = await build({
    entryPoints: [fileURLToPath(new URL('./runtime/index.js', import.meta.url))],
    bundle: true,
    write: false,
    format: 'iife',
    platform: 'neutral',
    // The libraries' ESM builds first (their CommonJS ones are for Node).
    mainFields: ['module', 'main'],
    target: 'es2022',
    // Minified: the script is compiled on every cold start. Names are kept, so classes print as
    // Response, Headers, … and stack frames stay readable.
    minify: true,
    keepNames: true,
    legalComments: 'none',
    logLevel: 'silent',
    // Frames of the runtime in a stack trace name it (the host compiles the script without a file name).
    footer: { js: '//# sourceURL=plinth:functions-runtime.js' },
  })
  return result.outputFiles[0].text
}

/** The runtime script's text (bundled on first use; a failed bundle is retried on the next call). */
export function runtimeScript(): Promise<string> {
  script ??= bundle().catch((error: unknown) => {
    script = undefined
    throw error
  })
  return script
}

/**
 * The runtime script compiled for an isolate, with V8's code cache from the first compile: about half
 * of a cold start is compiling the script (6.6 ms of 14 here), which the cache cuts to under 1 ms.
 */
export async function compileRuntime(isolate: Isolate): Promise<Script> {
  const text = await runtimeScript()
  // isolated-vm sets these on the Script it returns (its typings leave them out).
  type Cached = Script & { cachedData?: ExternalCopy<ArrayBuffer>; cachedDataRejected?: boolean }
  if (codeCache !== undefined) {
    const compiled = (await isolate.compileScript(text, { cachedData: codeCache })) as Cached
    if (compiled.cachedDataRejected !== true) return compiled
  }
  const compiled = (await isolate.compileScript(text, { produceCachedData: true })) as Cached
  if (compiled.cachedData !== undefined) codeCache = compiled.cachedData
  return compiled
}
