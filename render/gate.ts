import { gateStepOverBudget, observeGateStep } from '../core/metrics.js'
import { WARM_SITES_DEFAULT } from '../core/limits.js'
import type { GateResult } from '../core/schemas/code.js'
import type { SiteRouting } from '../core/schemas/records.js'
import { fileIdOf, fileLabel } from '../core/typed-files.js'
import { Bundlers, bundleServer, pageNames, type Diagnostic, type SiteFiles } from './bundle.js'
import { bundleClient } from './client.js'
import { renderDocument, resolveTemplates, type SiteMetadata } from './document.js'
import { PACKAGE_VERSIONS } from './packages.js'
import { routingOf } from './site-routing.js'
import { functionsStep, splitFunctions, type BuiltDocuments } from './gate-functions.js'
import { BudgetExceeded, type ToolPool } from './tool-pool.js'
import type { RenderPool } from './render-pool.js'
import type { PageRender, RenderOutcome } from './render.worker.js'

export type { GateResult } from '../core/schemas/code.js'
export type Routing = SiteRouting

/** A built site: the gate's result, and when it passed, one HTML document per static route. */
export interface BuildOutput {
  result: GateResult
  /** Output path (`index.html`, `about/index.html`, `404.html`, `global.css`) to content. */
  documents: Map<string, { content: string; contentType: string }>
  routing: Routing
}

/** The CMS content a site's pages read: the items as JSON (`cms` of @platform in the isolate) and the declarations of `cms` generated from its schema ('' : no schema). */
export interface SiteContent {
  data: string
  types: string
}
export const NO_CONTENT: SiteContent = { data: '{}', types: '' }

/**
 * The quality gate over one version's source: lint, bundle, render every page (and not_found) in
 * isolates with placeholder content. Steps stop at the first that fails; user faults are data in the
 * result, never exceptions.
 */
export class Gate {
  /** The gate's warm esbuild contexts, one per site (server and client bundles). */
  readonly #bundlers: Bundlers

  /** `warmSites`: how many sites keep warm esbuild contexts (the tool pool bounds typecheck programs alike). */
  constructor(
    private readonly source: ToolPool,
    private readonly renderer: RenderPool,
    private readonly log?: { error(message: string, fields?: Record<string, unknown>): void },
    warmSites = WARM_SITES_DEFAULT,
  ) {
    this.#bundlers = new Bundlers(warmSites)
  }

