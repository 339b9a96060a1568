import assert from 'node:assert/strict'
import { test } from 'node:test'
import { HeaderMatcher, parseHeaders, parseRedirects, RedirectMatcher, type RuleHit } from '../../core/site-rules.js'

/*
 * `_redirects` and `_headers` as Netlify's and Cloudflare Pages' documentation describe them (cases
 * written from their documented behaviour): a table of files, requests and what each answers.
 */

interface Case {
  name: string
  file: string
  /** [path, a file exists there, query, what the rules answer (null: no rule applies)] */
  requests: [string, boolean, string, RuleHit | null][]
}

const redirect = (status: 301 | 302 | 303 | 307 | 308, location: string): RuleHit => ({ kind: 'redirect', status, location })
const file = (status: 200 | 404, path: string): RuleHit => ({ kind: 'file', status, path })

const CASES: Case[] = [
  {
    name: 'a plain redirect, 301 by default, with and without a trailing slash',
    file: '/home / \n/about /info 302\n',
    requests: [
      ['/home', false, '', redirect(301, '/')],
      ['/about/', false, '', redirect(302, '/info')],
      ['/about-us', false, '', null],
    ],
  },
  {
    name: 'splats: the rest of the path as :splat; /blog/* also takes /blog',
    file: '/blog/*  /news/:splat\n',
    requests: [
      ['/blog/2024/hello', false, '', redirect(301, '/news/2024/hello')],
      ['/blog', false, '', redirect(301, '/news/')],
      ['/blogs', false, '', null],
    ],
  },
  {
    name: 'placeholders: one path segment each',
    file: '/users/:id/posts/:post  /u/:id/p/:post  302\n',
    requests: [
      ['/users/42/posts/7', false, '', redirect(302, '/u/42/p/7')],
      ['/users/42/posts', false, '', null],
      ['/users/42/posts/7/more', false, '', null],
    ],
  },
  {
    name: 'a single-page app: every path without a file is index.html, status 200; files win',
    file: '# Vite, React Router\n/*    /index.html   200\n',
    requests: [
      ['/settings/profile', false, '', file(200, '/index.html')],
      ['/', true, '', null],
      ['/assets/app.js', true, '', null],
    ],
  },
  {
    name: 'rewrites keep the URL and serve another path of the site',
    file: '/shop/:item  /products/:item.html  200\n',
    requests: [['/shop/boots', false, '', file(200, '/products/boots.html')]],
  },
  {
    name: 'forced with !: applies even where a file exists',
    file: '/  /maintenance.html  302!\n/old.html /new.html\n',
    requests: [
      ['/', true, '', redirect(302, '/maintenance.html')],
      ['/old.html', true, '', null],
      ['/old.html', false, '', redirect(301, '/new.html')],
    ],
  },
  {
    name: 'a custom not-found for a prefix',
    file: '/docs/*  /docs/404.html  404\n',
    requests: [
      ['/docs/missing', false, '', file(404, '/docs/404.html')],
      ['/docs/present', true, '', null],
    ],
  },
  {
    name: "the query string goes along on redirects, unless the rule's destination has its own",
    file: '/old /new\n/search /find?src=old\n',
    requests: [
      ['/old', false, 'a=1&b=2', redirect(301, '/new?a=1&b=2')],
      ['/search', false, 'q=x', redirect(301, '/find?src=old')],
    ],
  },
  {
    name: 'first match wins, in file order, exact and dynamic rules alike',
    file: '/a /one\n/a /two\n/x/* /dynamic\n/x/y /exact\n/p/q /exact-first\n/p/* /dynamic-second\n',
    requests: [
      ['/a', false, '', redirect(301, '/one')],
      ['/x/y', false, '', redirect(301, '/dynamic')],
      ['/p/q', false, '', redirect(301, '/exact-first')],
      ['/p/r', false, '', redirect(301, '/dynamic-second')],
    ],
  },
  {
    name: 'first match wins between patterns of any first segment and of a given one',
    file: '/:lang/about /l/:lang/about\n/en/* /english/:splat\n/de/* /german/:splat\n/:lang/contact /c/:lang\n',
    requests: [
      ['/en/about', false, '', redirect(301, '/l/en/about')],
      ['/en/contact', false, '', redirect(301, '/english/contact')],
      ['/fr/contact', false, '', redirect(301, '/c/fr')],
      ['/de', false, '', redirect(301, '/german/')],
    ],
  },
  {
    name: 'redirects to other hosts, a URL port and a comment after the rule',
    file: '/away/*  https://example.org:8443/x/:splat?from=:splat  308  # moved\n',
    requests: [['/away/a b', false, '', redirect(308, 'https://example.org:8443/x/a%20b?from=a%20b')]],
  },
  {
    name: 'a value from the path is encoded again: no header line from %0D%0A',
    file: '/blog/* /posts/:splat 302\n',
    requests: [['/blog/x\r\nSet-Cookie: a=b', false, '', redirect(302, '/posts/x%0D%0ASet-Cookie:%20a=b')]],
  },
]

