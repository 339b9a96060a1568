import assert from 'node:assert/strict'
import { get } from 'node:http'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { createWebsite, sharedServer, startServer, type TestServer } from '../helpers/server.js'
import { freshRequest, rawPost, rawRequest } from '../helpers/http.js'
import { tool, ticketDeploy } from '../helpers/agent.js'
import { API_POLL_MS, waitUntil } from '../helpers/wait.js'

/*
 * Functions (issue 54): a static site's `functions/` folder, Cloudflare Pages Functions conventions,
 * deployed through the API and answered per request in isolates. The route files below are
 * Cloudflare's documentation examples, unchanged (the routing page, the CORS middleware, the HTML form
 * tutorial's handler).
 */

// Two serving threads: a function's path reaches the main thread from either (a fresh connection may land on the other).
const server = sharedServer({ PLINTH_SERVE_THREADS: '2' })

async function deploy(s: TestServer, id: string, files: Record<string, string>, expected = 201) {
  const res = await s.api('POST', `/v1/websites/${id}/deploy/json`, {
    body: { replace: true, files: Object.entries(files).map(([path, content]) => ({ path, content })) },
  })
  assert.equal(res.status, expected, JSON.stringify(res.body))
  return res.body
}

/** Cloudflare's routing documentation: one segment, and the rest as an array. */
const USER = `export function onRequest(context) {
  return new Response(context.params.user)
}
`
const CATCHALL = `export function onRequest(context) {
  return new Response(JSON.stringify(context.params.catchall))
}
`
/** Cloudflare's "Adding CORS headers" example (functions/_middleware.ts), with the type annotation it has there. */
const CORS = `// Respond to OPTIONS method
export const onRequestOptions: PagesFunction = async () => {
  return new Response(null, {
    status: 204,
    headers: {
      'Access-Control-Allow-Origin': '*',
      'Access-Control-Allow-Headers': '*',
      'Access-Control-Allow-Methods': 'GET, OPTIONS',
      'Access-Control-Max-Age': '86400',
    },
  });
};

// Set CORS to all /api responses
export const onRequest: PagesFunction = async (context) => {
  const response = await context.next();
  response.headers.set('Access-Control-Allow-Origin', '*');
  response.headers.set('Access-Control-Max-Age', '86400');
  return response;
};
`
/** Cloudflare's "HTML forms" tutorial: functions/api/submit.js. */
const SUBMIT = `export async function onRequestPost(context) {
  try {
    let input = await context.request.formData();
    let output = {};
    for (let [key, value] of input) {
      let tmp = output[key];
      if (tmp === undefined) {
        output[key] = value;
      } else {
        output[key] = [].concat(tmp, value);
      }
    }
    let pretty = JSON.stringify(output, null, 2);
    return new Response(pretty, {
      headers: {
        'Content-Type': 'application/json;charset=utf-8'
      }
    });
  } catch (err) {
    return new Response('Error parsing JSON content', { status: 400 });
  }
}
`
/** A JSON API with an [id] and a module of the site's own imported by it. */
const TODO = `import { todos } from '../../_lib/todos'

export const onRequestGet = ({ params, data }) => {
  const todo = todos.find((t) => t.id === Number(params.id))
  if (!todo) return Response.json({ error: 'no such todo' }, { status: 404 })
  return Response.json({ ...todo, seenBy: data.seenBy ?? null })
}
`
const TODOS_LIB = `export const todos: { id: number; title: string }[] = [
  { id: 1, title: 'Write the docs' },
  { id: 2, title: 'Ship functions' },
]
`
/** Middleware of one folder putting something in context.data for the routes under it. */
const API_MIDDLEWARE = `export const onRequest = async ({ data, next }) => {
  data.seenBy = 'api middleware'
  return next()
}
`
/** Falls through to the version's own files. */
const ASSETS = `export const onRequest = async ({ request, env }) => {
  const file = await env.ASSETS.fetch(new URL('/data.json', request.url))
  const json = await file.json()
  return Response.json({ fromFile: json.answer, type: file.headers.get('content-type') })
}
`

