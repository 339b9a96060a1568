import assert from 'node:assert/strict'
import { test } from 'node:test'
import { createWebsite, sharedServer, type TestServer } from '../helpers/server.js'
import { API_POLL_MS, waitUntil } from '../helpers/wait.js'
import { rendering } from '../helpers/renders.js'

/** One warm server for the file (each test uses its own labels). */
const server = sharedServer()

async function framework(s: TestServer, subdomain: string) {
  const w = await createWebsite(s, { name: subdomain, subdomain })
  const token = (await s.api('POST', `/v1/websites/${w.id}/source/lease`)).body.leaseToken as string
  const put = async (file: Record<string, string>, content: string) => {
    const res = await s.api('PUT', `/v1/websites/${w.id}/source/file`, { body: { leaseToken: token, file, content } })
    assert.ok(res.status === 201 || res.status === 200, JSON.stringify(res.body))
    return res.body.version as number
  }
  return { id: w.id as string, put }
}

/** Polls the build status of a version until it is no longer building. */
async function settled(s: TestServer, id: string, version: number): Promise<any> {
  return waitUntil(
    async () => {
      const res = await s.api('GET', `/v1/websites/${id}/deployments/status?version=${version}`)
      return res.body.status !== 'building' && res.body
    },
    `the build of v${version} to finish`,
    30_000,
    API_POLL_MS,
  )
}

const HOME = `import { definePage } from '@platform'
import { Hello } from '@components/Hello'
export default definePage({
  route: '/',
  metadata: { title: 'Home', description: 'Welcome home' },
  render: () => <main><Hello name="world" /></main>,
})
`
const ABOUT = `import { definePage } from '@platform'
export default definePage({ route: '/about', metadata: { title: 'About {{ data.team }}' }, queries: () => ({ team: 'us' }), render: ({ data }) => <p>About {data.team}</p> })
`
const CONFIG = `import { defineWebsiteConfig } from '@platform'
export default defineWebsiteConfig({
  metadata: { title: 'Site', titleTemplate: '%s | Acme', language: 'fr', openGraph: { image: '/og.png' } },
})
`

test('every commit builds in the background; the draft host serves the rendered documents once ready', async (t) => {
  const s = await server(t)
  const site = await framework(s, 'acme')
  await site.put({ type: 'component', name: 'Hello' }, 'export function Hello({ name }: { name: string }) { return <h1>Hello {name}</h1> }')
  await site.put({ type: 'website_config' }, CONFIG)
  await site.put({ type: 'custom_head_end' }, '<meta name="x-custom" content="verbatim">')
  await site.put({ type: 'not_found' }, 'export default function NotFound() { return <p>Nothing here</p> }')
  await site.put({ type: 'page', name: 'about' }, ABOUT)
  const head = await site.put({ type: 'page', name: 'home' }, HOME)
  const status = await settled(s, site.id, head)
  assert.equal(status.status, 'ready', JSON.stringify(status))
  assert.equal(status.canPublish, true)
  assert.deepEqual(status.routes, ['/', '/about'])
  const home = await s.site('draft--acme.localhost', '/')
  assert.equal(home.status, 200)
  assert.equal(home.headers['content-type'], 'text/html; charset=utf-8')
  assert.equal(home.headers['x-robots-tag'], 'noindex')
  const html = home.body.toString()
  assert.match(html, /^<!doctype html>/)
  assert.match(html, /<html lang="fr">/)
  assert.match(html, /<title>Home \| Acme<\/title>/)
  assert.match(html, /<meta name="description" content="Welcome home">/)
  assert.match(html, new RegExp(`<link rel="canonical" href="http://acme.localhost:${s.plinth.port}/">`))
  assert.match(html, new RegExp(`<meta property="og:image" content="http://acme.localhost:${s.plinth.port}/og.png">`))
  assert.match(html, /<meta name="twitter:card" content="summary_large_image">/)
  assert.match(html, /<meta name="x-custom" content="verbatim">/)
  assert.match(html, /<div id="root"><main><h1>Hello <!-- -->world<\/h1><\/main><\/div>/)
  const about = (await s.site('draft--acme.localhost', '/about')).body.toString()
  assert.match(about, /<title>About us \| Acme<\/title>/)
  const missing = await s.site('draft--acme.localhost', '/nope')
  assert.equal(missing.status, 404)
  assert.match(missing.body.toString(), /Nothing here/)
  // Source is never served.
  assert.equal((await s.site('draft--acme.localhost', '/pages/home.tsx')).status, 404)
  // Publish serves the same build on the live host.
  const published = await s.api('POST', `/v1/websites/${site.id}/publish`)
  assert.equal(published.status, 200, JSON.stringify(published.body))
  const live = await s.site('acme.localhost', '/')
  assert.equal(live.status, 200)
  assert.equal(live.headers['cache-control'], 'public, max-age=0, must-revalidate')
  assert.match(live.body.toString(), /Hello <!-- -->world/)
})

