/*
 * The pure rules, without a server: each takes input and gives an answer, so each case is one line.
 * The same rules are exercised end to end by the HTTP suites; these pin their edges.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { planPublish, planRollback, planUnpublish, type PublishingState } from '../../actors/website/publishing.js'
import { applyEdits } from '../../actors/website/str-replace.js'
import { firstVersion, makeVersion } from '../../actors/website/versions.js'
import type { WebsiteRecord } from '../../core/schemas/records.js'
import { canonicalRoutes, siteRoutes } from '../../actors/website/routes.js'
import { decodeCursor, encodeCursor, pageByKey, pageDescending } from '../../core/cursor.js'
import { ApiError } from '../../core/errors.js'
import { isDraftLabel, labelOfHost, PublicUrls, reservedLabels, siteHostnames } from '../../core/hostnames.js'
import { normalizeSitePath, normalizeSitePaths } from '../../core/site-paths.js'
import { parseRange } from '../../http/range.js'
import { routingOf } from '../../render/site-routing.js'

const refused = (fn: () => unknown, pattern: RegExp) =>
  assert.throws(fn, (error: unknown) => error instanceof ApiError && error.kind === 'validation' && pattern.test(error.message))

test('site paths: ./ dropped and NFC; absolute, .., empty segments, backslashes and control characters refused; duplicates named', () => {
  assert.equal(normalizeSitePath('./blog/./index.html', 'f'), 'blog/index.html')
  assert.equal(normalizeSitePath('cafe\u0301.html', 'f'), 'caf\u00e9.html')
  refused(() => normalizeSitePath('/index.html', 'f'), /absolute/)
  refused(() => normalizeSitePath('C:/x', 'f'), /absolute/)
  refused(() => normalizeSitePath('a/../../etc/passwd', 'f'), /"\.\."/)
  refused(() => normalizeSitePath('a//b', 'f'), /empty segment/)
  refused(() => normalizeSitePath('a/', 'f'), /empty segment/)
  refused(() => normalizeSitePath('a\\b', 'f'), /backslash/)
  refused(() => normalizeSitePath('a\u0007', 'f'), /control character/)
  refused(() => normalizeSitePath('', 'f'), /empty/)
  refused(() => normalizeSitePaths(['a.html', './a.html'], (i) => `files[${i}]`), /files\[1\] "a\.html" appears twice/)
})

test('byte ranges: one range served, suffixes counted from the end, the rest ignored or unsatisfiable', () => {
  assert.deepEqual(parseRange('bytes=0-9', 100), [0, 9])
  assert.deepEqual(parseRange('bytes=90-', 100), [90, 99])
  assert.deepEqual(parseRange('bytes=90-500', 100), [90, 99])
  assert.deepEqual(parseRange('bytes=-10', 100), [90, 99])
  assert.deepEqual(parseRange('bytes=-500', 100), [0, 99])
  assert.equal(parseRange('bytes=100-', 100), 'unsatisfiable')
  assert.equal(parseRange('bytes=9-3', 100), 'unsatisfiable')
  assert.equal(parseRange('bytes=-0', 100), 'unsatisfiable')
  assert.equal(parseRange('bytes=0-1,5-6', 100), null)
  assert.equal(parseRange('items=0-1', 100), null)
  assert.equal(parseRange('bytes=0-9', 0), null)
})

test('str-replace: exact once, replaceAll, whitespace-insensitive fallback, ambiguity and absence reported with lines', () => {
  assert.deepEqual(applyEdits('f', 'a b c', [{ oldStr: 'b', newStr: 'B' }]), { text: 'a B c', problems: [] })
  assert.equal(applyEdits('f', 'x x x', [{ oldStr: 'x', newStr: 'y', replaceAll: true }]).text, 'y y y')
  assert.equal(applyEdits('f', 'if (a)  {\n  go()\n}', [{ oldStr: 'if (a) { go() }', newStr: 'done' }]).text, 'done')
  // Edits apply in order: the second sees the first's result.
  assert.equal(
    applyEdits('f', 'one', [
      { oldStr: 'one', newStr: 'two' },
      { oldStr: 'two', newStr: 'three' },
    ]).text,
    'three',
  )
  const ambiguous = applyEdits('f', 'x\ny\nx', [{ oldStr: 'x', newStr: 'z' }], 4).problems
  assert.deepEqual(
    ambiguous.map((p) => [p.edit, p.reason, p.count, p.lines]),
    [[4, 'ambiguous', 2, [1, 3]]],
  )
  assert.equal(applyEdits('f', 'abc', [{ oldStr: 'zzz', newStr: '' }]).problems[0].reason, 'not_found')
  assert.equal(applyEdits('f', 'abc', [{ oldStr: '', newStr: 'x' }]).problems[0].reason, 'empty')
})

test('redirects and headers from website_config: valid ones kept, each invalid one a config diagnostic', () => {
  const ok = routingOf({
    redirects: [
      { from: '/old', to: '/new' },
      { from: '/blog/*', to: '/posts/:splat', status: 302 },
    ],
    headers: { 'X-Frame-Options': 'DENY' },
  })
  assert.deepEqual(ok, {
    routing: {
      redirects: [
        { from: '/old', to: '/new', status: 301 },
        { from: '/blog/*', to: '/posts/:splat', status: 302 },
      ],
      headers: { 'x-frame-options': 'DENY' },
    },
    diagnostics: [],
  })
  const bad = routingOf({
    redirects: [
      { from: 'old', to: '/x' },
      { from: '/a', to: '/b', status: 200 },
    ],
    headers: { 'Content-Type': 'text/plain', 'Transfer-Encoding': 'chunked', 'Bad Name': 'x', 'X-Ok': 'a\nb' },
  })
  assert.deepEqual(bad.routing, { redirects: [], headers: {} })
  assert.deepEqual(
    bad.diagnostics.map((d) => d.message),
    [
      'redirects[0].from must be a path starting with /',
      'redirects[1].status must be one of 301, 302, 303, 307, 308',
      'headers: Content-Type is set by the platform: the platform sets it from the file extension; a deploy can set contentType per file',
      // The headers no site may set, as _headers refuses them (one list); those a build once took are left out with a warning.
      'headers: Transfer-Encoding is set by the platform: the platform frames each answer (left out)',
      'headers: "Bad Name" is not a valid header name',
      'headers.X-Ok must be a single-line string',
    ],
  )
  assert.deepEqual(
    bad.diagnostics.map((d) => `${d.step} ${d.severity}`),
    ['config error', 'config error', 'config error', 'config warning', 'config error', 'config error'],
  )
})

test('static routes: one URL per page (folders end in /, .html dropped), the other spellings move there; exact files always', () => {
  const routes = siteRoutes(['index.html', 'about.html', 'blog/index.html', 'blog/post.html', 'img/a.png', 'raw', 'raw.html'])
  assert.equal(routes.get('/'), 'index.html')
  assert.equal(routes.get('/about'), 'about.html')
  assert.equal(routes.get('/blog/'), 'blog/index.html')
  assert.equal(routes.get('/blog/post'), 'blog/post.html')
  assert.equal(routes.get('/img/a.png'), 'img/a.png')
  assert.equal(routes.get('/img/a'), undefined)
  assert.deepEqual(routes.get('/index.html'), { movedTo: '/', file: 'index.html' })
  assert.deepEqual(routes.get('/about.html'), { movedTo: '/about', file: 'about.html' })
  assert.deepEqual(routes.get('/about/'), { movedTo: '/about', file: 'about.html' })
  assert.deepEqual(routes.get('/blog'), { movedTo: '/blog/', file: 'blog/index.html' })
  assert.deepEqual(routes.get('/blog/index.html'), { movedTo: '/blog/', file: 'blog/index.html' })
  // An exact file wins: `/raw` is the file named raw, so raw.html answers at its own path.
  assert.equal(routes.get('/raw'), 'raw')
  assert.equal(routes.get('/raw.html'), 'raw.html')
  assert.deepEqual(canonicalRoutes(['index.html', 'about.html', 'blog/index.html', 'style.css']), ['/', '/about', '/blog/', '/style.css'])
  // A framework site's pages answer without the slash.
  const pages = siteRoutes(['index.html', 'about/index.html', '404.html'], 'pages')
  assert.equal(pages.get('/about'), 'about/index.html')
  assert.deepEqual(pages.get('/about/'), { movedTo: '/about', file: 'about/index.html' })
  assert.deepEqual(pages.get('/about/index.html'), { movedTo: '/about', file: 'about/index.html' })
  assert.deepEqual(canonicalRoutes(['index.html', 'about/index.html'], 'pages'), ['/', '/about'])
})

test('cursors: opaque, refused when foreign; keyset pages neither repeat nor skip', () => {
  assert.deepEqual(decodeCursor(encodeCursor(['a', 3]), 2), ['a', 3])
  refused(() => decodeCursor('not-a-cursor', 1), /not a cursor from this list/)
  refused(() => decodeCursor(encodeCursor(['a']), 2), /not a cursor from this list/)
  const letters = ['a', 'b', 'c', 'd', 'e']
  const first = pageByKey(letters, (x) => x, 2, undefined)
  const second = pageByKey(letters, (x) => x, 2, first.nextCursor!)
  const third = pageByKey(letters, (x) => x, 2, second.nextCursor!)
  assert.deepEqual([first.items, second.items, third.items, third.nextCursor], [['a', 'b'], ['c', 'd'], ['e'], null])
  // Newest first by number, with a filter: an exact last page has no cursor.
  const numbers = [9, 8, 7, 6, 5, 4]
  const page = (below: number) => pageDescending(numbers, { numberOf: (n) => n, below, limit: 2, include: (n) => n % 3 !== 0 })
  const p1 = page(Number.MAX_SAFE_INTEGER)
  assert.deepEqual(p1.items, [8, 7])
  const p2 = page(decodeCursor(p1.nextCursor!, 1)[0] as number)
  assert.deepEqual([p2.items, p2.nextCursor], [[5, 4], null])
})

test('hostnames: a label and its draft host; the API host under the site domain reserves its label', () => {
  assert.deepEqual(siteHostnames('acme', 'example.com'), { published: 'acme.example.com', draft: 'draft--acme.example.com' })
  assert.equal(isDraftLabel('draft--acme'), true)
  assert.equal(isDraftLabel('drafty'), false)
  assert.deepEqual([...reservedLabels(['https://api.example.com'], 'example.com')], ['api'])
  assert.deepEqual([...reservedLabels(['https://draft--api.example.com'], 'example.com')], ['api'])
  assert.deepEqual([...reservedLabels(['https://api.other.org'], 'example.com')], [])
  assert.deepEqual([...reservedLabels([null], 'example.com')], [])
  // Every label of a platform host under the sites' domain: `plinth` too, a parent of the API's host.
  assert.deepEqual([...reservedLabels(['https://api.plinth.test', 'https://app.plinth.test/app'], 'test')].sort(), ['api', 'app', 'plinth'])
  const urls = new PublicUrls('http://localhost:8080', 'localhost')
  assert.equal(urls.published('acme'), 'http://acme.localhost:8080')
  assert.equal(urls.draft('acme'), 'http://draft--acme.localhost:8080')
})

test('a hostname names a label and a channel, or nothing', () => {
  assert.deepEqual(labelOfHost('acme.example.com', 'example.com'), { label: 'acme', draft: false })
  assert.deepEqual(labelOfHost('draft--acme.example.com', 'example.com'), { label: 'acme', draft: true })
  assert.equal(labelOfHost('example.com', 'example.com'), null)
  assert.equal(labelOfHost('a.b.example.com', 'example.com'), null)
  assert.equal(labelOfHost('acmeexample.com', 'example.com'), null)
  assert.equal(labelOfHost('acme.other.org', 'example.com'), null)
})

test('publishing planners: publish, unpublish and rollback decide an outcome from the state, or say what to do', () => {
  const actor = { kind: 'api_key' as const, id: 'key_1', name: null }
  const files = { 'index.html': { hash: 'a'.repeat(64), size: 1, contentType: 'text/html; charset=utf-8' } }
  const v1 = firstVersion('ws_1', actor, 1)
  const v2 = makeVersion('ws_1', 2, files, 'deploy', null, actor, 2)
  const record: WebsiteRecord = {
    v: 1,
    id: 'ws_1',
    orgId: 'org_1',
    seq: 1,
    name: 'a',
    kind: 'static',
    slug: 'a',
    subdomain: 'a',
    description: null,
    headVersion: 2,
    publishedVersion: null,
    createdAt: 1,
    updatedAt: 2,
    deletedAt: null,
    suspendedAt: null,
    suspendedReason: null,
  }
  const versions = new Map([
    [1, v1],
    [2, v2],
  ])
  const state = (over: Partial<PublishingState> = {}): PublishingState => ({
    record,
    head: v2,
    published: null,
    version: (n) => versions.get(n),
    readyBuild: () => null,
    ...over,
  })

  const published = planPublish(state(), 10)
  assert.deepEqual(
    [published.record.publishedVersion, published.published?.version, published.audit?.eventType],
    [2, 2, 'website.published'],
  )
  // Already live: nothing to commit.
  assert.equal(planPublish(state({ record: { ...record, publishedVersion: 2 }, published: v2 }), 10).audit, undefined)
  refused(() => planPublish(state({ head: v1 }), 10), /Version 1 has no files, so there is nothing to publish; deploy files/)
  assert.throws(
    () => planPublish(state({ record: { ...record, suspendedAt: 5, suspendedReason: 'abuse' } }), 10),
    /taken down by the platform \(abuse\)/,
  )
  assert.equal(planUnpublish(record, 10).audit, undefined)
  assert.equal(planUnpublish({ ...record, publishedVersion: 2 }, 10).record.publishedVersion, null)

  // Rolling back to the head's own content publishes the head; to other content, a new head.
  const same = planRollback(state(), 2, actor, 10)
  assert.deepEqual([same.head, same.record.publishedVersion], [undefined, 2])
  const v3 = makeVersion('ws_1', 3, {}, 'delete', null, actor, 3)
  versions.set(3, v3)
  const build = {
    v: 1 as const,
    websiteId: 'ws_1',
    version: 2,
    status: 'ready' as const,
    result: { version: 2, ok: true, diagnostics: [], renderFailures: [], pages: [], timings: {} },
    files: {},
    finishedAt: 4,
  }
  const back = planRollback(state({ head: v3, readyBuild: () => build }), 2, actor, 10)
  assert.deepEqual([back.head?.version, back.head?.source, back.record.publishedVersion, back.build?.version], [4, 'rollback', 4, 4])
  assert.throws(() => planRollback(state(), 9, actor, 10), /Version 9 does not exist; versions run from 1 to 2/)
})
