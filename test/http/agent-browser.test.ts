import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { test, type TestContext } from 'node:test'
import { promisify } from 'node:util'
import { auth } from '@modelcontextprotocol/sdk/client/auth.js'
import { chromium, type Browser } from 'playwright-core'
import { AnonymousAgent, staticSite } from '../helpers/anonymous.js'
import { rawRequest } from '../helpers/http.js'
import { MemoryProvider } from '../helpers/oauth.js'
import { startServer } from '../helpers/server.js'

const CHROMIUM = '/usr/bin/chromium'
// CI installs Debian's chromium (.ci/run); elsewhere the test says how to get it.
const skip = !existsSync(CHROMIUM) && process.env.CI !== 'true' ? 'needs Debian chromium: apt-get install chromium' : false
/**
 * The README's MCP Inspector line (`npx -y @modelcontextprotocol/inspector@<version> --cli <url>
 * --transport http --header "Authorization: Bearer $KEY" --method tools/list`) as npx's arguments, for
 * `url` and `token`, without its --method: the test adds its own.
 */
function readmeInspector(url: string, token: string): string[] {
  const readme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8')
  const line = readme.split('\n').find((l) => l.startsWith('npx -y @modelcontextprotocol/inspector@'))
  assert.ok(line, 'the README has the Inspector line')
  const match =
    /^npx (-y @modelcontextprotocol\/inspector@\d+\.\d+\.\d+) --cli (\S+) --transport http --header "Authorization: Bearer \$KEY" --method tools\/list$/.exec(
      line,
    )
  assert.ok(match, `the README's line has the expected shape: ${line}`)
  assert.equal(match[2], 'http://localhost:8080/v1/mcp')
  return [...match[1].split(' '), '--cli', url, '--transport', 'http', '--header', `Authorization: Bearer ${token}`]
}