test('functions: Cloudflare examples deployed unchanged, routes listed at deploy, sources never served, other paths static', async (t) => {
  const s = await server(t)
  const w = await createWebsite(s, { name: 'Functions', kind: 'static', subdomain: 'fn-examples' })
  const deployed = await deploy(s, w.id, {
    'index.html': '<h1>home</h1>',
    'data.json': '{"answer":42}',
    'functions/_middleware.ts': CORS,
    'functions/users/[user].js': USER,
    'functions/docs/[[catchall]].js': CATCHALL,
    'functions/api/submit.js': SUBMIT,
    'functions/api/_middleware.js': API_MIDDLEWARE,
    'functions/api/todos/[id].ts': TODO,
    'functions/_lib/todos.ts': TODOS_LIB,
    'functions/from-file.js': ASSETS,
  })
  // Cloudflare's TypeScript example (PagesFunction, global as their docs write it) typechecks cleanly.
  assert.equal(deployed.functionWarnings, undefined, JSON.stringify(deployed.functionWarnings))
  // The deploy's answer lists what the functions answer, by file.
  assert.deepEqual(
    deployed.functions.map((r: any) => [r.route, r.methods, r.file, r.middleware]).sort(),
    [
      ['/', [], 'functions/_middleware.ts', true],
      ['/api', [], 'functions/api/_middleware.js', true],
      ['/api/submit', ['POST'], 'functions/api/submit.js', false],
      ['/api/todos/:id', ['GET'], 'functions/api/todos/[id].ts', false],
      ['/docs/:catchall*', [], 'functions/docs/[[catchall]].js', false],
      ['/from-file', [], 'functions/from-file.js', false],
      ['/users/:user', [], 'functions/users/[user].js', false],
    ].sort(),
  )
  const host = 'draft--fn-examples.localhost'
  // A connection of its own each time: the kernel hands them to both threads.
  const get = (path: string, headers: Record<string, string> = {}) => freshRequest(s.plinth.port, host, path, headers)

  // Routing: one segment; the rest as an array; the CORS middleware on every answer (on either serving thread).
  for (let i = 0; i < 6; i++) {
    const user = await get('/users/ada')
    assert.deepEqual([user.status, user.body.toString()], [200, 'ada'])
    assert.equal(user.headers['access-control-allow-origin'], '*')
    assert.equal(user.headers['access-control-max-age'], '86400')
  }
  const rest = await get('/docs/guide/functions/routing')
  assert.deepEqual(JSON.parse(rest.body.toString()), ['guide', 'functions', 'routing'])
  // The middleware's own OPTIONS answer.
  const preflight = await rawRequest(s.plinth.port, host, '/users/ada', {}, 'OPTIONS')
  assert.deepEqual([preflight.status, preflight.headers['access-control-allow-methods']], [204, 'GET, OPTIONS'])
  assert.equal(preflight.headers['content-length'], undefined, 'a 204 carries no Content-Length (RFC 9110)')

  // The JSON API: [id], a module of the site's own, context.data from the folder's middleware.
  const todo = await get('/api/todos/2')
  assert.equal(todo.status, 200)
  assert.match(String(todo.headers['content-type']), /^application\/json/)
  assert.deepEqual(JSON.parse(todo.body.toString()), { id: 2, title: 'Ship functions', seenBy: 'api middleware' })
  assert.equal((await get('/api/todos/9')).status, 404)

  // The form tutorial's handler: urlencoded, repeated fields become a list.
  const form = await rawPost(s.plinth.port, host, '/api/submit', 'name=Ada&topic=maths&topic=engines', {
    'content-type': 'application/x-www-form-urlencoded',
  })
  assert.equal(form.status, 200, form.body.toString())
  assert.deepEqual(JSON.parse(form.body.toString()), { name: 'Ada', topic: ['maths', 'engines'] })
  // A GET of a POST-only route falls through to the files (there is none at that path: the site's 404).
  assert.equal((await get('/api/submit')).status, 404)

  // env.ASSETS.fetch reads the version's own file.
  const fromFile = await get('/from-file')
  assert.deepEqual(JSON.parse(fromFile.body.toString()), { fromFile: 42, type: 'application/json; charset=utf-8' })

  // Static paths are files, as before; the sources and the compiled output are not served.
  const home = await freshRequest(s.plinth.port, host, '/')
  assert.deepEqual([home.status, home.body.toString()], [200, '<h1>home</h1>'])
  for (const path of ['/functions/api/submit.js', '/_platform/functions.js', '/_platform/functions.json', '/functions/_lib/todos.ts'])
    assert.equal((await get(path)).status, 404, path)

  // Published: the live host runs the same version's functions.
  assert.equal((await s.api('POST', `/v1/websites/${w.id}/publish`)).status, 200)
  const live = await rawRequest(s.plinth.port, 'fn-examples.localhost', '/users/grace')
  assert.deepEqual([live.status, live.body.toString()], [200, 'grace'])
})

