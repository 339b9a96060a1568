import assert from 'node:assert/strict'
import { test } from 'node:test'
import { createKey, createWebsite, startServer } from '../helpers/server.js'
import { API_POLL_MS, waitUntil } from '../helpers/wait.js'

const TRUNCATED = '--X\r\nContent-Disposition: form-data; name="files"; filename="a.html"\r\n\r\nhello'
const MULTIPART = { 'content-type': 'multipart/form-data; boundary=X' }

test('a multipart body that ends inside a file part is a 400, and the server goes on serving', async (t) => {
  const s = await startServer(t)
  const w = await createWebsite(s, { name: 'Static', kind: 'static' })
  for (let i = 0; i < 3; i++) {
    const res = await s.api('POST', `/v1/websites/${w.id}/deploy`, { raw: TRUNCATED, headers: MULTIPART })
    assert.equal(res.status, 400, JSON.stringify(res.body))
    assert.equal(res.body.details.field, 'body')
    assert.match(res.body.message, /multipart body cannot be read: Unexpected end of form .*"a\.html".*send the whole body/)
  }
  // Nothing was written, and the process is alive.
  assert.equal((await s.api('GET', `/v1/websites/${w.id}`)).body.headVersion, 1)
  const ok = await s.api('POST', `/v1/websites/${w.id}/deploy`, {
    raw: '--X\r\nContent-Disposition: form-data; name="files"; filename="a.html"\r\n\r\nhello\r\n--X--\r\n',
    headers: MULTIPART,
  })
  assert.equal(ok.status, 201, JSON.stringify(ok.body))
})

test('scope and capability are checked before a body is read: a refused caller gets its 404 or 403, not a complaint about the body', async (t) => {
  const s = await startServer(t)
  const w = await createWebsite(s, { name: 'Static', kind: 'static' })
  const other = await createWebsite(s, { name: 'Other', kind: 'static' })
  const scoped = await createKey(s, { kind: 'websites', role: 'full_editor', websiteIds: [other.id] })
  const reader = await createKey(s, { kind: 'organization', role: 'content_editor' })
  const outOfScope = await s.api('POST', `/v1/websites/${w.id}/deploy`, { key: scoped.secret, raw: TRUNCATED, headers: MULTIPART })
  assert.equal(outOfScope.status, 404, JSON.stringify(outOfScope.body))
  const missing = await s.api('POST', '/v1/websites/ws_x/deploy', { raw: TRUNCATED, headers: MULTIPART })
  assert.equal(missing.status, 404, JSON.stringify(missing.body))
  const lacking = await s.api('POST', `/v1/websites/${w.id}/deploy/json`, { key: reader.secret, raw: '{"files": [' })
  assert.equal(lacking.status, 403, JSON.stringify(lacking.body))
  assert.equal(lacking.body.details.capability, 'source.write')
})

test('code nested too deeply for the compiler is a diagnostic of its step, never a 500; the build fails with it instead of reading "superseded"', async (t) => {
  const s = await startServer(t)
  const w = await createWebsite(s, { name: 'Deep' })
  const lease = (await s.api('POST', `/v1/websites/${w.id}/source/lease`)).body.leaseToken
  const put = (name: string, content: string) =>
    s.api('PUT', `/v1/websites/${w.id}/source/file`, { body: { leaseToken: lease, file: { type: 'page', name }, content } })
  assert.equal(
    (await put('home', "import { definePage } from '@platform'\nexport default definePage({ route: '/', render: () => <p>home</p> })\n"))
      .status,
    201,
  )
  const definition = (name: string) =>
    `import { definePage } from '@platform'\nexport default definePage({ route: '/${name}', render: () => <p>{String(x)}</p> })\n`
  const cases = [
    ['brackets', `${definition('brackets')}const x = ${'['.repeat(3000)}${']'.repeat(3000)}\n`, 3],
    ['sum', `${definition('sum')}const a = 1\nconst x = ${Array.from({ length: 60_000 }, () => 'a').join(' + ')}\n`, 4],
  ] as const
  for (const [name, content, line] of cases) {
    const written = await put(name, content)
    assert.equal(written.status, 201, JSON.stringify(written.body))
    const check = await s.api('POST', `/v1/websites/${w.id}/head/check`)
    assert.equal(check.status, 200, `${name}: ${JSON.stringify(check.body)}`)
    assert.equal(check.body.ok, false)
    const deep = check.body.diagnostics.find((d: any) => /too deeply nested/.test(d.message))
    assert.ok(deep, `${name}: ${JSON.stringify(check.body.diagnostics)}`)
    assert.deepEqual([deep.step, deep.file, deep.line], ['lint', `page:${name}`, line])
    // The background build of the same version ends failed with the same kind of diagnostic.
    const status = await waitUntil(
      async () => {
        const current = (await s.api('GET', `/v1/websites/${w.id}/deployments/status?version=${written.body.version}`)).body
        return current.status !== 'building' && current
      },
      'the background build to end',
      30_000,
      API_POLL_MS,
    )
    assert.equal(status.status, 'failed', JSON.stringify(status))
    assert.ok(
      status.diagnostics.some((d: any) => /too deeply nested/.test(d.message)),
      JSON.stringify(status.diagnostics),
    )
    assert.ok(!status.diagnostics.some((d: any) => /superseded/.test(d.message)))
    const removed = await s.api('DELETE', `/v1/websites/${w.id}/source/file`, { body: { leaseToken: lease, file: { type: 'page', name } } })
    assert.equal(removed.status, 200, JSON.stringify(removed.body))
  }
})

