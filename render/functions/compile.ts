// A static site's `functions/` folder (Cloudflare Pages Functions conventions) compiled at deploy into one script for the isolates, with its route table.
import * as esbuild from 'esbuild'
import { FUNCTIONS_DIR, ROUTES_FILE, SOURCE, type FunctionRoute, type FunctionsManifest } from './files.js'

/** Handler exports a route file may have, and the method each answers (onRequest: every method). */
const HANDLERS: Record<string, string> = {
  onRequest: '',
  onRequestGet: 'GET',
  onRequestHead: 'HEAD',
  onRequestPost: 'POST',
  onRequestPut: 'PUT',
  onRequestPatch: 'PATCH',
  onRequestDelete: 'DELETE',
  onRequestOptions: 'OPTIONS',
}
/** Cloudflare's limits on `_routes.json`. */
export const ROUTE_RULES_MAX = 100
export const ROUTE_RULE_MAX_CHARS = 100
/** The compiled script's cap (Cloudflare's Workers Free limit); its map is kept beside it. */
export const FUNCTIONS_SCRIPT_MAX_BYTES = 1024 * 1024

/** A problem that fails the deploy: the file and line it is at, when there is one. */
export interface FunctionsProblem {
  file: string
  line: number | null
  column: number | null
  message: string
}

export type FunctionsBuild =
  { ok: true; script: string; map: string; manifest: FunctionsManifest } | { ok: false; problems: FunctionsProblem[] }

interface RouteFile {
  /** Path under functions/, e.g. `api/todos/[id].ts`. */
  path: string
  routePath: string
  mountPath: string
  middleware: boolean
  specificity: number[]
}

/** `api/todos/[id].ts` -> `/api/todos/:id`; `[[path]]` -> `:path*`; `index` names its folder; `_middleware` mounts on it. */
function routeOf(path: string): RouteFile | { problem: string } {
  const segments = path.replace(SOURCE, '').split('/')
  const last = segments.pop()!
  const middleware = last === '_middleware'
  const folder: string[] = []
  for (const segment of segments) {
    const converted = convert(segment)
    if (converted === null)
      return {
        problem: `the folder name "${segment}" is not a route segment: use letters, digits and - . _ ~ (as a URL writes them), [param] or [[param]] (a param's name: letters, digits, _)`,
      }
    folder.push(converted)
  }
  const mountPath = `/${folder.join('/')}`
  let routeSegments = folder
  if (!middleware && last !== 'index') {
    const converted = convert(last)
    if (converted === null)
      return {
        problem: `the file name "${last}" is not a route segment: use letters, digits and - . _ ~ (as a URL writes them), [param] or [[param]] (a param's name: letters, digits, _)`,
      }
    routeSegments = [...folder, converted]
  }
  const routePath = `/${routeSegments.join('/')}`
  // Sorted as Cloudflare sorts routes: more segments first, then static before :param before :rest*.
  const specificity = routeSegments.map((s) => (s.endsWith('*') ? 2 : s.startsWith(':') ? 1 : 0))
  return { path, routePath, mountPath, middleware, specificity }
}

