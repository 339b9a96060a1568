import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import * as prettier from 'prettier'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const CODE = ['core', 'actors', 'render', 'http', 'cluster', 'plinth', 'bin', 'app', 'test', 'bench', 'scripts']

function* sources(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) yield* sources(path)
    else if (/\.(ts|tsx|mjs)$/.test(entry.name)) yield path
  }
}

test('the code is formatted by prettier with the checked-in .prettierrc.json (npm run format fixes it)', async () => {
  const unformatted: string[] = []
  let checked = 0
  for (const file of CODE.flatMap((dir) => [...sources(join(ROOT, dir))])) {
    const info = await prettier.getFileInfo(file, { ignorePath: join(ROOT, '.prettierignore') })
    if (info.ignored) continue
    const options = await prettier.resolveConfig(file, { editorconfig: false })
    assert.ok(options !== null, `no prettier config applies to ${file}`)
    if (!(await prettier.check(readFileSync(file, 'utf8'), { ...options, filepath: file }))) unformatted.push(relative(ROOT, file))
    checked++
  }
  assert.ok(checked > 200, `only ${checked} files checked`)
  assert.deepEqual(unformatted, [], 'run npm run format')
})
