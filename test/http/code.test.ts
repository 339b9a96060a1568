import assert from 'node:assert/strict'
import { test } from 'node:test'
import { createWebsite, sharedServer, type TestServer } from '../helpers/server.js'

/** One warm server for the file (each test makes its own websites). */
const server = sharedServer()

async function framework(s: TestServer) {
  const w = await createWebsite(s, { name: 'Framework' })
  const lease = (await s.api('POST', `/v1/websites/${w.id}/source/lease`)).body
  return { id: w.id as string, token: lease.leaseToken as string }
}

function put(s: TestServer, id: string, token: string, file: unknown, content: string) {
  return s.api('PUT', `/v1/websites/${id}/source/file`, { body: { leaseToken: token, file, content } })
}

async function read(s: TestServer, id: string, type: string, name?: string) {
  return (await s.api('GET', `/v1/websites/${id}/source/file?type=${type}${name ? `&name=${encodeURIComponent(name)}` : ''}`)).body
}

const PAGE = `import { definePage } from '@platform'
import { Card } from '@components/Card'

// Keep this comment exactly as it is.
const helper = (n: number) => n * 2

export default definePage({
  route: '/about',
  metadata: { title: 'About', description: 'Who we are' },
  render: () => <Card title={String(helper(2))} />,
})
`

test('typed file identities: each broken rule is a 400 that names it; assets point to the asset library', async (t) => {
  const s = await server(t)
  const { id, token } = await framework(s)
  const cases: [unknown, RegExp][] = [
    [{ type: 'stylesheet', name: 'x' }, /must be one of/],
    [{ type: 'page' }, /needs a name/],
    [{ type: 'global_css', name: 'x' }, /singleton and takes no name/],
    [{ type: 'page', name: '/home' }, /may not start with "\/"/],
    [{ type: 'page', name: 'a/../b' }, /"\." or "\.\." segments/],
    [{ type: 'page', name: './a' }, /"\." or "\.\." segments/],
    [{ type: 'component', name: 'A<B' }, /may not contain "<"/],
    [{ type: 'component', name: 'a#b' }, /may not contain "#"/],
    [{ type: 'module', name: 'x'.repeat(256) }, /255/],
    [{ type: 'page', name: 'logo.png' }, /asset library/],
    [{ type: 'page', name: 'foo.tsx' }, /leave the extension out of the name: "foo"/],
    [{ type: 'module', name: 'lib/utils.ts' }, /leave the extension out of the name: "lib\/utils"/],
  ]
  for (const [file, message] of cases) {
    const res = await put(s, id, token, file, 'export {}')
    assert.equal(res.status, 400, JSON.stringify(file))
    assert.equal(res.body.kind, 'validation')
    assert.match(res.body.message, message, JSON.stringify(file))
  }
  for (const file of [
    { type: 'page', name: 'blog/post' },
    { type: 'component', name: 'ui/Button.v2' },
    { type: 'module', name: 'utils' },
    { type: 'not_found' },
  ]) {
    assert.equal((await put(s, id, token, file, 'export const x = 1')).status, 201, JSON.stringify(file))
  }
  const stat = await createWebsite(s, { name: 'static', kind: 'static' })
  const refused = await s.api('POST', `/v1/websites/${stat.id}/source/lease`)
  assert.equal(refused.status, 400)
  assert.match(refused.body.message, /deploy\/json/)
})

