/**
 * How a request path names a file: the peers' "pretty URLs". A request path resolves to a file,
 * or to the canonical path of that file (a 308 redirect, the query kept), so one page has one URL
 * and relative links inside it resolve as its author meant.
 *
 * - A static site (Cloudflare Pages' and Netlify's defaults): `about.html` answers at `/about`;
 *   `/about.html` and `/about/` move there. `blog/index.html` answers at `/blog/` (a folder: its
 *   relative links resolve inside it); `/blog` and `/blog/index.html` move there; `/index.html`
 *   moves to `/`. Every other file answers at its exact path only.
 * - A framework site (its pages are declared as `/about`, built to `about/index.html`): the page
 *   answers at `/about`; `/about/` and `/about/index.html` move there.
 *
 * An exact file always wins: a file named `about` answers `/about`, and `/about.html` then answers
 * with about.html itself. A forced `_redirects` rule applies before any of this.
 */
export type UrlStyle = 'folders' | 'pages'

/** A request path's target: a file path, or the canonical request path it moves to. */
export type SitePath = string | { readonly movedTo: string; readonly file: string }

/** Request path (decoded) to what it answers, computed once per version. */
export function siteRoutes(paths: Iterable<string>, style: UrlStyle = 'folders'): Map<string, SitePath> {
  const routes = new Map<string, SitePath>()
  const all = [...paths].sort()
  const moved = (from: string, to: string) => {
    const file = routes.get(to)
    if (typeof file === 'string' && !routes.has(from)) routes.set(from, { movedTo: to, file })
  }
  for (const path of all) routes.set(`/${path}`, path)
  for (const path of all) if (path.endsWith('.html') && !isIndex(path)) setIfAbsent(routes, `/${path.slice(0, -5)}`, path)
  for (const path of all) {
    if (!isIndex(path)) continue
    const dir = path.slice(0, -'index.html'.length) // '' or 'blog/'
    if (dir === '' || style === 'folders') setIfAbsent(routes, `/${dir}`, path)
    else setIfAbsent(routes, `/${dir.slice(0, -1)}`, path)
  }
  // The other spellings of each page move to the one it answers at (only where no file answers them).
  for (const path of all) {
    if (!path.endsWith('.html')) continue
    if (isIndex(path)) {
      const dir = path.slice(0, -'index.html'.length)
      const canonical = dir === '' || style === 'folders' ? `/${dir}` : `/${dir.slice(0, -1)}`
      if (routes.get(canonical) !== path) continue
      routes.delete(`/${path}`)
      moved(`/${path}`, canonical)
      if (dir !== '') moved(style === 'folders' ? `/${dir.slice(0, -1)}` : `/${dir}`, canonical)
    } else {
      const canonical = `/${path.slice(0, -5)}`
      if (routes.get(canonical) !== path) continue
      routes.delete(`/${path}`)
      moved(`/${path}`, canonical)
      moved(`${canonical}/`, canonical)
    }
  }
  return routes
}

/** The canonical URL path of each file, as a visitor would link to it (for deployment status). */
export function canonicalRoutes(paths: Iterable<string>, style: UrlStyle = 'folders'): string[] {
  const byFile = new Map<string, string>()
  for (const [path, target] of siteRoutes(paths, style)) {
    if (typeof target !== 'string') continue
    const held = byFile.get(target)
    if (held === undefined || held === `/${target}`) byFile.set(target, path) // a page path before the exact one
  }
  return [...byFile.values()].sort()
}

function isIndex(path: string): boolean {
  return path === 'index.html' || path.endsWith('/index.html')
}

function setIfAbsent(map: Map<string, SitePath>, key: string, value: string): void {
  if (!map.has(key)) map.set(key, value)
}
