import assert from 'node:assert/strict'
import { test } from 'node:test'
import { createConfig, lintFromString } from '@redocly/openapi-core'
import { operations } from '../../http/operations/index.js'
import { isAnonymous } from '../../http/operation.js'
import { roleGrants } from '../../core/roles.js'
import { startServer } from '../helpers/server.js'

test('GET /openapi.json is OpenAPI 3.1 at version 0.3.0 and passes the Redocly linter with no errors or warnings', async (t) => {
  const s = await startServer(t, { PLINTH_API_ORIGIN: 'https://api.plinth.test' })
  const res = await s.api('GET', '/openapi.json', { key: null })
  assert.equal(res.status, 200)
  assert.equal(res.body.openapi, '3.1.0')
  assert.equal(res.body.info.version, '0.3.0')
  const config = await createConfig({ extends: ['recommended'] })
  const problems = await lintFromString({ source: JSON.stringify(res.body), absoluteRef: 'openapi.json', config })
  const report = problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location[0]?.pointer}`)
  // Public operations (no credentials, no input, no website) have no 4XX answer to declare.
  const publicPaths = operations
    .filter((o) => o.public === true && !isAnonymous(o))
    .map((o) => `#/paths/${o.path.replaceAll('/', '~1')}/get/responses`)
  assert.deepEqual(publicPaths.length, 3)
  const expected = publicPaths.map(
    (pointer) => `warn operation-4xx-response: Operation must have at least one \`4XX\` response. at ${pointer}`,
  )
  // The spec names both paths; the router tells them apart (`folders` is a literal, and no method is on both).
  expected.push(
    'warn no-ambiguous-paths: Paths should resolve unambiguously. Found two ambiguous paths: `/v1/websites/{websiteId}/objects/{objectId}/upload` and `/v1/websites/{websiteId}/objects/folders/{folder}`. at #/paths/~1v1~1websites~1{websiteId}~1objects~1folders~1{folder}',
  )
  assert.deepEqual(report.sort(), expected.sort())
})

test('every operation of the table appears with x-capability, x-rate-limit-class, schemas and error responses', async (t) => {
  const s = await startServer(t)
  const doc = (await s.api('GET', '/openapi.json', { key: null })).body
  for (const op of operations) {
    const entry = doc.paths[op.path]?.[op.method.toLowerCase()]
    assert.ok(entry, `${op.method} ${op.path} missing`)
    assert.equal(entry.operationId, op.operationId)
    // Operations without credentials (public, anonymous) need no capability: `none`.
    assert.equal(entry['x-capability'], op.capability ?? 'none')
    assert.ok(['standard', 'expensive'].includes(entry['x-rate-limit-class']))
    const success = Object.keys(entry.responses).find((code) => code.startsWith('2'))
    assert.ok(entry.responses[success!].content['application/json'].schema, op.operationId)
    if (isAnonymous(op)) {
      // An anonymous endpoint: the wa_ token, nothing (issuing one), or a claim's person or code.
      const expected = { token: [{ anonymousToken: [] }], none: [], claim: [{ oauth2: [] }, { session: [] }, {}] }[op.anonymous]
      assert.deepEqual(entry.security, expected, op.operationId)
      for (const code of ['400', '401', '404', '409', '410', '413', '429'])
        assert.ok(entry.responses[code], `${op.operationId} lacks ${code}`)
      continue
    }
    if (op.public === true) {
      // Anyone may call it: no credentials declared, no capability.
      assert.deepEqual(entry.security, [], op.operationId)
      continue
    }
    if (op.ticket === true) {
      // A deploy ticket from begin_deploy, and nothing else.
      assert.deepEqual(entry.security, [{ deployTicket: [] }], op.operationId)
      for (const code of ['400', '401', '403', '409', '429']) assert.ok(entry.responses[code], `${op.operationId} lacks ${code}`)
      continue
    }
    // An API key, an OAuth token with the narrowest scope that grants the capability, or a session; a
    // person-only operation takes no API key.
    const scope = roleGrants('content_editor', op.capability)
      ? 'platform:content'
      : roleGrants('full_editor', op.capability)
        ? 'platform:edit'
        : 'platform:admin'
    const people = [{ oauth2: [scope] }, { session: [] }]
    assert.deepEqual(entry.security, op.personOnly === true ? people : [{ apiKey: [] }, ...people], op.operationId)
    for (const code of ['400', '401', '403', '404', '429']) assert.ok(entry.responses[code], `${op.operationId} lacks ${code}`)
    if (op.body) assert.ok(entry.requestBody.content[op.bodyMedia?.type ?? 'application/json'].schema, op.operationId)
  }
  const ids = operations.map((o) => o.operationId)
  for (const id of [
    'websites.create',
    'websites.list',
    'websites.get',
    'websites.update',
    'websites.delete',
    'websites.restore',
    'websites.renameSubdomain',
  ]) {
    assert.ok(ids.includes(id), id)
  }
  assert.deepEqual(doc.components.schemas.Error.required, ['kind', 'message'])
  assert.deepEqual(Object.keys(doc.components.securitySchemes), ['apiKey', 'oauth2', 'deployTicket', 'anonymousToken', 'session'])
  assert.equal(
    doc.components.securitySchemes.oauth2.flows.authorizationCode.authorizationUrl,
    `${s.origin.replace('127.0.0.1', 'localhost')}/app/oauth/authorize`,
  )
})

test('the public routes answer without credentials, through the operation table: GET / describes the server, other methods are 405', async (t) => {
  const s = await startServer(t)
  const root = await s.api('GET', '/', { key: null })
  assert.equal(root.status, 200)
  assert.deepEqual(root.body, {
    name: 'Plinth',
    version: root.body.version,
    openapi: `${s.origin.replace('127.0.0.1', 'localhost')}/openapi.json`,
    mcp: `${s.origin.replace('127.0.0.1', 'localhost')}/v1/mcp`,
  })
  assert.match(root.body.version, /^\d+\.\d+\.\d+$/)
  assert.ok(root.headers.get('x-ratelimit-limit'), 'public reads carry the address bucket headers')
  const doc = await s.api('GET', '/openapi.json', { key: null })
  assert.equal(doc.headers.get('cache-control'), 'no-cache')
  const post = await s.api('POST', '/', { key: null, body: {} })
  assert.equal(post.status, 405)
  assert.equal(post.headers.get('allow'), 'GET, HEAD')
  assert.equal((await s.api('GET', '/api', { key: null })).body.packages.react !== undefined, true)
})