test('writes are formatted per type (single quotes, no semicolons, 100 columns); raw HTML is verbatim', async (t) => {
  const s = await server(t)
  const { id, token } = await framework(s)
  const ugly = 'export const greet = (name: string) => { return "Hello, " + name + "!"; };\n'
  const res = await put(s, id, token, { type: 'module', name: 'greet' }, ugly)
  assert.deepEqual([res.status, res.body.formatted, res.body.version], [201, true, 2])
  assert.equal(
    (await read(s, id, 'module', 'greet')).content,
    "export const greet = (name: string) => {\n  return 'Hello, ' + name + '!'\n}\n",
  )
  const page = await put(s, id, token, { type: 'page', name: 'home' }, 'export default () => <div className="a">hi</div>;')
  assert.equal(page.body.formatted, true)
  assert.equal((await read(s, id, 'page', 'home')).content, 'export default () => <div className="a">hi</div>\n')
  const css = await put(s, id, token, { type: 'global_css' }, '@import "tailwindcss";\nbody{color:red}')
  assert.equal(css.body.formatted, true)
  assert.equal((await read(s, id, 'global_css')).content, "@import 'tailwindcss';\nbody {\n  color: red;\n}\n")
  const html = '<script>  window.x=1;;  </script>\n<!--  keep  -->'
  const raw = await put(s, id, token, { type: 'custom_head_end' }, html)
  assert.equal(raw.body.formatted, false)
  assert.equal((await read(s, id, 'custom_head_end')).content, html)
  // Already formatted content: formatted false; identical content: 200 changed false, same version.
  const again = await put(
    s,
    id,
    token,
    { type: 'module', name: 'greet' },
    "export const greet = (name: string) => {\n  return 'Hello, ' + name + '!'\n}\n",
  )
  assert.deepEqual([again.status, again.body.changed, again.body.formatted, again.body.version], [200, false, false, 5])
  const long = `export const list = [${Array.from({ length: 30 }, (_, i) => `'item${i}'`).join(', ')}]`
  await put(s, id, token, { type: 'module', name: 'long' }, long)
  assert.ok((await read(s, id, 'module', 'long')).content.split('\n').every((line: string) => line.length <= 100))
})

test('unparseable code is stored exactly as sent, with formatError at its line and column', async (t) => {
  const s = await server(t)
  const { id, token } = await framework(s)
  const broken = 'export const x = 1\nexport const y = (<div>\n'
  const res = await put(s, id, token, { type: 'component', name: 'Broken' }, broken)
  assert.equal(res.status, 201)
  assert.equal(res.body.formatted, false)
  assert.equal(typeof res.body.formatError.message, 'string')
  assert.equal(res.body.formatError.line, 2)
  assert.equal(typeof res.body.formatError.column, 'number')
  const stored = await read(s, id, 'component', 'Broken')
  assert.equal(stored.content, broken)
  assert.deepEqual([stored.bytes, stored.lines], [Buffer.byteLength(broken), 2])
  const css = await put(s, id, token, { type: 'global_css' }, 'body { color: red')
  assert.ok(css.body.formatError)
})

test('a file whose formatting would pass the 1 MiB limit is stored as sent, and the answer names both sizes', async (t) => {
  const s = await server(t)
  const { id, token } = await framework(s)
  // 1,000 nested elements: 11 KB as sent, about 2 MB once every level is indented on its own lines.
  const nested = `export const X = () => <>${'<div>'.repeat(1000)}x${'</div>'.repeat(1000)}</>\n`
  const res = await put(s, id, token, { type: 'component', name: 'Nested' }, nested)
  assert.equal(res.status, 201, JSON.stringify(res.body))
  assert.equal(res.body.formatted, false)
  assert.match(
    res.body.formatError.message,
    new RegExp(
      `^formatting would make the file \\d+ bytes, over the limit of 1048576 bytes \\(you sent ${Buffer.byteLength(nested)}\\); it is stored as sent`,
    ),
  )
  assert.equal((await read(s, id, 'component', 'Nested')).content, nested)
})

