import { createHash } from 'node:crypto'
import { dirname } from 'node:path'
import type * as TS from 'typescript'
import { fileIdOf, fileLabel } from '../core/typed-files.js'
import type { Diagnostic } from './bundle.js'
import { PACKAGES_ROOT } from './packages.js'

/** The site's files live under this virtual folder for the compiler. */
const SITE_ROOT = '/__plinth_site__'
const PLATFORM_DTS = `${SITE_ROOT}/__platform.d.ts`
const MODULES_DTS = `${SITE_ROOT}/__modules.d.ts`

export type TypecheckDiagnostic = Diagnostic & { step: 'typecheck'; severity: 'error'; file: string; line: number; column: number }

/** The `cms` of @platform for a site without a CMS schema; a site with one gets types generated from it. */
export const CMS_DECLARATION = 'export declare const cms: Record<string, Collection>'

/** The types of `@platform` (spec: Framework page module shape). */
export const PLATFORM_TYPES = `
import type { ReactNode } from 'react'
export interface Metadata {
  title?: string
  titleTemplate?: string
  description?: string
  language?: string
  favicon?: string
  openGraph?: { title?: string; description?: string; image?: string; type?: string; siteName?: string }
  twitter?: { card?: 'summary' | 'summary_large_image'; site?: string; image?: string; title?: string; description?: string }
}
export interface PageContext<D> { data: D; params: Record<string, string> }
export interface PageDefinition<D = Record<string, unknown>> {
  route: string
  metadata?: Metadata
  queries?: (context: { params: Record<string, string> }) => D
  render: (context: PageContext<D>) => ReactNode
}
export declare function definePage<D = Record<string, unknown>>(definition: PageDefinition<D>): PageDefinition<D>
export interface WebsiteConfig {
  metadata?: Metadata
  redirects?: { from: string; to: string; status?: 301 | 302 | 307 | 308 }[]
  headers?: Record<string, string>
  forms?: Record<string, { redirect?: string; webhook?: string; fields?: string[] }>
  analytics?: { enabled: boolean }
}
export declare function defineWebsiteConfig(config: WebsiteConfig): WebsiteConfig
export interface Asset { id: string; url: string; filename: string; contentType: string; altText: string; kind: string; width?: number; height?: number }
export interface ImageOptions { width?: number; height?: number; fit?: 'cover' | 'contain' | 'inside'; format?: 'webp' | 'avif' | 'jpeg' | 'png'; quality?: number }
export declare function imageUrl(asset: Asset | string, options?: ImageOptions): string
export declare function srcSet(asset: Asset | string, widths: number[], options?: ImageOptions): string
export declare function formAction(name: string): string
/** A custom event for the site's analytics (website_config.analytics.enabled); does nothing while rendering on the server. */
export declare function track(name: string, data?: Record<string, string | number | boolean | null>): void
export interface CmsItem { id: string; slug: string; publishedAt: string | null; createdAt: string; updatedAt: string; position: number; [field: string]: unknown }
export interface ListOptions {
  limit?: number
  offset?: number
  sort?: { field: string; direction: 'asc' | 'desc' }
  filter?: Record<string, Partial<Record<'eq' | 'neq' | 'contains' | 'startsWith' | 'endsWith' | 'gt' | 'gte' | 'lt' | 'lte' | 'in' | 'nin' | 'exists', unknown>>>
  filterLogic?: 'and' | 'or'
  search?: string
}
export interface Collection<T = CmsItem> { list(options?: ListOptions): { items: T[]; total: number }; bySlug(slug: string): T | null; byId(id: string): T | null }
export declare const cms: Record<string, Collection>
`

/** Library and package declarations parsed once per worker and shared by every site's program. */
const shared = new Map<string, TS.SourceFile>()

interface SiteProgram {
  builder: TS.SemanticDiagnosticsBuilderProgram
}
const programs = new Map<string, SiteProgram>()

