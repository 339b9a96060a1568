import { join } from 'node:path'
import type { Static } from '@sinclair/typebox'
import * as esbuild from 'esbuild'
import type { Diagnostic as DiagnosticSchema } from '../core/schemas/source.js'
import { fileIdOf } from '../core/typed-files.js'
import { labelOf, SERVER_BUNDLE_FILE, SITE } from './locate.js'
import { PACKAGES_ROOT, parsePinned } from './packages.js'
import { PLATFORM_MODULE_SOURCE } from './platform-module.js'

/** React's legacy browser server build: renders to a string in a bare isolate (no MessageChannel). */
const REACT_DOM_SERVER = join(PACKAGES_ROOT, 'react-dom', 'cjs', 'react-dom-server-legacy.browser.production.js')

/** A gate diagnostic: the API's Diagnostic schema. */
export type Diagnostic = Static<typeof DiagnosticSchema>

/** Site source for a build: manifest path to text, typed files only. */
export type SiteFiles = ReadonlyMap<string, string>

const VIRTUAL = 'plinth'

/** Page names of a site, from its manifest paths. */
export function pageNames(files: SiteFiles): string[] {
  return [...files.keys()].flatMap((path) => {
    const id = fileIdOf(path)
    return id?.type === 'page' ? [id.name!] : []
  })
}

function entrySource(files: SiteFiles): string {
  const pages = pageNames(files)
  const hasNotFound = files.has('not_found.tsx')
  return [
    "import { renderToString } from 'plinth:react-dom-server'",
    "import { createElement } from 'react'",
    ...pages.map((name, i) => `import * as page${i} from ${JSON.stringify(`@pages/${name}`)}`),
    hasNotFound ? "import * as notFound from 'plinth:not-found'" : 'const notFound = null',
    files.has('website.config.ts') ? "import * as siteConfig from 'plinth:website-config'" : 'const siteConfig = null',
    `const pages = { ${pages.map((name, i) => `${JSON.stringify(name)}: page${i}`).join(', ')} }`,
    RENDER_HARNESS,
  ].join('\n')
}

/**
 * Runs inside the isolate: renders one page (or the not_found component) to HTML. At check time
 * `queries` run against the placeholder `cms` of @platform; the result goes in as `data`.
 */
const RENDER_HARNESS = `
const safe = globalThis.__plinthSafe
globalThis.__plinthConfig = function () {
  try {
    return safe.ok(siteConfig && siteConfig.default ? siteConfig.default : null)
  } catch (thrown) {
    return safe.failure(thrown)
  }
}
globalThis.__plinthRoutes = function () {
  try {
    const out = {}
    for (const name in pages) { const def = pages[name].default; out[name] = def && typeof def.route === 'string' ? def.route : null }
    return safe.ok(out)
  } catch (thrown) {
    return safe.failure(thrown)
  }
}
globalThis.__plinthRender = function (kind, name, paramsJson) {
  safe.prepare()
  try {
    const params = JSON.parse(paramsJson)
    const mod = kind === 'not_found' ? notFound : pages[name]
    if (!mod) throw new Error('no such page: ' + name)
    const def = mod.default
    if (def === undefined || def === null) throw new Error('the module has no default export (export default definePage({ ... }))')
    let element, metadata = null, data = {}
    const bindings = []
    if (typeof def === 'function') {
      element = createElement(def, { params, data })
    } else {
      if (typeof def.render !== 'function') throw new Error('the page definition has no render function')
      if (typeof def.queries === 'function') {
        globalThis.__plinthBindings = bindings
        globalThis.__plinthParams = params
        try {
          data = def.queries({ params }) || {}
        } finally {
          globalThis.__plinthBindings = null
          globalThis.__plinthParams = null
        }
      }
      element = def.render({ data, params })
      metadata = def.metadata || null
    }
    return safe.ok({ html: renderToString(element), metadata, data, bindings })
  } catch (thrown) {
    return safe.failure(thrown)
  }
}
`

