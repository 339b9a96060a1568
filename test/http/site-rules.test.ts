import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { launchChromium, needsChromium } from '../helpers/browser.js'
import { createWebsite, startServer, type TestServer } from '../helpers/server.js'
import { freshRequest } from '../helpers/http.js'

/*
 * A static site's `_redirects` and `_headers` (issue 40), as a visitor and a deploying agent see them:
 * a single-page app deep-linked, redirects with splats and queries, a custom 404 for assets, headers by
 * pattern, and each bad line named in the deploy's answer and the deployment status.
 */

const REDIRECTS = `# The real 404 for a missing asset, then the app for every other path
/assets/*        /404.html       404
/old-blog/*      /blog/:splat    301
/users/:id       /app/users/:id  302
/home            /               301!
/proxy           https://api.example.org/x  200
/*               /index.html     200
`

const HEADERS = `/*
  X-Frame-Options: DENY
/assets/*
  Cache-Control: public, max-age=31536000, immutable
  Content-Length: 1
/robots-free
  X-Robots-Tag: noindex
`

const APP =
  '<!doctype html><html><head><script type="module" src="/assets/index-3f2a1b.js"></script></head><body><div id="root"></div></body></html>'

async function deploy(s: TestServer, id: string, files: Record<string, string>) {
  const res = await s.api('POST', `/v1/websites/${id}/deploy/json`, {
    body: { files: Object.entries(files).map(([path, content]) => ({ path, content })) },
  })
  assert.equal(res.status, 201, JSON.stringify(res.body))
  return res.body
}

test('_redirects and _headers: a single-page app deep-linked, redirects, a 404 for missing assets, headers by pattern; bad lines named at deploy', async (t) => {
  // Two serving threads: the rules are compiled and applied on each (a fresh connection may land on either).
  const s = await startServer(t, { PLINTH_SERVE_THREADS: '2' })
  const w = await createWebsite(s, { name: 'App', kind: 'static', subdomain: 'app' })
  const deployed = await deploy(s, w.id, {
    'index.html': APP,
    'assets/index-3f2a1b.js': 'console.log("app")',
    'assets/index-9c8d7e.css': 'body{margin:0}',
    '404.html': '<p>not found</p>',
    'home.html': '<p>a file the forced rule hides</p>',
    _redirects: REDIRECTS,
    _headers: HEADERS,
  })
  // The deploy went through; its answer names each bad line (the others apply).
  assert.deepEqual(
    deployed.warnings.map((w: any) => [w.file, w.line]),
    [
      ['_redirects', 6],
      ['_headers', 5],
    ],
  )
  assert.match(deployed.warnings[0].message, /another host \(proxying is not supported\)/)
  assert.match(deployed.warnings[1].message, /Content-Length cannot be set/)
  const status = (await s.api('GET', `/v1/websites/${w.id}/deployments/status?target=head`)).body
  assert.deepEqual(
    status.diagnostics.map((d: any) => [d.step, d.severity, d.file, d.line]),
    [
      ['rules', 'warning', '_redirects', 6],
      ['rules', 'warning', '_headers', 5],
    ],
  )
  // The routes it serves: the rule files are not among them (they are never served).
  assert.ok(status.routes.includes('/'), JSON.stringify(status.routes))
  assert.deepEqual(
    status.routes.filter((route: string) => route.startsWith('/_')),
    [],
  )
  assert.equal((await s.api('POST', `/v1/websites/${w.id}/publish`)).status, 200)

  const host = 'app.localhost'
  // A deep link into the app: its HTML, status 200, the URL unchanged.
  for (const path of ['/settings/profile', '/app/users/7', '/'])
    for (let i = 0; i < 4; i++) {
      // A fresh connection each time: the kernel hands them to both threads.
      const res = await freshRequest(s.plinth.port, host, path)
      assert.deepEqual([res.status, res.body.toString()], [200, APP], path)
      assert.equal(res.headers['content-type'], 'text/html; charset=utf-8')
      const old = await freshRequest(s.plinth.port, host, '/old-blog/x')
      assert.deepEqual([old.status, old.headers.location], [301, '/blog/x'])
    }
  // Its assets with their real types and the site's cache headers; a missing one is the real 404.
  const js = await s.site(host, '/assets/index-3f2a1b.js')
  assert.deepEqual(
    [js.status, js.headers['content-type'], js.headers['cache-control']],
    [200, 'text/javascript; charset=utf-8', 'public, max-age=31536000, immutable'],
  )
  assert.equal(js.headers['x-frame-options'], 'DENY')
  assert.equal((await s.site(host, '/assets/index-9c8d7e.css')).headers['content-type'], 'text/css; charset=utf-8')
  const missing = await s.site(host, '/assets/index-000000.js')
  assert.deepEqual([missing.status, missing.body.toString()], [404, '<p>not found</p>'])
  // Redirects: splat and placeholder, the query kept; a forced rule wins over a file at its path.
  const old = await s.site(host, '/old-blog/2024/hello?ref=mail')
  assert.deepEqual([old.status, old.headers.location], [301, '/blog/2024/hello?ref=mail'])
  const user = await s.site(host, '/users/42')
  assert.deepEqual([user.status, user.headers.location], [302, '/app/users/42'])
  const home = await s.site(host, '/home')
  assert.deepEqual([home.status, home.headers.location], [301, '/'])
  // The rule files are read by the platform, not served: the app answers their paths.
  for (const path of ['/_redirects', '/_headers']) assert.equal((await s.site(host, path)).body.toString(), APP, path)
  // Pages carry the site's headers too, on top of the platform's.
  const page = await s.site(host, '/settings')
  assert.equal(page.headers['x-frame-options'], 'DENY')
  assert.equal(page.headers['x-content-type-options'], 'nosniff')
  assert.equal(page.headers['cache-control'], 'public, max-age=0, must-revalidate')
  // A 304 repeats the site's Cache-Control.
  const again = await s.site(host, '/assets/index-3f2a1b.js', { 'if-none-match': String(js.headers.etag) })
  assert.deepEqual([again.status, again.headers['cache-control']], [304, 'public, max-age=31536000, immutable'])

  // The draft host stays noindex and never cached, whatever _headers says.
  const draft = await s.site('draft--app.localhost', '/assets/index-3f2a1b.js')
  assert.deepEqual(
    [draft.headers['cache-control'], draft.headers['x-robots-tag'], draft.headers['x-frame-options']],
    ['no-store', 'noindex', 'DENY'],
  )
})

