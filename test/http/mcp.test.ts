import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js'
import { operations } from '../../http/operations/index.js'
import { roleGrants } from '../../core/roles.js'
import { oauthToken } from '../helpers/oauth.js'
import { setUpOwner } from '../helpers/people.js'
import { createKey, createWebsite, startServer, type TestServer } from '../helpers/server.js'

async function connect(t: any, s: TestServer, key: string, query = ''): Promise<Client> {
  const client = new Client({ name: 'plinth-test', version: '1.0.0' })
  const transport = new StreamableHTTPClientTransport(new URL(`${s.origin}/v1/mcp${query}`), {
    requestInit: { headers: { authorization: `Bearer ${key}` } },
  })
  await client.connect(transport)
  t.after(() => client.close())
  return client
}

function parse(result: any): any {
  return JSON.parse(result.content[0].text)
}

/** The tools the hosted product's agent skill (Webly-AI/webly-plugin, SKILL.md) calls by name, as Plinth has them. */
const SKILL_TOOLS = [
  'list_websites',
  'whoami',
  'create_claim_code',
  'create_website',
  'acquire_edit_lease',
  'put_source_file',
  'str_replace',
  'deploy_files',
  'begin_deploy',
  'read_source_file',
  'read_source_files',
  'check_head',
  'publish_website',
  'rollback_website',
  'unpublish_website',
  'add_domain',
  'verify_domain',
  'set_primary_domain',
  'begin_object_upload',
  'finalize_object_upload',
  'resume_object_upload',
  'list_objects',
  'move_object',
  'delete_object',
  'delete_folder',
  'list_archive_entries',
  'list_uploads_in_progress',
  'clear_uploads_in_progress',
  'get_billing',
  'set_website_password',
  'delete_asset',
  'email_link',
]