test('publish is 409 while the head builds, 400 with diagnostics when it failed; the live site never changes', async (t) => {
  const s = await server(t)
  const site = await framework(s, 'safe')
  const good = await site.put(
    { type: 'page', name: 'home' },
    `import { definePage } from '@platform'\nexport default definePage({ route: '/', render: () => <p>version one, rendered at <time>{Date.now()}</time></p> })\n`,
  )
  assert.equal((await settled(s, site.id, good)).status, 'ready')
  assert.equal((await s.api('POST', `/v1/websites/${site.id}/publish`)).status, 200)
  // A render that spins for 800 ms of CPU before throwing keeps the build running when publish arrives.
  const bad = await site.put(
    { type: 'page', name: 'home' },
    `import { definePage } from '@platform'\nexport default definePage({ route: '/', render: () => { const end = Date.now() + 800; while (Date.now() < end) {} throw new Error('broken render') } })\n`,
  )
  const during = await s.api('POST', `/v1/websites/${site.id}/publish`)
  assert.equal(during.status, 409)
  assert.equal(during.body.kind, 'conflict')
  assert.match(during.body.message, /still building/)
  assert.match((await s.site('safe.localhost', '/')).body.toString(), /version one/)
  const status = await settled(s, site.id, bad)
  assert.equal(status.status, 'failed')
  assert.equal(status.canPublish, false)
  assert.ok(status.diagnostics.some((d: any) => /broken render/.test(d.message)))
  const rendering = status.diagnostics.filter((d: any) => d.step === 'render')
  assert.equal(rendering.length, 1, 'each render failure is reported once')
  const stored = (await s.api('GET', `/v1/websites/${site.id}/source/file?type=page&name=home&version=${bad}`)).body.content as string
  assert.deepEqual(
    [rendering[0].file, rendering[0].line],
    ['page:home', stored.split('\n').findIndex((l) => l.includes('broken render')) + 1],
  )
  const refused = await s.api('POST', `/v1/websites/${site.id}/publish`)
  assert.equal(refused.status, 400)
  assert.deepEqual(
    refused.body.details.renderFailures.map((f: any) => [f.pageId, f.route]),
    [['home', '/']],
  )
  assert.match(refused.body.details.renderFailures[0].message, /broken render/)
  assert.match((await s.site('safe.localhost', '/')).body.toString(), /version one/)
  // The draft host stays on the newest build that is ready.
  assert.match((await s.site('draft--safe.localhost', '/')).body.toString(), /version one/)
  // Rebuild renders the published version again: the live host serves the new rendering (its render
  // time changed) of the same version.
  const before = (await s.api('GET', `/v1/websites/${site.id}/deployments/status?target=published`)).body
  const renderedAt = (html: string) => /rendered at <time>(\d+)<\/time>/.exec(html)?.[1]
  const liveBefore = (await s.site('safe.localhost', '/')).body.toString()
  const rebuilt = await s.api('POST', `/v1/websites/${site.id}/rebuild`, { body: { target: 'published' } })
  assert.deepEqual([rebuilt.status, rebuilt.body.status, rebuilt.body.version], [200, 'ready', before.version])
  const liveAfter = (await s.site('safe.localhost', '/')).body.toString()
  assert.match(liveAfter, /version one/)
  assert.ok(
    Number(renderedAt(liveAfter)) > Number(renderedAt(liveBefore)),
    `the live page was not rendered again: ${renderedAt(liveBefore)} then ${renderedAt(liveAfter)}`,
  )
  // Rollback to the good version re-publishes it as a new head with its build.
  const back = await s.api('POST', `/v1/websites/${site.id}/rollback`, { body: { version: good } })
  assert.equal(back.status, 200, JSON.stringify(back.body))
  assert.equal((await s.api('GET', `/v1/websites/${site.id}/deployments/status`)).body.status, 'ready')
})

