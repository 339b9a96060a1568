import assert from 'node:assert/strict'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { createWebsite, sharedServer, type TestServer } from '../helpers/server.js'
import { API_POLL_MS, waitUntil } from '../helpers/wait.js'

/** One warm server for the file; a render CPU budget of 2 s instead of 5 s, so looping pages stop sooner (the rules are the same). */
const server = sharedServer({}, { renderCpuBudgetMs: 2000 })

async function site(s: TestServer, files: [Record<string, string>, string][]) {
  const w = await createWebsite(s, { name: 'Gate' })
  const token = (await s.api('POST', `/v1/websites/${w.id}/source/lease`)).body.leaseToken
  for (const [file, content] of files) {
    const res = await s.api('PUT', `/v1/websites/${w.id}/source/file`, { body: { leaseToken: token, file, content } })
    assert.ok(res.status === 201 || res.status === 200, JSON.stringify(res.body))
  }
  return w.id as string
}

async function check(s: TestServer, id: string) {
  const res = await s.api('POST', `/v1/websites/${id}/head/check`)
  assert.equal(res.status, 200, JSON.stringify(res.body))
  return res.body
}

/** Page name to its render failure message. */
const failuresOf = (result: any): Record<string, string> => Object.fromEntries(result.renderFailures.map((f: any) => [f.pageId, f.message]))

/** The 1-based line of the stored (formatted) text of a typed file that holds `needle`. */
async function storedLine(s: TestServer, id: string, type: string, name: string | undefined, needle: string): Promise<number> {
  const file = (await s.api('GET', `/v1/websites/${id}/source/file?type=${type}${name === undefined ? '' : `&name=${name}`}`)).body
  return (file.content as string).split('\n').findIndex((l) => l.includes(needle)) + 1
}

const page = (route: string, body: string, imports = '') =>
  `import { definePage } from '@platform'\n${imports}\nexport default definePage({ route: '${route}', render: () => ${body} })\n`

test('a passing site: every page renders in an isolate, with components, modules and pinned packages', async (t) => {
  const s = await server(t)
  const id = await site(s, [
    [
      { type: 'page', name: 'home' },
      page('/', '<Card title={format(0)} />', "import { Card } from '@components/Card'\nimport { format } from '@modules/fmt'"),
    ],
    [
      { type: 'page', name: 'blog/post' },
      "import { definePage } from '@platform'\nimport { z } from 'zod@4.6.2'\nexport default definePage({ route: '/blog/:slug', render: ({ params }) => <p>{z.string().parse(params.slug)}</p> })\n",
    ],
    [
      { type: 'component', name: 'Card' },
      "import { clsx } from 'clsx@2.1.1'\nexport function Card({ title }: { title: string }) { return <h2 className={clsx('card', { big: true })}>{title}</h2> }\n",
    ],
    [
      { type: 'module', name: 'fmt' },
      "import slugify from 'slugify@1.6.9'\nexport const format = (n: number) => slugify('Hello World ' + n)\n",
    ],
    [{ type: 'not_found' }, 'export default function NotFound() { return <p>Not here</p> }\n'],
  ])
  const result = await check(s, id)
  assert.equal(result.ok, true, JSON.stringify(result))
  // The dynamic route passes (a warning, not an error) and says that it generates no pages.
  assert.deepEqual(
    result.diagnostics.map((d: any) => [d.severity, d.file]),
    [['warning', 'page:blog/post']],
  )
  assert.match(
    result.diagnostics[0].message,
    /route \/blog\/:slug is dynamic, but its queries look no CMS item up by its parameter.*no pages are generated.*\/blog\/first-post/,
  )
  assert.deepEqual(result.renderFailures, [])
  assert.deepEqual(
    result.pages.sort((a: any, b: any) => a.name.localeCompare(b.name)),
    [
      { name: 'blog/post', route: '/blog/:slug', renders: true },
      { name: 'home', route: '/', renders: true },
    ],
  )
  assert.equal(result.version, 6)
  for (const step of ['lint', 'bundle', 'render', 'total']) assert.equal(typeof result.timings[step], 'number', step)
})

