// The shared analytics dashboard: a website's read-only analytics behind its unguessable link.
import { overview } from '../../actors/analytics/overview.js'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { Html, html, sendPage } from '../html.js'
import type { Exchange } from '../uws.js'
import { sendFailure, type PageDeps } from './page.js'

/** uPlot (a small, well-kept chart library), inlined into the shared analytics page under its nonce; read on the first such page, not at start. */
let uplot: { js: string; css: string } | undefined
function uplotFiles(): { js: string; css: string } {
  if (uplot === undefined) {
    const dir = createRequire(import.meta.url)
      .resolve('uplot/dist/uPlot.iife.min.js')
      .replace(/uPlot\.iife\.min\.js$/, '')
    uplot = { js: readFileSync(`${dir}uPlot.iife.min.js`, 'utf8'), css: readFileSync(`${dir}uPlot.min.css`, 'utf8') }
  }
  return uplot
}

/**
 * A website's read-only analytics dashboard behind its unguessable link (no sign-in): the last 30
 * days of page views drawn with uPlot, and the top pages, referrers, countries and devices. A wrong or
 * revoked link is the same 404 as an unknown page.
 */
export function sharedAnalytics(deps: PageDeps, exchange: Exchange, websiteId: string, secret: string): void {
  const website = deps.registry.website(websiteId)
  if (website === undefined || !deps.registry.analyticsShares.matches(websiteId, secret)) {
    return sendPage(exchange, 404, 'Not found', html`<h1>Not found</h1><p>This dashboard link is not valid (it may have been revoked).</p>`)
  }
  exchange.detach()
  Promise.all([deps.registry.beacon.flush(), deps.registry.tracker.flush()])
    .then(() => {
      const now = deps.registry.clock.now()
      const from = now + 1 - 30 * 24 * 60 * 60 * 1000
      // Page views as the edge beacon counted them; the site's tracker adds visitors, bounces, browsers and events.
      const top = overview(deps.registry.reads, {
        websiteId,
        from,
        to: now + 1,
        topN: 10,
        beacon: deps.registry.beacon.enabled,
        tracker: deps.registry.tracker.has(websiteId),
      })
      const series = top.series
      const table = (title: string, rows: { name: string; pageviews?: number; events?: number }[]) =>
        html`<section><h2>${title}</h2>${rows.length === 0 ? html`<p class="muted">Nothing yet.</p>` : html`<table>${rows.map((r) => html`<tr><td>${r.name}</td><td class="n">${String(r.pageviews ?? r.events ?? 0)}</td></tr>`)}</table>`}</section>`
      const data = JSON.stringify({ x: series.map((p) => p.x / 1000), y: series.map((p) => p.y) })
      const draw = `${uplotFiles().js};(()=>{const d=${data.replace(/</g, '\\u003c')};const el=document.getElementById('chart');new uPlot({width:Math.min(720,el.clientWidth||720),height:240,series:[{},{label:'Page views',stroke:'#0969da',fill:'rgba(9,105,218,0.1)'}],axes:[{},{}]},[d.x,d.y],el)})()`
      const t = top.totals
      const totals =
        t.visitors === null || t.bounces === null
          ? html`<p><strong id="total">${String(t.pageviews)}</strong> page views · ${String(t.visits)} visits</p>`
          : html`<p><strong id="total">${String(t.pageviews)}</strong> page views · <strong id="visitors">${String(t.visitors)}</strong> visitors · ${String(t.visits)} visits · ${t.visits === 0 ? '0' : String(Math.round((100 * t.bounces) / t.visits))}% bounce</p>`
      sendPage(
        exchange,
        200,
        `Analytics · ${website.record.name}`,
        html`<style>${new Html(uplotFiles().css)} table{border-collapse:collapse;width:100%}td{padding:.2rem .4rem;border-bottom:1px solid #d0d7de}td.n{text-align:right}section{margin-top:1.5rem}</style>
<h1>${website.record.name}</h1><p class="muted">${top.sources.visitors === null ? 'Page views of the last 30 days, counted at the edge (bots and previews left out).' : "The last 30 days: page views counted at the edge, visitors and events from the site's own tracker (no cookies; bots and previews left out)."} Read-only.</p>
${totals}<div id="chart"></div>
${table('Pages', top.pages)}${table('Referrers', top.referrers)}${table('Countries', top.countries)}${table('Devices', top.devices)}${top.browsers === null ? '' : table('Browsers', top.browsers)}${top.events === null ? '' : table('Events', top.events)}`,
        { 'x-robots-tag': 'noindex' },
        draw,
      )
    })
    .catch((error: unknown) => sendFailure(deps, exchange, '/share/analytics', error))
}