test('JSON text that is not UTF-8, or not well-formed Unicode, is a 400 naming the field, never stored with U+FFFD', async (t) => {
  const s = await startServer(t)
  const w = await createWebsite(s, { name: 'Static', kind: 'static' })
  const send = async (path: string, parts: (string | number[])[], method = 'POST') => {
    const body = Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p) : Buffer.from(p))))
    const res = await fetch(s.origin + path, {
      method,
      headers: { authorization: `Bearer ${s.adminKey}`, 'content-type': 'application/json' },
      body,
    })
    return { status: res.status, body: (await res.json()) as any }
  }
  const deploy = `/v1/websites/${w.id}/deploy/json`
  const cases: [string, (string | number[])[], string, string][] = [
    [
      'content',
      ['{"files": [{"path": "a.html", "content": "ok"}, {"path": "b.html", "content": "caf', [0xe9], '"}]}'],
      'body.files[1].content',
      'is not valid UTF-8',
    ],
    ['path', ['{"files": [{"path": "', [0xff, 0xfe], '.html", "content": "x"}]}'], 'body.files[0].path', 'is not valid UTF-8'],
    [
      'escape',
      ['{"files": [{"path": "a.html", "content": "half \\ud800 a pair"}]}'],
      'body.files[0].content',
      'is not well-formed Unicode',
    ],
  ]
  for (const [what, parts, field, problem] of cases) {
    const res = await send(deploy, parts)
    assert.equal(res.status, 400, `${what}: ${JSON.stringify(res.body)}`)
    assert.equal(res.body.details.field, field, what)
    assert.match(res.body.message, new RegExp(`^${field.replace(/[[\].]/g, '\\$&')} ${problem}.*base64`), what)
  }
  const named = await send('/v1/websites', ['{"name": "Caf', [0xc3], '"}'])
  assert.deepEqual([named.status, named.body.details.field], [400, 'body.name'])
  // Nothing was stored; real U+FFFD in valid UTF-8 is content like any other.
  assert.equal((await s.api('GET', `/v1/websites/${w.id}`)).body.headVersion, 1)
  const real = await send(deploy, ['{"files": [{"path": "r.html", "content": "\uFFFD is fine"}]}'])
  assert.equal(real.status, 201, JSON.stringify(real.body))
  // The same over MCP names the argument.
  const rpc = (parts: (string | number[])[]) =>
    fetch(`${s.origin}/v1/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${s.adminKey}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: Buffer.concat(parts.map((p) => Buffer.from(p as never))),
    }).then(async (res) => ({ status: res.status, body: (await res.json()) as any }))
  const mcp = await rpc([
    `{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "deploy_files", "arguments": {"websiteId": "${w.id}", "files": [{"path": "m.html", "content": "`,
    [0xe9],
    '"}]}}}',
  ])
  assert.equal(mcp.status, 400)
  assert.equal(mcp.body.error.data.details.field, 'arguments.files[0].content')
  const escaped = await rpc([
    `{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "deploy_files", "arguments": {"websiteId": "${w.id}", "files": [{"path": "m.html", "content": "\\udc00"}]}}}`,
  ])
  assert.equal(escaped.body.result.isError, true)
  assert.equal(escaped.body.result.structuredContent.details.field, 'arguments.files[0].content')
  assert.equal((await s.api('GET', `/v1/websites/${w.id}`)).body.headVersion, 2)
})

test('a JSON body nested 5,000 deep is a 400 validation at every door, never a 500', async (t) => {
  // Spec (Errors): "| validation | 400 |"; a body the server cannot accept is the client's fault, not an
  // `internal` error.
  const s = await startServer(t)
  const key = await createKey(s, { kind: 'organization', role: 'admin' })
  const deep = (n: number) => `{"name": ${'['.repeat(n)}${']'.repeat(n)}}`
  const cases: [string, string, Record<string, string>][] = [
    ['POST', '/v1/websites', { authorization: `Bearer ${s.adminKey}` }],
    ['POST', `/v1/api-keys/${key.id}/rotate`, { authorization: `Bearer ${s.adminKey}` }],
    ['POST', '/public/v1/anonymous/credentials', {}],
    ['POST', '/api/anonymous/claim', {}],
  ]
  for (const [method, path, headers] of cases) {
    for (const depth of [1000, 5000, 100_000]) {
      const res = await fetch(`${s.origin}${path}`, {
        method,
        headers: { ...headers, 'content-type': 'application/json' },
        body: deep(depth),
      })
      const body = (await res.json()) as any
      assert.deepEqual(
        [res.status, body.kind, body.details?.field],
        [400, 'validation', 'body'],
        `${path} at ${depth} deep: ${JSON.stringify(body)}`,
      )
      assert.match(body.message, /more than 64 levels deep/)
    }
  }
  // MCP arguments, the tracker's events and OAuth client metadata are JSON too.
  const mcp = await fetch(`${s.origin}/v1/mcp`, {
    method: 'POST',
    headers: { authorization: `Bearer ${s.adminKey}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_website","arguments":{"name":${'['.repeat(5000)}${']'.repeat(5000)}}}}`,
  })
  const rpc = (await mcp.json()) as any
  assert.equal(mcp.status, 200)
  assert.equal(rpc.result.isError, true)
  assert.deepEqual([rpc.result.structuredContent.kind, rpc.result.structuredContent.details.field], ['validation', 'arguments'])
  const oauth = await fetch(`${s.origin}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: `{"redirect_uris":${'['.repeat(5000)}${']'.repeat(5000)}}`,
  })
  assert.equal(oauth.status, 400)
  // A shallow value is fine.
  assert.equal((await s.api('POST', '/v1/websites', { body: { name: 'Flat enough' } })).status, 201)
})