test('lint: every import rule and route rule fails with its message, naming file, line and column', async (t) => {
  const s = await server(t)
  const id = await site(s, [
    [
      { type: 'page', name: 'home' },
      [
        "import { definePage } from '@platform'",
        "import x from './local'",
        "import fs from 'node:fs'",
        "import path from 'path'",
        "import logo from 'logo.png'",
        "import { createRoot } from 'react-dom/client'",
        "import clsx from 'clsx'",
        "import { format } from 'date-fns@3.0.0'",
        "import left from 'left-pad@1.0.0'",
        "import { Missing } from '@components/Missing'",
        "export default definePage({ route: '/dup', render: () => null })",
      ].join('\n'),
    ],
    [{ type: 'page', name: 'other' }, page('/dup', 'null', "import { format } from 'date-fns@4.4.0'")],
    [{ type: 'page', name: 'reserved' }, page('/_platform/x', 'null')],
    [{ type: 'page', name: 'two' }, page('/a/:b/:c', 'null')],
    [{ type: 'website_config' }, "const base = { title: 'x' }\nconst key = 'k'\nexport default { metadata: { ...base }, [key]: 1 }\n"],
  ])
  const result = await check(s, id)
  assert.equal(result.ok, false)
  const messages = result.diagnostics.map((d: any) => `${d.file}:${d.line} ${d.message}`)
  const expect = [
    [/page:home:2 relative import "\.\/local"/],
    [/page:home:3 "node:fs" is a Node\.js built-in/],
    [/page:home:4 "path" is a Node\.js built-in/],
    [/page:home:5 "logo\.png" is an asset/],
    [/page:home:6 "react-dom\/client" is a DOM renderer package/],
    [/page:home:7 "clsx" is not pinned: import it as "clsx@2\.1\.1"/],
    [/page:home:8 .*the required pin is date-fns@4\.4\.0/],
    [/page:home:9 package "left-pad" is not allowed/],
    [/page:home:10 "@components\/Missing" does not exist/],
    [/route \/dup is also the route of page:home/],
    [/page:reserved:3 .*reserved/],
    [/page:two:3 .*one dynamic segment/],
    [/two versions of date-fns/],
    [/website_config:3 website_config must be a literal object: no spreads/],
    [/website_config:3 website_config must be a literal object: no computed keys/],
  ]
  for (const [pattern] of expect)
    assert.ok(
      messages.some((m: string) => pattern.test(m)),
      `${pattern} not in\n${messages.join('\n')}`,
    )
  assert.ok(result.diagnostics.every((d: any) => d.step === 'lint' && d.severity === 'error' && d.column >= 1))
  // Nothing rendered (renders: null, not attempted), but each page's declared route is still
  // reported (null where it is not valid).
  assert.deepEqual(Object.fromEntries(result.pages.map((p: any) => [p.name, [p.route, p.renders]])), {
    home: ['/dup', null],
    other: ['/dup', null],
    reserved: [null, null],
    two: [null, null],
  })
})