test('functions: a build error fails the deploy naming the file and line; _routes.json decides which paths run them', async (t) => {
  const s = await server(t)
  const w = await createWebsite(s, { name: 'Broken', kind: 'static', subdomain: 'fn-broken' })
  const broken = await deploy(
    s,
    w.id,
    { 'index.html': 'x', 'functions/api/a.ts': 'export const onRequest = () => {\n  return new Response(\n}\n' },
    400,
  )
  assert.equal(broken.details.reason, 'functions_build_failed')
  assert.equal(broken.details.problems[0].file, 'functions/api/a.ts')
  assert.equal(broken.details.problems[0].line, 3)
  assert.match(broken.message, /functions\/api\/a\.ts:3/)
  // A route file whose name no URL path could match as requested (a space arrives as %20), or a parameter the router could not read.
  for (const [file, named] of [
    ['functions/hello world.js', 'file name "hello world"'],
    ['functions/[$id].js', 'file name "[$id]"'],
  ]) {
    const refused = await deploy(s, w.id, { [file]: 'export const onRequest = () => new Response("x")' }, 400)
    assert.match(refused.message, new RegExp(`${named.replace(/[$[\]]/g, '\\$&')} is not a route segment: use letters, digits`))
  }
  // An npm import is refused with what functions may import.
  const npm = await deploy(s, w.id, { 'functions/b.js': "import x from 'lodash'\nexport const onRequest = () => new Response(x)" }, 400)
  assert.match(npm.message, /"lodash" is not a file of this site/)
  // Nothing was committed: the head is still the empty first version.
  assert.equal((await s.api('GET', `/v1/websites/${w.id}`)).body.headVersion, 1)
  // TypeScript is typechecked against Cloudflare's Workers types: a type error is told with its file and
  // line, and the code deploys anyway, as it would on Cloudflare (which checks no types at deploy).
  const typed = await deploy(s, w.id, {
    'functions/_lib/count.ts': 'export function twice(n: number): number {\n  return n * 2\n}\n',
    'functions/api/typed.ts': `import { twice } from '../_lib/count'

interface Env {
  KV: KVNamespace
}

export const onRequestGet: PagesFunction<Env> = async ({ env }) => {
  const stored = await env.KV.get('n')
  return new Response(String(twice(stored)))
}
`,
  })
  assert.deepEqual(
    typed.functionWarnings.map((p: any) => [p.file, p.line]),
    [['functions/api/typed.ts', 9]],
    JSON.stringify(typed.functionWarnings),
  )
  assert.match(typed.functionWarnings[0].message, /^Argument of type 'string \| null' is not assignable to parameter of type 'number'/)
  assert.deepEqual(
    (await s.api('GET', `/v1/websites/${w.id}/functions`)).body.head.typeProblems.map((p: any) => [p.file, p.line]),
    [['functions/api/typed.ts', 9]],
  )
  assert.equal(
    (await rawRequest(s.plinth.port, 'draft--fn-broken.localhost', '/api/typed')).body.toString(),
    '0',
    'null * 2, as JavaScript has it',
  )
  // The typecheck reads nothing of the server's disk: a type-only import (esbuild drops it) of a server
  // file finds no module, so no text of the server's comes back in a type error.
  const serverFile = fileURLToPath(new URL('../../core/limits.js', import.meta.url))
  const peek = await deploy(s, w.id, {
    'functions/peek.ts': `import type * as Server from '${serverFile}'\nexport const onRequest = () => {\n  const n: Server.Nothing = 1\n  return new Response(String(n))\n}\n`,
  })
  assert.deepEqual(
    peek.functionWarnings.map((p: any) => [p.file, p.line]),
    [['functions/peek.ts', 1]],
    JSON.stringify(peek.functionWarnings),
  )
  assert.match(peek.functionWarnings[0].message, /^Cannot find module/)
  // A folder named functions/ whose files export no handler is the site's own scripts: served as files, as before.
  const plain = await deploy(s, w.id, { 'index.html': 'x', 'functions/menu.js': 'document.title = "menu"' })
  assert.equal(plain.functions, undefined)
  assert.equal(
    (await rawRequest(s.plinth.port, 'draft--fn-broken.localhost', '/functions/menu.js')).body.toString(),
    'document.title = "menu"',
  )

  // _routes.json: the functions run only where it says; an excluded path is a file.
  await deploy(s, w.id, {
    'index.html': '<p>index</p>',
    'api/static.txt': 'a file',
    '_routes.json': JSON.stringify({ version: 1, include: ['/api/*'], exclude: ['/api/static.txt'] }),
    'functions/api/[[path]].js': 'export const onRequest = ({ params }) => new Response("fn:" + params.path.join("/"))',
  })
  const host = 'draft--fn-broken.localhost'
  assert.equal((await rawRequest(s.plinth.port, host, '/api/x/y')).body.toString(), 'fn:x/y')
  assert.equal((await rawRequest(s.plinth.port, host, '/api/static.txt')).body.toString(), 'a file')
  assert.equal((await rawRequest(s.plinth.port, host, '/_routes.json')).status, 404)
  // A bad _routes.json fails the deploy with what is wrong.
  const bad = await deploy(
    s,
    w.id,
    { 'functions/a.js': 'export const onRequest = () => new Response("a")', '_routes.json': '{"version":1,"include":[]}' },
    400,
  )
  assert.match(bad.message, /_routes\.json must include at least one rule/)
})

