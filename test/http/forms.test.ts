import assert from 'node:assert/strict'
import { test } from 'node:test'
import { multipartBody, rawPost } from '../helpers/http.js'
import { createWebsite, startServer, type TestServer } from '../helpers/server.js'

async function staticSite(server: TestServer, label: string): Promise<any> {
  const site = await createWebsite(server, { name: label, kind: 'static', subdomain: label })
  await server.api('POST', `/v1/websites/${site.id}/deploy/json`, {
    body: { files: [{ path: 'index.html', content: '<form method="post" action="/_platform/forms/contact"></form>' }] },
  })
  assert.equal((await server.api('POST', `/v1/websites/${site.id}/publish`)).status, 200)
  return site
}

const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString()
const URLENCODED = { 'content-type': 'application/x-www-form-urlencoded' }

test('forms on a static site: urlencoded, JSON and multipart with a file are stored before the answer; the honeypot is answered like a success and kept as spam; _redirect stays on the site', async (t) => {
  const server = await startServer(t)
  const site = await staticSite(server, 'contact-site')
  const host = 'contact-site.localhost'
  const post = (path: string, body: string | Buffer, headers: Record<string, string>) =>
    rawPost(server.plinth.port, host, path, body, headers)

  const sent = await post('/_platform/forms/contact', form({ name: 'Ada', email: 'ada@example.com', message: 'Hello' }), URLENCODED)
  assert.equal(sent.status, 200)
  assert.match(sent.headers['content-type'] as string, /text\/html/)
  assert.match(sent.body.toString(), /Thank you/)
  const json = await post('/_platform/forms/contact', JSON.stringify({ name: 'Bob', topics: ['a', 'b'] }), {
    'content-type': 'application/json',
  })
  assert.deepEqual([json.status, JSON.parse(json.body.toString()).ok], [200, true])

  const boundary = '----plinthtest'
  const multipart = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="name"\r\n\r\nCara\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="cv"; filename="cv.txt"\r\nContent-Type: text/plain\r\n\r\nmy cv text\r\n` +
      `--${boundary}--\r\n`,
  )
  assert.equal(
    (await post('/_platform/forms/apply', multipart, { 'content-type': `multipart/form-data; boundary=${boundary}` })).status,
    200,
  )

  const honey = await post('/_platform/forms/contact', form({ name: 'Spammer', _honey: 'gotcha' }), URLENCODED)
  assert.equal(honey.status, 200)
  assert.equal(honey.body.toString(), sent.body.toString(), 'a bot sees exactly what a person sees')
  const redirected = await post('/_platform/forms/contact', form({ name: 'Dee', _redirect: '/thanks.html' }), URLENCODED)
  assert.deepEqual([redirected.status, redirected.headers.location], [303, '/thanks.html'])
  const open = await post('/_platform/forms/contact', form({ name: 'Eve', _redirect: 'https://evil.example/' }), URLENCODED)
  assert.equal(open.status, 200, 'never a redirect to another site')
  assert.equal((await post('/_platform/forms/contact', 'x', { 'content-type': 'application/xml' })).status, 400)

  const forms = await server.api('GET', `/v1/websites/${site.id}/forms`)
  assert.equal(forms.status, 200)
  const contact = forms.body.items.find((f: any) => f.name === 'contact')
  assert.deepEqual([contact.submissions, contact.spam, contact.declared, contact.endpoint], [4, 1, false, '/_platform/forms/contact'])
  assert.ok(
    forms.body.items.some((f: any) => f.name === 'apply'),
    'a name the static site never declared is listed',
  )
  assert.match(forms.body.webhookSigning.secret, /^whsec_/)

  const list = await server.api('GET', `/v1/websites/${site.id}/forms/contact/submissions?spam=false`)
  assert.deepEqual(
    list.body.items.map((s: any) => s.data.name),
    ['Eve', 'Dee', 'Bob', 'Ada'],
    'newest first, spam left out',
  )
  assert.deepEqual(list.body.items[2].data.topics, ['a', 'b'])
  assert.equal(list.body.items[0].data._redirect, undefined, 'the control fields are not stored')
  const spam = await server.api('GET', `/v1/websites/${site.id}/forms/contact/submissions?spam=true`)
  assert.deepEqual(
    spam.body.items.map((s: any) => [s.data.name, s.spam]),
    [['Spammer', true]],
  )
  const applied = (await server.api('GET', `/v1/websites/${site.id}/forms/apply/submissions`)).body.items[0]
  assert.deepEqual(applied.files, [{ field: 'cv', filename: 'cv.txt', contentType: 'text/plain', size: 10 }])

  // CSV export, then marking and deleting.
  const csv = await fetch(`${server.origin}/v1/websites/${site.id}/forms/contact/submissions?spam=false`, {
    headers: { authorization: `Bearer ${server.adminKey}`, accept: 'text/csv' },
  })
  assert.match(csv.headers.get('content-type') ?? '', /^text\/csv/)
  const lines = (await csv.text()).trim().split('\r\n')
  assert.equal(lines[0], 'id,createdAt,spam,read,draft,email,message,name,topics,files')
  assert.equal(lines.length, 5)
  const ada = list.body.items[3]
  const marked = await server.api('PATCH', `/v1/websites/${site.id}/forms/contact/submissions/${ada.id}`, {
    body: { spam: true, read: true },
  })
  assert.deepEqual([marked.body.spam, marked.body.read], [true, true])
  const counts = (await server.api('GET', `/v1/websites/${site.id}/forms`)).body.items.find((f: any) => f.name === 'contact')
  assert.deepEqual([counts.submissions, counts.spam], [3, 2])
  const nowSpam = (await server.api('GET', `/v1/websites/${site.id}/forms/contact/submissions?spam=true`)).body.items.map(
    (s: any) => s.data.name,
  )
  assert.deepEqual(nowSpam, ['Spammer', 'Ada'], 'marked spam, it moves to the spam list')
  const firstPage = await server.api('GET', `/v1/websites/${site.id}/forms/contact/submissions?spam=false&limit=2`)
  const secondPage = await server.api(
    'GET',
    `/v1/websites/${site.id}/forms/contact/submissions?spam=false&limit=2&cursor=${firstPage.body.nextCursor}`,
  )
  assert.deepEqual(
    [...firstPage.body.items, ...secondPage.body.items].map((s: any) => s.data.name),
    ['Eve', 'Dee', 'Bob'],
  )
  assert.equal(secondPage.body.nextCursor, null)
  assert.equal((await server.api('DELETE', `/v1/websites/${site.id}/forms/contact/submissions/${ada.id}`)).status, 200)
  assert.equal((await server.api('GET', `/v1/websites/${site.id}/forms/contact/submissions/${ada.id}`)).status, 404)
})

test('a multipart form post reads names as UTF-8 (RFC 7578 4.2) and filename*= (RFC 5987): the submission keeps the field and file names the visitor sent', async (t) => {
  const server = await startServer(t)
  const site = await staticSite(server, 'unicode-forms')
  const { body, contentType } = multipartBody([
    { name: 'prénom', content: 'Zoë' },
    { name: 'cv', filename: 'résumé ‥ 2026.txt', contentType: 'text/plain', content: 'my cv' },
    { name: 'letter', filename: 'letter.txt', filenameStar: 'lettre de motivation ‥.txt', contentType: 'text/plain', content: 'hello' },
  ])
  const sent = await rawPost(server.plinth.port, 'unicode-forms.localhost', '/_platform/forms/apply', body, { 'content-type': contentType })
  assert.equal(sent.status, 200, sent.body.toString())
  const submissions = await server.api('GET', `/v1/websites/${site.id}/forms/apply/submissions`)
  const [submission] = submissions.body.items
  assert.deepEqual(submission.data, { prénom: 'Zoë' })
  assert.deepEqual(
    submission.files.map((f: any) => [f.field, f.filename, f.size]),
    [
      ['cv', 'résumé ‥ 2026.txt', 5],
      ['letter', 'lettre de motivation ‥.txt', 5],
    ],
  )
})

test('a framework site takes only the forms its website_config declares, keeps the configured fields and redirects where configured; a draft submission says so', async (t) => {
  const server = await startServer(t)
  const site = await createWebsite(server, { name: 'Typed forms', kind: 'framework', subdomain: 'typed-forms' })
  const lease = (await server.api('POST', `/v1/websites/${site.id}/source/lease`)).body.leaseToken
  const put = (file: Record<string, string>, content: string) =>
    server.api('PUT', `/v1/websites/${site.id}/source/file`, { body: { leaseToken: lease, file, content } })
  await put(
    { type: 'website_config' },
    "import { defineWebsiteConfig } from '@platform'\nexport default defineWebsiteConfig({ forms: { signup: { redirect: '/welcome', fields: ['email'] } } })\n",
  )
  const head = (
    await put(
      { type: 'page', name: 'home' },
      "import { definePage, formAction } from '@platform'\nexport default definePage({ route: '/', metadata: { title: 'Sign up' }, render: () => <form method=\"post\" action={formAction('signup')}><input name=\"email\" /></form> })\n",
    )
  ).body.version
  const ensured = await server.api('POST', `/v1/websites/${site.id}/deployments/ensure`, { body: { version: head } })
  assert.equal(ensured.body.status, 'ready', JSON.stringify(ensured.body.diagnostics))
  assert.equal((await server.api('POST', `/v1/websites/${site.id}/publish`)).status, 200)
  const post = (host: string, path: string, fields: Record<string, string>) =>
    rawPost(server.plinth.port, host, path, form(fields), URLENCODED)

  const kept = await post('typed-forms.localhost', '/_platform/forms/signup', { email: 'a@example.com', secret: 'dropped' })
  assert.deepEqual([kept.status, kept.headers.location], [303, '/welcome'])
  const undeclared = await post('typed-forms.localhost', '/_platform/forms/other', { email: 'x' })
  assert.equal(undeclared.status, 404)
  assert.match(undeclared.body.toString(), /declares signup/)
  await post('draft--typed-forms.localhost', '/_platform/forms/signup', { email: 'draft@example.com' })
  const items = (await server.api('GET', `/v1/websites/${site.id}/forms/signup/submissions`)).body.items
  assert.deepEqual(
    items.map((s: any) => [s.data, s.draft]),
    [
      [{ email: 'draft@example.com' }, true],
      [{ email: 'a@example.com' }, false],
    ],
  )
  const listed = (await server.api('GET', `/v1/websites/${site.id}/forms`)).body.items
  assert.deepEqual(
    listed.map((f: any) => [f.name, f.declared, f.config]),
    [['signup', true, { redirect: '/welcome', fields: ['email'] }]],
  )
})

test('a site keeps form files up to its quota: past it a submission with files is a 413 that says how to make room', async (t) => {
  const server = await startServer(t, { PLINTH_FORM_FILES_BYTES: '20' })
  const site = await staticSite(server, 'quota-site')
  const boundary = '----quota'
  const withFile = (text: string) =>
    rawPost(
      server.plinth.port,
      'quota-site.localhost',
      '/_platform/forms/apply',
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="cv"; filename="cv.txt"\r\nContent-Type: text/plain\r\n\r\n${text}\r\n--${boundary}--\r\n`,
      ),
      { 'content-type': `multipart/form-data; boundary=${boundary}`, accept: 'application/json' },
    )
  assert.equal((await withFile('fifteen bytes..')).status, 200)
  const full = await withFile('fifteen more...')
  assert.equal(full.status, 413)
  assert.match(JSON.parse(full.body.toString()).message, /delete old submissions to make room/)
  assert.equal(
    (await rawPost(server.plinth.port, 'quota-site.localhost', '/_platform/forms/apply', 'name=no+file', URLENCODED)).status,
    200,
    'without files it still arrives',
  )
  const first = (await server.api('GET', `/v1/websites/${site.id}/forms/apply/submissions`)).body.items.find(
    (s: any) => s.files.length === 1,
  )
  assert.equal((await server.api('DELETE', `/v1/websites/${site.id}/forms/apply/submissions/${first.id}`)).status, 200)
  assert.equal((await withFile('fifteen more...')).status, 200, 'room again after a delete')
})
