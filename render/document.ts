/**
 * The HTML document around a rendered page: language, title through titleTemplate, description,
 * canonical URL, og:/twitter: tags with absolute URLs, favicon, and the custom_* HTML verbatim.
 */

export interface SiteMetadata {
  title?: string
  titleTemplate?: string
  description?: string
  language?: string
  favicon?: string
  openGraph?: { image?: string; type?: string; siteName?: string; [key: string]: unknown }
  twitter?: { card?: string; site?: string; image?: string; [key: string]: unknown }
}

export interface CustomHtml {
  headStart: string
  headEnd: string
  bodyStart: string
  bodyEnd: string
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }
export const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (c) => ESCAPES[c])

/** Resolves `{{ data.x.y }}` and `{{ params.name }}` in metadata strings; unknown paths become ''. */
export function resolveTemplates<T>(value: T, scope: { data: unknown; params: Record<string, string> }): T {
  if (typeof value === 'string') {
    return value.replace(/\{\{\s*(data|params)((?:\.[A-Za-z0-9_$]+)+)\s*\}\}/g, (_, root: 'data' | 'params', path: string) => {
      let current: unknown = scope[root]
      for (const key of path.slice(1).split('.'))
        current = current !== null && typeof current === 'object' ? (current as Record<string, unknown>)[key] : undefined
      return current === undefined || current === null ? '' : String(current)
    }) as T
  }
  if (Array.isArray(value)) return value.map((v) => resolveTemplates(v, scope)) as T
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, resolveTemplates(v, scope)])) as T
  }
  return value
}

function absolute(url: string, origin: string): string {
  return /^https?:\/\//.test(url) ? url : origin + (url.startsWith('/') ? url : `/${url}`)
}

/** One page's document. `site` holds the website_config defaults; `page` the page's own metadata. */
export function renderDocument(input: {
  html: string
  path: string
  origin: string
  site: SiteMetadata
  page: SiteMetadata | null
  custom: CustomHtml
  /** Link /global.css (the site has global_css). */
  stylesheet?: boolean
  /** website_config.analytics.enabled: the website id the tracker script names. */
  tracker?: string
  /** Hydration: the page's entry script and the state its render needs. */
  hydrate?: { src: string; state: unknown }
}): string {
  const meta: SiteMetadata = { ...input.site, ...(input.page ?? {}) }
  const pageTitle = input.page?.title
  const title = pageTitle !== undefined && input.site.titleTemplate ? input.site.titleTemplate.replace('%s', pageTitle) : (meta.title ?? '')
  const url = input.origin + input.path
  const tags: string[] = ['<meta charset="utf-8">', '<meta name="viewport" content="width=device-width, initial-scale=1">']
  tags.push(input.custom.headStart)
  tags.push(`<title>${escapeHtml(title)}</title>`)
  if (meta.description) tags.push(`<meta name="description" content="${escapeHtml(meta.description)}">`)
  tags.push(`<link rel="canonical" href="${escapeHtml(url)}">`)
  const og = meta.openGraph ?? {}
  tags.push(`<meta property="og:title" content="${escapeHtml(title)}">`, `<meta property="og:url" content="${escapeHtml(url)}">`)
  tags.push(`<meta property="og:type" content="${escapeHtml(String(og.type ?? 'website'))}">`)
  if (meta.description) tags.push(`<meta property="og:description" content="${escapeHtml(meta.description)}">`)
  if (og.siteName) tags.push(`<meta property="og:site_name" content="${escapeHtml(String(og.siteName))}">`)
  if (og.image) tags.push(`<meta property="og:image" content="${escapeHtml(absolute(String(og.image), input.origin))}">`)
  const twitter = meta.twitter ?? {}
  tags.push(`<meta name="twitter:card" content="${escapeHtml(String(twitter.card ?? (og.image ? 'summary_large_image' : 'summary')))}">`)
  tags.push(`<meta name="twitter:title" content="${escapeHtml(title)}">`)
  if (meta.description) tags.push(`<meta name="twitter:description" content="${escapeHtml(meta.description)}">`)
  const twitterImage = twitter.image ?? og.image
  if (twitterImage) tags.push(`<meta name="twitter:image" content="${escapeHtml(absolute(String(twitterImage), input.origin))}">`)
  if (twitter.site) tags.push(`<meta name="twitter:site" content="${escapeHtml(String(twitter.site))}">`)
  if (meta.favicon) tags.push(`<link rel="icon" href="${escapeHtml(meta.favicon)}">`)
  if (input.stylesheet === true) tags.push('<link rel="stylesheet" href="/global.css">')
  if (input.tracker !== undefined) tags.push(`<script defer src="/_platform/a.js" data-website-id="${escapeHtml(input.tracker)}"></script>`)
  tags.push(input.custom.headEnd)
  // JSON in a script element: "<" escaped so no "</script>" can end it early.
  const hydrate =
    input.hydrate === undefined
      ? ''
      : `\n<script type="application/json" id="__plinth_state">${JSON.stringify(input.hydrate.state).replace(/</g, '\\u003c')}</script>\n<script type="module" src="${escapeHtml(input.hydrate.src)}"></script>`
  return `<!doctype html>\n<html lang="${escapeHtml(meta.language ?? 'en')}">\n<head>\n${tags.filter((t) => t !== '').join('\n')}\n</head>\n<body>\n${input.custom.bodyStart}<div id="root">${input.html}</div>${input.custom.bodyEnd}${hydrate}\n</body>\n</html>\n`
}