test('functions: an uncaught error is a 500 for the visitor and a mapped stack in the logs; a loop and a memory bomb hit their limits', async (t) => {
  const s = await server(t)
  const w = await createWebsite(s, { name: 'Limits', kind: 'static', subdomain: 'fn-limits' })
  await deploy(s, w.id, {
    'functions/throw.ts': `export const onRequest = () => {\n  console.log('about to fail', { n: 1 })\n  throw new Error('the database is on fire')\n}\n`,
    'functions/loop.js': 'export const onRequest = () => { for (;;) {} }',
    'functions/bomb.js': 'export const onRequest = () => { const a = []; for (;;) a.push(new Array(4e6).fill(1.5)) }',
    'functions/ok.js': 'export const onRequest = () => new Response("still fine")',
  })
  const host = 'draft--fn-limits.localhost'
  const thrown = await rawRequest(s.plinth.port, host, '/throw')
  assert.equal(thrown.status, 500)
  assert.match(thrown.body.toString(), /function threw an error/)
  assert.doesNotMatch(thrown.body.toString(), /database is on fire/)
  const loop = await rawRequest(s.plinth.port, host, '/loop')
  assert.equal(loop.status, 503)
  const bomb = await rawRequest(s.plinth.port, host, '/bomb')
  assert.equal(bomb.status, 503)
  // The site's other function is still answered (its isolate was restarted).
  assert.equal((await rawRequest(s.plinth.port, host, '/ok')).body.toString(), 'still fine')

  // An answer ends before its invocation's line is written (what it handed to waitUntil may still run): waited for.
  const logs = await waitUntil(
    async () => {
      const lines = (await s.api('GET', `/v1/websites/${w.id}/functions/logs`)).body.logs as any[]
      return lines.some((l) => l.type === 'invocation' && l.path === '/ok') ? lines : null
    },
    "the /ok request's line in the logs",
    15_000,
    API_POLL_MS,
  )
  const messages = logs.map((l) => `${l.type} ${l.message}`)
  assert.ok(
    messages.some((m) => m.startsWith('console about to fail')),
    messages.join('\n'),
  )
  const exception = logs.find((l) => l.type === 'exception')
  assert.match(exception.message, /Uncaught the database is on fire/)
  assert.match(exception.message, /functions\/throw\.ts:3/)
  assert.ok(logs.some((l) => l.type === 'invocation' && l.limit === 'cpu' && l.path === '/loop'))
  // Near its heap limit V8 collects garbage for hundreds of milliseconds: on the default 50 ms a bomb meets the CPU limit first.
  assert.ok(
    logs.some((l) => l.type === 'invocation' && (l.limit === 'cpu' || l.limit === 'memory') && l.path === '/bomb'),
    JSON.stringify(logs.filter((l) => l.path === '/bomb')),
  )
  assert.ok(logs.some((l) => l.type === 'invocation' && l.status === 200 && l.path === '/ok'))
  // /metrics counts them by outcome, with their CPU and cold starts.
  const metrics = await (await fetch(`${s.origin}/metrics`, { headers: { authorization: `Bearer ${s.adminKey}` } })).text()
  const sample = (name: string) => Number(new RegExp(`^${name.replace(/[{}"]/g, '\\$&')} (\\S+)$`, 'm').exec(metrics)?.[1] ?? 0)
  assert.ok(sample('plinth_function_invocations_total{site="static",outcome="cpu"}') >= 1, metrics)
  assert.ok(sample('plinth_function_invocations_total{site="static",outcome="exception"}') >= 1)
  assert.ok(sample('plinth_function_invocations_total{site="static",outcome="ok"}') >= 1)
  assert.ok(sample('plinth_function_cold_starts_total{site="static"}') >= 1)
  assert.ok(sample('plinth_function_cpu_seconds_total{site="static"}') > 0.05, 'the loop alone used 50 ms')
})

test("functions: a folder deployed the agent skill's way (a ticket, multipart), its routes in the answer; MCP reads the logs and sets a secret", async (t) => {
  const s = await server(t)
  const w = await createWebsite(s, { name: 'Skill', kind: 'static', subdomain: 'fn-skill' })
  const ticket = (await s.api('POST', `/v1/websites/${w.id}/deploy/tickets`)).body
  const deployed = await ticketDeploy(s, ticket.ticket, {
    '/index.html': '<h1>skill</h1>',
    '/functions/api/time.js':
      'export const onRequestGet = ({ env }) => { console.log("asked for the time"); return Response.json({ tz: env.TZ_NAME ?? "UTC" }) }',
  })
  assert.equal(deployed.status, 201, JSON.stringify(deployed.body))
  assert.deepEqual(
    deployed.body.functions.map((r: any) => [r.route, r.methods]),
    [['/api/time', ['GET']]],
  )
  const set = await tool(s, 'set_function_variable', { websiteId: w.id, name: 'TZ_NAME', value: 'Europe/Paris', secret: true })
  assert.equal(set.value, null)
  const host = 'draft--fn-skill.localhost'
  assert.deepEqual(JSON.parse((await rawRequest(s.plinth.port, host, '/api/time')).body.toString()), { tz: 'Europe/Paris' })
  const read = await tool(s, 'read_function_logs', { websiteId: w.id })
  assert.ok(
    read.logs.some((l: any) => l.message === 'asked for the time'),
    JSON.stringify(read),
  )
  const overview = await tool(s, 'get_functions', { websiteId: w.id })
  assert.deepEqual(
    overview.variables.map((v: any) => [v.name, v.secret, v.value]),
    [['TZ_NAME', true, null]],
  )
  assert.deepEqual(
    overview.head.routes.map((r: any) => r.route),
    ['/api/time'],
  )
})