for (const c of CASES) {
  test(`_redirects: ${c.name}`, () => {
    const { rules, problems } = parseRedirects(c.file)
    assert.deepEqual(problems, [])
    const matcher = new RedirectMatcher(rules)
    for (const [path, hasFile, query, expected] of c.requests) assert.deepEqual(matcher.match(path, hasFile, query), expected, path)
  })
}

test('_redirects: each bad line is named with its number and reason; the good ones still apply', () => {
  const { rules, problems } = parseRedirects(
    [
      '/fine /ok',
      '/missing-to',
      '/bad-status /x 418',
      '/country /us 302 Country=us',
      '/proxy https://example.org/api 200',
      'no-slash /x',
      '/a/*/b /x',
      '/p/:id /q/:other',
      'https://old.example.org/* https://new.example.org/:splat',
      '/twice/:id/:id /x',
      '# a comment, then an empty line',
      '',
      '/also-fine /ok 307',
      'this line is nonsense',
      '/extra /words 301 and more',
      '/store id=:id /blog/:id 301',
    ].join('\n'),
  )
  assert.deepEqual(
    rules.map((r) => [r.line, r.from]),
    [
      [1, '/fine'],
      [13, '/also-fine'],
    ],
  )
  assert.deepEqual(
    problems.map((p) => p.line),
    [2, 3, 4, 5, 6, 7, 8, 9, 10, 14, 15, 16],
  )
  const said = Object.fromEntries(problems.map((p) => [p.line, p.message]))
  assert.match(said[2]!, /needs a from path and a to path/)
  assert.match(said[3]!, /status "418" must be one of 200, 301, 302, 303, 307, 308, 404/)
  assert.match(said[4]!, /conditions .* are not supported/)
  assert.match(said[5]!, /another host \(proxying is not supported\)/)
  assert.match(said[6]!, /"no-slash \/x" is not a rule: a rule starts with the path it matches/)
  // Each bad line gets the reason that fits it: prose is no rule, words after the status are not conditions.
  assert.match(said[14]!, /"this line is nonsense" is not a rule/)
  assert.match(said[15]!, /"and more" follows the status: a rule is "\/from \/to \[status\]"/)
  assert.match(said[16]!, /"id=:id \/blog\/:id 301": conditions .* and query matching are not supported/)
  for (const line of [14, 15]) assert.doesNotMatch(said[line]!, /conditions/)
  assert.match(said[7]!, /\* may only end the path/)
  assert.match(said[8]!, /to uses :other, which from "\/p\/:id" does not define/)
  assert.match(said[9]!, /rules for whole domains are not supported/)
  assert.match(said[10]!, /names a placeholder twice/)
  for (const p of problems) assert.equal(p.file, '_redirects')
})

