// The files of a version's functions: where the sources live, what compiling them generates, and the manifest the serving side reads (no esbuild here: serving threads import it).
import { createHash } from 'node:crypto'

/** Where a site's function sources live in its files. */
export const FUNCTIONS_DIR = 'functions/'
/** Cloudflare Pages' file that says which paths run functions at all. */
export const ROUTES_FILE = '_routes.json'
/** The compiled output a version carries beside its files (generated at deploy, never served). */
export const FUNCTIONS_SCRIPT = '_platform/functions.js'
export const FUNCTIONS_MAP = '_platform/functions.js.map'
export const FUNCTIONS_MANIFEST = '_platform/functions.json'
export const GENERATED_FILES: readonly string[] = [FUNCTIONS_SCRIPT, FUNCTIONS_MAP, FUNCTIONS_MANIFEST]

/** The files of `functions/` that are code (others there are neither compiled nor served). */
export const SOURCE = /\.(m?js|ts|jsx|tsx)$/
/** One route of a version's functions, as the deploy answer and the dashboard list it. */
export interface FunctionRoute {
  /** The request path pattern: `/api/todos/:id`, `/files/:path*`. */
  route: string
  /** Methods it answers; empty: every method (onRequest). */
  methods: string[]
  /** The file it comes from, e.g. `functions/api/todos/[id].ts`. */
  file: string
  middleware: boolean
}

/** What the serving side reads of a version's functions (the generated manifest). */
export interface FunctionsManifest {
  v: 1
  routes: FunctionRoute[]
  /** `_routes.json`'s rules (or the ones derived from the routes): which request paths run functions. */
  include: string[]
  exclude: string[]
  /** sha256 of the sources compiled: an unchanged folder is not compiled again. */
  sources: string
  /** A static deploy's type errors (its TypeScript against Cloudflare's Workers types): the deploy went through, they are told. */
  typeProblems?: FunctionTypeProblem[]
}

/** A type error in a function's file, where it is. */
export interface FunctionTypeProblem {
  file: string
  line: number
  column: number
  message: string
}

/** Whether a version's files hold function code (and so need compiling). */
export function hasFunctions(paths: Iterable<string>): boolean {
  for (const path of paths) if (path.startsWith(FUNCTIONS_DIR) && SOURCE.test(path)) return true
  return false
}

/** The digest of what a compile reads: each source's path and content hash, and `_routes.json`'s. */
export function sourcesDigest(files: Readonly<Record<string, { hash: string }>>): string {
  const hash = createHash('sha256')
  for (const path of Object.keys(files).sort())
    if ((path.startsWith(FUNCTIONS_DIR) && SOURCE.test(path)) || path === ROUTES_FILE) hash.update(`${path}\0${files[path].hash}\n`)
  return hash.digest('hex')
}
