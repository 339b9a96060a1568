import { builtinModules } from 'node:module'
import type * as TS from 'typescript'
import { fileIdOf, fileLabel, normalizeRoute, type FileId } from '../core/typed-files.js'
import type { Diagnostic } from './bundle.js'
import { packageName, parsePinned } from './packages.js'

export type LintDiagnostic = Diagnostic & { step: 'lint'; severity: 'error'; file: string }

export interface LintResult {
  diagnostics: LintDiagnostic[]
  /** Page name to the route it declares, for pages whose route is a valid literal (read even when lint fails). */
  routes: Record<string, string>
}

const ASSET = /\.(png|jpe?g|gif|webp|avif|svg|ico|bmp|css|scss|sass|less|json|woff2?|ttf|otf|mp4|webm|mp3|wav|pdf)(\?.*)?$/i
const BUILTINS = new Set(builtinModules)
/**
 * Nesting past these depths is refused before the compiler walks it: its parser and checker recurse,
 * so 3,000 nested brackets or a 60,000-term sum ran them out of stack (or for minutes), depending on
 * how warm the worker was. Real code nests a few dozen levels.
 */
export const MAX_BRACKET_DEPTH = 256
export const MAX_SYNTAX_DEPTH = 500
const TOO_DEEP = 'flatten the nesting, e.g. split a deeply nested expression into named parts'

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
    try {
      lintFile(ts, path, content, id, label, { diagnostics, pageRoutes, paths, versionsSeen, routes, packages })
    } catch (error) {
      // The compiler's parser and tree walks recurse: deeply nested code runs them out of stack.
      if (!/Maximum call stack size exceeded/.test((error as Error)?.message ?? '')) throw error
      diagnostics.push({
        step: 'lint',
        severity: 'error',
        file: label,
        message: `the code is too deeply nested to check (the parser ran out of stack); ${TOO_DEEP}`,
      })
    }
  }
  for (const [name, versions] of versionsSeen) {
    if (versions.size > 1) {
      const [, where] = [...versions][1]
      diagnostics.push({
        step: 'lint',
        severity: 'error',
        ...where,
        message: `two versions of ${name} are imported (${[...versions.keys()].join(', ')}); a site uses one version of a package`,
      })
    }
  }
  return { diagnostics, routes: pageRoutes }
}

interface LintState {
  diagnostics: LintDiagnostic[]
  pageRoutes: Record<string, string>
  paths: Set<string>
  versionsSeen: Map<string, Map<string, { file: string; line: number; column: number }>>
  routes: Map<string, string>
  packages: Readonly<Record<string, string>>
}

/** The deepest bracket nesting of a text and where it is (strings and comments count too: a bound, not a parse). */
function bracketDepth(text: string): { depth: number; index: number } {
  let depth = 0
  let deepest = { depth: 0, index: 0 }
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === 40 || c === 91 || c === 123) {
      depth++
      if (depth > deepest.depth) deepest = { depth, index: i }
    } else if ((c === 41 || c === 93 || c === 125) && depth > 0) depth--
  }
  return deepest
}

/** The deepest node of a syntax tree, found without recursion. */
function syntaxDepth(ts: typeof TS, source: TS.SourceFile): { depth: number; node: TS.Node } {
  let deepest = { depth: 0, node: source as TS.Node }
  const stack: [TS.Node, number][] = [[source, 0]]
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!
    if (depth > deepest.depth) deepest = { depth, node }
    ts.forEachChild(node, (child) => {
      stack.push([child, depth + 1])
    })
  }
  return deepest
}

