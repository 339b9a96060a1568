import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { transform } from 'esbuild'
import { createWebsite, startServer } from '../helpers/server.js'

/** The dashboard's ApiError (app/api.ts), compiled as the dashboard's bundle compiles it. */
async function dashboardApiError(): Promise<
  new (status: number, kind: string, message: string, details: unknown) => { say(label?: string): string }
> {
  const source = readFileSync(fileURLToPath(new URL('../../../app/api.ts', import.meta.url)), 'utf8')
  const { code } = await transform(source, { loader: 'ts', format: 'esm' })
  return (await import(`data:text/javascript;base64,${Buffer.from(code).toString('base64')}`)).ApiError
}

/** What no sentence shown to a person may hold: an HTTP method with its path, a path of the API, an MCP tool. */
const API_WORDS = /\b(GET|POST|PUT|PATCH|DELETE)\b|\/v1\/|\/public\/|\.\.\.\/|\bMCP\b|\b[a-z]+_[a-z_]+\b/

test('the dashboard says the API’s errors in a person’s words: no method, path or tool name in what it shows', async (t) => {
  const ApiError = await dashboardApiError()
  const s = await startServer(t)
  const framework = await createWebsite(s, { name: 'Words framework', kind: 'framework' })
  const staticSite = await createWebsite(s, { name: 'Words static', kind: 'static' })
  const answers = [
    // A static site's deploy on a framework site.
    await s.api('POST', `/v1/websites/${framework.id}/deploy/json`, { body: { files: [{ path: 'index.html', content: 'x' }] } }),
    // A file over 1 MiB sent the small way (the ticket deploy takes it).
    await s.api('POST', `/v1/websites/${staticSite.id}/deploy/json`, {
      body: { files: [{ path: 'big.bin', content: 'x'.repeat(1024 * 1024 + 1) }] },
    }),
    // A field over its limit.
    await s.api('PATCH', `/v1/websites/${staticSite.id}`, { body: { name: 'n'.repeat(300) } }),
  ]
  for (const answer of answers) assert.ok(answer.status >= 400, JSON.stringify(answer.body))
  // The API's own sentences name calls and tools (agents read them): the test would prove nothing otherwise.
  assert.ok(answers.filter((a) => API_WORDS.test(a.body.message)).length >= 2, answers.map((a) => a.body.message).join('\n'))
  // Sentences of the server the test cannot provoke alone (a plan's end, a build in progress), as the server writes them.
  // [the source that writes it, the words that must still be there, the sentence as the server writes it]
  const written: [string, string, string][] = [
    [
      'actors/website/rules.ts',
      'so it is offline and read-only; upgrade to Base or Max, then activate it (POST /v1/websites/',
      'Website ws_a7dbg2jaggyxdvcczh6v was claimed onto a plan without room and its preview has ended, so it is offline and read-only; upgrade to Base or Max, then activate it (POST /v1/websites/ws_a7dbg2jaggyxdvcczh6v/activate, MCP: activate_website)',
    ],
    [
      'actors/website/ready-build.ts',
      'is still building; poll GET /v1/websites/',
      'Version 3 is still building; poll GET /v1/websites/ws_a7dbg2jaggyxdvcczh6v/deployments/status (MCP: get_deployment_status) and publish when it is ready',
    ],
    [
      'http/resources.ts',
      'was not built (a newer head superseded it); POST deployments/ensure with',
      'Version 3 was not built (a newer head superseded it); POST deployments/ensure with {"version": 3} (MCP: ensure_deployment) builds it',
    ],
    [
      'actors/anonymous/claims.ts',
      'ask the person to create a new one (MCP: create_claim_code) and retry',
      'The claim code is wrong or expired (codes last 10 minutes); ask the person to create a new one (MCP: create_claim_code) and retry',
    ],
    [
      'actors/files/storage-uploads.ts',
      '(resume_object_upload answers their urls), then finalize',
      'photo.jpg is missing parts 2, 3: send them (resume_object_upload answers their urls), then finalize',
    ],
    [
      'actors/files/storage-uploads.ts',
      'Zip the folder again with a standard tool and upload that',
      'talk.zip is damaged: its entry a.txt is cut short. Zip the folder again with a standard tool and upload that, or send this file without archive: true to share it as it is',
    ],
    [
      'http/operations/code.ts',
      'list files with list_source_files',
      'page home is not a file of version 3; list files with list_source_files',
    ],
  ]
  // Still the server's words (a sentence changed there must change here).
  for (const [file, words] of written)
    assert.ok(
      readFileSync(fileURLToPath(new URL(`../../../${file}`, import.meta.url)), 'utf8').includes(words),
      `${file} still says: ${words}`,
    )
  const said = [
    ...answers.map((a) => new ApiError(a.status, a.body.kind, a.body.message, a.body.details).say()),
    ...written.map(([, , message]) => new ApiError(409, 'conflict', message, {}).say()),
  ]
  t.diagnostic(said.join('\n'))
  for (const sentence of said) {
    assert.doesNotMatch(sentence, API_WORDS)
    assert.match(sentence, /^["A-Za-z].{10,}[.?!]$/, 'a whole sentence')
  }
  assert.match(said[3]!, /^Website ws_a7dbg2jaggyxdvcczh6v was claimed onto a plan without room .* then activate it\.$/)
  assert.equal(said[4], 'Version 3 is still building.')
  // A file's name stays as it is written; advice in plain words stays whole.
  assert.equal(said[7], 'photo.jpg is missing parts 2, 3: send them, then finalize.')
  assert.match(said[8]!, /Zip the folder again with a standard tool and upload that, or send this file without archive: true/)
  assert.equal(said[9], 'Page home is not a file of version 3; list files.')
})
