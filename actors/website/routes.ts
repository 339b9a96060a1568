/**
 * Request paths of a static site's files. `/` and `/dir/` serve `index.html`; `/about` serves
 * `about.html` or else `about/index.html`; every file is also reachable by its exact path.
 * Returned as request path (decoded) to file path, computed once per version.
 */
export function siteRoutes(paths: Iterable<string>): Map<string, string> {
  const routes = new Map<string, string>()
  const all = [...paths].sort()
  for (const path of all) routes.set(`/${path}`, path)
  for (const path of all) {
    if (path.endsWith('.html') && !isIndex(path)) setIfAbsent(routes, `/${path.slice(0, -5)}`, path)
  }
  for (const path of all) {
    if (!isIndex(path)) continue
    const dir = path.slice(0, -'index.html'.length) // '' or 'blog/'
    setIfAbsent(routes, `/${dir}`, path)
    if (dir !== '') setIfAbsent(routes, `/${dir.slice(0, -1)}`, path)
  }
  return routes
}

/** The canonical URL path of each page, as a visitor would link to it (for deployment status). */
export function canonicalRoutes(paths: Iterable<string>): string[] {
  const out = new Set<string>()
  for (const path of paths) {
    if (isIndex(path)) out.add(`/${path.slice(0, -'index.html'.length)}`)
    else if (path.endsWith('.html')) out.add(`/${path.slice(0, -5)}`)
    else out.add(`/${path}`)
  }
  return [...out].sort()
}

function isIndex(path: string): boolean {
  return path === 'index.html' || path.endsWith('/index.html')
}

function setIfAbsent(map: Map<string, string>, key: string, value: string): void {
  if (!map.has(key)) map.set(key, value)
}
