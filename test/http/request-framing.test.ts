import assert from 'node:assert/strict'
import { connect } from 'node:net'
import { test } from 'node:test'
import type { Logger } from '../../core/log.js'
import { createWebsite, startServer } from '../helpers/server.js'

/*
 * A request's body framing as RFC 9112 6.3 reads it, sent byte by byte on connections of their own
 * (a run of them reaches every serving thread: the kernel gives each new connection to one of the
 * threads listening on the port).
 */

const ROUNDS = 12

/** How long a refused connection may stay open before the test says it was left open. */
const CLOSE_WITHIN_MS = 5000

/** Writes `text` on a new connection: everything the server sent before it closed ('' when nothing). */
function exchange(port: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1')
    let answer = ''
    const open = setTimeout(() => {
      socket.destroy()
      reject(new Error(`the connection was left open ${CLOSE_WITHIN_MS} ms after: ${answer.slice(0, 600)}`))
    }, CLOSE_WITHIN_MS)
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString()))
    socket.on('close', () => (clearTimeout(open), resolve(answer)))
    socket.on('error', (error) => (clearTimeout(open), reject(error)))
    socket.write(text)
  })
}

for (const threads of ['1', '2']) {
  test(`PLINTH_SERVE_THREADS=${threads}: two Content-Length headers, equal or not, are a 400 that closes the connection on the API and on a site (saying Connection: close once, answering nothing pipelined behind it), never a 5xx or a logged error; with Transfer-Encoding the request is closed unanswered`, async (t) => {
    const errors: string[] = []
    const log: Logger = { info() {}, warn() {}, error: (message, fields) => errors.push(`${message} ${JSON.stringify(fields)}`) }
    const s = await startServer(t, { PLINTH_SERVE_THREADS: threads }, { log })
    const site = await createWebsite(s, { name: 'Framing', kind: 'static', subdomain: 'framing' })
    const deployed = await s.api('POST', `/v1/websites/${site.id}/deploy/json`, {
      body: { files: [{ path: 'index.html', content: '<h1>framed</h1>' }] },
    })
    assert.equal(deployed.status, 201, JSON.stringify(deployed.body))
    assert.equal((await s.api('POST', `/v1/websites/${site.id}/publish`)).status, 200)
    const body = '{"files":[]}'
    const requests = [
      `POST /v1/websites/${site.id}/deploy/json HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${s.adminKey}\r\nContent-Type: application/json`,
      // A site's file: a serving thread answers these itself.
      'GET / HTTP/1.1\r\nHost: framing.localhost',
      // A form post: a serving thread hands it to the main thread.
      'POST /_platform/forms/contact HTTP/1.1\r\nHost: framing.localhost\r\nContent-Type: application/json',
    ]
    for (const head of requests) {
      const what = head.slice(0, head.indexOf(' HTTP/1.1'))
      for (const [lengths, case_] of [
        [[body.length, body.length], 'equal'],
        [[body.length, body.length + 5], 'different'],
      ] as const) {
        for (let i = 0; i < ROUNDS; i++) {
          const answer = await exchange(
            s.plinth.port,
            `${head}\r\n${lengths.map((n) => `Content-Length: ${n}`).join('\r\n')}\r\n\r\n${body}`,
          )
          assert.match(answer, /^HTTP\/1\.1 400 /, `${what}, ${case_} lengths: ${answer.slice(0, 300)}`)
          assert.equal(answer.match(/\r\nconnection: close\r\n/gi)?.length, 1, `Connection: close said once: ${answer}`)
          const error = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))
          assert.equal(error.kind, 'validation')
          assert.equal(error.details.field, 'headers.content-length')
          assert.match(error.message, /more than one Content-Length header; send exactly one/)
        }
      }
      // A request pipelined behind it (for another host, in the same packet) is never answered: where the
      // refused request ends is not known, so nothing after it is read; the connection closes.
      for (let i = 0; i < ROUNDS; i++) {
        const answer = await exchange(
          s.plinth.port,
          `${head}\r\nContent-Length: ${body.length}\r\nContent-Length: ${body.length}\r\n\r\n${body}GET / HTTP/1.1\r\nHost: framing.localhost\r\n\r\n`,
        )
        assert.ok(!answer.includes('framed') && (answer.match(/HTTP\/1\.1 /g) ?? []).length <= 1, `${what}, pipelined: ${answer}`)
        assert.ok(answer === '' || /^HTTP\/1\.1 400 /.test(answer), answer)
      }
      // uWS closes these itself before any handler sees them (README: the protocol edge); nginx in
      // front answers them 400. Never an answer of ours, so never a 5xx.
      for (const framing of [
        [`Content-Length: ${body.length}, ${body.length}`],
        [`Content-Length: ${body.length}`, 'Transfer-Encoding: chunked'],
        ['Transfer-Encoding: chunked', `Content-Length: ${body.length}`],
      ]) {
        const chunked = framing.some((line) => line.startsWith('Transfer-Encoding'))
        for (let i = 0; i < ROUNDS; i++) {
          const text = `${head}\r\n${framing.join('\r\n')}\r\n\r\n${chunked ? `${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n` : body}`
          assert.equal(await exchange(s.plinth.port, text), '', `${what}, ${framing.join(' + ')}`)
        }
      }
    }
    // The server goes on answering, and nothing of that was logged as an error.
    assert.equal((await s.site('framing.localhost', '/')).body.toString(), '<h1>framed</h1>')
    assert.equal((await s.api('GET', `/v1/websites/${site.id}`)).status, 200)
    assert.deepEqual(errors, [])
  })
}