/** esbuild resolves site imports from memory and packages from Plinth's own node_modules. */
export function sitePlugin(current: { files: SiteFiles }): esbuild.Plugin {
  return {
    name: 'plinth-site',
    setup(build) {
      build.onResolve({ filter: /^@platform$/ }, () => ({ path: 'platform', namespace: VIRTUAL }))
      build.onResolve({ filter: /^plinth:react-dom-server$/ }, () => ({ path: REACT_DOM_SERVER }))
      build.onResolve({ filter: /^plinth:not-found$/ }, () => ({ path: 'not_found.tsx', namespace: SITE }))
      build.onResolve({ filter: /^plinth:website-config$/ }, () => ({ path: 'website.config.ts', namespace: SITE }))
      build.onResolve({ filter: /^@modules$/ }, () => ({ path: 'modules', namespace: VIRTUAL }))
      build.onResolve({ filter: /^@(pages|components|modules)\// }, (args) => {
        const [, kind, name] = /^@(pages|components|modules)\/(.+)$/.exec(args.path)!
        const path = `${kind}/${name}${kind === 'modules' ? '.ts' : '.tsx'}`
        if (!current.files.has(path)) return { errors: [{ text: `${args.path} does not exist in this version` }] }
        return { path, namespace: SITE }
      })
      build.onResolve({ filter: /@/ }, async (args) => {
        const pinned = parsePinned(args.path)
        if (pinned === null || args.namespace !== SITE) return undefined
        const resolved = await build.resolve(`${pinned.name}${pinned.subpath}`, { kind: args.kind, resolveDir: PACKAGES_ROOT })
        return resolved.errors.length > 0 ? { errors: resolved.errors } : { path: resolved.path }
      })
      build.onLoad({ filter: /.*/, namespace: SITE }, (args) => ({
        contents: current.files.get(args.path),
        loader: args.path.endsWith('.ts') ? 'ts' : 'tsx',
        resolveDir: PACKAGES_ROOT,
      }))
      build.onLoad({ filter: /.*/, namespace: VIRTUAL }, (args) => {
        if (args.path === 'platform') return { contents: PLATFORM_MODULE_SOURCE, loader: 'js' }
        const modules = [...current.files.keys()].flatMap((p) => (fileIdOf(p)?.type === 'module' ? [fileIdOf(p)!.name!] : []))
        return {
          contents: [
            ...modules.map((name, i) => `import * as m${i} from ${JSON.stringify(`@modules/${name}`)}`),
            `export const modules = { ${modules.map((name, i) => `${JSON.stringify(name)}: m${i}`).join(', ')} }`,
            'export default modules',
          ].join('\n'),
          loader: 'js',
          resolveDir: PACKAGES_ROOT,
        }
      })
    },
  }
}

export interface Warm {
  context: esbuild.BuildContext
  current: { files: SiteFiles; entry: string }
  queue: Promise<unknown>
  usedAt: number
}

/** A bundle that takes longer than this is cancelled (esbuild takes well under a second for a site). */
export const BUNDLE_TIME_LIMIT_MS = 30_000

/**
 * Rebuilds a warm context within BUNDLE_TIME_LIMIT_MS; past it the build is cancelled and fails with
 * a bundle diagnostic saying so.
 */
export async function rebuildWithin(entry: Warm): Promise<esbuild.BuildResult> {
  let timedOut = false
  const timer = setTimeout(() => {
    timedOut = true
    void entry.context.cancel()
  }, BUNDLE_TIME_LIMIT_MS)
  try {
    return await entry.context.rebuild()
  } catch (error) {
    if (timedOut)
      throw {
        errors: [
          {
            text: `bundle ran longer than ${BUNDLE_TIME_LIMIT_MS / 1000} s and was stopped: simplify the code (very large or deeply nested files)`,
          },
        ],
      }
    throw error
  } finally {
    clearTimeout(timer)
  }
}

/**
 * Incremental esbuild contexts per site (a rebuild re-parses only the site's files, not React), owned
 * by one gate. Every context made is disposed: the least recently used beyond `maxSites`, and
 * all of them at close, after which none is made. (A context left alive keeps esbuild's service, and
 * so the process, running forever.)
 */
export class Bundlers {
  readonly #warm = new Map<string, Promise<Warm>>()
  #closed = false

  /** `maxSites`: how many sites keep warm contexts (PLINTH_WARM_SITES). */
  constructor(readonly maxSites: number) {}

  /** Sites with a warm context now. */
  get size(): number {
    return this.#warm.size
  }

