import { fileIdOf } from '../core/typed-files.js'
import { bundleServer, pageNames, type Diagnostic, type SiteFiles } from './bundle.js'
import { renderDocument, resolveTemplates, type SiteMetadata } from './document.js'
import { PACKAGE_VERSIONS } from './packages.js'
import type { SourcePool } from './pool.js'
import type { RenderPool } from './render-pool.js'
import type { PageRender, RenderOutcome } from './render.worker.js'

/** A built site: the gate's result, and when it passed, one HTML document per static route. */
export interface BuildOutput {
  result: GateResult
  /** Output path (`index.html`, `about/index.html`, `404.html`) to HTML. */
  documents: Map<string, string>
}

/** Spec: Quality gate result. */
export interface GateResult {
  version: number
  ok: boolean
  message?: string
  diagnostics: Diagnostic[]
  renderFailures: { pageId: string; route: string | null; message: string }[]
  pages: { name: string; route: string | null; renders: boolean }[]
  timings: Record<string, number>
}

/**
 * The quality gate over one version's source: lint, bundle, render every page (and not_found) in
 * isolates with placeholder content. Steps stop at the first that fails; user faults are data in the
 * result, never exceptions.
 */
export class Gate {
  constructor(
    private readonly source: SourcePool,
    private readonly renderer: RenderPool,
  ) {}

  /** The gate's result for a version, changing nothing (code.check). */
  async check(version: number, files: SiteFiles, siteKey = 'anonymous'): Promise<GateResult> {
    return (await this.#run(version, files, undefined, siteKey)).result
  }

  /**
   * Runs the gate and, when it passes, renders the documents of every static route and 404.html.
   * Dynamic routes enumerate published CMS items, of which there are none yet, so they yield no page.
   */
  async build(version: number, files: SiteFiles, origin: string, signal?: AbortSignal, siteKey = 'anonymous'): Promise<BuildOutput> {
    const { result, rendered, targets } = await this.#run(version, files, signal, siteKey)
    const documents = new Map<string, string>()
    if (!result.ok || rendered === undefined) return { result, documents }
    const config = (rendered.config ?? {}) as { metadata?: SiteMetadata }
    const site = config.metadata ?? {}
    const text = (path: string) => files.get(path) ?? ''
    const custom = { headStart: text('custom/head_start.html'), headEnd: text('custom/head_end.html'), bodyStart: text('custom/body_start.html'), bodyEnd: text('custom/body_end.html') }
    targets.forEach((target, i) => {
      const outcome = rendered.results[i] as Extract<PageRender, { ok: true }>
      const route = target.kind === 'page' ? (rendered.routes?.[target.name] ?? null) : null
      if (target.kind === 'page' && (route === null || route.includes(':'))) return
      const path = target.kind === 'not_found' ? '/404' : route!
      const page = resolveTemplates(outcome.metadata as SiteMetadata | null, { data: outcome.data, params: {} })
      const html = renderDocument({ html: outcome.html, path: path === '/404' ? '/' : path, origin, site: resolveTemplates(site, { data: outcome.data, params: {} }), page, custom })
      documents.set(target.kind === 'not_found' ? '404.html' : path === '/' ? 'index.html' : `${path.slice(1)}/index.html`, html)
    })
    return { result, documents }
  }

  async #run(version: number, files: SiteFiles, signal: AbortSignal | undefined, siteKey: string): Promise<{ result: GateResult; rendered?: RenderOutcome; targets: { kind: 'page' | 'not_found'; name: string }[] }> {
    const timings: Record<string, number> = {}
    const started = performance.now()
    const time = async <T>(step: string, fn: () => Promise<T>): Promise<T> => {
      const t0 = performance.now()
      try {
        return await fn()
      } finally {
        timings[step] = Math.round(performance.now() - t0)
      }
    }
    const result = (fields: Partial<GateResult>): GateResult => {
      timings.total = Math.round(performance.now() - started)
      const base: GateResult = { version, ok: false, diagnostics: [], renderFailures: [], pages: [], timings, ...fields }
      base.ok = fields.ok ?? (base.diagnostics.every((d) => d.severity !== 'error') && base.renderFailures.length === 0 && base.pages.length > 0)
      return base
    }
    const names = pageNames(files)
    if (names.length === 0) {
      return { targets: [], result: result({ message: 'The site has no pages; write one with put_source_file ({type: "page", name: "home"})', diagnostics: [{ step: 'lint', severity: 'error', message: 'no pages' }] }) }
    }
    const lint = await time('lint', () => this.source.lint({ files: [...files].map(([path, content]) => ({ path, content })), packages: { ...PACKAGE_VERSIONS } }))
    if (lint.length > 0) return { targets: [], result: result({ message: `lint found ${lint.length} problem(s)`, diagnostics: lint, pages: names.map((name) => ({ name, route: null, renders: false })) }) }
    const types = await time('typecheck', () => this.source.typecheck({ siteKey, files: [...files].map(([path, content]) => ({ path, content })), packages: { ...PACKAGE_VERSIONS } }))
    if (types.length > 0) return { targets: [], result: result({ message: `typecheck found ${types.length} error(s)`, diagnostics: types, pages: names.map((name) => ({ name, route: null, renders: false })) }) }
    const bundle = await time('bundle', () => bundleServer(files, siteKey))
    if (!bundle.ok) return { targets: [], result: result({ message: 'the bundle failed', diagnostics: bundle.diagnostics, pages: names.map((name) => ({ name, route: null, renders: false })) }) }
    const hasNotFound = [...files.keys()].some((p) => fileIdOf(p)?.type === 'not_found')
    const targets = [...names.map((name) => ({ kind: 'page' as const, name })), ...(hasNotFound ? [{ kind: 'not_found' as const, name: 'not_found' }] : [])]
    const rendered = await time('render', () => this.renderer.render(bundle.code, targets, {}, signal))
    if (rendered.routes === null) {
      return { targets, result: result({ message: 'the site code failed while loading', diagnostics: [{ step: 'render', severity: 'error', message: rendered.bundleError ?? 'failed to load' }] }) }
    }
    const routes = rendered.routes
    const renderFailures: GateResult['renderFailures'] = []
    const pages: GateResult['pages'] = []
    targets.forEach((target, i) => {
      const outcome = rendered.results[i]
      const route = target.kind === 'page' ? (routes[target.name] ?? null) : null
      if (target.kind === 'page') pages.push({ name: target.name, route, renders: outcome.ok })
      if (!outcome.ok) renderFailures.push({ pageId: target.name, route, message: outcome.message })
    })
    return { targets, rendered, result: result({ ...(renderFailures.length > 0 ? { message: `${renderFailures.length} page(s) failed to render` } : {}), renderFailures, pages }) }
  }
}