test('a new lease replaces the old: the old token is 409 Invalid edit lease with a hint to re-acquire and re-read', async (t) => {
  const s = await server(t)
  const w = await createWebsite(s, { name: 'leased' })
  const none = await put(s, w.id, 'wl_never', { type: 'module', name: 'a' }, 'export {}')
  assert.equal(none.status, 409)
  assert.equal(none.body.message, 'Invalid edit lease')
  const first = (await s.api('POST', `/v1/websites/${w.id}/source/lease`)).body
  assert.match(first.leaseToken, /^wl_/)
  assert.equal(first.headVersion, 1)
  assert.equal((await put(s, w.id, first.leaseToken, { type: 'module', name: 'a' }, 'export const a = 1\n')).status, 201)
  const second = (await s.api('POST', `/v1/websites/${w.id}/source/lease`)).body
  assert.equal(second.headVersion, 2)
  const stale = await put(s, w.id, first.leaseToken, { type: 'module', name: 'a' }, 'export const a = 2\n')
  assert.equal(stale.status, 409)
  assert.equal(stale.body.kind, 'conflict')
  assert.equal(stale.body.message, 'Invalid edit lease')
  assert.match(stale.body.details.hint, /re-read/)
  assert.match(stale.body.details.hint, /acquire_edit_lease/)
  for (const [method, path, body] of [
    ['DELETE', '/source/file', { leaseToken: first.leaseToken, file: { type: 'module', name: 'a' } }],
    [
      'POST',
      '/source/str-replace',
      { leaseToken: first.leaseToken, files: [{ file: { type: 'module', name: 'a' }, edits: [{ oldStr: '1', newStr: '3' }] }] },
    ],
    ['PATCH', '/source/metadata', { leaseToken: first.leaseToken, metadata: { title: 'x' } }],
  ] as const) {
    const res = await s.api(method, `/v1/websites/${w.id}${path}`, { body })
    assert.equal(res.status, 409, path)
    assert.equal(res.body.message, 'Invalid edit lease')
  }
  assert.equal((await read(s, w.id, 'module', 'a')).content, 'export const a = 1\n')
  assert.equal((await put(s, w.id, second.leaseToken, { type: 'module', name: 'a' }, 'export const a = 2\n')).status, 201)
})

test('racing a write with an old token against a new lease: the write never lands after the lease was taken', async (t) => {
  const s = await server(t)
  const w = await createWebsite(s, { name: 'race' })
  for (let round = 0; round < 10; round++) {
    const old = (await s.api('POST', `/v1/websites/${w.id}/source/lease`)).body.leaseToken
    const [write, lease] = await Promise.all([
      put(s, w.id, old, { type: 'module', name: `m${round}` }, `export const m = ${round}\n`),
      s.api('POST', `/v1/websites/${w.id}/source/lease`),
    ])
    if (write.status === 201) assert.ok(lease.body.headVersion >= write.body.version, 'the new lease saw the write')
    else assert.equal(write.status, 409)
  }
  // One token, many concurrent writers: every write lands as its own version, none is lost.
  const token = (await s.api('POST', `/v1/websites/${w.id}/source/lease`)).body.leaseToken
  const before = (await s.api('GET', `/v1/websites/${w.id}`)).body.headVersion
  const writes = await Promise.all(
    Array.from({ length: 6 }, (_, i) => put(s, w.id, token, { type: 'component', name: `C${i}` }, `export const C${i} = ${i}\n`)),
  )
  assert.deepEqual(
    writes.map((r) => r.status),
    [201, 201, 201, 201, 201, 201],
  )
  assert.deepEqual(
    writes.map((r) => r.body.version).sort((a, b) => a - b),
    [1, 2, 3, 4, 5, 6].map((n) => before + n),
  )
  const tree = (await s.api('GET', `/v1/websites/${w.id}/source/tree?type=component`)).body.items
  assert.equal(tree.length, 6)
})