  /** The warm context under `key`, made by `create` on first use (once, however many ask at once). */
  async context(key: string, create: (current: Warm['current']) => Promise<esbuild.BuildContext>): Promise<Warm> {
    if (this.#closed) throw new Error('the bundlers are closed')
    let pending = this.#warm.get(key)
    if (pending === undefined) {
      const current = { files: new Map() as SiteFiles, entry: '' }
      pending = create(current).then((context) => ({ context, current, queue: Promise.resolve(), usedAt: Date.now() }) as Warm)
      this.#warm.set(key, pending)
      pending.catch(() => this.#warm.get(key) === pending && this.#warm.delete(key))
      if (this.#warm.size > this.maxSites) void this.#evict()
    }
    const entry = await pending
    entry.usedAt = Date.now()
    return entry
  }

  /** Disposes every context and makes no more (shutdown). */
  async close(): Promise<void> {
    this.#closed = true
    const all = [...this.#warm.values()]
    this.#warm.clear()
    await Promise.all(
      all.map((pending) =>
        pending.then(
          (w) => w.queue.then(() => w.context.dispose()),
          () => undefined,
        ),
      ),
    )
  }

  async #evict(): Promise<void> {
    const entries = await Promise.all([...this.#warm].map(async ([key, pending]) => [key, await pending.catch(() => null)] as const))
    const oldest = entries.filter((e): e is readonly [string, Warm] => e[1] !== null).sort((a, b) => a[1].usedAt - b[1].usedAt)[0]
    if (oldest === undefined || this.#warm.size <= this.maxSites) return
    const [key, stale] = oldest
    this.#warm.delete(key)
    void stale.queue.then(() => stale.context.dispose())
  }
}

/** The entry module comes from memory too, so one context serves every version of a site. */
function entryPlugin(current: { entry: string }): esbuild.Plugin {
  return {
    name: 'plinth-entry',
    setup(build) {
      build.onResolve({ filter: /^plinth:entry$/ }, () => ({ path: 'entry.js', namespace: 'plinth-entry' }))
      build.onLoad({ filter: /.*/, namespace: 'plinth-entry' }, () => ({
        contents: current.entry,
        loader: 'js',
        resolveDir: PACKAGES_ROOT,
      }))
    },
  }
}

export const OPTIONS: esbuild.BuildOptions = {
  bundle: true,
  write: false,
  format: 'iife',
  platform: 'browser',
  target: 'es2022',
  jsx: 'automatic',
  jsxImportSource: 'react',
  define: { 'process.env.NODE_ENV': '"production"' },
  minifySyntax: true,
  minifyWhitespace: true,
  legalComments: 'none',
  logLevel: 'silent',
}

/**
 * The server bundle carries a source map, so a render failure can name the line of the site's file.
 * Syntax is not minified: that folds a block's statements into one comma expression, and V8 then
 * reports a throw in an early statement at the position of the last (about 1% larger, same speed).
 */
const SERVER_OPTIONS: esbuild.BuildOptions = {
  ...OPTIONS,
  minifySyntax: false,
  sourcemap: 'external',
  sourcesContent: false,
  outfile: SERVER_BUNDLE_FILE,
}

export type ServerBundle = { ok: true; code: string; map: string } | { ok: false; diagnostics: Diagnostic[] }

function serverOutput(result: esbuild.BuildResult): ServerBundle {
  const files = result.outputFiles!
  return { ok: true, code: files.find((f) => f.path.endsWith('.js'))!.text, map: files.find((f) => f.path.endsWith('.map'))!.text }
}

/**
 * The server bundle of a site: one script that, run in an isolate, defines the render functions,
 * and its source map. With `warm` the site's incremental context is reused (rebuilds of one site run
 * one at a time).
 */
export async function bundleServer(files: SiteFiles, warm?: { bundlers: Bundlers; siteKey: string }): Promise<ServerBundle> {
  if (warm !== undefined) {
    const entry = await warm.bundlers.context(warm.siteKey, (current) =>
      esbuild.context({
        ...SERVER_OPTIONS,
        stdin: undefined,
        entryPoints: ['plinth:entry'],
        plugins: [entryPlugin(current), sitePlugin(current)],
      }),
    )
    const run = entry.queue.then(async () => {
      entry.current.files = files
      entry.current.entry = entrySource(files)
      try {
        return serverOutput(await rebuildWithin(entry))
      } catch (error) {
        return failure(error)
      }
    })
    entry.queue = run.catch(() => undefined)
    return run
  }
  try {
    return serverOutput(
      await esbuild.build({
        ...SERVER_OPTIONS,
        stdin: { contents: entrySource(files), loader: 'js', resolveDir: PACKAGES_ROOT, sourcefile: 'plinth-entry.js' },
        plugins: [sitePlugin({ files })],
      }),
    )
  } catch (error) {
    return failure(error)
  }
}

/** esbuild's errors as bundle diagnostics in the user's files; anything else is rethrown. */
export function failure(error: unknown): { ok: false; diagnostics: Diagnostic[] } {
  const { errors } = error as esbuild.BuildFailure
  if (!Array.isArray(errors)) throw error
  return {
    ok: false,
    diagnostics: errors.map((e) => ({
      step: 'bundle',
      severity: 'error' as const,
      ...(e.location ? { file: labelOf(e.location.file), line: e.location.line, column: e.location.column + 1 } : {}),
      message: e.text,
    })),
  }
}