function compilerOptions(ts: typeof TS, pins: Readonly<Record<string, string>>): TS.CompilerOptions {
  const paths: Record<string, string[]> = {
    '@platform': [PLATFORM_DTS],
    '@modules': [MODULES_DTS],
    '@pages/*': [`${SITE_ROOT}/pages/*`],
    '@components/*': [`${SITE_ROOT}/components/*`],
    '@modules/*': [`${SITE_ROOT}/modules/*`],
    react: [`${PACKAGES_ROOT}/@types/react`],
    'react/*': [`${PACKAGES_ROOT}/@types/react/*`],
  }
  for (const [name, version] of Object.entries(pins)) {
    if (name === 'react') continue
    paths[`${name}@${version}`] = [`${PACKAGES_ROOT}/${name}`]
    paths[`${name}@${version}/*`] = [`${PACKAGES_ROOT}/${name}/*`]
  }
  return {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    jsx: ts.JsxEmit.ReactJSX,
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    isolatedModules: true,
    types: [],
    typeRoots: [],
    // Pages render on the server without a DOM, but components hydrate in the browser: code in
    // effects and event handlers uses window, document, fetch and the rest. (Touching them while
    // rendering fails that page's render, with its message.)
    lib: ['lib.es2022.d.ts', 'lib.dom.d.ts', 'lib.dom.iterable.d.ts'],
    paths,
  }
}

/** Internal file names in a compiler message as the site writes them: `@components/Widget`, `@modules/posts`. */
function sitePaths(message: string): string {
  return message
    .replace(new RegExp(`${SITE_ROOT}/(components|modules)/([\\w-]+)(?:\\.tsx?)?`, 'g'), '@$1/$2')
    .replace(new RegExp(`${SITE_ROOT}/`, 'g'), '')
}

/**
 * The typecheck step: the site's TS/TSX against generated `@platform` types and the pinned packages'
 * own types, with a warm builder program per site (an edit re-checks only what it affects).
 * Diagnostics point at the user's file, line and column.
 */
export function typecheck(
  ts: typeof TS,
  siteKey: string,
  files: { path: string; content: string }[],
  pins: Readonly<Record<string, string>>,
  warmSites: number,
  cmsTypes = '',
): TypecheckDiagnostic[] {
  const site = new Map<string, string>()
  for (const { path, content } of files) if (/\.tsx?$/.test(path)) site.set(`${SITE_ROOT}/${path}`, content)
  const modules = [...site.keys()]
    .filter((p) => p.startsWith(`${SITE_ROOT}/modules/`))
    .map((p) => p.slice(`${SITE_ROOT}/modules/`.length, -3))
  // `cms` typed from the site's schema when it has one (a field added is a type the next check knows).
  site.set(PLATFORM_DTS, cmsTypes === '' ? PLATFORM_TYPES : PLATFORM_TYPES.replace(CMS_DECLARATION, cmsTypes))
  site.set(
    MODULES_DTS,
    `export declare const modules: {\n${modules.map((m) => `  ${JSON.stringify(m)}: typeof import(${JSON.stringify(`@modules/${m}`)})`).join('\n')}\n}\nexport default modules\n`,
  )
  // Of the disk, only the installed packages (the pinned ones' types, React's, TypeScript's libs): an
  // import of a server file by its path finds nothing, so none of its text comes back in a diagnostic.
  const readable = (name: string) => name.startsWith(`${PACKAGES_ROOT}/`)
  return check(
    ts,
    siteKey,
    site,
    compilerOptions(ts, pins),
    warmSites,
    [...site.keys()],
    (path) => {
      const id = fileIdOf(path)
      return id === null ? path : fileLabel(id)
    },
    readable,
  )
}

/** Cloudflare's own declarations of the Workers runtime and Pages Functions (PagesFunction, KVNamespace, …). */
const WORKERS_TYPES = `${PACKAGES_ROOT}/@cloudflare/workers-types/index.d.ts`

/**
 * The typecheck of a static site's `functions/` folder: its TypeScript against Cloudflare's Workers
 * types, as Cloudflare's documentation writes them (`PagesFunction<Env>` and the rest global, no import).
 * Strict, but a parameter left untyped is allowed (Cloudflare's JavaScript-flavoured examples); the
 * folder's JavaScript files are read for their exports' types, not checked.
 */