test('str-replace is atomic, matches ignoring whitespace when needed, honours replaceAll and dryRun', async (t) => {
  const s = await server(t)
  const { id, token } = await framework(s)
  await put(s, id, token, { type: 'page', name: 'about' }, PAGE)
  await put(s, id, token, { type: 'module', name: 'words' }, "export const words = ['a', 'a', 'b']\n")
  const head = (await s.api('GET', `/v1/websites/${id}`)).body.headVersion
  const url = `/v1/websites/${id}/source/str-replace`
  const failing = await s.api('POST', url, {
    body: {
      leaseToken: token,
      files: [
        { file: { type: 'page', name: 'about' }, edits: [{ oldStr: "title: 'About'", newStr: "title: 'Team'" }] },
        {
          file: { type: 'module', name: 'words' },
          edits: [
            { oldStr: "'a'", newStr: "'z'" },
            { oldStr: 'missing text', newStr: 'x' },
          ],
        },
      ],
    },
  })
  assert.equal(failing.status, 400)
  assert.deepEqual(
    failing.body.details.problems.map((p: any) => [p.file, p.edit, p.reason, p.count]),
    [
      ['module:words', 1, 'ambiguous', 2],
      ['module:words', 2, 'not_found', 0],
    ],
  )
  // An ambiguous edit says where its matches are.
  assert.deepEqual(failing.body.details.problems[0].lines, [1, 1])
  assert.match(failing.body.details.problems[0].message, /found 2 times \(lines 1, 1\)/)
  assert.equal((await s.api('GET', `/v1/websites/${id}`)).body.headVersion, head)
  assert.match((await read(s, id, 'page', 'about')).content, /title: 'About'/)
  const dry = await s.api('POST', url, {
    body: { dryRun: true, files: [{ file: { type: 'page', name: 'about' }, edits: [{ oldStr: "title: 'About'", newStr: 'x' }] }] },
  })
  assert.deepEqual([dry.status, dry.body.dryRun, dry.body.changed, dry.body.version], [200, true, true, head])
  assert.deepEqual(
    dry.body.files.map((f: any) => f.file),
    [{ type: 'page', name: 'about' }],
    'a dry run lists what it would change',
  )
  assert.equal((await s.api('GET', `/v1/websites/${id}/source/summary`)).body.headVersion, head, 'and writes nothing')
  const dryBad = await s.api('POST', url, {
    body: { dryRun: true, files: [{ file: { type: 'page', name: 'about' }, edits: [{ oldStr: 'nope', newStr: 'x' }] }] },
  })
  assert.equal(dryBad.status, 400)
  assert.equal(
    (await s.api('POST', url, { body: { files: [{ file: { type: 'page', name: 'about' }, edits: [{ oldStr: 'a', newStr: 'b' }] }] } }))
      .status,
    400,
  )
  const ok = await s.api('POST', url, {
    body: {
      leaseToken: token,
      files: [
        // Exact text differs only in whitespace: still exactly one match.
        {
          file: { type: 'page', name: 'about' },
          edits: [
            {
              oldStr: "metadata: {  title:   'About',\n description: 'Who we are' }",
              newStr: "metadata: { title: 'Team', description: 'Who we are' }",
            },
          ],
        },
        { file: { type: 'module', name: 'words' }, edits: [{ oldStr: "'a'", newStr: "'z'", replaceAll: true }] },
      ],
    },
  })
  assert.equal(ok.status, 201, JSON.stringify(ok.body))
  assert.equal(ok.body.version, head + 1)
  assert.match((await read(s, id, 'page', 'about')).content, /metadata: \{ title: 'Team', description: 'Who we are' \}/)
  assert.equal((await read(s, id, 'module', 'words')).content, "export const words = ['z', 'z', 'b']\n")
  const tooMany = await s.api('POST', url, {
    body: {
      dryRun: true,
      files: Array.from({ length: 3 }, () => ({
        file: { type: 'module', name: 'words' },
        edits: Array.from({ length: 70 }, () => ({ oldStr: 'z', newStr: 'y' })),
      })),
    },
  })
  assert.equal(tooMany.status, 400)
  assert.match(tooMany.body.message, /200 edits/)
  await put(s, id, token, { type: 'module', name: 'ones' }, 'export const a = 1\nexport const b = 2\nexport const c = 1\n')
  const spread = await s.api('POST', url, {
    body: {
      dryRun: true,
      files: [
        {
          file: { type: 'module', name: 'ones' },
          edits: [
            { oldStr: '= 1', newStr: '= 3' },
            { oldStr: '=1\n', newStr: '= 3\n' },
          ],
        },
      ],
    },
  })
  assert.deepEqual(
    spread.body.details.problems.map((p: any) => [p.reason, p.lines]),
    [
      ['ambiguous', [1, 3]],
      ['ambiguous', [1, 3]],
    ],
  )
  assert.match(spread.body.details.problems[1].message, /ignoring whitespace it is found 2 times \(lines 1, 3\)/)
})

