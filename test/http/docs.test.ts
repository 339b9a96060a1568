import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { ERROR_KINDS, ERROR_REASONS } from '../../core/errors.js'
import { TOOLSETS } from '../../http/mcp-toolsets.js'
import { sharedServer } from '../helpers/server.js'

/*
 * The documentation the service serves (spec: "`GET /docs` (guide; returns Markdown when `Accept` lacks
 * `text/html`)", "`GET /docs/api` (reference)"), and /llms.txt (llmstxt.org).
 */

const server = sharedServer()

async function get(origin: string, path: string, accept?: string) {
  const res = await fetch(`${origin}${path}`, { headers: accept === undefined ? {} : { accept } })
  return {
    status: res.status,
    type: res.headers.get('content-type') ?? '',
    etag: res.headers.get('etag'),
    vary: res.headers.get('vary'),
    limit: res.headers.get('x-ratelimit-limit'),
    text: await res.text(),
  }
}

test('GET /docs is the guide: Markdown when Accept lacks text/html, the same content as HTML otherwise', async (t) => {
  const s = await server(t)
  const markdown = await get(s.origin, '/docs')
  assert.equal(markdown.status, 200)
  assert.match(markdown.type, /^text\/markdown/)
  assert.equal(markdown.vary, 'Accept')
  assert.ok(markdown.limit, 'rate-limit headers, as every answer')
  for (const section of [
    'Your first site in five minutes',
    'Serving rules',
    'Framework sites',
    'Anonymous publishing',
    'Forms',
    'Analytics',
    'Custom domains',
    'Shared files',
    'Passwords',
    'MCP',
    'Limits and errors',
    'Operating Plinth',
  ]) {
    assert.match(markdown.text, new RegExp(`^## .*${section}`, 'mi'), `the guide has a section on ${section}`)
  }
  // The examples name this server, not the README's localhost:8080.
  assert.ok(markdown.text.includes(`http://localhost:${s.plinth.port}/v1`), 'examples point at this server')
  assert.ok(!markdown.text.includes('localhost:8080'))
  const html = await get(s.origin, '/docs', 'text/html,application/xhtml+xml')
  assert.match(html.type, /^text\/html/)
  assert.match(html.text, /<h2 id="your-first-site-in-five-minutes">/)
  assert.match(html.text, /<nav aria-label="Documentation">/)
  // Every H2 of the Markdown is a heading of the HTML.
  for (const [, heading] of markdown.text.matchAll(/^## (.+)$/gm))
    assert.ok(
      html.text.includes(`>${heading.replace(/`([^`]+)`/g, '<code>$1</code>').replace(/&/g, '&amp;')}</h2>`),
      `HTML has “${heading}”`,
    )
  assert.notEqual(markdown.etag, html.etag)
  const again = await fetch(`${s.origin}/docs`, { headers: { 'if-none-match': markdown.etag! } })
  assert.equal(again.status, 304)
  assert.equal((await get(s.origin, '/docs/')).text, markdown.text, 'a trailing slash is the same page')
})

test('GET /docs/api is the reference, written from the one table of operations: every operation with method, path, operationId, capability, class, parameters, shapes and errors', async (t) => {
  const s = await server(t)
  const doc = (await s.api('GET', '/openapi.json', { key: null })).body
  const markdown = await get(s.origin, '/docs/api')
  assert.match(markdown.type, /^text\/markdown/)
  const missing: string[] = []
  for (const [path, item] of Object.entries<any>(doc.paths)) {
    for (const [method, entry] of Object.entries<any>(item)) {
      const line = `\`${method.toUpperCase()} ${path}\` · operationId \`${entry.operationId}\` · capability \`${entry['x-capability']}\` · class ${entry['x-rate-limit-class']}`
      if (!markdown.text.includes(line)) missing.push(line)
    }
  }
  assert.deepEqual(missing, [])
  // Parameters, body fields and the answer's fields, from the schemas.
  assert.match(markdown.text, /### List websites[\s\S]*\| `limit` \| query \| integer 1-100 \|[\s\S]*\| `scope` \| query \|/)
  assert.match(
    markdown.text,
    /### Create a website[\s\S]*Body \(`application\/json`\):[\s\S]*\| `name` \| string[\s\S]*Answer 201:[\s\S]*\| `headVersion` \|/,
  )
  assert.match(markdown.text, /Errors: \[400\]\(#error-validation\)/)
  // Every row of every table has its header's columns (a choice's pipes are escaped, never split a cell).
  const columns = (row: string) => row.replace(/\\\|/g, '').split('|').length
  const broken: string[] = []
  let header = 0
  for (const line of markdown.text.split('\n')) {
    if (!line.startsWith('|')) header = 0
    else if (header === 0) header = columns(line)
    else if (columns(line) !== header) broken.push(line)
  }
  assert.deepEqual(broken, [])
  assert.match(markdown.text, /\| `kind` \| "static" \\\| "framework" \\\| "storage" \|/)
  const html = await get(s.origin, '/docs/api', 'text/html')
  assert.match(html.type, /^text\/html/)
  assert.match(html.text, /<h2 id="errors">/)
  assert.match(html.text, /<table tabindex="0">/)
  assert.match(html.text, /<td>"static" \| "framework" \| "storage"<\/td>/, 'a choice stays in its cell in HTML')
  // A placeholder written as text in a description (`Bearer <token>`) is shown, never swallowed as a tag.
  assert.ok(markdown.text.includes('Authorization: Bearer <token>'))
  assert.ok(html.text.includes('Authorization: Bearer &lt;token&gt;'), 'the placeholder is escaped in HTML')
  assert.doesNotMatch(html.text, /<(token|name|the|size|id)>/)
})

test('GET /llms.txt is the contract an agent reads first (llmstxt.org): a title, a summary, what to call for each task, and the links', async (t) => {
  const s = await server(t)
  const llms = await get(s.origin, '/llms.txt')
  assert.equal(llms.status, 200)
  assert.match(llms.type, /^text\/plain/)
  const lines = llms.text.split('\n')
  assert.match(lines[0], /^# \S/, 'an H1 first')
  assert.ok(
    lines.some((l) => l.startsWith('> ')),
    'a blockquote summary',
  )
  for (const link of ['/docs', '/docs/api', '/openapi.json', '/v1/mcp', '/llms-full.txt'])
    assert.ok(llms.text.includes(link), `links ${link}`)
  assert.match(llms.text, /^## /m)
  // The anonymous flow and the framework rules, with the calls they make.
  assert.match(llms.text, /\/public\/v1\/anonymous\/credentials/)
  assert.match(llms.text, /lease/i)
  assert.match(llms.text, /GET \/api\b/)
  // The whole contract the product's skill points agents at: ticket deploys, forms, the anonymous limits,
  // and every reason of the skill's error table.
  assert.match(llms.text, /`POST http:\/\/[^/\s]+\/public\/v1\/deploys`/)
  assert.match(llms.text, /\/public\/v1\/deploys\/uploads/)
  assert.match(
    llms.text,
    /^## Serving rules[\s\S]*`\/\* \/index\.html 200`[\s\S]*v\{N\}--/m,
    'the serving rules, with the single-page app rule',
  )
  assert.match(llms.text, /`uploaded`/)
  assert.match(llms.text, /`409 would_revert`/)
  assert.match(llms.text, /formAction\('<name>'\)/)
  assert.match(llms.text, /_honey/)
  for (const limit of ['25 files', '1 MiB a file', '5 MiB decoded', '500 MiB', '50 live sites per', '100 MiB each'])
    assert.ok(llms.text.includes(limit), `the anonymous limit ${limit}`)
  // Every reason an agent can meet: each of the error registry's, the 401's `WWW-Authenticate` one, and an edit's problems'.
  for (const reason of [...ERROR_REASONS, 'invalid_token', 'not_found', 'ambiguous', 'empty'])
    assert.match(llms.text, new RegExp(`^\\| [^|]*\`${reason}\``, 'm'), `the error table has ${reason}`)
  // Every MCP tool it names is one the server has.
  const tools = new Set(
    Object.values<any>((await s.api('GET', '/openapi.json', { key: null })).body.paths).flatMap((item) =>
      Object.values<any>(item).map((e) => e['x-mcp-tool']),
    ),
  )
  const named = [...llms.text.matchAll(/`([a-z]+(?:_[a-z]+)+)`/g)].map((m) => m[1]).filter((name) => !name.startsWith('x_'))
  assert.ok(named.length > 5, 'it names the MCP tools to call')
  for (const name of named)
    assert.ok(
      tools.has(name) ||
        (ERROR_REASONS as readonly string[]).includes(name) ||
        /^(website_config|custom_head_start|custom_head_end|custom_body_start|custom_body_end|global_css|not_found|content_editor|full_editor|invalid_token|resource_metadata)$/.test(
          name,
        ),
      `${name} is an MCP tool of this server (or a value of the API)`,
    )
  // And it lists every tool an MCP client sees by default, and every toolset there is.
  const listed = await fetch(`${s.origin}/v1/mcp`, {
    method: 'POST',
    headers: { authorization: `Bearer ${s.adminKey}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
  })
  const everyday = ((await listed.json()) as any).result.tools.map((tool: { name: string }) => tool.name) as string[]
  assert.ok(everyday.length > 30)
  for (const name of everyday) assert.ok(llms.text.includes(`\`${name}\``), `llms.txt names the default tool ${name}`)
  for (const set of ['sites', 'files', 'assets', 'forms', 'domains', 'analytics', 'cms', 'team', 'admin'])
    assert.ok(llms.text.includes(`\`${set}\``), `llms.txt names the toolset ${set}`)
})

test('GET /llms-full.txt is the whole contract in one file: every tool the server lists with its arguments, every toolset, and every error reason, written from the tables', async (t) => {
  const s = await server(t)
  const full = await get(s.origin, '/llms-full.txt')
  assert.equal(full.status, 200)
  assert.match(full.type, /^text\/plain/)
  assert.ok(Buffer.byteLength(full.text) < 60 * 1024, `${Buffer.byteLength(full.text)} bytes: keep it under 60 KB`)
  assert.match(full.text, /^# \S/, 'an H1 first')
  assert.ok(!full.text.includes('{{'), 'every generated part is filled in')
  assert.ok(!full.text.includes('localhost:8080'), 'its URLs name this server')
  assert.ok(full.text.includes(`http://localhost:${s.plinth.port}/public/v1/deploys`))
  // Every tool an admin key lists with every toolset enabled, by name; the default list's with its arguments.
  const connect = async (query: string) => {
    const c = new Client({ name: 'plinth-docs-test', version: '1.0.0' })
    await c.connect(
      new StreamableHTTPClientTransport(new URL(`${s.origin}/v1/mcp${query}`), {
        requestInit: { headers: { authorization: `Bearer ${s.adminKey}` } },
      }),
    )
    t.after(() => c.close())
    return (await c.listTools()).tools
  }
  const all = await connect('?toolsets=all')
  assert.ok(all.length > 100, `${all.length} tools with toolsets=all`)
  const missing = all.filter((tool) => !full.text.includes(`\`${tool.name} {`)).map((tool) => tool.name)
  assert.deepEqual(missing, [], 'every tool has its line')
  for (const tool of await connect('')) {
    const line = full.text.split('\n').find((l) => l.startsWith(`- \`${tool.name} {`))
    assert.ok(line !== undefined, `the default tool ${tool.name} has a line`)
    for (const name of Object.keys((tool.inputSchema.properties ?? {}) as object))
      assert.match(line, new RegExp(`[{ ]${name}\\??[\\[{,}]`), `${tool.name}'s line names its argument ${name}`)
    assert.ok(line.includes(tool.description!.slice(0, 40)), `${tool.name}'s line says what it does`)
  }
  assert.ok(
    full.text.includes('`deploy_files {websiteId, files[{path, content, encoding?, contentType?}]'),
    'arguments read as the brief writes them',
  )
  for (const set of Object.keys(TOOLSETS)) assert.ok(full.text.includes(`?toolsets=${set}`), `how to enable the toolset ${set}`)
  // Every reason of the error registry, and every kind.
  const reasons = [...ERROR_REASONS, 'invalid_token', 'not_found', 'ambiguous', 'empty'].filter(
    (reason) => !new RegExp(`^- (\`[a-z_]+\`, )*\`${reason}\`[:,( ]`, 'm').test(full.text),
  )
  assert.deepEqual(reasons, [], 'every details.reason has its line')
  for (const kind of Object.keys(ERROR_KINDS)) assert.match(full.text, new RegExp(`^\\| \`${kind}\` \\| \\d{3} \\|`, 'm'))
  // The written contract: ticket deploys, the anonymous flow and its limits, shared files, passwords, forms, framework and serving rules.
  for (const phrase of [
    'begin_deploy',
    '/public/v1/deploys/uploads',
    '100 MiB parts',
    '409 would_revert',
    '`force',
    '/public/v1/anonymous/credentials',
    '25 files a deploy',
    '1 MiB a file',
    '500 MiB',
    'live 24 hours',
    '7 days after the credential',
    'archive: true',
    'set_folder_password',
    'plan_required',
    "formAction('<name>')",
    '_honey',
    'definePage',
    '`_redirects`',
    '`_headers`',
    'One address per page',
    'v{N}--',
  ])
    assert.ok(full.text.includes(phrase), `llms-full.txt says ${phrase}`)
  const llms = await get(s.origin, '/llms.txt')
  assert.ok(llms.text.includes(`http://localhost:${s.plinth.port}/llms-full.txt`), 'llms.txt links it')
  const guide = await get(s.origin, '/docs')
  assert.ok(guide.text.includes('(/llms-full.txt)'), 'the guide links it')
})
