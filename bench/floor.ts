/**
 * The stack's floor for bench:serve: Plinth's own uWS adapter (http/uws.ts) answering from one Map
 * of prepared responses, with none of Plinth's routing, channels or snapshots. What the hosting
 * plane costs is the distance between this server and Plinth; what the stack (Node.js, uWS, the
 * kernel) costs is the distance between this server and nginx.
 *
 * Usage: node dist/bench/floor.js <files.json> <port>, files.json: [{ host, path, content }].
 */
import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { gzipSync } from 'node:zlib'
import { packHeaders, type HeaderBlock } from '../actors/website/snapshot.js'
import { listen } from '../http/uws.js'

interface Prepared {
  tag: string
  identity: Buffer
  gzip: Buffer
  headers: HeaderBlock
  gzipHeaders: HeaderBlock
  notModified: HeaderBlock
  gzipNotModified: HeaderBlock
}

const S200 = Buffer.from('200 OK')
const S304 = Buffer.from('304 Not Modified')
const S404 = Buffer.from('404 Not Found')
const NOT_FOUND = packHeaders(['content-type', 'text/plain', 'cache-control', 'no-store'])

const [filesJson, port] = process.argv.slice(2)
const files = new Map<string, Prepared>()
for (const { host, path, content } of JSON.parse(readFileSync(filesJson, 'utf8')) as { host: string; path: string; content: string }[]) {
  const identity = Buffer.from(content)
  const tag = createHash('sha256').update(identity).digest('hex').slice(0, 32)
  const cache = ['cache-control', 'public, max-age=0, must-revalidate']
  const full = (etag: string, encoding: string[]) =>
    packHeaders(['content-type', 'text/html; charset=utf-8', 'etag', etag, 'vary', 'Accept-Encoding', ...cache, ...encoding])
  files.set(host + path, {
    tag,
    identity,
    gzip: gzipSync(identity, { level: 9 }),
    headers: full(`"${tag}"`, ['accept-ranges', 'bytes']),
    gzipHeaders: full(`"${tag}-gz"`, ['content-encoding', 'gzip']),
    notModified: packHeaders(['etag', `"${tag}"`, 'vary', 'Accept-Encoding', ...cache]),
    gzipNotModified: packHeaders(['etag', `"${tag}-gz"`, 'vary', 'Accept-Encoding', ...cache]),
  })
}

await listen(
  '127.0.0.1',
  Number(port),
  (exchange) => {
    const file = files.get(exchange.host + exchange.path)
    if (file === undefined) return exchange.sendBlock(S404, NOT_FOUND, 'not found\n')
    const gzip = exchange.header('accept-encoding').includes('gzip')
    const ifNoneMatch = exchange.header('if-none-match')
    if (ifNoneMatch !== '' && ifNoneMatch.includes(file.tag))
      return exchange.sendBlock(S304, gzip ? file.gzipNotModified : file.notModified, null)
    if (gzip) exchange.sendBlock(S200, file.gzipHeaders, file.gzip)
    else exchange.sendBlock(S200, file.headers, file.identity)
  },
  (error) => console.error(error),
)