/** Lints one file into the shared state. */
function lintFile(ts: typeof TS, path: string, content: string, id: FileId, label: string, state: LintState): void {
  const { diagnostics, pageRoutes, paths, versionsSeen, routes, packages } = state
  const lineAndColumn = (offset: number) => {
    const before = content.slice(0, offset)
    return { line: before.split('\n').length, column: offset - before.lastIndexOf('\n') }
  }
  const brackets = bracketDepth(content)
  if (brackets.depth > MAX_BRACKET_DEPTH) {
    diagnostics.push({
      step: 'lint',
      severity: 'error',
      file: label,
      ...lineAndColumn(brackets.index),
      message: `the code is too deeply nested: ${brackets.depth} levels of brackets (at most ${MAX_BRACKET_DEPTH}); ${TOO_DEEP}`,
    })
    return
  }
  const source = ts.createSourceFile(
    path,
    content,
    ts.ScriptTarget.Latest,
    true,
    path.endsWith('.tsx') ? ts.ScriptKind.TSX : ts.ScriptKind.TS,
  )
  const at = (node: TS.Node) => {
    const { line, character } = source.getLineAndCharacterOfPosition(node.getStart(source))
    return { line: line + 1, column: character + 1 }
  }
  const tree = syntaxDepth(ts, source)
  if (tree.depth > MAX_SYNTAX_DEPTH) {
    diagnostics.push({
      step: 'lint',
      severity: 'error',
      file: label,
      ...at(tree.node),
      message: `the code is too deeply nested: its syntax tree is ${tree.depth} levels deep (at most ${MAX_SYNTAX_DEPTH}), e.g. a very long chain of operators; ${TOO_DEEP}`,
    })
    return
  }
  const report = (node: TS.Node, message: string) =>
    diagnostics.push({ step: 'lint', severity: 'error', file: label, ...at(node), message })
  const checkSpecifier = (node: TS.Node, specifier: string) => {
    if (specifier === '@platform' || specifier === '@modules' || specifier === 'react' || specifier === 'react/jsx-runtime') return
    const local = /^@(pages|components|modules)\/(.+)$/.exec(specifier)
    if (local !== null) {
      const target = `${local[1]}/${local[2]}${local[1] === 'modules' ? '.ts' : '.tsx'}`
      if (!paths.has(target)) report(node, `"${specifier}" does not exist: there is no ${local[1].slice(0, -1)} named ${local[2]}`)
      return
    }
    if (specifier.startsWith('.') || specifier.startsWith('/'))
      return report(node, `relative import "${specifier}": import site files as @pages/<name>, @components/<Name> or @modules/<name>`)
    if (ASSET.test(specifier))
      return report(node, `"${specifier}" is an asset: assets live in the asset library; use imageUrl(...) from @platform`)
    if (specifier.startsWith('node:') || BUILTINS.has(packageName(specifier)))
      return report(node, `"${specifier}" is a Node.js built-in: pages render with the language built-ins only`)
    if (specifier === 'react-dom' || specifier.startsWith('react-dom/'))
      return report(node, `"${specifier}" is a DOM renderer package: the platform renders and hydrates pages itself`)
    if (specifier.startsWith('react/')) return report(node, `"${specifier}": import React as "react"`)
    const pinned = parsePinned(specifier)
    const name = pinned?.name ?? packageName(specifier)
    const installed = packages[name]
    if (installed === undefined || name === 'react') {
      return report(
        node,
        `package "${name}" is not allowed; allowed: ${Object.entries(packages)
          .filter(([n]) => n !== 'react')
          .map(([n, v]) => `${n}@${v}`)
          .join(', ')} (see GET /api)`,
      )
    }
    if (pinned === null)
      return report(node, `"${specifier}" is not pinned: import it as "${name}@${installed}${specifier.slice(name.length)}"`)
    const seen = versionsSeen.get(name) ?? new Map()
    seen.set(pinned.version, { file: label, ...at(node) })
    versionsSeen.set(name, seen)
    if (pinned.version !== installed)
      report(node, `"${specifier}" pins ${name} to ${pinned.version}; the required pin is ${name}@${installed}`)
  }
  const visit = (node: TS.Node): void => {
    if (
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
      node.moduleSpecifier !== undefined &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      checkSpecifier(node.moduleSpecifier, node.moduleSpecifier.text)
    } else if (
      ts.isCallExpression(node) &&
      (node.expression.kind === ts.SyntaxKind.ImportKeyword || (ts.isIdentifier(node.expression) && node.expression.text === 'require'))
    ) {
      const arg = node.arguments[0]
      if (arg !== undefined && ts.isStringLiteralLike(arg)) checkSpecifier(arg, arg.text)
      else report(node, 'dynamic imports must name a module literally')
    }
    ts.forEachChild(node, visit)
  }
  visit(source)

  const definition = defaultObject(ts, source)
  if (id.type === 'page') {
    const route = definition?.properties.find(
      (p): p is TS.PropertyAssignment => ts.isPropertyAssignment(p) && ts.isIdentifier(p.name) && p.name.text === 'route',
    )
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
    if (definition === null || definition === undefined)
      report(source, 'website_config must default-export a literal object (defineWebsiteConfig({ ... }))')
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