export function typecheckFunctions(
  ts: typeof TS,
  siteKey: string,
  files: { path: string; content: string }[],
  warmSites: number,
): TypecheckDiagnostic[] {
  const site = new Map<string, string>()
  for (const { path, content } of files) if (/\.(m?js|jsx|ts|tsx)$/.test(path)) site.set(`${SITE_ROOT}/${path}`, content)
  const options: TS.CompilerOptions = {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    jsx: ts.JsxEmit.Preserve,
    strict: true,
    noImplicitAny: false,
    allowJs: true,
    checkJs: false,
    noEmit: true,
    skipLibCheck: true,
    isolatedModules: true,
    types: [],
    typeRoots: [],
    lib: ['lib.es2022.d.ts'],
  }
  const roots = [...[...site.keys()].filter((p) => /\.tsx?$/.test(p)), WORKERS_TYPES]
  // Nothing else of the disk: an import of a server file (`../../../…`, an absolute path) finds nothing,
  // so no text of the server's reaches a deployer through a type error's message.
  const libs = dirname(ts.getDefaultLibFilePath(options))
  const readable = (name: string) => name === WORKERS_TYPES || name.startsWith(`${libs}/`)
  return check(ts, `functions:${siteKey}`, site, options, warmSites, roots, (path) => path, readable)
}

/**
 * One check of a site's files (under SITE_ROOT, in memory) with its warm builder program; shared
 * declarations are read from disk once per worker. `label` names a file as the site writes it.
 */
function check(
  ts: typeof TS,
  programKey: string,
  site: Map<string, string>,
  options: TS.CompilerOptions,
  warmSites: number,
  roots: string[],
  label: (path: string) => string,
  /** Which files of the disk the check may read (the site's own are in memory); by default any. */
  readable: (name: string) => boolean = () => true,
): TypecheckDiagnostic[] {
  const host = ts.createIncrementalCompilerHost(options)
  const disk = host.getSourceFile.bind(host)
  host.getSourceFile = (name, language, onError, create) => {
    const text = site.get(name)
    if (text !== undefined) {
      const file = ts.createSourceFile(name, text, language, true)
      ;(file as { version?: string }).version = createHash('sha1').update(text).digest('hex')
      return file
    }
    if (!readable(name)) return undefined
    let file = shared.get(name)
    if (file === undefined) {
      file = disk(name, language, onError, create)
      if (file !== undefined) shared.set(name, file)
    }
    return file
  }
  const fileExists = host.fileExists.bind(host)
  host.fileExists = (name) => site.has(name) || (readable(name) && fileExists(name))
  const readFile = host.readFile.bind(host)
  host.readFile = (name) => site.get(name) ?? (readable(name) ? readFile(name) : undefined)
  const directoryExists = host.directoryExists?.bind(host)
  host.directoryExists = (name) => name === SITE_ROOT || name.startsWith(`${SITE_ROOT}/`) || (directoryExists?.(name) ?? false)
  const previous = programs.get(programKey)
  const builder = ts.createSemanticDiagnosticsBuilderProgram(roots, options, host, previous?.builder)
  programs.delete(programKey)
  programs.set(programKey, { builder })
  while (programs.size > warmSites) programs.delete(programs.keys().next().value!)
  const diagnostics: TypecheckDiagnostic[] = []
  for (const d of [...builder.getSyntacticDiagnostics(), ...builder.getSemanticDiagnostics(), ...builder.getGlobalDiagnostics()]) {
    if (d.file === undefined || !d.file.fileName.startsWith(`${SITE_ROOT}/`) || d.file.fileName.startsWith(`${SITE_ROOT}/__`)) continue
    const { line, character } = d.file.getLineAndCharacterOfPosition(d.start ?? 0)
    diagnostics.push({
      step: 'typecheck',
      severity: 'error',
      file: label(d.file.fileName.slice(SITE_ROOT.length + 1)),
      line: line + 1,
      column: character + 1,
      message: sitePaths(ts.flattenDiagnosticMessageText(d.messageText, '\n')),
    })
  }
  return diagnostics
}