test('functions: variables and secrets in env (a secret never shown back or logged), a KV counter per site, fetch to private addresses refused, 50 subrequests, nothing of Plinth reachable', async (t) => {
  const s = await server(t)
  const a = await createWebsite(s, { name: 'Env A', kind: 'static', subdomain: 'fn-env-a' })
  const b = await createWebsite(s, { name: 'Env B', kind: 'static', subdomain: 'fn-env-b' })
  const SECRET = 'sk_live_do-not-leak-4242'
  assert.equal((await s.api('PUT', `/v1/websites/${a.id}/functions/variables/GREETING`, { body: { value: 'hello' } })).status, 200)
  const set = await s.api('PUT', `/v1/websites/${a.id}/functions/variables/API_TOKEN`, { body: { value: SECRET, secret: true } })
  assert.deepEqual([set.status, set.body.name, set.body.secret, set.body.value], [200, 'API_TOKEN', true, null])
  const reserved = await s.api('PUT', `/v1/websites/${a.id}/functions/variables/KV`, { body: { value: 'x' } })
  assert.equal(reserved.status, 400)
  const files = {
    'functions/env.js': `export const onRequest = ({ env }) => {
  console.log('token is', env.API_TOKEN)
  return Response.json({ greeting: env.GREETING ?? null, tokenLength: env.API_TOKEN ? env.API_TOKEN.length : 0, names: Object.keys(env).sort() })
}`,
    'functions/counter.js': `export async function onRequest({ env }) {
  const count = Number((await env.KV.get('count')) ?? 0) + 1
  await env.KV.put('count', String(count), { metadata: { by: 'counter' } })
  return new Response(String(count))
}`,
    'functions/fetch.js': `export async function onRequest({ request }) {
  const target = new URL(request.url).searchParams.get('url')
  try {
    const res = await fetch(target)
    return new Response('fetched ' + res.status)
  } catch (error) {
    return new Response('refused: ' + error.message, { status: 502 })
  }
}`,
    'functions/many.js': `export async function onRequest() {
  let made = 0
  for (let i = 0; i < 1000; i++) {
    try { await fetch('http://10.0.0.1/' + i) } catch (error) { if (/subrequests/.test(error.message)) return new Response(made + ' then: ' + error.message) }
    made++
  }
  return new Response('all ' + made)
}`,
    'functions/escape.js': `export const onRequest = () => {
  let loaded
  const name = ['node', 'fs'].join(':')
  try { loaded = typeof require === 'function' ? typeof require(name).readFileSync : 'absent' } catch { loaded = 'refused' }
  let viaFunction
  try { viaFunction = Function('return typeof process')() } catch { viaFunction = 'refused' }
  return Response.json({ process: typeof process, require: loaded, viaFunction, host: typeof globalThis.__plinthHost })
}`,
  }
  await deploy(s, a.id, files)
  await deploy(s, b.id, { 'functions/counter.js': files['functions/counter.js'], 'functions/env.js': files['functions/env.js'] })
  const hostA = 'draft--fn-env-a.localhost'
  const hostB = 'draft--fn-env-b.localhost'
  const body = async (host: string, path: string) => (await rawRequest(s.plinth.port, host, path)).body.toString()

  // env: the plain variable, the secret's value (its length), the platform's bindings; site B has neither variable.
  assert.deepEqual(JSON.parse(await body(hostA, '/env')), {
    greeting: 'hello',
    tokenLength: SECRET.length,
    names: ['API_TOKEN', 'ASSETS', 'GREETING', 'KV'],
  })
  assert.deepEqual(JSON.parse(await body(hostB, '/env')), { greeting: null, tokenLength: 0, names: ['ASSETS', 'KV'] })
  // The secret is never shown back (the overview names it only) and not in the logs even when the function logs it.
  const overview = (await s.api('GET', `/v1/websites/${a.id}/functions`)).body
  assert.deepEqual(
    overview.variables.map((v: any) => [v.name, v.secret, v.value]),
    [
      ['API_TOKEN', true, null],
      ['GREETING', false, 'hello'],
    ],
  )
  assert.ok(!JSON.stringify(overview).includes(SECRET))
  const logs = JSON.stringify((await s.api('GET', `/v1/websites/${a.id}/functions/logs`)).body)
  assert.match(logs, /token is/)
  assert.ok(!logs.includes(SECRET), logs)
  const audit = JSON.stringify((await s.api('GET', `/v1/audit-log`)).body)
  assert.ok(!audit.includes(SECRET))

  // A KV counter: durable between requests, one store per site.
  assert.deepEqual([await body(hostA, '/counter'), await body(hostA, '/counter'), await body(hostA, '/counter')], ['1', '2', '3'])
  assert.equal(await body(hostB, '/counter'), '1')
  assert.deepEqual(overview.kv, { keys: 0, bytes: 0 })
  assert.deepEqual((await s.api('GET', `/v1/websites/${a.id}/functions`)).body.kv, { keys: 1, bytes: 1 })

  // fetch goes through the SSRF guard: loopback, private and metadata addresses are refused.
  for (const target of [
    `http://127.0.0.1:${s.plinth.port}/v1/me`,
    'http://10.1.2.3/',
    'http://169.254.169.254/latest/meta-data/',
    'http://[::1]/',
  ]) {
    const refused = await rawRequest(s.plinth.port, hostA, `/fetch?url=${encodeURIComponent(target)}`)
    assert.equal(refused.status, 502, target)
    assert.match(refused.body.toString(), /not a public internet address|not reachable from here/, target)
  }
  // At most 50 subrequests a request.
  assert.match(await body(hostA, '/many'), /^50 then: .*this request made more than 50 subrequests/)
  // Nothing of Node or of the platform's bridge is reachable from site code.
  const escape = JSON.parse(await body(hostA, '/escape'))
  assert.deepEqual(escape, {
    process: 'undefined',
    require: escape.require === 'absent' ? 'absent' : 'refused',
    viaFunction: 'undefined',
    host: 'undefined',
  })

  // A variable deleted is gone from the next request.
  assert.equal((await s.api('DELETE', `/v1/websites/${a.id}/functions/variables/GREETING`)).status, 200)
  assert.equal(JSON.parse(await body(hostA, '/env')).greeting, null)
  // The audit log says who set and removed which name (a secret's value never).
  const events = (await s.api('GET', `/v1/audit-log?websiteId=${a.id}&limit=100`)).body.items as any[]
  const said = events
    .filter((e) => e.eventType.startsWith('website.variable_'))
    .map((e) => [e.eventType, e.metadata.name, e.metadata.secret ?? null])
    .reverse()
  assert.deepEqual(said, [
    ['website.variable_set', 'GREETING', false],
    ['website.variable_set', 'API_TOKEN', true],
    ['website.variable_removed', 'GREETING', false],
  ])
})

