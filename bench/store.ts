/**
 * npm run bench:store — the store object as V8 keeps it. Every concern reads `store.<table>` on its
 * hot paths; with fast (in-object or backing-store) properties a read is an inline-cache hit, in
 * dictionary mode a hash lookup, about five times slower (measured when the tables were once copied
 * onto the store with Object.assign). Prints whether the store has fast properties, how many own
 * properties it has (V8 turns an object into a dictionary past 128 named adds), and reads a second.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Store } from '../core/store/store.js'

// V8's own check, available only under --allow-natives-syntax (the npm script passes it).
let hasFastProperties: (object: object) => boolean
try {
  hasFastProperties = new Function('object', 'return %HasFastProperties(object)') as (object: object) => boolean
} catch {
  console.error('Run it as npm run bench:store (node --allow-natives-syntax dist/bench/store.js).')
  process.exit(2)
}

const dir = mkdtempSync(join(tmpdir(), 'plinth-bench-store-'))
const store = await Store.open(dir)
try {
  const reads = 50_000_000
  let found = 0
  const started = process.hrtime.bigint()
  for (let i = 0; i < reads; i++) if (store.websites !== undefined && store.formNotify !== undefined) found++
  const ms = Number(process.hrtime.bigint() - started) / 1e6
  console.log(
    `store: fast properties ${hasFastProperties(store)}, ${Object.keys(store).length} own properties (V8's limit for named adds: 128)`,
  )
  console.log(`store: ${((2 * reads) / ms / 1000).toFixed(0)} million table reads a second (${found === reads ? 'all' : found} found)`)
} finally {
  await store.close()
  rmSync(dir, { recursive: true, force: true })
}