test('render failures: a throw, an endless loop, a memory bomb and deep recursion each fail only their page', async (t) => {
  const s = await server(t)
  const id = await site(s, [
    [{ type: 'page', name: 'good' }, page('/', '<p>fine</p>')],
    [{ type: 'page', name: 'throws' }, page('/throws', "{ throw new Error('kaboom') }")],
    [{ type: 'page', name: 'loops' }, page('/loops', '{ for (;;) {} }')],
    // Waiting uses no CPU: it is stopped at the same 2 s, and said to be a wait.
    [{ type: 'page', name: 'waits' }, page('/waits', '{ Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0); return null }')],
    // 8 MB arrays reach the 256 MB heap in well under a second. (A bomb of 1 MB strings takes about
    // 6 s of CPU to fill the heap on this machine, so the CPU budget stops it first: also only its page.)
    [{ type: 'page', name: 'bomb' }, page('/bomb', '{ const a: number[][] = []; for (;;) a.push(new Array(1e6).fill(a.length)) }')],
    [{ type: 'page', name: 'deep' }, page('/deep', '{ const f = (n: number): number => f(n + 1) + 1; return <p>{f(0)}</p> }')],
    [{ type: 'page', name: 'after' }, page('/after', '<p>still rendering</p>')],
    [{ type: 'page', name: 'nested' }, page('/nested', '<Shout text={undefined} />', "import { Shout } from '@components/Shout'")],
    [
      { type: 'component', name: 'Shout' },
      'export function Shout({ text }: { text?: string }) {\n  const upper = text!.toUpperCase()\n  return <p>{upper}</p>\n}\n',
    ],
    // A browser global touched in an early statement of an arrow function's body.
    [
      { type: 'page', name: 'browser' },
      page('/browser', '{\n  const a = 1\n  window.scrollTo(0, a)\n  const b = a + 1\n  return <p>{b}</p>\n}'),
    ],
  ])
  const started = Date.now()
  const result = await check(s, id)
  const elapsed = Date.now() - started
  assert.equal(result.ok, false)
  const failures = failuresOf(result)
  assert.match(failures.throws, /kaboom/)
  assert.match(failures.loops, /^render used more than 2 s of CPU and was stopped/)
  assert.match(failures.waits, /^render blocked for 2 s without using the CPU \(Atomics\.wait or another wait\)/)
  assert.match(failures.bomb, /memory|MB/)
  assert.match(failures.deep, /call stack/)
  assert.equal(failures.good, undefined)
  assert.equal(failures.after, undefined)
  assert.equal(result.pages.find((p: any) => p.name === 'after').renders, true)
  assert.equal(result.renderFailures.find((f: any) => f.pageId === 'loops').route, '/loops')
  // A throw names the line of the site's file it came from (the stored, formatted text), not the
  // bundle's or React's: the page's own line, or the component's when the page only used it.
  const lineOf = (type: string, name: string, needle: string) => storedLine(s, id, type, name, needle)
  const throwLine = await lineOf('page', 'throws', 'kaboom')
  const shoutLine = await lineOf('component', 'Shout', 'toUpperCase')
  assert.match(failures.throws, new RegExp(`kaboom \\(at page:throws:${throwLine}:\\d+\\)$`))
  assert.match(failures.nested, new RegExp(`toUpperCase.*\\(at component:Shout:${shoutLine}:\\d+\\)$`))
  assert.match(
    failures.browser,
    new RegExp(
      `window is not defined: pages render on the server first, .*use it in useEffect or an event handler.* \\(at page:browser:${await lineOf('page', 'browser', 'window.scrollTo')}:\\d+\\)$`,
    ),
  )
  const diagnostic = (file: string) => result.diagnostics.find((d: any) => d.step === 'render' && d.file === file)
  assert.deepEqual([diagnostic('page:throws').severity, diagnostic('page:throws').line], ['error', throwLine])
  assert.equal(diagnostic('component:Shout').line, shoutLine)
  assert.match(diagnostic('component:Shout').message, /page nested failed to render/)
  // No stack frame to point at: the page itself is named, without a line.
  assert.equal(diagnostic('page:loops').line, undefined)
  assert.ok(elapsed < 60_000, `${elapsed} ms`)
  // The server kept serving while the bad pages ran.
  assert.equal((await s.api('GET', '/v1/me')).status, 200)
})