test('functions: the logs followed with their cursor, a page at a time, miss and repeat no line', async (t) => {
  const s = await server(t)
  const w = await createWebsite(s, { name: 'Chatty', kind: 'static', subdomain: 'fn-chatty' })
  await deploy(s, w.id, {
    'functions/talk.js': `export const onRequest = ({ request }) => {
  const n = new URL(request.url).searchParams.get('n')
  for (let i = 0; i < 5; i++) console.log('request ' + n + ' line ' + i)
  return new Response('ok')
}`,
  })
  const start = await s.api('GET', `/v1/websites/${w.id}/functions/logs`)
  assert.deepEqual(start.body.logs, [])
  let cursor: string = start.body.cursor
  // A follower waits while 20 requests, two at a time, write 6 lines each (5 console lines and the invocation).
  const seen: string[] = []
  const requests = (async () => {
    for (let n = 0; n < 20; n += 2)
      await Promise.all([n, n + 1].map((k) => rawRequest(s.plinth.port, 'draft--fn-chatty.localhost', `/talk?n=${k}`)))
  })()
  while (seen.length < 120) {
    const page = await s.api('GET', `/v1/websites/${w.id}/functions/logs?cursor=${cursor}&wait=10&limit=7`)
    assert.equal(page.status, 200, JSON.stringify(page.body))
    assert.ok(page.body.logs.length > 0 && page.body.logs.length <= 7, `a page of 1 to 7 lines (${page.body.logs.length})`)
    for (const line of page.body.logs) seen.push(line.type === 'invocation' ? `invocation ${line.path}` : line.message)
    cursor = page.body.cursor
  }
  await requests
  assert.equal(seen.length, 120, 'no line twice')
  for (let n = 0; n < 20; n++)
    for (let i = 0; i < 5; i++) assert.equal(seen.filter((m) => m === `request ${n} line ${i}`).length, 1, `request ${n} line ${i}`)
  assert.equal(seen.filter((m) => m.startsWith('invocation ')).length, 20)
  // Each request's lines in the order it wrote them.
  for (let n = 0; n < 20; n++) {
    const own = seen.filter((m) => m.startsWith(`request ${n} `))
    assert.deepEqual(
      own,
      [0, 1, 2, 3, 4].map((i) => `request ${n} line ${i}`),
    )
  }
  // Nothing newer: a read with the last cursor waits, then answers none and the same cursor.
  const idle = await s.api('GET', `/v1/websites/${w.id}/functions/logs?cursor=${cursor}&wait=1`)
  assert.deepEqual([idle.body.logs, idle.body.cursor], [[], cursor])
  // A cursor of another run (the server restarted, or another node took over as primary) counted from
  // another zero: the reader starts again from the newest lines, with a cursor of this run.
  const foreign = await s.api('GET', `/v1/websites/${w.id}/functions/logs?cursor=${'0'.repeat(8)}.999999&limit=10`)
  assert.equal(foreign.body.logs.length, 10)
  assert.equal(foreign.body.cursor, cursor, 'the newest line is the last one read')
  assert.equal((await s.api('GET', `/v1/websites/${w.id}/functions/logs?cursor=12`)).status, 400)
})