/** The Vite build of test/fixtures/vite-spa (checked in; tests run from dist/test/http). */
const VITE_DIST = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'test', 'fixtures', 'vite-spa', 'dist')

function folder(root: string): Record<string, string> {
  const files: Record<string, string> = {}
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name)
      if (entry.isDirectory()) walk(path)
      else files[relative(root, path)] = readFileSync(path, 'utf8')
    }
  }
  walk(root)
  return files
}

test(
  'a Vite-built React Router app deploys as built: deep links are the app in Chromium, its assets typed, a missing asset a real 404',
  { skip: needsChromium },
  async (t) => {
    const s = await startServer(t)
    const w = await createWebsite(s, { name: 'Vite app', kind: 'static', subdomain: 'vite' })
    const files = folder(VITE_DIST)
    const deployed = await deploy(s, w.id, files)
    assert.deepEqual(deployed.warnings, [], 'the two rules of the README apply as written')
    assert.equal((await s.api('POST', `/v1/websites/${w.id}/publish`)).status, 200)

    const get = (path: string) => freshRequest(s.plinth.port, 'vite.localhost', path, {})
    const index = files['index.html']
    for (const path of ['/', '/posts/hello', '/deep/link/into/the/app']) {
      const page = await get(path)
      assert.deepEqual([page.status, page.body.toString()], [200, index], `${path}: the app's HTML`)
    }
    const script = /src="(\/assets\/[^"]+\.js)"/.exec(index)![1]
    const style = /href="(\/assets\/[^"]+\.css)"/.exec(index)![1]
    const js = await get(script)
    assert.deepEqual(
      [js.status, js.headers['content-type'], js.body.toString()],
      [200, 'text/javascript; charset=utf-8', files[script.slice(1)]],
    )
    const css = await get(style)
    assert.deepEqual([css.status, css.headers['content-type']], [200, 'text/css; charset=utf-8'])
    const missing = await get('/assets/index-missing.js')
    assert.deepEqual([missing.status, missing.body.toString()], [404, files['404.html']], 'a missing asset is not the app under a .js name')

    // In a browser: a deep link renders its route, the router's links work, an unknown route is the app's own.
    const browser = await launchChromium(t)
    const page = await browser.newPage()
    const problems: string[] = []
    page.on('pageerror', (error) => problems.push(error.message))
    const origin = `http://vite.localhost:${s.plinth.port}`
    await page.goto(`${origin}/posts/hello`)
    await page.waitForSelector('text=Post hello')
    await page.click('text=Home')
    await page.waitForSelector('text=Home of the fixture')
    assert.equal(new URL(page.url()).pathname, '/')
    await page.goto(`${origin}/no/such/route`)
    await page.waitForSelector('text=No route here')
    assert.deepEqual(problems, [])
  },
)

