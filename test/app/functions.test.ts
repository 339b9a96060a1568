import assert from 'node:assert/strict'
import { test } from 'node:test'
import { assertAccessible, needsChromium, sharedChromium } from '../helpers/browser.js'
import { confirm, ownerInBrowser } from '../helpers/dashboard.js'
import { rawPost, rawRequest } from '../helpers/http.js'
import { createWebsite } from '../helpers/server.js'

/*
 * The dashboard's Functions tab in Debian's Chromium: the routes of the head and the live version, a
 * variable and a secret set (the secret never shown back) and deleted, the key-value store's size, and
 * the logs followed as requests come.
 */

const skip = needsChromium
const chromiumOf = sharedChromium()

const HELLO = `export const onRequestGet = ({ env }) => {
  console.log('greeting as ' + env.GREETING)
  return new Response('hello ' + (env.GREETING ?? 'nobody') + ' ' + (env.TOKEN === undefined ? 'without' : 'with') + ' a token')
}`
const COUNT = `export const onRequestPost = async ({ env }) => {
  const next = Number((await env.KV.get('count')) ?? 0) + 1
  await env.KV.put('count', String(next))
  return Response.json({ count: next })
}`

test(
  'the dashboard’s Functions tab: routes per version, variables and secrets set and deleted, the KV’s size, logs followed',
  { skip },
  async (t) => {
    const browser = await chromiumOf(t)
    const { server, page, open } = await ownerInBrowser(t, browser)
    const site = await createWebsite(server, { name: 'Greeter', kind: 'static', subdomain: 'greeter' })
    const deploy = (files: { path: string; content: string }[]) =>
      server.api('POST', `/v1/websites/${site.id}/deploy/json`, {
        body: { files: [{ path: 'index.html', content: '<h1>hi</h1>' }, ...files] },
      })
    assert.equal((await deploy([{ path: 'functions/hello.ts', content: HELLO }])).status, 201)
    assert.equal((await server.api('POST', `/v1/websites/${site.id}/publish`)).status, 200)
    // The head moves on: a second function the live version does not have.
    assert.equal(
      (
        await deploy([
          { path: 'functions/hello.ts', content: HELLO },
          { path: 'functions/api/count.ts', content: COUNT },
          {
            path: 'functions/typed.ts',
            content: "export const onRequest = () => {\n  const n: number = 'one'\n  return new Response(String(n))\n}\n",
          },
        ])
      ).status,
      201,
    )
    const draft = `draft--greeter.localhost`
    assert.equal((await rawPost(server.plinth.port, draft, '/api/count', '')).status, 200)

    await open(`/websites/${site.id}/functions`, 'Routes')
    const head = page.getByRole('table', { name: 'Function routes of Version 3 (head)' })
    await head.waitFor()
    assert.match(
      (await head.textContent()) ?? '',
      /\/api\/count\s*POST\s*functions\/api\/count\.ts[\s\S]*\/hello\s*GET\s*functions\/hello\.ts/,
    )
    // The head's type error, told where it is (the function runs anyway).
    assert.match(
      (await page.getByRole('note', { name: 'Type errors in Version 3 (head)' }).textContent()) ?? '',
      /functions\/typed\.ts, line 2: Type 'string' is not assignable to type 'number'/,
    )
    const live = page.getByRole('table', { name: 'Function routes of Version 2 (live)' })
    assert.doesNotMatch((await live.textContent()) ?? '', /count/, 'the live version has only its own routes')
    assert.match((await live.textContent()) ?? '', /\/hello/)
    assert.match((await page.getByRole('main').textContent()) ?? '', /1 key, \d+ B in all/)
    await assertAccessible(page, 'functions')

    // A variable, then a secret: the secret's value never reaches the page, yet the function reads it.
    const form = page.getByRole('form', { name: 'Set a variable' })
    await form.getByLabel('Name').fill('GREETING')
    await form.getByLabel('Value').fill('Ada')
    await form.getByRole('button', { name: 'Set' }).click()
    const variables = page.getByRole('table', { name: 'Variables and secrets' })
    await variables.getByText('Ada', { exact: true }).waitFor()
    await form.getByLabel('Name').fill('TOKEN')
    await form.getByLabel('Secret').check()
    assert.equal(await form.getByLabel('Value').getAttribute('type'), 'password', 'a secret is typed unseen')
    await form.getByLabel('Value').fill('tok-sealed-4711')
    await form.getByRole('button', { name: 'Set' }).click()
    await variables.getByRole('row').filter({ hasText: 'TOKEN' }).getByText('secret').waitFor()
    assert.doesNotMatch(await page.content(), /tok-sealed-4711/)
    await page.reload()
    await variables.waitFor()
    assert.doesNotMatch(await page.content(), /tok-sealed-4711/, 'nor after a reload')
    const listed = (await server.api('GET', `/v1/websites/${site.id}/functions`)).body.variables
    assert.deepEqual(
      listed.map((v: any) => [v.name, v.secret, v.value]),
      [
        ['GREETING', false, 'Ada'],
        ['TOKEN', true, null],
      ],
    )
    const greeted = await rawRequest(server.plinth.port, 'greeter.localhost', '/hello')
    assert.equal(greeted.body.toString(), 'hello Ada with a token')

    // The logs, followed: the request just made shows up without a reload, with its console line.
    const logs = page.getByRole('list', { name: 'Function logs' })
    await logs.getByText('greeting as Ada').waitFor()
    await logs
      .getByText(/GET \/hello/)
      .first()
      .waitFor()
    await rawRequest(server.plinth.port, 'greeter.localhost', '/hello?again')
    await page.waitForFunction("document.querySelector('[aria-label=\"Function logs\"]').textContent.split('greeting as Ada').length === 3")

    // Deleting the secret: asked first, then gone from the list and from the function's next request.
    await variables.getByRole('button', { name: 'Delete TOKEN' }).click()
    await confirm(page, 'Delete')
    await variables.getByRole('row').filter({ hasText: 'TOKEN' }).waitFor({ state: 'detached' })
    assert.equal((await rawRequest(server.plinth.port, 'greeter.localhost', '/hello')).body.toString(), 'hello Ada without a token')

    // A name the API refuses: its message beside the field.
    await form.getByLabel('Name').fill('ASSETS')
    await form.getByLabel('Value').fill('x')
    await form.getByRole('button', { name: 'Set' }).click()
    await page.getByText(/bound by the platform/).waitFor()
    await assertAccessible(page, 'functions after changes')
  },
)
