import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { promisify } from 'node:util'
import { fromBuffer } from 'yauzl'
import { ZipFile } from 'yazl'
import { rawRequest } from '../helpers/http.js'
import { tool, ticketDeploy } from '../helpers/agent.js'
import { setUpOwner } from '../helpers/people.js'
import { startServer, tempDir, type TestServer } from '../helpers/server.js'

/*
 * The scenario the hosted product's agent skill walks through (Webly-AI/webly-plugin, SKILL.md and its
 * helper scripts/webly.mjs 0.10.3), in the helper's own wire shapes and with plain fetch calls: an
 * anonymous deploy, a folder of files shared with its subfolders and hidden files, a 600-file folder
 * sent as one archive zip, the claim, ticket deploys with a would_revert and a forced redeploy, a
 * password on the site, and a signed-in upload through the ready shell command begin_object_upload
 * answers.
 */

/** The helper's `api()`: JSON with the anonymous token as a bearer. */
async function anon(s: TestServer, method: string, path: string, token: string, body?: unknown) {
  const response = await fetch(`${s.origin}/public/v1/anonymous${path}`, {
    method,
    redirect: 'error',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  })
  return { status: response.status, body: (await response.json().catch(() => ({}))) as any }
}

/** The helper's uploadBatch: begin, one PUT per file (two at a time) with upload.headers and the token, finalize. */
async function uploadBatch(
  s: TestServer,
  token: string,
  siteId: string,
  files: { name: string; bytes: Buffer; archive?: boolean }[],
  folder?: string,
) {
  const begun = await anon(s, 'POST', `/sites/${siteId}/objects/uploads`, token, {
    folder,
    files: files.map((f) => ({ name: f.name, byteSize: f.bytes.length, mimeType: 'application/octet-stream', archive: f.archive })),
  })
  assert.equal(begun.status, 201, JSON.stringify(begun.body))
  const queue = begun.body.files.map((f: any, i: number) => ({ f, bytes: files[i]!.bytes }))
  const failed: string[] = []
  await Promise.all(
    Array.from({ length: 2 }, async () => {
      for (let job = queue.shift(); job; job = queue.shift()) {
        const headers = { ...job.f.upload.headers }
        // As the helper: a URL on the API origin (WEBLY_API_URL) takes the credential too.
        if (job.f.upload.url.startsWith(`http://localhost:${s.plinth.port}/`)) headers.Authorization = `Bearer ${token}`
        const put = await fetch(job.f.upload.url.replace(/^http:\/\/[^/]+/, s.origin), { method: 'PUT', headers, body: job.bytes })
        if (!put.ok) failed.push(`${job.f.name}: ${put.status}`)
        await put.arrayBuffer()
      }
    }),
  )
  assert.deepEqual(failed, [], 'every PUT went through')
  const done = await anon(s, 'POST', `/sites/${siteId}/objects/finalize`, token, { ids: begun.body.files.map((f: any) => f.id) })
  assert.equal(done.status, 200, JSON.stringify(done.body))
  return { begun: begun.body, files: done.body.files as any[] }
}

function zipOf(files: [string, Buffer][], compress = false): Promise<Buffer> {
  const zip = new ZipFile()
  for (const [name, bytes] of files) zip.addBuffer(bytes, name, { compress })
  zip.end()
  const chunks: Buffer[] = []
  return new Promise((resolve) => {
    zip.outputStream.on('data', (c: Buffer) => chunks.push(c))
    zip.outputStream.on('end', () => resolve(Buffer.concat(chunks)))
  })
}

function zipNames(bytes: Buffer): Promise<string[]> {
  return new Promise((resolve, reject) =>
    fromBuffer(bytes, { lazyEntries: true }, (error, zip) => {
      if (error) return reject(error)
      const names: string[] = []
      zip.on('entry', (e) => {
        names.push(e.fileName)
        zip.readEntry()
      })
      zip.on('end', () => resolve(names.sort()))
      zip.readEntry()
    }),
  )
}