test('setPageRoute normalises the route, refuses /_platform, and keeps the rest of the file byte-identical', async (t) => {
  const s = await server(t)
  const { id, token } = await framework(s)
  await put(s, id, token, { type: 'page', name: 'about' }, PAGE)
  const before = (await read(s, id, 'page', 'about')).content
  const url = `/v1/websites/${id}/source/pages/route`
  const res = await s.api('PATCH', url, { body: { leaseToken: token, page: 'about', route: 'team/:member/' } })
  assert.equal(res.status, 201)
  assert.equal(res.body.route, '/team/:member')
  const after = (await read(s, id, 'page', 'about')).content
  assert.equal(after, before.replace("route: '/about'", "route: '/team/:member'"))
  for (const [route, message] of [
    ['/_platform/x', /reserved/],
    ['/_platform', /reserved/],
    ['/a/:b/:c', /one dynamic segment/],
    ['/a/:1x', /parameter/],
    ['/a b', /path only/],
  ] as const) {
    const bad = await s.api('PATCH', url, { body: { leaseToken: token, page: 'about', route } })
    assert.equal(bad.status, 400, route)
    assert.match(bad.body.message, message, route)
  }
  assert.equal((await s.api('PATCH', url, { body: { leaseToken: token, page: 'nope', route: '/x' } })).status, 404)
  assert.equal((await s.api('PATCH', url, { body: { leaseToken: token, page: 'about', route: '/' } })).body.route, '/')
})

