import { createHash } from 'node:crypto'
import { Marked, Renderer, type Tokens } from 'marked'
import { escapeHtml } from '../../core/text.js'
import type { Exchange } from '../uws.js'
import { anchor } from './reference.js'

/** Markdown to HTML for the docs: headings get the anchors the pages link to. A renderer of its own (the blog's stays untouched). */
const markdown = new Marked({
  gfm: true,
  renderer: {
    heading({ tokens, depth }) {
      const text = this.parser.parseInline(tokens)
      const id = anchor(text.replace(/<[^>]+>/g, ''))
      return `<h${depth} id="${id}"><a class="anchor" href="#${id}" aria-hidden="true" tabindex="-1">#</a>${text}</h${depth}>\n`
    },
    // A code block and a table scroll sideways when wider than the page: each takes the keyboard's focus,
    // so someone without a mouse can scroll it too (axe: scrollable-region-focusable).
    code(token: Tokens.Code) {
      return Renderer.prototype.code.call(this, token).replace(/^<pre>/, '<pre tabindex="0">')
    },
    table(token: Tokens.Table) {
      return Renderer.prototype.table.call(this, token).replace(/^<table>/, '<table tabindex="0">')
    },
    // The docs carry no HTML of their own: a placeholder such as \`Bearer <token>\` written outside code is
    // text to show, never a tag (the browser would swallow it).
    html({ text }: Tokens.HTML | Tokens.Tag) {
      return escapeHtml(text)
    },
  },
})

const STYLE = `:root{color-scheme:light dark;--fg:#1f2328;--muted:#59636e;--line:#d0d7de;--code:#f6f8fa;--link:#0969da}
@media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--muted:#9198a1;--line:#3d444d;--code:#151b23;--link:#4493f8}body{background:#0d1117}}
body{font:16px/1.6 system-ui,-apple-system,"Segoe UI",sans-serif;color:var(--fg);margin:0}
header{border-bottom:1px solid var(--line);padding:.75rem 1.5rem;display:flex;gap:1.5rem;align-items:center}
header a{color:var(--fg);text-decoration:none;font-weight:600}header nav{display:flex;gap:1rem}header nav a{font-weight:400;color:var(--muted)}
header nav a[aria-current=page]{color:var(--fg);font-weight:600}
main{max-width:58rem;margin:0 auto;padding:1.5rem}a{color:var(--link)}
h1{font-size:2rem;margin-top:.5rem}h2{border-bottom:1px solid var(--line);padding-bottom:.3rem;margin-top:2.5rem}h3{margin-top:2rem}
.anchor{float:left;margin-left:-1.1rem;width:1.1rem;color:var(--muted);text-decoration:none;visibility:hidden}h1:hover .anchor,h2:hover .anchor,h3:hover .anchor{visibility:visible}
code{font:.875em ui-monospace,SFMono-Regular,Menlo,monospace;background:var(--code);padding:.1rem .3rem;border-radius:4px}
pre{background:var(--code);padding:1rem;border-radius:6px;overflow:auto;line-height:1.45}pre code{padding:0;background:none}
table{border-collapse:collapse;display:block;overflow-x:auto;margin:1rem 0}th,td{border:1px solid var(--line);padding:.35rem .6rem;text-align:left;vertical-align:top}th{background:var(--code)}
footer{color:var(--muted);font-size:.875rem;border-top:1px solid var(--line);padding:1rem 1.5rem;margin-top:3rem}`

/** A docs page, rendered once: its Markdown, its HTML and an ETag of both. */
export interface DocPage {
  title: string
  markdown: string
  html: string
  etag: string
}

const NAV = [
  ['/docs', 'Guide'],
  ['/docs/api', 'API reference'],
  ['/openapi.json', 'OpenAPI'],
  ['/llms.txt', 'llms.txt'],
  ['/llms-full.txt', 'llms-full.txt'],
] as const

/** Renders a docs page at `path` (for the navigation's current link) from Markdown. */
export function docPage(path: string, title: string, source: string): DocPage {
  const nav = NAV.map(([href, label]) => `<a href="${href}"${href === path ? ' aria-current="page"' : ''}>${label}</a>`).join('')
  const body = markdown.parse(source, { async: false }) as string
  const html = `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>${escapeHtml(title)} · Plinth</title><link rel="alternate" type="text/markdown" href="${path}"><style>${STYLE}</style></head><body><header><a href="/docs">Plinth</a><nav aria-label="Documentation">${nav}</nav></header><main>${body}</main><footer>Also as Markdown: send <code>Accept: text/markdown</code>.</footer></body></html>`
  const etag = `"${createHash('sha256').update(source).digest('base64url').slice(0, 22)}"`
  return { title, markdown: source, html, etag }
}

/**
 * Answers a docs page: HTML to a browser (Accept with text/html), Markdown to everyone else (spec:
 * "`GET /docs` (guide; returns Markdown when `Accept` lacks `text/html`)"); revalidated by ETag.
 */
export function sendDocPage(exchange: Exchange, page: DocPage, extra: Record<string, string> = {}): void {
  const wantsHtml = /\btext\/html\b/i.test(exchange.header('accept'))
  const etag = `${page.etag.slice(0, -1)}-${wantsHtml ? 'h' : 'm'}"`
  const headers = {
    'cache-control': 'public, max-age=300',
    vary: 'Accept',
    etag,
    'x-content-type-options': 'nosniff',
    'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'",
    ...extra,
  }
  if (exchange.header('if-none-match').split(/\s*,\s*/).includes(etag)) return exchange.send(304, headers)
  if (wantsHtml) exchange.send(200, { ...headers, 'content-type': 'text/html; charset=utf-8' }, page.html)
  else exchange.send(200, { ...headers, 'content-type': 'text/markdown; charset=utf-8' }, page.markdown)
}
