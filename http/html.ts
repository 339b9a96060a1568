import { randomBytes } from 'node:crypto'
import { escapeHtml } from '../core/text.js'
import type { Exchange, Headers } from './uws.js'

/** A tagged template whose interpolations are escaped unless they are `Html` already. */
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text
  }
}

export function html(strings: TemplateStringsArray, ...values: unknown[]): Html {
  let out = strings[0]
  values.forEach((value, i) => {
    const part = Array.isArray(value)
      ? value.map((v) => (v instanceof Html ? v.text : escapeHtml(String(v)))).join('')
      : value instanceof Html
        ? value.text
        : value === null || value === undefined || value === false
          ? ''
          : escapeHtml(String(value))
    out += part + strings[i + 1]
  })
  return new Html(out)
}

const STYLE = `body{font:16px/1.5 system-ui,sans-serif;max-width:34rem;margin:3rem auto;padding:0 1rem;color:#1f2328}
h1{font-size:1.5rem}label{display:block;margin:.75rem 0 .25rem;font-weight:600}
input,select{width:100%;padding:.5rem;font:inherit;box-sizing:border-box;border:1px solid #8c959f;border-radius:6px}
button{margin-top:1rem;padding:.5rem 1rem;font:inherit;border-radius:6px;border:1px solid #1f883d;background:#1f883d;color:#fff;cursor:pointer}
button.secondary{background:#f6f8fa;color:#1f2328;border-color:#8c959f}.error{color:#cf222e;font-weight:600}.notice{color:#1a7f37;font-weight:600}.muted{color:#59636e}
ul{padding-left:1.2rem}li{margin:.4rem 0}form.inline{display:inline}`

/**
 * Sends a dashboard page: no caching, no framing (the consent page must not be clickjacked), scripts
 * only with this response's nonce. Pages are plain forms that work without JavaScript; a script only
 * copies a secret from the URL fragment into a form field, and keeps a reload of a refused form from
 * posting it again (`reloadAs`).
 */
export function sendPage(
  exchange: Exchange,
  status: number,
  title: string,
  body: Html,
  headers: Headers = {},
  script?: string,
  connectSrc?: string,
  /**
   * For a form that failed: the address (path and query) the page's history entry is replaced with,
   * so a reload asks for that page instead of posting the form a second time.
   */
  reloadAs?: string,
): void {
  const nonce = randomBytes(12).toString('base64')
  const scripts = (reloadAs === undefined ? '' : `history.replaceState(null,'',${JSON.stringify(reloadAs)});`) + (script ?? '')
  const page = html`<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><meta name="referrer" content="same-origin"><title>${title} · Plinth</title><style>${new Html(STYLE)}</style></head><body><main>${body}</main>${scripts === '' ? '' : new Html(`<script nonce="${nonce}">${scripts}</script>`)}</body></html>`
  exchange.send(
    status,
    {
      'content-type': 'text/html; charset=utf-8',
      'cache-control': 'no-store',
      'x-frame-options': 'DENY',
      // same-origin, not no-referrer: under no-referrer a browser posts the dashboard's own forms with
      // `Origin: null`, and the Origin check refuses them. Other sites still get no referrer.
      'referrer-policy': 'same-origin',
      'content-security-policy': `default-src 'none'; style-src 'unsafe-inline'; script-src 'nonce-${nonce}';${connectSrc === undefined ? '' : ` connect-src ${connectSrc};`} frame-ancestors 'none'; base-uri 'none'`,
      ...headers,
    },
    page.text,
  )
}

/** A 303 to `location`. */
export function redirect(exchange: Exchange, location: string, headers: Headers = {}): void {
  exchange.send(303, { location, 'cache-control': 'no-store', ...headers })
}

/** Copies `#name=value` of the URL fragment into the form field `name` (secrets never travel in a query). */
export function fragmentScript(name: string): string {
  return `(()=>{const v=new URLSearchParams(location.hash.slice(1)).get(${JSON.stringify(name)});if(v){document.querySelectorAll('input[name=${name}]').forEach(i=>i.value=v);history.replaceState(null,'',location.pathname)}})()`
}