test('a burst of commits coalesces: the newest head is built, superseded ones are not', async (t) => {
  const s = await server(t)
  const site = await framework(s, 'burst')
  const versions: number[] = []
  for (let i = 0; i < 6; i++) {
    versions.push(
      await site.put(
        { type: 'page', name: 'home' },
        `import { definePage } from '@platform'\nexport default definePage({ route: '/', render: () => <p>edit ${i}</p> })\n`,
      ),
    )
  }
  const newest = versions.at(-1)!
  assert.equal((await settled(s, site.id, newest)).status, 'ready')
  const statuses = await Promise.all(
    versions.map(async (v) => (await s.api('GET', `/v1/websites/${site.id}/deployments/status?version=${v}`)).body),
  )
  const built = statuses.filter((st) => st.status === 'ready').length
  assert.ok(built < versions.length, `every version was built: ${statuses.map((st) => st.status).join(',')}`)
  const skipped = statuses.find((st) => st.status === 'failed')
  assert.match(skipped.diagnostics[0].message, /not built/)
  assert.match((await s.site('draft--burst.localhost', '/')).body.toString(), /edit 5/)
  // ensure builds a superseded version on request.
  const ensured = await s.api('POST', `/v1/websites/${site.id}/deployments/ensure`, { body: { version: skipped.version } })
  assert.equal(ensured.body.status, 'ready')
})

test('a build superseded while a page renders stops that render at once; the next build does not wait for its CPU budget', async (t) => {
  const s = await server(t)
  const site = await framework(s, 'stuck')
  // A first build warms the site's typecheck program and bundler, so later builds reach render fast.
  const first = await site.put(
    { type: 'page', name: 'home' },
    "import { definePage } from '@platform'\nexport default definePage({ route: '/', render: () => <p>first</p> })\n",
  )
  assert.equal((await settled(s, site.id, first)).status, 'ready')
  // Renders until its 5 s CPU budget stops it, unless the build is superseded first.
  const looping = await site.put(
    { type: 'page', name: 'home' },
    "import { definePage } from '@platform'\nexport default definePage({ route: '/', render: () => { for (;;) {} } })\n",
  )
  // Lint, typecheck and bundle are warm: the build reaches its render, which loops.
  await rendering(300)
  assert.equal((await s.api('GET', `/v1/websites/${site.id}/deployments/status?version=${looping}`)).body.status, 'building')
  const fixedAt = Date.now()
  const fixed = await site.put(
    { type: 'page', name: 'home' },
    "import { definePage } from '@platform'\nexport default definePage({ route: '/', render: () => <p>fixed</p> })\n",
  )
  assert.equal((await settled(s, site.id, fixed)).status, 'ready')
  const waited = Date.now() - fixedAt
  // About 0.4 s here; a render left running would hold the worker for the rest of its budget (about 4 s).
  assert.ok(waited < 2500, `the new build waited ${waited} ms: the superseded render ran on`)
  assert.match((await s.site('draft--stuck.localhost', '/')).body.toString(), /fixed/)
  assert.match(
    (await s.api('GET', `/v1/websites/${site.id}/deployments/status?version=${looping}`)).body.diagnostics[0].message,
    /not built/,
  )
})