test('setMetadata rewrites only the metadata of a page, or the site defaults in website_config', async (t) => {
  const s = await server(t)
  const { id, token } = await framework(s)
  await put(s, id, token, { type: 'page', name: 'about' }, PAGE)
  const before: string = (await read(s, id, 'page', 'about')).content
  const res = await s.api('PATCH', `/v1/websites/${id}/source/metadata`, {
    body: { leaseToken: token, page: 'about', metadata: { title: 'About {{ data.team.name }}', description: 'Our people' } },
  })
  assert.equal(res.status, 201)
  const after: string = (await read(s, id, 'page', 'about')).content
  assert.match(after, /title: 'About \{\{ data\.team\.name \}\}'/)
  // Everything outside the metadata property keeps its bytes.
  const head = (text: string) => text.slice(0, text.indexOf('  metadata:'))
  const tail = (text: string) => text.slice(text.indexOf('  render:'))
  assert.equal(head(after), head(before))
  assert.equal(tail(after), tail(before))
  assert.ok(after.includes('// Keep this comment exactly as it is.\nconst helper = (n: number) => n * 2'))
  // Without page: website_config, created when missing, then edited in place.
  const site = await s.api('PATCH', `/v1/websites/${id}/source/metadata`, {
    body: { leaseToken: token, metadata: { title: 'Site', titleTemplate: '%s | Site' } },
  })
  assert.equal(site.status, 201)
  assert.deepEqual(site.body.file, { type: 'website_config' })
  const config: string = (await read(s, id, 'website_config')).content
  assert.match(config, /defineWebsiteConfig\(\{/)
  assert.match(config, /titleTemplate: '%s \| Site'/)
  await put(
    s,
    id,
    token,
    { type: 'website_config' },
    config.replace('defineWebsiteConfig({', "defineWebsiteConfig({\n  redirects: [{ from: '/old', to: '/new' }],"),
  )
  await s.api('PATCH', `/v1/websites/${id}/source/metadata`, { body: { leaseToken: token, metadata: { title: 'Renamed' } } })
  const edited: string = (await read(s, id, 'website_config')).content
  assert.match(edited, /title: 'Renamed'/)
  assert.doesNotMatch(edited, /titleTemplate/)
  assert.match(edited, /redirects: \[\{ from: '\/old', to: '\/new' \}\]/)
  // Only the fields @platform's Metadata type has: a stray key is a 400 now, not a typecheck error later.
  for (const [metadata, field] of [
    [{ bogusKey: 'x' }, 'body.metadata.bogusKey'],
    [{ openGraph: { img: '/x.png' } }, 'body.metadata.openGraph.img'],
    [{ twitter: { card: 'large' } }, 'body.metadata.twitter.card'],
  ] as const) {
    const bad = await s.api('PATCH', `/v1/websites/${id}/source/metadata`, { body: { leaseToken: token, metadata } })
    assert.equal(bad.status, 400, JSON.stringify(metadata))
    assert.equal(bad.body.details.field, field)
  }
})

test('search: text or regex, case, type and glob filters, context lines and truncation', async (t) => {
  const s = await server(t)
  const { id, token } = await framework(s)
  await put(s, id, token, { type: 'page', name: 'blog/index' }, "export const title = 'Blog'\nexport const TITLE = 'BLOG'\n")
  await put(s, id, token, { type: 'page', name: 'blog/post' }, "const a = 'blog'\nconst b = 'blog'\nconst c = 'blog'\n")
  await put(s, id, token, { type: 'component', name: 'BlogCard' }, "export const BlogCard = 'card'\n")
  const search = async (body: Record<string, unknown>) => (await s.api('POST', `/v1/websites/${id}/source/search`, { body })).body
  const plain = await search({ pattern: 'blog' })
  assert.equal(plain.matches.length, 6)
  const sensitive = await search({ pattern: 'blog', caseSensitive: true })
  assert.equal(sensitive.matches.length, 3)
  const regex = await search({ pattern: '^export const [A-Z]+\\b', isRegex: true, caseSensitive: true })
  assert.deepEqual(
    regex.matches.map((m: any) => [m.file.name, m.line, m.column]),
    [['blog/index', 2, 1]],
  )
  const typed = await search({ pattern: 'card', type: 'component' })
  assert.deepEqual(typed.files, [{ file: { type: 'component', name: 'BlogCard' }, matches: 2 }])
  const globbed = await search({ pattern: 'const', nameGlob: 'blog/p*', filesOnly: true })
  assert.deepEqual(globbed.files, [{ file: { type: 'page', name: 'blog/post' }, matches: 3 }])
  assert.deepEqual(globbed.matches, [])
  const context = await search({ pattern: "b = 'blog'", contextLines: 1 })
  assert.deepEqual([context.matches[0].before, context.matches[0].after], [["const a = 'blog'"], ["const c = 'blog'"]])
  const capped = await search({ pattern: 'blog', maxMatchesPerFile: 2 })
  assert.equal(capped.truncated, true)
  assert.equal(capped.matches.filter((m: any) => m.file.name === 'blog/post').length, 2)
  const tooMuchContext = await s.api('POST', `/v1/websites/${id}/source/search`, { body: { pattern: 'x', contextLines: 4 } })
  assert.equal(tooMuchContext.status, 400)
  const invalid = await s.api('POST', `/v1/websites/${id}/source/search`, { body: { pattern: '(unclosed', isRegex: true } })
  assert.equal(invalid.status, 400)
  assert.equal(invalid.body.details.field, 'body.pattern')
})

test('a catastrophic regular expression is stopped and answered 400 within a second; the server keeps serving', async (t) => {
  const s = await server(t)
  const { id, token } = await framework(s)
  await put(s, id, token, { type: 'module', name: 'aaa' }, `export const s = '${'a'.repeat(40)}!'\n`)
  const started = Date.now()
  const res = await s.api('POST', `/v1/websites/${id}/source/search`, { body: { pattern: '(a+)+$', isRegex: true } })
  const elapsed = Date.now() - started
  assert.equal(res.status, 400)
  assert.match(res.body.message, /too|longer/)
  assert.ok(elapsed < 1000, `answered after ${elapsed} ms`)
  assert.equal((await s.api('GET', '/v1/me')).status, 200)
  const after = await s.api('POST', `/v1/websites/${id}/source/search`, { body: { pattern: 'export' } })
  assert.equal(after.body.matches.length, 1)
})

test('diffs between versions, by default from the published version (none: empty) to the head', async (t) => {
  const s = await server(t)
  const { id, token } = await framework(s)
  await put(s, id, token, { type: 'module', name: 'm' }, 'export const a = 1\n')
  await put(s, id, token, { type: 'module', name: 'm' }, 'export const a = 2\n')
  const byDefault = (await s.api('GET', `/v1/websites/${id}/source/file/diff?type=module&name=m`)).body
  assert.deepEqual([byDefault.from, byDefault.to, byDefault.changed], [0, 3, true])
  assert.match(byDefault.diff, /\+export const a = 2/)
  const between = (await s.api('GET', `/v1/websites/${id}/source/file/diff?type=module&name=m&from=2&to=3`)).body
  assert.match(between.diff, /^--- a\/modules\/m\.ts/m)
  assert.match(between.diff, /-export const a = 1\n\+export const a = 2/)
  const same = (await s.api('GET', `/v1/websites/${id}/source/file/diff?type=module&name=m&from=3&to=3`)).body
  assert.deepEqual([same.changed, same.diff], [false, ''])
  assert.equal((await s.api('GET', `/v1/websites/${id}/source/file/diff?type=module&name=m&from=9`)).status, 404)
})

test('the tree lists typed files by type and name, with globs, line counts and paging; reads and deletes by identity', async (t) => {
  const s = await server(t)
  const { id, token } = await framework(s)
  await put(s, id, token, { type: 'website_config' }, "export default { metadata: { title: 'x' } }\n")
  for (const name of ['home', 'blog/index', 'blog/post']) await put(s, id, token, { type: 'page', name }, `export const page = '${name}'\n`)
  await put(s, id, token, { type: 'component', name: 'Card' }, 'export const Card = () => null;')
  await put(s, id, token, { type: 'not_found' }, 'export default function NotFound() { return <p>gone</p>; }')
  const tree = (await s.api('GET', `/v1/websites/${id}/source/tree?lines=true`)).body
  assert.deepEqual(
    tree.items.map((i: any) => [i.file.type, i.file.name ?? null, i.lines]),
    [
      ['page', 'blog/index', 1],
      ['page', 'blog/post', 1],
      ['page', 'home', 1],
      ['component', 'Card', 1],
      ['not_found', null, 3],
      ['website_config', null, 1],
    ],
  )
  // Components and not_found are formatted like pages.
  assert.equal((await read(s, id, 'component', 'Card')).content, 'export const Card = () => null\n')
  assert.equal((await read(s, id, 'not_found')).content, 'export default function NotFound() {\n  return <p>gone</p>\n}\n')
  const blog = (await s.api('GET', `/v1/websites/${id}/source/tree?nameGlob=blog/*&type=page`)).body
  assert.deepEqual(
    blog.items.map((i: any) => i.file.name),
    ['blog/index', 'blog/post'],
  )
  const first = (await s.api('GET', `/v1/websites/${id}/source/tree?limit=4`)).body
  const rest = (await s.api('GET', `/v1/websites/${id}/source/tree?limit=4&cursor=${first.nextCursor}`)).body
  assert.deepEqual([first.items.length, rest.items.length, rest.nextCursor], [4, 2, null])
  const many = await s.api('POST', `/v1/websites/${id}/source/file/read`, {
    body: { files: [{ type: 'page', name: 'home' }, { type: 'page', name: 'nope' }, { type: 'website_config' }] },
  })
  assert.deepEqual(
    many.body.files.map((f: any) => f.file.type),
    ['page', 'website_config'],
  )
  assert.deepEqual(many.body.missing, [{ type: 'page', name: 'nope' }])
  const deleted = await s.api('DELETE', `/v1/websites/${id}/source/file`, {
    body: { leaseToken: token, file: { type: 'page', name: 'home' }, message: 'drop home' },
  })
  assert.deepEqual([deleted.status, deleted.body.changed], [200, true])
  assert.equal(
    (await s.api('GET', `/v1/websites/${id}/source/versions`)).body.items[0].message,
    'drop home',
    'the message the caller gave is kept',
  )
  assert.equal((await s.api('GET', `/v1/websites/${id}/source/file?type=page&name=home`)).status, 404)
  assert.equal(
    (await s.api('DELETE', `/v1/websites/${id}/source/file`, { body: { leaseToken: token, file: { type: 'page', name: 'home' } } })).status,
    404,
  )
  // The earlier version still has it.
  const old = await s.api('GET', `/v1/websites/${id}/source/file?type=page&name=home&version=3`)
  assert.equal(old.body.content, "export const page = 'home'\n")
})