// A parameter's name as the runtime's router reads it (runtime/router.ts); a plain segment as a URL writes it
// unencoded (the router matches the path as requested, still encoded, as wrangler's does: a space could never match).
const PARAM = /^\[([A-Za-z0-9_]+)\]$/
const REST = /^\[\[([A-Za-z0-9_]+)\]\]$/
const PLAIN = /^[A-Za-z0-9._~!$&'()+,;=@-]+$/

function convert(segment: string): string | null {
  const rest = REST.exec(segment)
  if (rest !== null) return `:${rest[1]}*`
  const param = PARAM.exec(segment)
  if (param !== null) return `:${param[1]}`
  return PLAIN.test(segment) ? segment : null
}

/** Cloudflare's order: more segments first; at the first difference static, then :param, then :rest*; a method before none; then by text. */
function compareRoutes(a: { spec: number[]; method: string; text: string }, b: { spec: number[]; method: string; text: string }): number {
  if (a.spec.length !== b.spec.length) return b.spec.length - a.spec.length
  for (let i = 0; i < a.spec.length; i++) if (a.spec[i] !== b.spec[i]) return a.spec[i] - b.spec[i]
  if ((a.method === '') !== (b.method === '')) return a.method === '' ? 1 : -1
  return a.text < b.text ? -1 : a.text > b.text ? 1 : 0
}

/** Parses and checks `_routes.json` (Cloudflare's shape and limits); problems name what to change. */
export function parseRoutesFile(text: string): { include: string[]; exclude: string[] } | { problem: string } {
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch (error) {
    return { problem: `${ROUTES_FILE} is not JSON: ${(error as Error).message}` }
  }
  const value = parsed as { version?: unknown; include?: unknown; exclude?: unknown }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return { problem: `${ROUTES_FILE} must be an object` }
  if (value.version !== 1) return { problem: `${ROUTES_FILE} must have "version": 1` }
  const rules = (name: 'include' | 'exclude'): string[] | string => {
    const list = value[name] ?? []
    if (!Array.isArray(list) || !list.every((r) => typeof r === 'string')) return `"${name}" must be an array of path rules`
    for (const rule of list as string[]) {
      if (!rule.startsWith('/')) return `the rule "${rule}" in "${name}" must start with /`
      if (rule.length > ROUTE_RULE_MAX_CHARS)
        return `the rule "${rule.slice(0, 40)}…" in "${name}" is over ${ROUTE_RULE_MAX_CHARS} characters`
    }
    return list as string[]
  }
  const include = rules('include')
  const exclude = rules('exclude')
  if (typeof include === 'string') return { problem: `${ROUTES_FILE}: ${include}` }
  if (typeof exclude === 'string') return { problem: `${ROUTES_FILE}: ${exclude}` }
  if (include.length === 0) return { problem: `${ROUTES_FILE} must include at least one rule (e.g. "/api/*")` }
  if (include.length + exclude.length > ROUTE_RULES_MAX)
    return {
      problem: `${ROUTES_FILE} has ${include.length + exclude.length} rules; at most ${ROUTE_RULES_MAX} (include and exclude together)`,
    }
  return { include, exclude }
}

/** The include rules Cloudflare derives when a site brings no `_routes.json`: each route up to its first parameter. */
function derivedRules(routes: FunctionRoute[]): string[] {
  const rules = new Set<string>()
  for (const { route, middleware } of routes) {
    const segments = route.split('/').slice(1)
    const dynamic = segments.findIndex((s) => s.startsWith(':'))
    if (middleware) rules.add(route === '/' ? '/*' : `${route}/*`)
    else if (dynamic === -1) rules.add(route)
    else rules.add(`/${segments.slice(0, dynamic).join('/')}${dynamic === 0 ? '' : '/'}*`.replace('//', '/'))
  }
  // A rule under another's wildcard adds nothing.
  const wild = [...rules].filter((r) => r.endsWith('/*')).map((r) => r.slice(0, -1))
  return [...rules].filter((r) => !wild.some((w) => r !== `${w}*` && (r.startsWith(w) || `${r}/` === w))).sort()
}

/**
 * Compiles a version's function sources (path under the site root to text) into one script: each route
 * file an ES module with npm-free imports between the site's own files, bundled by esbuild with the
 * route table that the isolate's router reads (`globalThis.__plinthSite`). A syntax error or an import
 * of a file that does not exist fails with the file and line.
 */
export async function compileFunctions(files: ReadonlyMap<string, string>, routesJson: string | undefined): Promise<FunctionsBuild> {
  const problems: FunctionsProblem[] = []
  const routeFiles: RouteFile[] = []
  for (const path of [...files.keys()].sort()) {
    if (!path.startsWith(FUNCTIONS_DIR) || !SOURCE.test(path)) continue
    const inner = path.slice(FUNCTIONS_DIR.length)
    // Files and folders starting with _ (other than _middleware) are modules the routes import, not routes.
    if (inner.split('/').some((s, i, all) => s.startsWith('_') && !(i === all.length - 1 && s.replace(SOURCE, '') === '_middleware')))
      continue
    const route = routeOf(inner)
    if ('problem' in route) problems.push({ file: path, line: null, column: null, message: route.problem })
    else routeFiles.push(route)
  }
  let rules: { include: string[]; exclude: string[] } | null = null
  if (routesJson !== undefined) {
    const parsed = parseRoutesFile(routesJson)
    if ('problem' in parsed) problems.push({ file: ROUTES_FILE, line: null, column: null, message: parsed.problem })
    else rules = parsed
  }
  if (problems.length > 0) return { ok: false, problems }

  // Step 1: each route file on its own, to learn its exports (and find syntax errors, named by file and line).
  const plugin = siteFiles(files)
  const probe = await build({
    entryPoints: routeFiles.map((r) => `site:${FUNCTIONS_DIR}${r.path}`),
    format: 'esm',
    metafile: true,
    outdir: 'out',
    plugins: [plugin],
  })
  if ('problems' in probe) return { ok: false, problems: probe.problems }
  const exportsOf = new Map<string, string[]>()
  for (const output of Object.values(probe.metafile!.outputs))
    if (output.entryPoint !== undefined) exportsOf.set(output.entryPoint.replace(/^site:/, ''), output.exports)

  const entries: { spec: number[]; method: string; text: string; route: RouteFile; name: string; index: number }[] = []
  const listed: FunctionRoute[] = []
  routeFiles.forEach((route, index) => {
    const file = `${FUNCTIONS_DIR}${route.path}`
    const names = (exportsOf.get(file) ?? []).filter((name) => HANDLERS[name] !== undefined)
    if (names.length === 0) {
      problems.push({
        file,
        line: null,
        column: null,
        message: `${file} exports no handler: export onRequest (or onRequestGet, onRequestPost, …) from it, or move it into a folder starting with _ if it is a module the routes import`,
      })
      return
    }
    for (const name of names) entries.push({ spec: route.specificity, method: HANDLERS[name], text: route.routePath, route, name, index })
    const methods = names.map((n) => HANDLERS[n]).filter((m) => m !== '')
    listed.push({
      route: route.routePath,
      methods: names.includes('onRequest') ? [] : methods,
      file,
      middleware: route.middleware,
    })
  })
  // No file exports a handler: a folder of that name holding something else (a static site's own scripts), served as files.
  if (listed.length === 0) return { ok: true, script: '', map: '', manifest: { v: 1, routes: [], include: [], exclude: [], sources: '' } }
  if (problems.length > 0) return { ok: false, problems }
  entries.sort(compareRoutes)

  // Step 2: the entry that imports every route file and lists the routes in order.
  const entry = [
    ...routeFiles.map((r, i) => `import * as m${i} from ${JSON.stringify(`site:${FUNCTIONS_DIR}${r.path}`)}`),
    'const list = (v) => (Array.isArray(v) ? v : [v])',
    'globalThis.__plinthSite = { routes: [',
    ...entries.map(
      (e) =>
        `  { routePath: ${JSON.stringify(e.route.routePath)}, mountPath: ${JSON.stringify(e.route.mountPath)}, method: ${JSON.stringify(e.method)}, ` +
        (e.route.middleware
          ? `middlewares: list(m${e.index}.${e.name}), modules: [] },`
          : `middlewares: [], modules: list(m${e.index}.${e.name}) },`),
    ),
    '] }',
  ].join('\n')
  const bundled = await build({
    stdin: { contents: entry, resolveDir: '/', sourcefile: 'plinth:functions-entry.js', loader: 'js' },
    format: 'iife',
    sourcemap: 'external',
    outfile: 'functions.js',
    plugins: [plugin],
  })
  if ('problems' in bundled) return { ok: false, problems: bundled.problems }
  const script = bundled.outputFiles!.find((f) => f.path.endsWith('.js'))!.text
  const map = bundled.outputFiles!.find((f) => f.path.endsWith('.map'))!.text
  if (Buffer.byteLength(script) > FUNCTIONS_SCRIPT_MAX_BYTES)
    return {
      ok: false,
      problems: [
        {
          file: FUNCTIONS_DIR,
          line: null,
          column: null,
          message: `the compiled functions are ${Buffer.byteLength(script)} bytes; at most ${FUNCTIONS_SCRIPT_MAX_BYTES} (1 MiB)`,
        },
      ],
    }
  const derived = rules ?? { include: derivedRules(listed), exclude: [] }
  return { ok: true, script, map, manifest: { v: 1, routes: listed, include: derived.include, exclude: derived.exclude, sources: '' } }
}

/** The site's files as esbuild's file system: relative imports between them resolve, anything else is an error naming it. */
function siteFiles(files: ReadonlyMap<string, string>): esbuild.Plugin {
  const extensions = ['', '.ts', '.tsx', '.js', '.mjs', '.jsx', '/index.ts', '/index.js']
  return {
    name: 'plinth-site-files',
    setup(build) {
      build.onResolve({ filter: /^site:/ }, (args) => ({ path: args.path.slice(5), namespace: 'site' }))
      build.onResolve({ filter: /.*/ }, (args) => {
        if (args.namespace !== 'site') return undefined
        if (!args.path.startsWith('.')) {
          return {
            errors: [
              {
                text: `"${args.path}" is not a file of this site: functions import only the site's own files (relative paths such as "./utils"), no npm packages or Node built-ins`,
              },
            ],
          }
        }
        const base = args.importer.split('/').slice(0, -1)
        for (const part of args.path.split('/')) {
          if (part === '..') base.pop()
          else if (part !== '.') base.push(part)
        }
        const joined = base.join('/')
        const found = extensions.map((e) => joined + e).find((p) => files.has(p))
        if (found === undefined) return { errors: [{ text: `"${args.path}" does not exist (looked for ${joined} and ${joined}.ts/.js)` }] }
        return { path: found, namespace: 'site' }
      })
      build.onLoad({ filter: /.*/, namespace: 'site' }, (args) => {
        const text = files.get(args.path)!
        const loader = /\.tsx$/.test(args.path) ? 'tsx' : /\.ts$/.test(args.path) ? 'ts' : /\.jsx$/.test(args.path) ? 'jsx' : 'js'
        return { contents: text, loader }
      })
    },
  }
}

/** One esbuild run in memory; its errors as problems with the site's file and line. */
async function build(options: esbuild.BuildOptions): Promise<esbuild.BuildResult | { problems: FunctionsProblem[] }> {
  try {
    return await esbuild.build({
      bundle: true,
      write: false,
      platform: 'neutral',
      target: 'es2022',
      logLevel: 'silent',
      charset: 'utf8',
      ...options,
    })
  } catch (error) {
    const failure = error as esbuild.BuildFailure
    if (!Array.isArray(failure.errors)) throw error
    return {
      problems: failure.errors.slice(0, 20).map((e) => ({
        file: e.location?.file.replace(/^site:/, '') ?? FUNCTIONS_DIR,
        line: e.location?.line ?? null,
        column: e.location === null ? null : e.location.column + 1,
        message: e.text,
      })),
    }
  }
}