test('a check of a version whose build is running waits for that build and answers its result, not a second run', async (t) => {
  const s = await server(t)
  const site = await framework(s, 'twice')
  const warm = await site.put(
    { type: 'page', name: 'home' },
    "import { definePage } from '@platform'\nexport default definePage({ route: '/', render: () => <p>warm</p> })\n",
  )
  assert.equal((await settled(s, site.id, warm)).status, 'ready')
  // A page that takes 1.5 s to render: the build of this version is rendering when the check arrives.
  const slow = await site.put(
    { type: 'page', name: 'home' },
    "import { definePage } from '@platform'\nexport default definePage({ route: '/', render: () => { const end = Date.now() + 1500; while (Date.now() < end) {} return <p>slow</p> } })\n",
  )
  const started = Date.now()
  const check = await s.api('POST', `/v1/websites/${site.id}/head/check`)
  const waited = Date.now() - started
  assert.equal(check.status, 200, JSON.stringify(check.body))
  assert.equal(check.body.version, slow)
  assert.equal(check.body.ok, true, JSON.stringify(check.body))
  // A second run would render the page again after the build's render (one task per site at a time).
  assert.ok(
    waited < check.body.timings.total + 1000,
    `the check took ${waited} ms, its gate ${check.body.timings.total} ms: it ran beside the build`,
  )
  assert.equal((await settled(s, site.id, slow)).status, 'ready')
  // Once the build is stored, a check runs the gate afresh.
  const again = await s.api('POST', `/v1/websites/${site.id}/head/check`)
  assert.equal(again.body.ok, true)
  assert.notDeepEqual(again.body.timings, check.body.timings)
})

test('website_config redirects and headers apply on both hosts; invalid ones fail the build', async (t) => {
  const s = await server(t)
  const site = await framework(s, 'routed')
  await site.put(
    { type: 'page', name: 'home' },
    `import { definePage } from '@platform'\nexport default definePage({ route: '/', render: () => <p>home</p> })\n`,
  )
  const head = await site.put(
    { type: 'website_config' },
    `import { defineWebsiteConfig } from '@platform'
export default defineWebsiteConfig({
  redirects: [{ from: '/old', to: '/' }, { from: '/blog/*', to: '/posts/:splat', status: 302 }, { from: '/away', to: 'https://example.org/x', status: 308 }],
  headers: { 'X-Frame-Options': 'DENY', 'Content-Security-Policy': "default-src 'self'" },
})
`,
  )
  assert.equal((await settled(s, site.id, head)).status, 'ready')
  assert.equal((await s.api('POST', `/v1/websites/${site.id}/publish`)).status, 200)
  for (const host of ['routed.localhost', 'draft--routed.localhost']) {
    const old = await s.site(host, '/old')
    assert.deepEqual([old.status, old.headers.location], [301, '/'], host)
    const splat = await s.site(host, '/blog/2026/hello')
    assert.deepEqual([splat.status, splat.headers.location], [302, '/posts/2026/hello'], host)
    // An encoded CR/LF in the splat stays encoded in Location: no injected header, no 500.
    const injected = await s.site(host, '/blog/x%0D%0ASet-Cookie:%20a=b')
    assert.deepEqual(
      [injected.status, injected.headers.location, injected.headers['set-cookie']],
      [302, '/posts/x%0D%0ASet-Cookie:%20a=b', undefined],
      host,
    )
    assert.deepEqual([(await s.site(host, '/away')).status, (await s.site(host, '/away')).headers.location], [308, 'https://example.org/x'])
    const home = await s.site(host, '/')
    assert.equal(home.headers['x-frame-options'], 'DENY', host)
    assert.equal(home.headers['content-security-policy'], "default-src 'self'")
    // On top of the platform defaults, never instead of them.
    assert.equal(home.headers['x-content-type-options'], 'nosniff')
  }
  const bad = await site.put(
    { type: 'website_config' },
    `export default { redirects: [{ from: 'no-slash', to: '/' }, { from: '/a', to: '/b', status: 200 }], headers: { 'Cache-Control': 'no-cache', 'Bad Header': 'x' } }\n`,
  )
  const failed = await settled(s, site.id, bad)
  assert.equal(failed.status, 'failed')
  const messages = failed.diagnostics.filter((d: any) => d.step === 'config').map((d: any) => d.message)
  assert.equal(messages.length, 4, JSON.stringify(messages))
  assert.ok(messages.some((m: string) => /set by the platform/.test(m)))
  // The live site keeps its redirects.
  assert.equal((await s.site('routed.localhost', '/old')).status, 301)
})