test('a site without rules is served as before; rules removed by a deploy stop applying', async (t) => {
  const s = await startServer(t)
  const w = await createWebsite(s, { name: 'Plain', kind: 'static', subdomain: 'plain' })
  const first = await deploy(s, w.id, { 'index.html': '<p>home</p>', _redirects: '/* /index.html 200\n' })
  assert.deepEqual(first.warnings, [])
  assert.equal((await s.site('draft--plain.localhost', '/deep/link')).status, 200)
  const res = await s.api('POST', `/v1/websites/${w.id}/deploy/json`, {
    body: { files: [{ path: 'index.html', content: '<p>home</p>' }], replace: true },
  })
  assert.equal(res.status, 201, JSON.stringify(res.body))
  assert.equal((await s.site('draft--plain.localhost', '/deep/link')).status, 404)
  assert.equal((await s.site('draft--plain.localhost', '/')).status, 200)
})

test("behind a password, the platform keeps Cache-Control and drops the site's Set-Cookie; without one, both are the site's", async (t) => {
  const s = await startServer(t)
  const w = await createWebsite(s, { name: 'Locked', kind: 'static', subdomain: 'locked' })
  await deploy(s, w.id, {
    'index.html': '<p>inside</p>',
    _headers: '/*\n  Set-Cookie: theme=dark; Path=/\n  Cache-Control: public, max-age=600\n',
  })
  assert.equal((await s.api('POST', `/v1/websites/${w.id}/publish`)).status, 200)
  const open = await s.site('locked.localhost', '/')
  assert.deepEqual([open.headers['set-cookie'], open.headers['cache-control']], [['theme=dark; Path=/'], 'public, max-age=600'])
  assert.equal((await s.api('PUT', `/v1/websites/${w.id}/password`, { body: { password: 'open sesame' } })).status, 200)
  const basic = { authorization: `Basic ${Buffer.from('x:open sesame').toString('base64')}` }
  const locked = await s.site('locked.localhost', '/', basic)
  assert.equal(locked.body.toString(), '<p>inside</p>')
  assert.deepEqual([locked.headers['set-cookie'], locked.headers['cache-control']], [undefined, 'private, no-store'])
})

test('every version has its own address: v{N}--{sub} serves it byte for byte after later publishes and a rollback, as a draft (noindex, no-store), behind the site password, gone with the site', async (t) => {
  const s = await startServer(t)
  const w = await createWebsite(s, { name: 'Versions', kind: 'static', subdomain: 'vers' })
  const pages = new Map<number, string>()
  for (const text of ['one', 'two', 'three']) {
    const deployed = await deploy(s, w.id, { 'index.html': `<h1>${text}</h1>`, 'style.css': `h1{content:"${text}"}` })
    pages.set(deployed.version, `<h1>${text}</h1>`)
    assert.equal((await s.api('POST', `/v1/websites/${w.id}/publish`)).status, 200)
  }
  const first = Math.min(...pages.keys())
  assert.equal((await s.api('POST', `/v1/websites/${w.id}/rollback`, { body: { version: first } })).status, 200)
  assert.equal((await s.site('vers.localhost', '/')).body.toString(), '<h1>one</h1>')
  // Each version in the list names its address; each address serves that version, whatever is live.
  const listed = (await s.api('GET', `/v1/websites/${w.id}/source/versions?limit=100`)).body.items
  for (const [version, html] of pages) {
    const entry = listed.find((v: any) => v.version === version)
    assert.equal(entry.urls.preview, `http://v${version}--vers.localhost:${s.plinth.port}`)
    const page = await s.site(`v${version}--vers.localhost`, '/')
    assert.deepEqual([page.status, page.body.toString(), page.headers['x-plinth-version']], [200, html, String(version)])
    assert.deepEqual([page.headers['x-robots-tag'], page.headers['cache-control']], ['noindex', 'no-store'])
    const css = await s.site(`v${version}--vers.localhost`, '/style.css')
    assert.equal(css.body.toString(), `h1{content:"${html.slice(4, -5)}"}`)
  }
  // The empty first version and a version that does not exist: nothing there.
  assert.equal(listed.find((v: any) => v.version === 1).urls.preview, null)
  assert.equal((await s.site('v99--vers.localhost', '/')).status, 404)
  // No website may take a label that would shadow a version's address.
  const shadow = await s.api('POST', '/v1/websites', { body: { name: 'Shadow', kind: 'static', subdomain: 'v2--vers' } })
  assert.equal(shadow.status, 400)
  // The site's password covers every version's address.
  assert.equal((await s.api('PUT', `/v1/websites/${w.id}/password`, { body: { password: 'open sesame' } })).status, 200)
  const locked = await s.site(`v${first}--vers.localhost`, '/')
  assert.equal(locked.status, 401)
  assert.doesNotMatch(locked.body.toString(), /<h1>one<\/h1>/)
  // Trashed: every version's address answers 404.
  assert.equal((await s.api('DELETE', `/v1/websites/${w.id}`)).status, 200)
  for (const version of pages.keys()) assert.equal((await s.site(`v${version}--vers.localhost`, '/')).status, 404)
})
