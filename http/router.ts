import { escapeRegExp } from '../core/text.js'
import type { AnyOperation, HttpMethod } from './operation.js'

interface Route {
  template: string
  pattern: RegExp
  names: string[]
  byMethod: Map<HttpMethod, AnyOperation>
}

export type RouteMatch =
  { kind: 'found'; operation: AnyOperation; params: Record<string, string> } | { kind: 'method'; allowed: HttpMethod[] } | { kind: 'none' }

/**
 * Matches `METHOD /path` to an operation. Templates with fewer parameters are tried first, so a
 * static segment (`/v1/websites/claims`) wins over a parameter (`/v1/websites/{websiteId}`).
 */
export class Router {
  readonly #routes: Route[] = []

  constructor(operations: readonly AnyOperation[]) {
    const byTemplate = new Map<string, Route>()
    for (const operation of operations) {
      let route = byTemplate.get(operation.path)
      if (route === undefined) {
        const names: string[] = []
        const source = operation.path
          .split('/')
          .map((segment) => {
            const param = /^\{(\w+)\}$/.exec(segment)
            if (param === null) return escapeRegExp(segment)
            names.push(param[1])
            return '([^/]+)'
          })
          .join('/')
        route = { template: operation.path, pattern: new RegExp(`^${source}/?$`), names, byMethod: new Map() }
        byTemplate.set(operation.path, route)
      }
      if (route.byMethod.has(operation.method)) throw new Error(`two operations for ${operation.method} ${operation.path}`)
      route.byMethod.set(operation.method, operation)
    }
    this.#routes = [...byTemplate.values()].sort((a, b) => a.names.length - b.names.length)
  }

  match(method: string, path: string): RouteMatch {
    const allowed = new Set<HttpMethod>()
    for (const route of this.#routes) {
      const found = route.pattern.exec(path)
      if (found === null) continue
      const operation = route.byMethod.get((method === 'HEAD' ? 'GET' : method) as HttpMethod)
      if (operation === undefined) {
        for (const m of route.byMethod.keys()) allowed.add(m)
        continue
      }
      const params: Record<string, string> = {}
      try {
        route.names.forEach((name, i) => (params[name] = decodeURIComponent(found[i + 1])))
      } catch {
        return { kind: 'none' }
      }
      return { kind: 'found', operation, params }
    }
    return allowed.size > 0 ? { kind: 'method', allowed: [...allowed] } : { kind: 'none' }
  }
}