test('functions: the memory limit stops an isolate that outgrows it (503, the limit named), and the site answers again; a slow body and a hung answer meet the wall limit', async (t) => {
  // A generous CPU budget, so the heap limit is what stops the bomb; a short wall time for the slow ones.
  const s = await startServer(t, {
    PLINTH_SERVE_THREADS: '1',
    PLINTH_FUNCTION_CPU_MS: '10000',
    PLINTH_FUNCTION_MEMORY_MB: '32',
    PLINTH_FUNCTION_WALL_MS: '1500',
  })
  const w = await createWebsite(s, { name: 'Memory', kind: 'static', subdomain: 'fn-memory' })
  await deploy(s, w.id, {
    'functions/bomb.js': 'export const onRequest = () => { const a = []; for (;;) a.push(new Array(1e7)) }',
    'functions/ok.js': 'export const onRequest = () => new Response("fine")',
    // A body that never ends (a chunk every 100 ms), and an answer that never comes.
    'functions/slow.js': `export const onRequest = () => {
  let n = 0
  const body = new ReadableStream({
    async pull(controller) {
      await scheduler.wait(100)
      controller.enqueue(new TextEncoder().encode('chunk ' + n++ + '\\n'))
    },
  })
  return new Response(body)
}`,
    'functions/hang.js': 'export const onRequest = () => new Promise(() => {})',
  })
  const host = 'draft--fn-memory.localhost'
  const hang = await rawRequest(s.plinth.port, host, '/hang')
  assert.equal(hang.status, 504)
  const started = Date.now()
  // The head went before the limit: the answer is cut (the visitor's client sees it end early, not complete).
  const slow = await new Promise<{ status: number; body: string; complete: boolean }>((resolve, reject) => {
    get({ host: '127.0.0.1', port: s.plinth.port, path: '/slow', headers: { host }, agent: false }, (res) => {
      let text = ''
      res.on('data', (chunk: Buffer) => (text += chunk.toString()))
      res.on('error', () => undefined)
      res.on('close', () => resolve({ status: res.statusCode ?? 0, body: text, complete: res.complete }))
    }).on('error', reject)
  })
  const took = Date.now() - started
  assert.equal(slow.status, 200)
  assert.equal(slow.complete, false, 'the answer was cut, not ended as if whole')
  assert.match(slow.body, /^chunk 0\nchunk 1\n/, 'the visitor got what was sent before the limit')
  assert.ok(took >= 1400 && took < 10_000, `the body was cut at the wall limit (took ${took} ms)`)
  const bomb = await rawRequest(s.plinth.port, host, '/bomb')
  assert.equal(bomb.status, 503)
  assert.match(bomb.body.toString(), /went over one of its limits/)
  assert.equal((await rawRequest(s.plinth.port, host, '/ok')).body.toString(), 'fine')
  const logs = (await s.api('GET', `/v1/websites/${w.id}/functions/logs`)).body.logs as any[]
  const line = logs.find((l) => l.path === '/bomb' && l.type === 'invocation')
  assert.equal(line.limit, 'memory', JSON.stringify(line))
  assert.match(line.message, /more than 32 MB of memory/)
  for (const path of ['/hang', '/slow'])
    assert.equal(logs.find((l) => l.path === path && l.type === 'invocation')?.limit, 'wall', `${path}: ${JSON.stringify(logs)}`)
})

test("functions: a site whose function loops, bombs memory and fires fetches does not stop another site's files, functions or the API", async (t) => {
  const s = await server(t)
  const bad = await createWebsite(s, { name: 'Abuser', kind: 'static', subdomain: 'fn-abuser' })
  const good = await createWebsite(s, { name: 'Neighbour', kind: 'static', subdomain: 'fn-neighbour' })
  await deploy(s, bad.id, {
    'functions/loop.js': 'export const onRequest = () => { for (;;) {} }',
    'functions/bomb.js': 'export const onRequest = () => { const a = []; for (;;) a.push(new Array(4e6).fill(1.5)) }',
    'functions/fetches.js': `export const onRequest = async () => {
  await Promise.allSettled(Array.from({ length: 1000 }, (_, i) => fetch('http://10.9.8.7/' + i)))
  return new Response('done')
}`,
  })
  await deploy(s, good.id, {
    'index.html': '<p>neighbour</p>',
    'functions/api/ping.js': 'export const onRequest = () => new Response("pong")',
  })
  const badHost = 'draft--fn-abuser.localhost'
  const goodHost = 'draft--fn-neighbour.localhost'
  // The abuse: requests to each bad function, kept going until the neighbour's checks are done.
  let stop = false
  const statuses: number[] = []
  const abuse = Promise.all(
    ['/loop', '/bomb', '/fetches', '/loop'].map(async (path) => {
      while (!stop) statuses.push((await freshRequest(s.plinth.port, badHost, path)).status)
    }),
  )
  try {
    for (let i = 0; i < 20; i++) {
      const started = performance.now()
      const [file, ping, api] = await Promise.all([
        freshRequest(s.plinth.port, goodHost, '/'),
        freshRequest(s.plinth.port, goodHost, '/api/ping'),
        s.api('GET', `/v1/websites/${good.id}`),
      ])
      assert.deepEqual(
        [file.status, file.body.toString(), ping.status, ping.body.toString(), api.status],
        [200, '<p>neighbour</p>', 200, 'pong', 200],
      )
      // Answered at once, not after the abuser's budgets (a loop is cut at 50 ms, the neighbour never waits that long in line).
      assert.ok(performance.now() - started < 2000, `round ${i} took ${performance.now() - started} ms`)
    }
  } finally {
    stop = true
    await abuse
  }
  // The abuser's requests were each answered with its limit (503) or, for the fetches, refused inside it (200 'done').
  assert.ok(statuses.length >= 4 && statuses.every((status) => status === 503 || status === 200), JSON.stringify(statuses))
  assert.ok(statuses.includes(503))
})

