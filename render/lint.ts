import { builtinModules } from 'node:module'
import type * as TS from 'typescript'
import { fileIdOf, fileLabel, normalizeRoute } from '../core/typed-files.js'
import type { Diagnostic } from './bundle.js'
import { packageName, parsePinned } from './packages.js'

export type LintDiagnostic = Diagnostic & { step: 'lint'; severity: 'error'; file: string; line: number; column: number }

export interface LintResult {
  diagnostics: LintDiagnostic[]
  /** Page name to the route it declares, for pages whose route is a valid literal (read even when lint fails). */
  routes: Record<string, string>
}

const ASSET = /\.(png|jpe?g|gif|webp|avif|svg|ico|bmp|css|scss|sass|less|json|woff2?|ttf|otf|mp4|webm|mp3|wav|pdf)(\?.*)?$/i
const BUILTINS = new Set(builtinModules)

/**
 * The lint step of the gate: imports (spec: Allowed imports), page routes (syntax, one dynamic
 * segment, no duplicates, /_platform reserved) and the literal shape of website_config.
 */
export function lint(ts: typeof TS, files: { path: string; content: string }[], packages: Readonly<Record<string, string>>): LintResult {
  const diagnostics: LintDiagnostic[] = []
  const pageRoutes: Record<string, string> = {}
  const paths = new Set(files.map((f) => f.path))
  const versionsSeen = new Map<string, Map<string, { file: string; line: number; column: number }>>()
  const routes = new Map<string, string>()
  for (const { path, content } of files) {
    const id = fileIdOf(path)
    if (id === null || id.type === 'global_css' || id.type.startsWith('custom_')) continue
    const label = fileLabel(id)
    const source = ts.createSourceFile(path, content, ts.ScriptTarget.Latest, true, path.endsWith('.tsx') ? ts.ScriptKind.TSX : ts.ScriptKind.TS)
    const at = (node: TS.Node) => {
      const { line, character } = source.getLineAndCharacterOfPosition(node.getStart(source))
      return { line: line + 1, column: character + 1 }
    }
    const report = (node: TS.Node, message: string) => diagnostics.push({ step: 'lint', severity: 'error', file: label, ...at(node), message })
    const checkSpecifier = (node: TS.Node, specifier: string) => {
      if (specifier === '@platform' || specifier === '@modules' || specifier === 'react' || specifier === 'react/jsx-runtime') return
      const local = /^@(pages|components|modules)\/(.+)$/.exec(specifier)
      if (local !== null) {
        const target = `${local[1]}/${local[2]}${local[1] === 'modules' ? '.ts' : '.tsx'}`
        if (!paths.has(target)) report(node, `"${specifier}" does not exist: there is no ${local[1].slice(0, -1)} named ${local[2]}`)
        return
      }
      if (specifier.startsWith('.') || specifier.startsWith('/')) return report(node, `relative import "${specifier}": import site files as @pages/<name>, @components/<Name> or @modules/<name>`)
      if (ASSET.test(specifier)) return report(node, `"${specifier}" is an asset: assets live in the asset library; use imageUrl(...) from @platform`)
      if (specifier.startsWith('node:') || BUILTINS.has(packageName(specifier))) return report(node, `"${specifier}" is a Node.js built-in: pages render with the language built-ins only`)
      if (specifier === 'react-dom' || specifier.startsWith('react-dom/')) return report(node, `"${specifier}" is a DOM renderer package: the platform renders and hydrates pages itself`)
      if (specifier.startsWith('react/')) return report(node, `"${specifier}": import React as "react"`)
      const pinned = parsePinned(specifier)
      const name = pinned?.name ?? packageName(specifier)
      const installed = packages[name]
      if (installed === undefined || name === 'react') {
        return report(node, `package "${name}" is not allowed; allowed: ${Object.entries(packages).filter(([n]) => n !== 'react').map(([n, v]) => `${n}@${v}`).join(', ')} (see GET /api)`)
      }
      if (pinned === null) return report(node, `"${specifier}" is not pinned: import it as "${name}@${installed}${specifier.slice(name.length)}"`)
      const seen = versionsSeen.get(name) ?? new Map()
      seen.set(pinned.version, { file: label, ...at(node) })
      versionsSeen.set(name, seen)
      if (pinned.version !== installed) report(node, `"${specifier}" pins ${name} to ${pinned.version}; the required pin is ${name}@${installed}`)
    }
    const visit = (node: TS.Node): void => {
      if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier !== undefined && ts.isStringLiteral(node.moduleSpecifier)) {
        checkSpecifier(node.moduleSpecifier, node.moduleSpecifier.text)
      } else if (ts.isCallExpression(node) && (node.expression.kind === ts.SyntaxKind.ImportKeyword || (ts.isIdentifier(node.expression) && node.expression.text === 'require'))) {
        const arg = node.arguments[0]
        if (arg !== undefined && ts.isStringLiteralLike(arg)) checkSpecifier(arg, arg.text)
        else report(node, 'dynamic imports must name a module literally')
      }
      ts.forEachChild(node, visit)
    }
    visit(source)

    const definition = defaultObject(ts, source)
    if (id.type === 'page') {
      const route = definition?.properties.find((p): p is TS.PropertyAssignment => ts.isPropertyAssignment(p) && ts.isIdentifier(p.name) && p.name.text === 'route')
      if (definition === null || definition === undefined) report(source, 'a page must default-export definePage({ route, render, ... })')
      else if (route === undefined) report(definition, 'the page definition has no route')
      else if (!ts.isStringLiteralLike(route.initializer)) report(route.initializer, 'route must be a string literal')
      else {
        try {
          const normalized = normalizeRoute(route.initializer.text, 'route')
          pageRoutes[id.name!] = normalized
          const other = routes.get(normalized)
          if (other !== undefined) report(route.initializer, `route ${normalized} is also the route of ${other}`)
          else routes.set(normalized, label)
        } catch (error) {
          report(route.initializer, (error as Error).message)
        }
      }
    }
    if (id.type === 'website_config') {
      if (definition === null || definition === undefined) report(source, 'website_config must default-export a literal object (defineWebsiteConfig({ ... }))')
      else {
        const literal = (node: TS.Node): void => {
          if (ts.isSpreadAssignment(node) || ts.isSpreadElement(node)) report(node, 'website_config must be a literal object: no spreads')
          else if (ts.isComputedPropertyName(node)) report(node, 'website_config must be a literal object: no computed keys')
          ts.forEachChild(node, literal)
        }
        literal(definition)
      }
    }
  }
  for (const [name, versions] of versionsSeen) {
    if (versions.size > 1) {
      const [, where] = [...versions][1]
      diagnostics.push({ step: 'lint', severity: 'error', ...where, message: `two versions of ${name} are imported (${[...versions.keys()].join(', ')}); a site uses one version of a package` })
    }
  }
  return { diagnostics, routes: pageRoutes }
}

function defaultObject(ts: typeof TS, source: TS.SourceFile): TS.ObjectLiteralExpression | null | undefined {
  for (const statement of source.statements) {
    if (!ts.isExportAssignment(statement) || statement.isExportEquals) continue
    let e: TS.Expression = statement.expression
    while (ts.isParenthesizedExpression(e) || ts.isAsExpression(e) || ts.isSatisfiesExpression(e)) e = e.expression
    if (ts.isCallExpression(e) && e.arguments[0] !== undefined) e = e.arguments[0]
    return ts.isObjectLiteralExpression(e) ? e : null
  }
  return undefined
}
