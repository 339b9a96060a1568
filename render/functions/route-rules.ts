// Which request paths of a version run its functions: `_routes.json`'s include and exclude rules, compiled once per snapshot.
import type { FunctionsManifest } from './files.js'

/** A rule as a pattern: `*` is any run of characters (slashes too); `/api/*` also matches `/api` itself. */
function pattern(rule: string): RegExp {
  const escaped = rule.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*')
  return new RegExp(`^${rule.endsWith('/*') ? `${escaped.slice(0, -3)}(?:/.*)?` : escaped}$`)
}

/**
 * The request paths a version's functions answer. An exclude rule wins over an include (Cloudflare's
 * rule); every other path is a static file, served as before with no cost but this test.
 */
export class FunctionRules {
  readonly #include: RegExp[]
  readonly #exclude: RegExp[]
  /** A rule of `/*` with no excludes: every path (one comparison). */
  readonly #all: boolean

  constructor(manifest: Pick<FunctionsManifest, 'include' | 'exclude'>) {
    this.#include = manifest.include.map(pattern)
    this.#exclude = manifest.exclude.map(pattern)
    this.#all = manifest.include.includes('/*') && manifest.exclude.length === 0
  }

  matches(path: string): boolean {
    if (this.#all) return true
    return this.#include.some((r) => r.test(path)) && !this.#exclude.some((r) => r.test(path))
  }
}