test("functions in a framework site's source: files of type function, built by the gate with the pages, served beside them, their problems the build's", async (t) => {
  const s = await server(t)
  const w = await createWebsite(s, { name: 'Framework fn', subdomain: 'fn-framework' })
  const token = (await s.api('POST', `/v1/websites/${w.id}/source/lease`)).body.leaseToken as string
  const put = async (file: Record<string, string>, content: string) => {
    const res = await s.api('PUT', `/v1/websites/${w.id}/source/file`, { body: { leaseToken: token, file, content } })
    assert.ok(res.status === 201 || res.status === 200, JSON.stringify(res.body))
    return res.body.version as number
  }
  const settled = (version: number) =>
    waitUntil(
      async () => {
        const res = await s.api('GET', `/v1/websites/${w.id}/deployments/status?version=${version}`)
        return res.body.status !== 'building' && res.body
      },
      `the build of v${version}`,
      60_000,
      API_POLL_MS,
    )
  await put(
    { type: 'page', name: 'home' },
    "import { definePage } from '@platform'\nexport default definePage({ route: '/', render: () => <h1>Home page</h1> })\n",
  )
  // A page whose address starts like the functions folder: still a page.
  await put(
    { type: 'page', name: 'about-functions' },
    "import { definePage } from '@platform'\nexport default definePage({ route: '/functions', render: () => <h1>About our functions</h1> })\n",
  )
  await put({ type: 'function', name: '_lib/greet' }, 'export const greet = (name: string): string => `hello ${name}`\n')
  const head = await put(
    { type: 'function', name: 'api/hello/[name]' },
    `import { greet } from '../../_lib/greet'

export const onRequestGet: PagesFunction<{ SUFFIX?: string }, 'name'> = ({ params, env }) =>
  Response.json({ said: greet(String(params.name)) + (env.SUFFIX ?? '') })
`,
  )
  const built = await settled(head)
  assert.equal(built.status, 'ready', JSON.stringify(built))
  const host = 'draft--fn-framework.localhost'
  assert.match((await rawRequest(s.plinth.port, host, '/')).body.toString(), /Home page/)
  assert.match((await rawRequest(s.plinth.port, host, '/functions')).body.toString(), /About our functions/)
  const hello = await rawRequest(s.plinth.port, host, '/api/hello/ada')
  assert.deepEqual([hello.status, JSON.parse(hello.body.toString())], [200, { said: 'hello ada' }])
  assert.equal((await rawRequest(s.plinth.port, host, '/_platform/functions.js')).status, 404, 'the compiled script is never served')
  const listed = (await s.api('GET', `/v1/websites/${w.id}/functions`)).body
  assert.deepEqual(
    listed.head.routes.map((r: any) => [r.route, r.methods, r.file]),
    [['/api/hello/:name', ['GET'], 'functions/api/hello/[name].ts']],
  )
  // Published: the live host runs them too, with the site's variables.
  assert.equal((await s.api('PUT', `/v1/websites/${w.id}/functions/variables/SUFFIX`, { body: { value: '!' } })).status, 200)
  assert.equal((await s.api('POST', `/v1/websites/${w.id}/publish`)).status, 200)
  const live = await rawRequest(s.plinth.port, 'fn-framework.localhost', '/api/hello/grace')
  assert.deepEqual(JSON.parse(live.body.toString()), { said: 'hello grace!' })

  // A type error in a function fails the build, naming the function and line; the live version stays.
  const broken = await put(
    { type: 'function', name: 'api/count' },
    'export const onRequest = () => {\n  const n: number = "one"\n  return new Response(String(n))\n}\n',
  )
  const failed = await settled(broken)
  assert.equal(failed.status, 'failed')
  const problem = failed.diagnostics.find((d: any) => d.step === 'functions')
  assert.deepEqual([problem?.file, problem?.line], ['function:api/count', 2], JSON.stringify(failed.diagnostics))
  assert.match(problem.message, /Type 'string' is not assignable to type 'number'/)
  assert.deepEqual(JSON.parse((await rawRequest(s.plinth.port, 'fn-framework.localhost', '/api/hello/x')).body.toString()), {
    said: 'hello x!',
  })
  // /metrics tells a framework site's invocations from a static site's.
  const metrics = await (await fetch(`${s.origin}/metrics`, { headers: { authorization: `Bearer ${s.adminKey}` } })).text()
  assert.match(metrics, /^plinth_function_invocations_total\{site="framework",outcome="ok"\} [1-9]/m)
})