test('whatever a page throws is described inside its budgets: a looping message getter, a huge message, a thrown non-Error', async (t) => {
  const s = await server(t)
  const id = await site(s, [
    [
      { type: 'page', name: 'getter' },
      page('/getter', "{ const e = new Error('x'); Object.defineProperty(e, 'message', { get() { for (;;) {} } }); throw e }"),
    ],
    [{ type: 'page', name: 'huge' }, page('/huge', "{ throw new Error('A'.repeat(5_000_000)) }")],
    [{ type: 'page', name: 'text' }, page('/text', "{ throw 'just text' }")],
    [{ type: 'page', name: 'object' }, page('/object', '{ throw { code: 42 } }')],
    [{ type: 'page', name: 'child' }, page('/child', '<p>{{ a: 1 } as unknown as string}</p>')],
    // Pages share an isolate: each creates its error, then turns stack traces off for whatever runs next.
    [
      { type: 'page', name: 'quiet1' },
      page('/quiet1', "{ const e = new Error('q1'); Object.assign(Error, { stackTraceLimit: 0 }); throw e }"),
    ],
    [
      { type: 'page', name: 'quiet2' },
      page('/quiet2', "{ const e = new Error('q2'); Object.assign(Error, { stackTraceLimit: 0 }); throw e }"),
    ],
  ])
  const result = await check(s, id)
  const failures = failuresOf(result)
  assert.match(failures.getter, /more than 2 s of CPU/)
  assert.ok(failures.huge.length < 3000, `${failures.huge.length} characters`)
  assert.match(failures.huge, /^A+ \.\.\. \(4998000 more characters\) \(at page:huge:\d+:\d+\)$/)
  assert.match(failures.text, /^threw a value that is not an Error: "just text"/)
  assert.match(failures.object, /^threw a value that is not an Error: \{"code":42\}/)
  // React's numbered production errors come with what they mean.
  assert.match(failures.child, /Minified React error #31.*\(React error 31: an object was rendered as a child/)
  // Whichever renders second is still located: one page's setting does not reach the next.
  assert.match(failures.quiet1, /^q1 \(at page:quiet1:\d+:\d+\)$/)
  assert.match(failures.quiet2, /^q2 \(at page:quiet2:\d+:\d+\)$/)
  // Nothing keeps running once the check and the head's background build are over.
  const head = (await s.api('GET', `/v1/websites/${id}`)).body.headVersion
  await waitUntil(
    async () => (await s.api('GET', `/v1/websites/${id}/deployments/status?version=${head}`)).body.status !== 'building',
    'the head build to end',
    30_000,
    API_POLL_MS,
  )
  const before = process.cpuUsage()
  // A pause that is the point: the CPU an idle server uses over 1.5 s.
  await new Promise((r) => setTimeout(r, 1500))
  const used = process.cpuUsage(before)
  assert.ok(
    used.user + used.system < 700_000,
    `the process used ${Math.round((used.user + used.system) / 1000)} ms of CPU in 1.5 s while idle`,
  )
})

test('code that throws while the site loads fails the check with a diagnostic at the line that threw', async (t) => {
  const s = await server(t)
  const id = await site(s, [
    [{ type: 'page', name: 'home' }, page('/', '<p>{settings.name}</p>', "import { settings } from '@modules/settings'")],
    [
      { type: 'module', name: 'settings' },
      "const read = (): { name: string } => {\n  throw new Error('settings are missing')\n}\nexport const settings = read()\n",
    ],
  ])
  const result = await check(s, id)
  assert.equal(result.ok, false)
  assert.match(result.message, /failed while loading/)
  const [diagnostic] = result.diagnostics
  assert.equal(diagnostic.step, 'render')
  assert.match(diagnostic.message, /settings are missing/)
  assert.equal(diagnostic.file, 'module:settings')
  assert.equal(diagnostic.line, await storedLine(s, id, 'module', 'settings', 'settings are missing'))
})

test('a site without pages, or with code that does not bundle, fails with diagnostics', async (t) => {
  const s = await server(t)
  const empty = await site(s, [[{ type: 'module', name: 'x' }, 'export const x = 1\n']])
  const none = await check(s, empty)
  assert.equal(none.ok, false)
  assert.match(none.message, /no pages/)
  const broken = await site(s, [
    [
      { type: 'page', name: 'home' },
      "import { definePage } from '@platform'\nexport default definePage({ route: '/', render: () => <div> })\n",
    ],
  ])
  const result = await check(s, broken)
  assert.equal(result.ok, false)
  // The syntax error stops the gate at the first step that parses the file (typecheck, before bundle).
  const diagnostic = result.diagnostics.find((d: any) => d.step === 'typecheck' || d.step === 'bundle')
  assert.ok(diagnostic, JSON.stringify(result.diagnostics))
  assert.equal(diagnostic.file, 'page:home')
  assert.equal(diagnostic.line, 2)
})

test('GET /api lists the importable packages and their exact versions, React included, without a key', async (t) => {
  const s = await server(t)
  const res = await s.api('GET', '/api', { key: null })
  assert.equal(res.status, 200)
  assert.deepEqual(res.body.packages, {
    clsx: '2.1.1',
    'date-fns': '4.4.0',
    marked: '18.0.12',
    slugify: '1.6.9',
    'lucide-react': '1.44.0',
    zod: '4.6.2',
    react: res.body.packages.react,
  })
  assert.match(res.body.packages.react, /^19\./)
})

test('typecheck: type errors against @platform, components and pinned packages carry file, line and column', async (t) => {
  const s = await server(t)
  const id = await site(s, [
    [{ type: 'component', name: 'Badge' }, 'export function Badge({ count }: { count: number }) { return <span>{count}</span> }\n'],
    [
      { type: 'page', name: 'home' },
      [
        "import { definePage, imageUrl } from '@platform'",
        "import { Badge } from '@components/Badge'",
        "import { z } from 'zod@4.6.2'",
        "const n: number = z.string().parse('x')",
        "const url: number = imageUrl('asset_1')",
        'export default definePage({ route: \'/\', render: () => <Badge count="three" /> })',
      ].join('\n'),
    ],
    [{ type: 'page', name: 'norender' }, "import { definePage } from '@platform'\nexport default definePage({ route: '/x' })\n"],
  ])
  const result = await check(s, id)
  assert.equal(result.ok, false)
  const found = result.diagnostics.map((d: any) => [d.step, d.file, d.line])
  assert.deepEqual(
    found.filter((f: any) => f[1] === 'page:home'),
    [
      ['typecheck', 'page:home', 4],
      ['typecheck', 'page:home', 5],
      ['typecheck', 'page:home', 6],
    ],
  )
  assert.ok(
    found.some((f: any) => f[1] === 'page:norender'),
    'a definition without render is a type error',
  )
  const badge = result.diagnostics.find((d: any) => d.line === 6)
  assert.match(badge.message, /number/)
  assert.ok(badge.column > 1)
  assert.equal(typeof result.timings.typecheck, 'number')
})

test('typecheck knows the browser for code that runs after hydration, and names site files as the site imports them', async (t) => {
  const s = await server(t)
  const browser = [
    "import { useEffect, useState } from 'react'",
    'export function Width() {',
    '  const [w, setW] = useState(0)',
    '  useEffect(() => {',
    '    setW(window.innerWidth)',
    "    document.title = localStorage.getItem('t') ?? 'x'",
    "    void fetch('/data.json').then((r) => r.json())",
    '    const id = setTimeout(() => setW(0), 10)',
    '    return () => clearTimeout(id)',
    '  }, [])',
    '  return <button onClick={(e) => setW(e.currentTarget.clientWidth)}>{w}</button>',
    '}',
  ].join('\n')
  const ok = await site(s, [
    [{ type: 'component', name: 'Width' }, browser],
    [{ type: 'page', name: 'home' }, page('/', '<Width />', "import { Width } from '@components/Width'")],
  ])
  const passed = await check(s, ok)
  assert.equal(passed.ok, true, JSON.stringify(passed.diagnostics))
  const wrongImport = await site(s, [
    [{ type: 'component', name: 'Widget' }, 'export function Widget() { return <p>w</p> }\n'],
    [{ type: 'page', name: 'home' }, page('/', '<Widget />', "import Widget from '@components/Widget'")],
  ])
  const failed = await check(s, wrongImport)
  const diagnostic = failed.diagnostics.find((d: any) => d.step === 'typecheck')
  assert.ok(diagnostic, JSON.stringify(failed.diagnostics))
  assert.match(diagnostic.message, /@components\/Widget/)
  assert.doesNotMatch(diagnostic.message, /__plinth_site__/)
})

test("typecheck reads nothing of the server's disk: a type import of a server file by its path finds no module", async (t) => {
  const s = await server(t)
  // An import type (not an import declaration: lint's import rules do not see it) naming the server's own source.
  const limits = fileURLToPath(new URL('../../../core/limits', import.meta.url))
  const id = await site(s, [
    [
      { type: 'page', name: 'home' },
      `import { definePage } from '@platform'\ntype Limits = typeof import('${limits}')\nconst peek: Limits['LIST_LIMIT_MAX'] = 'x'\nexport default definePage({ route: '/', render: () => <p>{String(peek)}</p> })\n`,
    ],
  ])
  const result = await check(s, id)
  const found = result.diagnostics.filter((d: any) => d.step === 'typecheck')
  assert.equal(found.length, 1, JSON.stringify(result.diagnostics))
  assert.match(found[0].message, /^Cannot find module/)
  assert.doesNotMatch(found[0].message, /100/, "no value of the server's file")
})