test('global_css compiles with Tailwind v4: utilities from the classes in the sources, served at /global.css; @plugin fails', async (t) => {
  const s = await server(t)
  const site = await framework(s, 'styled')
  await site.put({ type: 'global_css' }, '@import "tailwindcss";\n\n.brand { color: rebeccapurple; }\n')
  const head = await site.put(
    { type: 'page', name: 'home' },
    `import { definePage } from '@platform'\nexport default definePage({ route: '/', render: () => <p className="p-4 text-red-500 hover:underline brand">styled</p> })\n`,
  )
  const status = await settled(s, site.id, head)
  assert.equal(status.status, 'ready', JSON.stringify(status.diagnostics))
  const css = await s.site('draft--styled.localhost', '/global.css')
  assert.equal(css.status, 200)
  assert.equal(css.headers['content-type'], 'text/css; charset=utf-8')
  const text = css.body.toString()
  assert.match(text, /\.p-4\s*\{/)
  assert.match(text, /\.text-red-500\s*\{/)
  assert.match(text, /\.hover\\:underline/)
  assert.match(text, /\.brand\s*\{\s*color: rebeccapurple/)
  assert.doesNotMatch(text, /\.m-8\s*\{/)
  assert.match((await s.site('draft--styled.localhost', '/')).body.toString(), /<link rel="stylesheet" href="\/global\.css">/)
  const check = await s.api('POST', `/v1/websites/${site.id}/head/check`)
  assert.equal(typeof check.body.timings.css, 'number')
  const plugin = await site.put({ type: 'global_css' }, '@import "tailwindcss";\n@plugin "@tailwindcss/typography";\n')
  const failed = await settled(s, site.id, plugin)
  assert.equal(failed.status, 'failed')
  const diagnostic = failed.diagnostics.find((d: any) => d.step === 'css')
  assert.deepEqual([diagnostic.file, diagnostic.line], ['global_css', 2])
  assert.match(diagnostic.message, /@plugin is not supported/)
  // Packages other than Tailwind are not available (a URL @import is left for the browser).
  const imported = await site.put({ type: 'global_css' }, '@import "bootstrap";\n')
  const refused = await settled(s, site.id, imported)
  assert.equal(refused.status, 'failed')
  assert.match(refused.diagnostics.find((d: any) => d.step === 'css').message, /only @import "tailwindcss"/)
})

test("a framework version's own address serves its build, whatever the draft host serves now", async (t) => {
  const s = await server(t)
  const site = await framework(s, 'versioned-build')
  const page = (text: string) =>
    `import { definePage } from '@platform'\nexport default definePage({ route: '/', render: () => <p>${text}</p> })\n`
  const first = await site.put({ type: 'page', name: 'home' }, page('first build'))
  assert.equal((await settled(s, site.id, first)).status, 'ready')
  const second = await site.put({ type: 'page', name: 'home' }, page('second build'))
  assert.equal((await settled(s, site.id, second)).status, 'ready')
  for (const [version, text] of [
    [first, 'first build'],
    [second, 'second build'],
  ] as const) {
    const res = await s.site(`v${version}--versioned-build.localhost`, '/')
    assert.equal(res.status, 200)
    assert.match(res.body.toString(), new RegExp(`<p>${text}</p>`))
    assert.deepEqual([res.headers['x-plinth-version'], res.headers['x-robots-tag']], [String(version), 'noindex'])
  }
  const listed = (await s.api('GET', `/v1/websites/${site.id}/source/versions`)).body.items
  assert.equal(listed.find((v: any) => v.version === first).urls.preview, `http://v${first}--versioned-build.localhost:${s.plinth.port}`)
})

test('website_config redirects follow the pattern rules of _redirects: a pattern the matcher cannot take fails the build, named', async (t) => {
  const s = await server(t)
  const site = await framework(s, 'bad-patterns')
  await site.put(
    { type: 'page', name: 'home' },
    `import { definePage } from '@platform'\nexport default definePage({ route: '/', render: () => <p>home</p> })\n`,
  )
  const head = await site.put(
    { type: 'website_config' },
    `export default { redirects: [{ from: '/a/*/b', to: '/x' }, { from: '/u/:id/:id', to: '/v/:id' }, { from: '/ok/*', to: '/fine/:splat' }] }\n`,
  )
  const failed = await settled(s, site.id, head)
  assert.equal(failed.status, 'failed')
  const messages = failed.diagnostics.filter((d: any) => d.step === 'config').map((d: any) => d.message)
  assert.deepEqual(messages, [
    'redirects[0]: from "/a/*/b": * may only end the path (as in /blog/*)',
    'redirects[1]: from "/u/:id/:id" names a placeholder twice',
  ])
})