test("the default tool list is the agent's everyday tasks, under 50 tools; toolsets on the URL add the rest", async (t) => {
  const s = await startServer(t)
  const names = async (query = '') => (await (await connect(t, s, s.adminKey, query)).listTools()).tools.map((tool) => tool.name)
  const everyday = await names()
  assert.ok(everyday.length <= 50, `${everyday.length} tools by default`)
  // An API key lists no tool only a person may call; the skill's claim code comes from a person's OAuth token.
  const personOnly = new Set(operations.filter((o) => 'personOnly' in o && o.personOnly === true && o.tool !== null).map((o) => o.tool))
  assert.ok(personOnly.has('create_claim_code'))
  assert.deepEqual(
    everyday.filter((name) => personOnly.has(name)),
    [],
  )
  for (const name of SKILL_TOOLS) if (!personOnly.has(name)) assert.ok(everyday.includes(name), `the skill's ${name} is listed by default`)
  const owner = await setUpOwner(s)
  const agent = (await (await connect(t, s, await oauthToken(s, owner, '/v1/mcp'))).listTools()).tools.map((tool) => tool.name)
  for (const name of SKILL_TOOLS) assert.ok(agent.includes(name), `the skill's ${name} is listed to a person's agent`)
  assert.ok(!everyday.includes('create_collection') && !everyday.includes('create_api_key'), 'CMS and admin tools wait for their toolsets')
  // ?toolsets=cms,admin adds those two sets and nothing else (as GitHub's MCP server does).
  const more = await names('?toolsets=cms,admin')
  for (const name of ['create_collection', 'create_blog_post', 'create_legacy_page', 'create_api_key', 'list_audit_log'])
    assert.ok(more.includes(name), name)
  assert.ok(!more.includes('invite_member'), 'team tools are in the team toolset')
  assert.deepEqual(
    more.filter((name) => !everyday.includes(name)).length,
    operations.filter(
      (o) =>
        o.tool !== null &&
        !personOnly.has(o.tool) &&
        /^(cms|blog|pages|apiKeys|auditLog|billing|feedback|me\.connections)/.test(o.operationId),
    ).length - operations.filter((o) => o.tool !== null && o.tool === 'get_billing').length,
  )
  // A tool of a set not enabled is still called by name; an unknown set is refused with the names there are.
  const plain = await connect(t, s, s.adminKey)
  const keys = await plain.callTool({ name: 'list_api_keys', arguments: {} })
  assert.equal(keys.isError, undefined, JSON.stringify(keys))
  const bogus = await fetch(`${s.origin}/v1/mcp?toolsets=cms,nope`, {
    method: 'POST',
    headers: { authorization: `Bearer ${s.adminKey}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
  })
  assert.equal(bogus.status, 400)
  assert.match(((await bogus.json()) as any).error.message, /Unknown toolset nope; the toolsets are sites, files, .* \(or all\)/)
})

test('the MCP client lists one tool per operation with toolsets=all, each with a description and an object input schema', async (t) => {
  const s = await startServer(t)
  const client = await connect(t, s, s.adminKey, '?toolsets=all')
  const { tools } = await client.listTools()
  // MCP clients (the Inspector among them) warn on patternProperties: a map of any keys is additionalProperties.
  assert.doesNotMatch(JSON.stringify(tools.map((tool) => tool.inputSchema)), /patternProperties/)
  const feedback = tools.find((tool) => tool.name === 'send_feedback')!
  assert.ok(JSON.stringify(feedback.inputSchema).includes('"additionalProperties":{'), 'a map keeps its value schema')
  // Every tool an API key may call: all but a person's own (whoami's personal ones, claims, checkout).
  assert.deepEqual(
    tools.map((tool) => tool.name).sort(),
    operations.flatMap((o) => (o.tool === null || ('personOnly' in o && o.personOnly === true) ? [] : [o.tool])).sort(),
  )
  // A key of a weaker role lists only what its role may do; a tool it lacks still answers 403 by name.
  const editorKey = (await createKey(s, { kind: 'organization', role: 'content_editor' })).secret as string
  const editor = await connect(t, s, editorKey, '?toolsets=all')
  const editorTools = (await editor.listTools()).tools.map((tool) => tool.name)
  assert.deepEqual(
    editorTools.sort(),
    operations
      .flatMap((o) =>
        o.tool === null || ('personOnly' in o && o.personOnly === true) || !roleGrants('content_editor', o.capability) ? [] : [o.tool],
      )
      .sort(),
  )
  assert.ok(editorTools.length < tools.length && !editorTools.includes('create_api_key'), 'a content editor lists fewer tools')
  const refused = await editor.callTool({ name: 'create_api_key', arguments: { access: { kind: 'organization', role: 'admin' } } })
  assert.equal(refused.isError, true)
  assert.match(JSON.stringify(refused.content), /lacks the capability/)
  // Only public reads (the service description, the package list), multipart uploads, raw upload bytes
  // (shared files and two-step asset uploads; begin_asset_upload and import_assets are the agent's way)
  // and the anonymous endpoints lack a tool: MCP arguments are JSON (deploy_files takes the same deploy;
  // begin_object_upload answers the URL an agent PUTs bytes to), and an MCP caller is signed in
  // (claim_website and create_claim_code are its side of the anonymous flow).
  assert.deepEqual(
    operations.filter((o) => o.tool === null).map((o) => o.operationId),
    [
      'me.update',
      'me.password.change',
      'me.email.change',
      'me.sessions.list',
      'me.sessions.end',
      'platform.describe',
      'platform.openapi',
      'platform.publicPackages',
      'source.deployMultipart',
      'source.ticketDeploy',
      'source.ticketUploads',
      'source.ticketUploadBytes',
      'source.ticketUploadPart',
      'anonymous.createCredential',
      'anonymous.createSite',
      'anonymous.getSite',
      'anonymous.updateSite',
      'anonymous.beginUploads',
      'anonymous.uploadBytes',
      'anonymous.resumeUpload',
      'anonymous.finalize',
      'anonymous.deleteFile',
      'anonymous.claim',
      'storage.uploadBytes',
      'storage.uploadPart',
      'assets.upload',
      'assets.putBytes',
    ],
  )
  for (const name of [
    'whoami',
    'list_websites',
    'get_website',
    'create_website',
    'update_website',
    'delete_website',
    'restore_website',
    'rename_subdomain',
    'create_api_key',
  ]) {
    assert.ok(
      tools.some((tool) => tool.name === name),
      name,
    )
  }
  for (const tool of tools) {
    assert.equal(tool.inputSchema.type, 'object')
    assert.ok((tool.description ?? '').length > 40, tool.name)
  }
  const getWebsite = tools.find((tool) => tool.name === 'get_website')!
  assert.deepEqual(getWebsite.inputSchema.required, ['websiteId'])
  // Tools that change nothing say so, POSTs among them (a check, a search, batch reads).
  const readOnly = tools.filter((tool) => tool.annotations?.readOnlyHint === true).map((tool) => tool.name)
  for (const name of ['check_head', 'search_source', 'read_files', 'read_source_files', 'get_website', 'read_source_file'])
    assert.ok(readOnly.includes(name), name)
  for (const name of ['publish_website', 'put_source_file', 'deploy_files']) assert.ok(!readOnly.includes(name), name)
  // A tool that names one file takes it as `file: {type, name}`, never as flat type and name.
  // (A CMS field's own name and type are not a file's: add_field and update_field take them flat.)
  for (const tool of tools) {
    if (tool.name === 'add_field' || tool.name === 'update_field') continue
    const properties = tool.inputSchema.properties as Record<string, unknown>
    assert.ok(!('type' in properties && 'name' in properties), tool.name)
  }
})

test('an MCP client creates, reads and renames a website with a key, through the same handlers as REST', async (t) => {
  const s = await startServer(t)
  const key = await createKey(s, { kind: 'organization', role: 'admin' }, { name: 'agent' })
  const client = await connect(t, s, key.secret)
  const created = await client.callTool({ name: 'create_website', arguments: { name: 'From MCP', kind: 'static' } })
  assert.equal(created.isError, undefined)
  const website = parse(created)
  assert.match(website.id, /^ws_/)
  assert.deepEqual((created as any).structuredContent, website)
  const rest = await s.api('GET', `/v1/websites/${website.id}`)
  assert.deepEqual(rest.body, website)
  const renamed = parse(await client.callTool({ name: 'rename_subdomain', arguments: { websiteId: website.id, label: 'via-mcp' } }))
  assert.equal(renamed.subdomain, 'via-mcp')
  const listed = parse(await client.callTool({ name: 'list_websites', arguments: { limit: 5 } }))
  assert.equal(listed.items[0].id, website.id)
  const me = parse(await client.callTool({ name: 'whoami', arguments: {} }))
  assert.equal(me.actor.id, key.id)
  const audit = await s.api('GET', `/v1/audit-log?actorId=${key.id}`)
  assert.deepEqual(
    audit.body.items.map((e: any) => e.eventType),
    ['website.subdomain_renamed', 'website.created'],
  )
})

test('a domain failure is an isError result with {kind, message, details}, not a crash', async (t) => {
  const s = await startServer(t)
  await createWebsite(s, { name: 'taken', subdomain: 'taken' })
  const client = await connect(t, s, s.adminKey)
  const conflict = await client.callTool({ name: 'create_website', arguments: { name: 'x', subdomain: 'taken' } })
  assert.equal(conflict.isError, true)
  assert.equal(parse(conflict).kind, 'conflict')
  const missing = await client.callTool({ name: 'get_website', arguments: { websiteId: 'ws_nope' } })
  assert.equal(missing.isError, true)
  assert.deepEqual(parse(missing), { kind: 'not_found', message: 'Website ws_nope not found' })
  const editor = await createKey(s, { kind: 'organization', role: 'content_editor' })
  const limited = await connect(t, s, editor.secret)
  const forbidden = await limited.callTool({ name: 'create_website', arguments: { name: 'x' } })
  assert.equal(forbidden.isError, true)
  assert.deepEqual(parse(forbidden).details, { capability: 'websites.create' })
})

test('bad arguments are tool errors naming the argument; an unknown tool is InvalidParams', async (t) => {
  const s = await startServer(t)
  const client = await connect(t, s, s.adminKey)
  const cases: [Record<string, unknown>, string, RegExp][] = [
    [{}, 'arguments.name', /arguments\.name is required/],
    [{ name: 7 }, 'arguments.name', /arguments\.name must be string/],
    [{ name: 'x', kind: 'blog' }, 'arguments.kind', /arguments\.kind must be one of/],
    [{ name: 'x', extra: true }, 'arguments.extra', /arguments\.extra is not a known field/],
  ]
  for (const [args, field, message] of cases) {
    const result = await client.callTool({ name: 'create_website', arguments: args })
    assert.equal(result.isError, true, JSON.stringify(args))
    const body = parse(result)
    assert.equal(body.kind, 'validation')
    assert.equal(body.details.field, field)
    assert.match(body.message, message)
  }
  assert.equal((await s.api('GET', '/v1/websites')).body.items.length, 0, 'nothing was created')
  // A path field of the REST operation is an argument too.
  const unnamed = parse(await client.callTool({ name: 'publish_website', arguments: {} }))
  assert.deepEqual([unnamed.details.field, unnamed.message.includes('arguments.websiteId')], ['arguments.websiteId', true])
  await assert.rejects(
    client.callTool({ name: 'no_such_tool', arguments: {} }),
    (error: unknown) => error instanceof McpError && error.code === ErrorCode.InvalidParams,
  )
  // The connection is still usable afterwards.
  assert.equal(parse(await client.callTool({ name: 'whoami', arguments: {} })).access.role, 'admin')
})

test('errors found behind the pipeline name the argument as MCP callers sent it, not the REST body field', async (t) => {
  const s = await startServer(t)
  const client = await connect(t, s, s.adminKey)
  const site = parse(await client.callTool({ name: 'create_website', arguments: { name: 'static', kind: 'static' } }))
  const badPath = await client.callTool({
    name: 'deploy_files',
    arguments: {
      websiteId: site.id,
      files: [
        { path: 'ok.html', content: 'x' },
        { path: '../etc/passwd', content: 'x' },
      ],
    },
  })
  assert.equal(badPath.isError, true)
  const body = parse(badPath)
  assert.equal(body.kind, 'validation')
  assert.equal(body.details.field, 'arguments.files[1].path')
  assert.equal(body.details.path, '../etc/passwd')
  assert.match(body.message, /arguments\.files\[1\]\.path/)
  assert.doesNotMatch(body.message, /body\./)
  parse(await client.callTool({ name: 'deploy_files', arguments: { websiteId: site.id, files: [{ path: 'a.txt', content: 'a' }] } }))
  const twice = parse(await client.callTool({ name: 'delete_files', arguments: { websiteId: site.id, paths: ['a.txt', './a.txt'] } }))
  assert.equal(twice.details.field, 'arguments.paths[1]')
  assert.match(twice.message, /^arguments\.paths\[1\] /)
  // REST keeps naming the body field.
  const rest = await s.api('POST', `/v1/websites/${site.id}/deploy/json`, { body: { files: [{ path: '../etc/passwd', content: 'x' }] } })
  assert.equal(rest.body.details.field, 'body.files[0].path')
})

test('the MCP endpoint refuses a request without a valid key with 401', async (t) => {
  const s = await startServer(t)
  const res = await fetch(`${s.origin}/v1/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
  })
  assert.equal(res.status, 401)
  assert.equal(((await res.json()) as any).kind, 'unauthorized')
  assert.match(res.headers.get('www-authenticate') ?? '', /Bearer/)
})

test('an agent edits framework source over MCP: lease, write, read, str_replace, search; a stale lease is an isError 409', async (t) => {
  const s = await startServer(t)
  const client = await connect(t, s, s.adminKey)
  const website = parse(await client.callTool({ name: 'create_website', arguments: { name: 'Agent framework site' } }))
  const lease = parse(await client.callTool({ name: 'acquire_edit_lease', arguments: { websiteId: website.id } }))
  const file = { type: 'page', name: 'home' }
  const written = parse(
    await client.callTool({
      name: 'put_source_file',
      arguments: { websiteId: website.id, leaseToken: lease.leaseToken, file, content: 'export const title = "Hi";' },
    }),
  )
  assert.deepEqual([written.version, written.changed, written.formatted], [2, true, true])
  // Every tool that names one file takes it as `file: {type, name}`.
  const read = parse(await client.callTool({ name: 'read_source_file', arguments: { websiteId: website.id, file } }))
  assert.equal(read.content, "export const title = 'Hi'\n")
  const replaced = parse(
    await client.callTool({
      name: 'str_replace',
      arguments: { websiteId: website.id, leaseToken: lease.leaseToken, files: [{ file, edits: [{ oldStr: "'Hi'", newStr: "'Hello'" }] }] },
    }),
  )
  assert.equal(replaced.version, 3)
  const diff = parse(await client.callTool({ name: 'diff_source_file', arguments: { websiteId: website.id, file, from: 2 } }))
  assert.match(diff.diff, /-export const title = 'Hi'\n\+export const title = 'Hello'/)
  const found = parse(await client.callTool({ name: 'search_source', arguments: { websiteId: website.id, pattern: 'Hello' } }))
  assert.deepEqual(
    found.matches.map((m: any) => [m.file, m.line]),
    [[file, 1]],
  )
  const newer = parse(await client.callTool({ name: 'acquire_edit_lease', arguments: { websiteId: website.id } }))
  assert.notEqual(newer.leaseToken, lease.leaseToken)
  const stale = await client.callTool({
    name: 'put_source_file',
    arguments: { websiteId: website.id, leaseToken: lease.leaseToken, file, content: 'x' },
  })
  assert.equal(stale.isError, true)
  assert.equal(parse(stale).kind, 'conflict')
  assert.equal(parse(stale).message, 'Invalid edit lease')
  const failed = await client.callTool({
    name: 'str_replace',
    arguments: { websiteId: website.id, leaseToken: newer.leaseToken, files: [{ file, edits: [{ oldStr: 'absent', newStr: 'x' }] }] },
  })
  assert.equal(failed.isError, true)
  assert.equal(parse(failed).details.problems[0].reason, 'not_found')
})

test('a tool call over its body limit is an isError 413 result; deploy_files takes as much as REST deploy', async (t) => {
  const s = await startServer(t)
  const client = await connect(t, s, s.adminKey)
  const w = parse(await client.callTool({ name: 'create_website', arguments: { name: 'big' } }))
  const big = 'x'.repeat((1 << 20) + 10_000)
  const tooBig = await client.callTool({
    name: 'put_source_file',
    arguments: { websiteId: w.id, leaseToken: 'wl_x', file: { type: 'module', name: 'big' }, content: big },
  })
  assert.equal(tooBig.isError, true)
  assert.equal(parse(tooBig).kind, 'payload_too_large')
  assert.equal(parse(tooBig).details.limitBytes, 1 << 20)
  const site = parse(await client.callTool({ name: 'create_website', arguments: { name: 'static', kind: 'static' } }))
  const deployed = await client.callTool({
    name: 'deploy_files',
    arguments: {
      websiteId: site.id,
      files: [
        { path: 'a.txt', content: 'a'.repeat(900_000) },
        { path: 'b.txt', content: 'b'.repeat(900_000) },
      ],
    },
  })
  assert.equal(deployed.isError, undefined, JSON.stringify(deployed).slice(0, 300))
  assert.equal(parse(deployed).changed, true)
})
