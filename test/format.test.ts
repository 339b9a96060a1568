import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { availableParallelism } from 'node:os'
import { readdirSync } from 'node:fs'
import { join, relative } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const PRETTIER = join(ROOT, 'node_modules', 'prettier', 'bin', 'prettier.cjs')
const CODE = ['core', 'actors', 'render', 'http', 'cluster', 'plinth', 'bin', 'app', 'test', 'bench', 'scripts']

function* sources(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) yield* sources(path)
    else if (/\.(ts|tsx|mjs)$/.test(entry.name)) yield path
  }
}

/** `prettier --list-different` on some files (the CLI: the checked-in config and .prettierignore); the files it names. */
function unformatted(files: string[]): Promise<string[]> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [PRETTIER, '--list-different', ...files], { cwd: ROOT, maxBuffer: 1 << 24 }, (error, stdout, stderr) => {
      // Exit 1: some files differ (listed on stdout); anything else is prettier failing.
      if (error !== null && error.code !== 1) return reject(new Error(`prettier failed: ${stderr || error.message}`))
      resolve(stdout.split('\n').filter((line) => line !== ''))
    })
  })
}

test('the code is formatted by prettier with the checked-in .prettierrc.json (npm run format fixes it)', async () => {
  const files = CODE.flatMap((dir) => [...sources(join(ROOT, dir))]).map((file) => relative(ROOT, file))
  assert.ok(files.length > 200, `only ${files.length} files found`)
  // One prettier per core: a core the test file beside this one leaves idle (waiting on a server) is used.
  const lanes = Math.max(1, Math.min(4, availableParallelism()))
  const shares = Array.from({ length: lanes }, (_, lane) => files.filter((_, i) => i % lanes === lane))
  const found = (await Promise.all(shares.map(unformatted))).flat().sort()
  assert.deepEqual(found, [], 'run npm run format')
})