  /**
   * A step that did not finish is the step's diagnostic, never an exception: a budget it ran past, a
   * compiler that ran out of stack on deeply nested code, or (logged) a fault of the platform's own.
   */
  #stepFailure(step: string, error: unknown): Diagnostic[] {
    const message = error instanceof Error ? error.message : String(error)
    if (error instanceof BudgetExceeded) {
      gateStepOverBudget(step)
      return [
        { step, severity: 'error', message: `${message}: simplify the code (deeply recursive types, very large or deeply nested files)` },
      ]
    }
    if (/Maximum call stack size exceeded/.test(message)) {
      return [
        {
          step,
          severity: 'error',
          message: `the code is too deeply nested for the ${step} step (it ran out of stack): flatten the nesting, e.g. split a deeply nested expression or type into named parts`,
        },
      ]
    }
    this.log?.error(`the ${step} step failed`, { error: (error as Error)?.stack ?? message })
    return [
      {
        step,
        severity: 'error',
        message: `the ${step} step failed unexpectedly (${message}); this is logged on the server. Try the check again`,
      },
    ]
  }

  /**
   * The typecheck of a static site's functions/ folder (path to text) against Cloudflare's Workers
   * types: its diagnostics, each with the file, line and column (a step that did not finish is one).
   */
  async typecheckFunctions(siteKey: string, files: ReadonlyMap<string, string>): Promise<Diagnostic[]> {
    return this.source
      .typecheck({ siteKey, files: [...files].map(([path, content]) => ({ path, content })), packages: {}, functions: true })
      .catch((error: unknown) => this.#stepFailure('typecheck', error))
  }

  /** Disposes the warm bundlers; checks and builds after this fail their bundle step (shutdown). */
  close(): Promise<void> {
    return this.#bundlers.close()
  }

  /** The gate's result for a version, changing nothing (code.check). */
  /** `siteKey` names the site whose warm typecheck program and bundler contexts are reused. */
  async check(version: number, files: SiteFiles, siteKey: string, cms: SiteContent = NO_CONTENT): Promise<GateResult> {
    return (await this.#run(version, files, undefined, siteKey, cms)).result
  }

  /**
   * Runs the gate and, when it passes, renders the documents of every static route and 404.html.
   * A dynamic route renders once per published CMS item of the collection its param looks up
   * (`cms.posts.bySlug(params.slug)` enumerates every published post's slug).
   */
  async build(
    version: number,
    files: SiteFiles,
    origin: string,
    signal: AbortSignal | undefined,
    siteKey: string,
    cms: SiteContent = NO_CONTENT,
  ): Promise<BuildOutput> {
    // The client bundle does not depend on the other steps: start it now, in parallel with them.
    const clientBuild = bundleClient(files, pageNames(files), this.#bundlers, siteKey)
    clientBuild.catch(() => undefined)
    const run = await this.#run(version, files, signal, siteKey, cms)
    const { result, rendered, targets } = run
    const documents = new Map<string, { content: string; contentType: string }>()
    const empty: Routing = { redirects: [], headers: {} }
    if (!result.ok || rendered === undefined) return { result, documents, routing: empty }
    const checked = routingOf(rendered.config)
    if (checked.diagnostics.length > 0) {
      result.diagnostics.push(...checked.diagnostics)
      result.ok = false
      result.message = 'website_config has invalid redirects or headers'
      return { result, documents, routing: empty }
    }
    const config = (rendered.config ?? {}) as { metadata?: SiteMetadata }
    const site = config.metadata ?? {}
    const text = (path: string) => files.get(path) ?? ''
    if (run.css !== null) documents.set('global.css', { content: run.css, contentType: 'text/css; charset=utf-8' })
    for (const [path, document] of run.functions ?? []) documents.set(path, document)
    const client = await clientBuild
    if (!client.ok) {
      result.diagnostics.push(...client.diagnostics)
      result.ok = false
      result.message = 'the client bundle failed'
      return { result, documents: new Map(), routing: empty }
    }
    for (const [path, code] of client.bundle.files) documents.set(path, { content: code, contentType: 'text/javascript; charset=utf-8' })
    const custom = {
      headStart: text('custom/head_start.html'),
      headEnd: text('custom/head_end.html'),
      bodyStart: text('custom/body_start.html'),
      bodyEnd: text('custom/body_end.html'),
    }
    /** One page's document at `path`, with its params (metadata templates and hydration state see them). */
    const write = (name: string | null, outcome: Extract<PageRender, { ok: true }>, path: string, params: Record<string, string>) => {
      const page = resolveTemplates(outcome.metadata as SiteMetadata | null, { data: outcome.data, params })
      const src = name === null ? undefined : client.bundle.entries.get(name)
      const html = renderDocument({
        html: outcome.html,
        path: path === '/404' ? '/' : path,
        origin,
        site: resolveTemplates(site, { data: outcome.data, params }),
        page,
        custom,
        stylesheet: run.css !== null,
        tracker: checked.routing.analytics === true ? siteKey : undefined,
        ...(src === undefined ? {} : { hydrate: { src, state: { data: outcome.data, params } } }),
      })
      documents.set(path === '/404' ? '404.html' : path === '/' ? 'index.html' : `${path.slice(1)}/index.html`, {
        content: html,
        contentType: 'text/html; charset=utf-8',
      })
    }
    const dynamic: { kind: 'page'; name: string; params: Record<string, string>; path: string }[] = []
    const content = JSON.parse(cms.data) as Record<string, Record<string, unknown>[]>
    targets.forEach((target, i) => {
      const outcome = rendered.results[i] as Extract<PageRender, { ok: true }>
      const route = target.kind === 'page' ? (rendered.routes?.[target.name] ?? null) : null
      if (target.kind === 'not_found') return write(null, outcome, '/404', {})
      if (route === null) return
      if (!route.includes(':')) return write(target.name, outcome, route, {})
      // A dynamic route: one page per published item of the collection its param looked up.
      for (const binding of outcome.bindings ?? []) {
        const values = new Set<string>()
        for (const item of content[binding.collection] ?? []) {
          const value = item[binding.by]
          if (typeof value === 'string' && value !== '' && !value.includes('/')) values.add(value)
        }
        for (const value of values) {
          const params = { [binding.param]: value }
          dynamic.push({ kind: 'page', name: target.name, params, path: route.replace(`:${binding.param}`, encodeURIComponent(value)) })
        }
      }
    })
    if (dynamic.length > 0 && run.bundle !== undefined) {
      const again = await this.renderer.render(
        run.bundle,
        dynamic.map(({ kind, name, params }) => ({ kind, name, params })),
        { cms: cms.data },
        signal,
        siteKey,
      )
      dynamic.forEach((page, i) => {
        const outcome = again.results[i]
        if (outcome?.ok === true) write(page.name, outcome, page.path, page.params)
        else {
          // A page of one item that fails fails the build, as any page does: the live site keeps its last build.
          result.renderFailures.push({
            pageId: page.name,
            route: page.path,
            message: outcome === undefined ? 'not rendered' : outcome.message,
          })
          result.ok = false
          result.message = `${result.renderFailures.length} page(s) failed to render`
        }
      })
    }
    return { result, documents, routing: checked.routing }
  }

  async #run(
    version: number,
    all: SiteFiles,
    signal: AbortSignal | undefined,
    siteKey: string,
    /** The CMS content page code reads (published items at build, placeholders at check) and its types. */
    cms: SiteContent,
  ): Promise<{
    result: GateResult
    rendered?: RenderOutcome
    bundle?: { code: string; map: string | null }
    css: string | null
    targets: { kind: 'page' | 'not_found'; name: string }[]
    /** The compiled functions' files, when the site has functions and every step passed so far. */
    functions?: BuiltDocuments
  }> {
    const timings: Record<string, number> = {}
    const started = performance.now()
    const time = async <T>(step: string, fn: () => Promise<T>): Promise<T> => {
      const t0 = performance.now()
      try {
        return await fn()
      } finally {
        timings[step] = Math.round(performance.now() - t0)
        observeGateStep(step, (performance.now() - t0) / 1000)
      }
    }
    const result = (fields: Partial<GateResult>): GateResult => {
      timings.total = Math.round(performance.now() - started)
      const base: GateResult = { version, ok: false, diagnostics: [], renderFailures: [], pages: [], timings, ...fields }
      base.ok =
        fields.ok ?? (base.diagnostics.every((d) => d.severity !== 'error') && base.renderFailures.length === 0 && base.pages.length > 0)
      return base
    }
    const { pages: files, functions } = splitFunctions(all)
    const names = pageNames(files)
    if (names.length === 0) {
      return {
        css: null,
        targets: [],
        result: result({
          message: 'The site has no pages; write one with put_source_file ({type: "page", name: "home"})',
          diagnostics: [{ step: 'lint', severity: 'error', message: 'no pages' }],
        }),
      }
    }
    const sources = [...files].map(([path, content]) => ({ path, content }))
    const lint = await time('lint', () =>
      this.source
        .lint(siteKey, { files: sources, packages: { ...PACKAGE_VERSIONS } })
        .catch((error: unknown) => ({ diagnostics: this.#stepFailure('lint', error), routes: {} as Record<string, string> })),
    )
    // Before render, the routes are what the pages declare (lint reads them even when it fails), and
    // whether a page renders is not known: null, not false.
    const unrendered = names.map((name) => ({ name, route: lint.routes[name] ?? null, renders: null }))
    if (lint.diagnostics.length > 0)
      return {
        css: null,
        targets: [],
        result: result({ message: `lint found ${lint.diagnostics.length} problem(s)`, diagnostics: lint.diagnostics, pages: unrendered }),
      }
    const types = await time('typecheck', () =>
      this.source
        .typecheck({ siteKey, files: sources, packages: { ...PACKAGE_VERSIONS }, cmsTypes: cms.types })
        .catch((error: unknown) => this.#stepFailure('typecheck', error)),
    )
    if (types.length > 0)
      return {
        css: null,
        targets: [],
        result: result({ message: `typecheck found ${types.length} error(s)`, diagnostics: types, pages: unrendered }),
      }
    const compiled =
      functions.size === 0
        ? undefined
        : await time('functions', () => functionsStep(functions, (sources) => this.typecheckFunctions(siteKey, sources)))
    if (compiled !== undefined && compiled.diagnostics.length > 0)
      return {
        css: null,
        targets: [],
        result: result({
          message: `the functions found ${compiled.diagnostics.length} problem(s)`,
          diagnostics: compiled.diagnostics,
          pages: unrendered,
        }),
      }
    const bundle = await time('bundle', () =>
      bundleServer(files, { bundlers: this.#bundlers, siteKey }).catch((error: unknown) => ({
        ok: false as const,
        diagnostics: this.#stepFailure('bundle', error),
      })),
    )
    if (!bundle.ok)
      return {
        css: null,
        targets: [],
        result: result({ message: 'the bundle failed', diagnostics: bundle.diagnostics, pages: unrendered }),
      }
    const globalCss = files.get('global.css')
    let css: string | null = null
    if (globalCss !== undefined) {
      const scripts = [...files].filter(([path]) => /\.tsx?$/.test(path)).map(([, text]) => text)
      const built = await time('css', () =>
        this.source
          .css(siteKey, { globalCss, sources: scripts })
          .catch((error: unknown) => ({ css: '', diagnostics: this.#stepFailure('css', error) })),
      )
      if (built.diagnostics.length > 0)
        return {
          css: null,
          targets: [],
          result: result({ message: 'global_css failed', diagnostics: built.diagnostics, pages: unrendered }),
        }
      css = built.css
    }
    const hasNotFound = [...files.keys()].some((p) => fileIdOf(p)?.type === 'not_found')
    const targets = [
      ...names.map((name) => ({ kind: 'page' as const, name })),
      ...(hasNotFound ? [{ kind: 'not_found' as const, name: 'not_found' }] : []),
    ]
    const rendered = await time('render', () => this.renderer.render(bundle, targets, { cms: cms.data }, signal, siteKey))
    if (rendered.routes === null) {
      return {
        css,
        targets,
        result: result({
          message: 'the site code failed while loading',
          diagnostics: [
            {
              step: 'render',
              severity: 'error',
              ...(rendered.bundleErrorLocation ?? {}),
              message: rendered.bundleError ?? 'failed to load',
            },
          ],
        }),
      }
    }
    const routes = rendered.routes
    const renderFailures: GateResult['renderFailures'] = []
    // Each failure is a diagnostic too, at the line of the site's file it came from when the stack names one.
    const failed: GateResult['diagnostics'] = []
    const pages: GateResult['pages'] = []
    targets.forEach((target, i) => {
      const outcome = rendered.results[i]
      const route = target.kind === 'page' ? (routes[target.name] ?? null) : null
      if (target.kind === 'page') pages.push({ name: target.name, route, renders: outcome.ok })
      if (!outcome.ok) {
        const { location } = outcome
        const where = location === null ? '' : ` (at ${location.file}:${location.line}:${location.column})`
        renderFailures.push({ pageId: target.name, route, message: outcome.message + where })
        const label = fileLabel(target.kind === 'page' ? { type: 'page', name: target.name } : { type: 'not_found' })
        failed.push({
          step: 'render',
          severity: 'error',
          ...(location ?? { file: label }),
          message: `${target.kind === 'page' ? `page ${target.name}` : 'not_found'} failed to render: ${outcome.message}`,
        })
      }
    })
    // A dynamic route renders here once with sample parameters, but nothing yet lists its values, so
    // a build serves no page for it: said plainly, not left for a visitor's 404 to tell.
    // A dynamic route gets one page per published CMS item its param looks up; one that looks
    // nothing up by its param gets none, which is said.
    const bound = new Set(
      targets.flatMap((target, i) => {
        const outcome = rendered.results[i]
        return outcome?.ok === true && (outcome.bindings ?? []).length > 0 ? [target.name] : []
      }),
    )
    const warnings: GateResult['diagnostics'] = pages
      .filter((p) => p.route !== null && p.route.includes(':') && !bound.has(p.name))
      .map((p) => ({
        step: 'render',
        severity: 'warning',
        file: fileLabel({ type: 'page', name: p.name }),
        message: `route ${p.route} is dynamic, but its queries look no CMS item up by its parameter (cms.<collection>.bySlug(params.x), byId, or a list filter eq), so no pages are generated for it and its URLs answer 404. Look an item up by the parameter, or give each page a static route (e.g. ${p.route!.replace(/:[A-Za-z_]\w*/g, 'first-post')})`,
      }))
    return {
      css,
      targets,
      rendered,
      bundle,
      functions: compiled?.documents,
      result: result({
        ...(renderFailures.length > 0 ? { message: `${renderFailures.length} page(s) failed to render` } : {}),
        renderFailures,
        pages,
        diagnostics: [...failed, ...warnings],
      }),
    }
  }
}