test("_redirects: Cloudflare's limits, 2,000 rules without wildcards and 100 with, past which lines are reported", () => {
  const lines = [...Array.from({ length: 2001 }, (_, i) => `/s${i} /t${i}`), ...Array.from({ length: 101 }, (_, i) => `/d${i}/* /t/:splat`)]
  const { rules, problems } = parseRedirects(lines.join('\n'))
  assert.equal(rules.length, 2100)
  assert.deepEqual(
    problems.map((p) => [p.line, /past the limit of (\d+)/.exec(p.message)?.[1]]),
    [
      [2001, '2000'],
      [2102, '100'],
    ],
  )
  // Found by one lookup or at most 100 patterns: the last exact rule and a dynamic one.
  const matcher = new RedirectMatcher(rules)
  assert.deepEqual(matcher.match('/s1999', false, ''), redirect(301, '/t1999'))
  assert.deepEqual(matcher.match('/d99/x', false, ''), redirect(301, '/t/x'))
  assert.equal(matcher.match('/nothing', false, ''), null)
})

test('_headers: patterns with * and :placeholders; every matching block applies, a repeated name joined', () => {
  const { rules, problems } = parseHeaders(
    [
      '# every page',
      '/*',
      '  X-Frame-Options: DENY',
      '  Link: </style.css>; rel=preload',
      '/assets/*',
      '  Cache-Control: public, max-age=31536000, immutable',
      '/users/:id',
      '  Link: </user.js>; rel=preload',
      '/about',
      "  Content-Security-Policy: default-src 'self'",
    ].join('\n'),
  )
  assert.deepEqual(problems, [])
  const headers = new HeaderMatcher(rules)
  assert.deepEqual(headers.match('/assets/app.js').headers, [
    'x-frame-options',
    'DENY',
    'link',
    '</style.css>; rel=preload',
    'cache-control',
    'public, max-age=31536000, immutable',
  ])
  assert.deepEqual(headers.match('/users/7').headers, [
    'x-frame-options',
    'DENY',
    'link',
    '</style.css>; rel=preload, </user.js>; rel=preload',
  ])
  assert.deepEqual(headers.match('/about/').headers.slice(-2), ['content-security-policy', "default-src 'self'"])
  // Equal keys, equal headers: what the hosting plane prepares once.
  assert.equal(headers.match('/users/7').key, headers.match('/users/8').key)
  assert.notEqual(headers.match('/users/7').key, headers.match('/about').key)
  assert.deepEqual(new HeaderMatcher([]).match('/x'), { key: '', headers: [] })
})

test('_headers: headers the platform owns are refused with their line and why; bad lines named', () => {
  const { rules, problems } = parseHeaders(
    [
      '  X-Orphan: 1',
      '/*',
      '  Content-Length: 10',
      '  Content-Type: text/plain',
      '  ETag: "x"',
      '  X-Plinth-Version: 9',
      '  ! X-Frame-Options',
      '  not a header',
      '  X-Good: yes',
      'relative/path',
      '  X-Lost: 1',
    ].join('\n'),
  )
  assert.deepEqual(
    rules.map((r) => r.headers),
    [[['x-good', 'yes']]],
  )
  const said = Object.fromEntries(problems.map((p) => [p.line, p.message]))
  assert.deepEqual(Object.keys(said).map(Number), [1, 3, 4, 5, 6, 7, 8, 10])
  assert.match(said[1]!, /must follow a path pattern line/)
  assert.match(said[3]!, /Content-Length cannot be set: the platform sets it from the bytes/)
  assert.match(said[4]!, /Content-Type cannot be set: .*contentType per file/)
  assert.match(said[6]!, /X-Plinth-Version cannot be set/)
  assert.match(said[7]!, /detaching a header/)
  assert.match(said[8]!, /is not a header line/)
  assert.match(said[10]!, /must be a path pattern starting with \//)
})

test('_headers: a line without a colon is warned with the reason that fits where it stands', () => {
  const under = parseHeaders('/*\n  X-Frame-Options: DENY\n  Bad Header Without Colon\n').problems
  assert.deepEqual(
    under.map((p) => [p.line, p.message]),
    [[3, '"Bad Header Without Colon" is not a header line "Name: value"']],
  )
  const alone = parseHeaders('Bad Header Without Colon\n/*\n  X-A: b\n').problems
  assert.deepEqual(
    alone.map((p) => [p.line, p.message]),
    [[1, '"Bad Header Without Colon" must be a path pattern starting with / (header lines are indented)']],
  )
})
