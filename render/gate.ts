import { fileIdOf } from '../core/typed-files.js'
import { bundleServer, pageNames, type Diagnostic, type SiteFiles } from './bundle.js'
import { PACKAGE_VERSIONS } from './packages.js'
import type { SourcePool } from './pool.js'
import type { RenderPool } from './render-pool.js'

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

  async check(version: number, files: SiteFiles): Promise<GateResult> {
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
      return result({ message: 'The site has no pages; write one with put_source_file ({type: "page", name: "home"})', diagnostics: [{ step: 'lint', severity: 'error', message: 'no pages' }] })
    }
    const lint = await time('lint', () => this.source.lint({ files: [...files].map(([path, content]) => ({ path, content })), packages: { ...PACKAGE_VERSIONS } }))
    if (lint.length > 0) return result({ message: `lint found ${lint.length} problem(s)`, diagnostics: lint, pages: names.map((name) => ({ name, route: null, renders: false })) })
    const bundle = await time('bundle', () => bundleServer(files))
    if (!bundle.ok) return result({ message: 'the bundle failed', diagnostics: bundle.diagnostics, pages: names.map((name) => ({ name, route: null, renders: false })) })
    const hasNotFound = [...files.keys()].some((p) => fileIdOf(p)?.type === 'not_found')
    const targets = [...names.map((name) => ({ kind: 'page' as const, name })), ...(hasNotFound ? [{ kind: 'not_found' as const, name: 'not_found' }] : [])]
    const rendered = await time('render', () => this.renderer.render(bundle.code, targets))
    if (rendered.routes === null) {
      return result({ message: 'the site code failed while loading', diagnostics: [{ step: 'render', severity: 'error', message: rendered.bundleError ?? 'failed to load' }] })
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
    return result({ ...(renderFailures.length > 0 ? { message: `${renderFailures.length} page(s) failed to render` } : {}), renderFailures, pages })
  }
}