test('the agent skill end to end: anonymous deploy, shared folders and an archive, claim, ticket deploys with would_revert and force, a site password, a signed-in upload by command', async (t) => {
  const s = await startServer(t)
  const owner = await setUpOwner(s)
  const page = (host: string, path: string, headers: Record<string, string> = {}) => rawRequest(s.plinth.port, host, path, headers)
  const hostOf = (url: string) => new URL(url).hostname

  // An anonymous deploy, as `webly deploy ./site`.
  const token = ((await (await fetch(`${s.origin}/public/v1/anonymous/credentials`, { method: 'POST' })).json()) as any).token as string
  assert.match(token, /^wa_[A-Za-z0-9_-]{43}$/)
  const created = await anon(s, 'POST', '/sites', token, {
    name: 'Bowling night',
    kind: 'static',
    files: [{ path: '/index.html', content: '<h1>Bowling</h1>' }],
  })
  assert.equal(created.status, 201, JSON.stringify(created.body))
  const website = created.body
  assert.equal((await page(hostOf(website.urls.published), '/')).body.toString(), '<h1>Bowling</h1>')

  // `webly upload ./project`: no storage site yet (404), so one is made; the folder keeps its subfolders and hidden files.
  assert.equal((await anon(s, 'GET', '/sites/storage', token)).status, 404)
  const storage = await anon(s, 'POST', '/sites', token, { name: 'Shared files', kind: 'storage' })
  assert.equal(storage.status, 201, JSON.stringify(storage.body))
  const project: [string, string][] = [
    ['.gitignore', 'node_modules\n'],
    ['.idea/workspace.xml', '<project/>'],
    ['README.md', '# Demo'],
    ['src/main.cpp', 'int main() { return 0; }'],
    ['src/lib/util.h', '#pragma once'],
  ]
  const shared = await uploadBatch(
    s,
    token,
    storage.body.id,
    project.map(([name, text]) => ({ name, bytes: Buffer.from(text) })),
    'demobowling',
  )
  const folder = shared.begun.folder as string
  assert.match(folder, /^demobowling-[a-z0-9]{20}$/, 'the name given, then a suffix nobody can guess')
  // The helper prints each file's name as its path inside the folder: path.split('/').slice(2).
  assert.deepEqual(
    shared.files.map((f) => [f.ok, f.path.split('/').slice(2).join('/')]),
    project.map(([name]) => [true, name]),
  )
  const storageHost = hostOf(shared.begun.folderUrl)
  const folderPage = (await page(storageHost, `/${folder}/`)).body.toString()
  for (const shown of ['.gitignore', 'README.md', 'src/', '.idea/'])
    assert.ok(folderPage.includes(`>${shown}<`), `${shown} on the folder page`)
  assert.match((await page(storageHost, `/${folder}/src/`)).body.toString(), /lib\/[\s\S]*main\.cpp/)
  assert.equal((await page(storageHost, `/${folder}/src/lib/util.h`)).body.toString(), '#pragma once')
  assert.equal(shared.begun.zipUrl, `${shared.begun.folderUrl}?zip`)
  const zip = await page(storageHost, `/${folder}/?zip`)
  assert.equal(zip.status, 200)
  assert.deepEqual(await zipNames(zip.body), project.map(([name]) => name).sort())
  assert.doesNotMatch((await page(storageHost, '/')).body.toString(), new RegExp(folder), "the storage site's own address lists no folders")

  // A second batch joins the folder the first one returned.
  const more = await uploadBatch(s, token, storage.body.id, [{ name: 'docs/notes.txt', bytes: Buffer.from('more') }], folder)
  assert.equal(more.begun.folder, folder)
  assert.equal((await page(storageHost, `/${folder}/docs/notes.txt`)).body.toString(), 'more')

  // A 300-file folder: 300 byte PUTs, more than the 120-request burst, all go through (the helper
  // treats a 429 as a failed file).
  const wide = await uploadBatch(
    s,
    token,
    storage.body.id,
    Array.from({ length: 300 }, (_, i) => ({ name: `data/${i}.csv`, bytes: Buffer.from(`row ${i}`) })),
  )
  assert.equal(wide.files.filter((f) => f.ok).length, 300)

  // Over 500 files the helper sends one zip with archive: true, served as a folder; 600 byte PUTs of a
  // plain folder would also go through, since byte requests do not spend the 120-request burst.
  const many: [string, Buffer][] = Array.from({ length: 600 }, (_, i) => [
    `part-${Math.floor(i / 100)}/file-${i}.txt`,
    Buffer.from(`file ${i}`),
  ])
  const archiveBytes = await zipOf(many)
  const archive = await uploadBatch(s, token, storage.body.id, [{ name: 'project.zip', bytes: archiveBytes, archive: true }], 'project')
  assert.equal(archive.files[0].ok, true, JSON.stringify(archive.files))
  const A = archive.begun.folder as string
  const archiveTop = (await page(storageHost, `/${A}/`)).body.toString()
  assert.match(archiveTop, /part-0\/[\s\S]*part-5\//)
  assert.match((await page(storageHost, `/${A}/part-3/`)).body.toString(), /file-399\.txt/)
  assert.equal((await page(storageHost, `/${A}/part-5/file-599.txt`)).body.toString(), 'file 599')
  assert.equal((await page(storageHost, `/${A}/part-5/nothing.txt`)).status, 404)
  const whole = await page(storageHost, `/${A}/?zip`)
  assert.ok(whole.body.equals(archiveBytes), 'Download all is the zip itself')
  assert.ok((await page(storageHost, `/${A}/part-3/?zip`)).body.equals(archiveBytes), 'from a subfolder too')
  const joined = await anon(s, 'POST', `/sites/${storage.body.id}/objects/uploads`, token, {
    folder: A,
    files: [{ name: 'x.txt', byteSize: 1 }],
  })
  assert.deepEqual([joined.status, joined.body.details.reason], [409, 'archive_read_only'])

  // An archive is always a folder of its own: sent with an existing folder it makes a new one (the
  // folder's files stay reachable), and it cannot sit in a subfolder.
  const own = await anon(s, 'POST', `/sites/${storage.body.id}/objects/uploads`, token, {
    folder,
    files: [{ name: 'again.zip', byteSize: 22, archive: true }],
  })
  assert.equal(own.status, 201, JSON.stringify(own.body))
  assert.notEqual(own.body.folder, folder)
  await anon(s, 'DELETE', `/sites/${storage.body.id}/objects/${own.body.files[0].id}`, token)
  const nested = await anon(s, 'POST', `/sites/${storage.body.id}/objects/uploads`, token, {
    files: [{ name: 'sub/x.zip', byteSize: 22, archive: true }],
  })
  assert.equal(nested.status, 400)

  // A zip bomb (20 MiB of zeros in a 20 KiB entry) is refused at finalize, that file alone.
  const bomb = await zipOf([['zeros.bin', Buffer.alloc(20 * 1024 * 1024)]], true)
  const refused = await uploadBatch(s, token, storage.body.id, [{ name: 'bomb.zip', bytes: bomb, archive: true }])
  assert.deepEqual([refused.files[0].ok, /zip bomb/.test(refused.files[0].error)], [false, true], JSON.stringify(refused.files))
  // Sent as a plain file it is shared as a file, and never unpacked for anyone with the link.
  const plain = await uploadBatch(s, token, storage.body.id, [{ name: 'bomb.zip', bytes: bomb }])
  const bombPath = plain.files[0].path as string
  assert.equal((await page(storageHost, bombPath)).body.length, bomb.length)
  assert.equal((await page(storageHost, `${bombPath}/`)).status, 422)
  assert.equal((await page(storageHost, `${bombPath}/zeros.bin`)).status, 404)

  // `webly status`: the budget counts the website and the files together.
  const status = await anon(s, 'GET', '/sites/current', token)
  assert.equal(status.body.id, website.id)
  assert.equal(status.body.storage.limitBytes, 500 * 1024 * 1024)
  assert.ok(status.body.storage.usedBytes > archiveBytes.length + bomb.length, JSON.stringify(status.body.storage))

  // The claim (`webly claim <code>`, the code from create_claim_code): the site's page in the dashboard.
  const code = (await owner.api('POST', '/v1/websites/claim-codes')).body.code
  const claim = await fetch(`${s.origin}/api/anonymous/claim`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ token, code }),
  })
  const claimed = (await claim.json()) as any
  assert.equal(claim.status, 200, JSON.stringify(claimed))
  assert.equal(claimed.dashboardUrl, `http://localhost:${s.plinth.port}/app/websites/${website.id}?workspace=${claimed.workspace.id}`)
  assert.equal(claimed.storage.id, storage.body.id)

  // Claimed, the archive folder is one item of list_objects, and list_archive_entries links its files.
  const archived = await tool(s, 'list_objects', { websiteId: storage.body.id, folder: A })
  assert.deepEqual(
    archived.items.map((o: any) => [o.name, o.archive]),
    [['project.zip', { files: 600 }]],
  )
  const entries = await tool(s, 'list_archive_entries', { websiteId: storage.body.id, objectId: archived.items[0].id, limit: 2 })
  assert.deepEqual(
    entries.items.map((e: any) => [e.path, e.url]),
    [
      ['part-0/file-0.txt', `${shared.begun.folderUrl.replace(folder, A)}part-0/file-0.txt`],
      ['part-0/file-1.txt', `${shared.begun.folderUrl.replace(folder, A)}part-0/file-1.txt`],
    ],
  )

  // Signed in: a ticket deploy (begin_deploy, then `webly deploy ./site --ticket`).
  const ticket = async () => (await tool(s, 'begin_deploy', { websiteId: website.id })).ticket as string
  const mine = { '/index.html': '<h1>Bowling, v2</h1>', '/scores.html': '<p>300</p>' }
  const first = await ticketDeploy(s, await ticket(), mine)
  assert.equal(first.status, 201, JSON.stringify(first.body))
  const base = first.body.headVersion as number
  // Someone edits the site elsewhere; this folder's next deploy would undo it.
  const elsewhere = await ticketDeploy(s, await ticket(), { ...mine, '/index.html': '<h1>Edited in the dashboard</h1>' })
  assert.equal(elsewhere.status, 201)
  const stale = await ticketDeploy(s, await ticket(), { ...mine, '/scores.html': '<p>299</p>' }, { baseVersion: String(base) })
  assert.deepEqual([stale.status, stale.body.details.reason, stale.body.details.paths], [409, 'would_revert', ['index.html']])
  const forced = await ticketDeploy(
    s,
    await ticket(),
    { ...mine, '/scores.html': '<p>299</p>' },
    { baseVersion: String(base), force: 'true' },
  )
  assert.equal(forced.status, 201, JSON.stringify(forced.body))
  assert.deepEqual(forced.body.replaced, { fromVersion: elsewhere.body.version, toVersion: forced.body.version })
  // The helper's --force sends no baseVersion: the ticket's head is what the deploy replaced.
  const bare = await ticketDeploy(s, await ticket(), { ...mine, '/scores.html': '<p>298</p>' }, { force: 'true' })
  assert.equal(bare.status, 201, JSON.stringify(bare.body))
  assert.deepEqual(bare.body.replaced, { fromVersion: forced.body.version, toVersion: bare.body.version })
  const same = await ticketDeploy(s, await ticket(), { ...mine, '/scores.html': '<p>298</p>' }, { force: 'true' })
  assert.deepEqual([same.body.changed, same.body.replaced], [false, undefined], 'a forced deploy that changes nothing replaced nothing')
  const forced2 = bare
  assert.equal((await tool(s, 'publish_website', { websiteId: website.id })).website.publishedVersion, forced2.body.version)
  const siteHost = hostOf(website.urls.published)
  assert.equal((await page(siteHost, '/scores')).body.toString(), '<p>298</p>')

  // A password on the site: a page for people, HTTP Basic for programs.
  await tool(s, 'set_website_password', { websiteId: website.id, password: 'strike-and-spare' })
  assert.equal((await page(siteHost, '/scores')).status, 401)
  const basic = `Basic ${Buffer.from('any:strike-and-spare').toString('base64')}`
  assert.equal((await page(siteHost, '/scores', { authorization: basic })).body.toString(), '<p>298</p>')

  // Signed in over MCP: begin_object_upload answers a ready command per file; the agent runs it in a
  // shell after FILE=./path; (no API key in the shell), then finalize_object_upload.
  const dir = tempDir(t, 'plinth-skill-')
  writeFileSync(join(dir, 'report.pdf'), '%PDF-1.4 a tiny report')
  const begun = await tool(s, 'begin_object_upload', {
    websiteId: storage.body.id,
    files: [{ name: 'report.pdf', byteSize: 22, mimeType: 'application/pdf' }],
  })
  const command = begun.files[0].command as string
  assert.doesNotMatch(command, new RegExp(s.adminKey), 'no API key in the command')
  assert.match(command, /Authorization: Bearer wu_/)
  await promisify(execFile)('bash', ['-c', `FILE=./report.pdf; ${command}`], { cwd: dir })
  const finished = await tool(s, 'finalize_object_upload', { websiteId: storage.body.id, ids: [begun.files[0].id] })
  assert.equal(finished.files[0].ok, true, JSON.stringify(finished))
  assert.equal((await page(storageHost, finished.files[0].path)).body.toString(), '%PDF-1.4 a tiny report')
  // The token in a command sends that one upload's bytes, and nothing else.
  const wu = /Bearer (wu_[^']+)/.exec(command)![1]
  const elsewhereCall = await fetch(`${s.origin}/v1/websites`, { headers: { authorization: `Bearer ${wu}` } })
  assert.equal(elsewhereCall.status, 401)
})