/** A loopback page an MCP client listens on for the authorization redirect, as desktop agents do. */
async function callbackServer(t: TestContext): Promise<{ url: string; received: Promise<URL> }> {
  let resolve!: (url: URL) => void
  const received = new Promise<URL>((r) => (resolve = r))
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', `http://${req.headers.host}`)
    if (url.pathname !== '/callback') return res.writeHead(404).end()
    res.writeHead(200, { 'content-type': 'text/html' }).end('<p>Connected. You can close this window.</p>')
    resolve(url)
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  t.after(() => new Promise<void>((r) => server.close(() => r())))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/callback`, received }
}

async function launch(t: TestContext): Promise<Browser> {
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  })
  t.after(() => browser.close())
  return browser
}

test(
  'in a real browser: the owner sets up through the link, an agent is connected through sign-in and consent, and the MCP Inspector CLI calls tools with its token',
  { skip },
  async (t) => {
    const server = await startServer(t)
    const app = `http://localhost:${server.plinth.port}/app`
    const browser = await launch(t)

    // The setup link carries its secret in the fragment; the page's script copies it into the form.
    const setup = await browser.newPage()
    await setup.goto(`${app}/setup#token=${server.plinth.installation.setupCode}`)
    assert.equal(new URL(setup.url()).hash, '', 'the secret leaves the address bar')
    await setup.fill('#name', 'Olive Owner')
    await setup.fill('#email', 'owner@example.com')
    await setup.fill('#password', 'owner-password-1')
    await setup.click('button[type=submit]')
    await setup.waitForURL(app, { timeout: 10_000 }).catch(async () => assert.fail(`${setup.url()}: ${await setup.textContent('body')}`))
    // The dashboard's home: the person's websites, their name in the header.
    await setup.getByRole('heading', { level: 1, name: /Websites/ }).waitFor()
    await setup.getByText('Olive Owner', { exact: true }).waitFor()
    await setup.context().close()

    // An agent (the MCP SDK's own OAuth client) sends a person who is signed out to the consent page.
    const callback = await callbackServer(t)
    const provider = new MemoryProvider('Browser Agent', callback.url)
    const resource = `http://localhost:${server.plinth.port}/v1/mcp`
    assert.equal(await auth(provider, { serverUrl: resource }), 'REDIRECT')
    const context = await browser.newContext()
    const page = await context.newPage()
    const problems: string[] = []
    page.on('pageerror', (error) => problems.push(error.message))
    page.on('console', (message) => {
      if (message.type() === 'error' && !message.text().startsWith('Failed to load resource')) problems.push(message.text())
    })
    await page.goto(provider.authorizationUrl!.href)
    assert.match(page.url(), /\/app\/sign-in\?next=/, 'signed out: the sign-in page comes first')
    await page.fill('#email', 'owner@example.com')
    await page.fill('#password', 'owner-password-1')
    await Promise.all([page.waitForURL(/\/app\/oauth\/authorize\?/), page.click('button[type=submit]')])
    assert.equal(await page.textContent('h1'), 'Connect Browser Agent?')
    await page.selectOption('#grant_scope', 'platform:content')
    await page.click('button[value=approve]')
    const back = await callback.received
    assert.equal(back.searchParams.get('state'), provider.authorizationUrl!.searchParams.get('state'))
    assert.equal(back.searchParams.get('error'), null)
    assert.equal(await auth(provider, { serverUrl: resource, authorizationCode: back.searchParams.get('code')! }), 'AUTHORIZED')
    assert.equal(provider.saved?.scope, 'platform:content')

    // The dashboard's Account screen lists the connection.
    await page.goto(`${app}/account`)
    const connections = page.getByRole('list', { name: 'Connected applications' })
    await connections.waitFor()
    assert.match((await connections.textContent()) ?? '', /Browser Agent[\s\S]*platform:content/)
    assert.deepEqual(problems, [])

    // A web page on another origin (the callback's) calls the MCP endpoint and the OAuth endpoints with
    // fetch: the browser enforces CORS, preflights included.
    const web = await context.newPage()
    await web.goto(callback.url)
    const fromWeb = await web.evaluate(
      async ({ resource, token, page }: { resource: string; token: string; page: string }) => {
        const mcp = await fetch(resource, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${token}`,
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
            'mcp-protocol-version': '2025-06-18',
          },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'whoami', arguments: {} } }),
        })
        const bare = await fetch(resource, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
        const origin = new URL(resource).origin
        const metadata = (await (await fetch(`${origin}/.well-known/oauth-authorization-server`)).json()) as {
          registration_endpoint: string
          token_endpoint: string
        }
        const registered = await fetch(metadata.registration_endpoint, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ client_name: 'Web Agent', redirect_uris: [page] }),
        })
        const refreshed = await fetch(metadata.token_endpoint, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: 'grant_type=refresh_token&refresh_token=wr_unknown&client_id=nobody',
        })
        return {
          mcp: [mcp.status, ((await mcp.json()) as any).result.structuredContent.actor.kind],
          challenge: { status: bare.status, header: bare.headers.get('www-authenticate') },
          registered: registered.status,
          token: [refreshed.status, ((await refreshed.json()) as any).error],
        }
      },
      { resource, token: provider.saved!.access_token, page: callback.url },
    )
    assert.deepEqual(fromWeb.mcp, [200, 'oauth'])
    assert.equal(fromWeb.challenge.status, 401)
    assert.match(fromWeb.challenge.header ?? '', /^Bearer resource_metadata="/, 'the challenge header is readable across origins')
    assert.equal(fromWeb.registered, 201)
    assert.deepEqual(fromWeb.token, [401, 'invalid_client'])

    // The MCP Inspector's CLI, run as the README writes it (npx and the pinned version), given the
    // token, lists and calls tools as the person.
    const inspect = async (...args: string[]) => {
      const { stdout } = await promisify(execFile)('npx', [...readmeInspector(resource, provider.saved!.access_token), ...args], {
        timeout: 120_000,
        env: { ...process.env, MCP_CATALOG_PATH: `${server.dataDir}/inspector-catalog.json` },
      })
      return JSON.parse(stdout)
    }
    const tools = await inspect('--method', 'tools/list')
    assert.ok(tools.tools.some((tool: { name: string }) => tool.name === 'list_websites'))
    const whoami = await inspect('--method', 'tools/call', '--tool-name', 'whoami')
    assert.equal(whoami.structuredContent.actor.kind, 'oauth')
    assert.equal(whoami.structuredContent.actor.agent, 'Browser Agent')
    assert.equal(whoami.structuredContent.access.role, 'content_editor', 'platform:content, as chosen on the consent page')
    assert.ok(Array.isArray((await inspect('--method', 'tools/call', '--tool-name', 'list_websites')).structuredContent.items))
    // A content editor is not offered create_website (tools/list holds what the credential may call), and the
    // Inspector, asked for it anyway, fails without making one.
    assert.ok(!tools.tools.some((tool: { name: string }) => tool.name === 'create_website'))
    await assert.rejects(inspect('--method', 'tools/call', '--tool-name', 'create_website', '--tool-arg', 'name=From the Inspector'))
    assert.equal((await server.api('GET', '/v1/websites')).body.items.length, 0)
  },
)

test(
  'in a real browser: the claim page reads the token from the fragment, shows the site, creates the account and claims with one click',
  { skip },
  async (t) => {
    const server = await startServer(t)
    const agent = await new AnonymousAgent(server).issue()
    const site = (await agent.create(staticSite('Browser Claim', { '/index.html': 'claimed in a browser' }))).body
    const browser = await launch(t)
    const page = await browser.newPage()
    const problems: string[] = []
    page.on('pageerror', (error) => problems.push(error.message))
    await page.goto(`${site.claimPage}#token=${agent.token}`)
    assert.equal(new URL(page.url()).hash, '', 'the token leaves the address bar')
    await page.waitForFunction("document.getElementById('site')?.textContent?.includes('Browser Claim')", undefined, { timeout: 5000 })
    assert.match((await page.textContent('#site')) ?? '', new RegExp(site.urls.published.replace(/[.]/g, '\\.')))
    await page.fill('#email', 'new.person@example.com')
    await page.fill('#name', 'New Person')
    await page.fill('#password', 'new-person-password')
    await page.click('button[type=submit]')
    await page.waitForSelector('h1:has-text("Website claimed")', { timeout: 10_000 })
    assert.match((await page.textContent('body')) ?? '', /Browser Claim is now in/)
    assert.deepEqual(problems, [])
    // Claimed: the token is spent, the site is the new person's, and they are signed in.
    assert.equal((await agent.status()).body.details.reason, 'credential_consumed')
    const person = server.plinth.registry.people.personByEmail('new.person@example.com')!
    assert.equal(server.plinth.store.websites.get(site.id)?.orgId, person.personalOrgId)
    // Right after the claim, the new owner sees the site on their dashboard.
    await page.goto(`http://localhost:${server.plinth.port}/app`)
    await page.getByRole('list', { name: 'Websites' }).getByRole('link', { name: 'Browser Claim' }).waitFor()
    await page.getByText('New Person', { exact: true }).waitFor()
  },
)

test(
  'in a real browser: the shared analytics dashboard draws its chart with no console errors; a revoked link is gone',
  { skip },
  async (t) => {
    const server = await startServer(t)
    const site = await server.api('POST', '/v1/websites', { body: { name: 'Charted', kind: 'static', subdomain: 'charted' } })
    await server.api('POST', `/v1/websites/${site.body.id}/deploy/json`, {
      body: { files: [{ path: 'index.html', content: '<h1>hi</h1>' }] },
    })
    await server.api('POST', `/v1/websites/${site.body.id}/publish`)
    const ua = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36'
    for (let i = 0; i < 3; i++) await rawRequest(server.plinth.port, 'charted.localhost', '/', { 'user-agent': ua })
    assert.equal((await server.api('GET', `/v1/websites/${site.body.id}`)).body.analytics.dashboardUrl, null)
    const shared = await server.api('POST', `/v1/websites/${site.body.id}/analytics/share`)
    assert.equal(shared.status, 201)
    assert.equal((await server.api('GET', `/v1/websites/${site.body.id}`)).body.analytics.dashboardUrl, shared.body.dashboardUrl)

    const browser = await launch(t)
    const page = await browser.newPage()
    const problems: string[] = []
    page.on('pageerror', (error) => problems.push(error.message))
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(message.text())
    })
    await page.goto(shared.body.dashboardUrl)
    assert.equal(await page.textContent('#total'), '3')
    await page.waitForSelector('#chart canvas', { timeout: 5000 })
    const size = await page.evaluate("(() => { const c = document.querySelector('#chart canvas'); return [c.width, c.height] })()")
    assert.ok((size as number[])[0] > 100 && (size as number[])[1] > 100, `the chart is drawn (${size})`)
    assert.match((await page.textContent('body')) ?? '', /Pages[\s\S]*\/\s*3/)
    assert.deepEqual(problems, [])

    assert.equal((await server.api('DELETE', `/v1/websites/${site.body.id}/analytics/share`)).status, 200)
    const gone = await page.goto(shared.body.dashboardUrl)
    assert.equal(gone?.status(), 404)
    assert.equal((await server.api('GET', `/v1/websites/${site.body.id}`)).body.analytics.dashboardUrl, null)
  },
)
