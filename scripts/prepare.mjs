// npm runs `prepare` after `npm ci` and also the first time `npx plinth` runs in a checkout (it links the
// project as a package and prepares it); `npm test` runs it before the suite. Build only when the built
// tree is missing or older than a source, so neither `npx plinth` nor `npm test` spends 40 s rebuilding a
// tree that is already current (after `npm ci`, the tests run the tree it built).
import { existsSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'

// As build.mjs finds it: a URL's pathname keeps %20 for a space in the checkout's path.
const root = fileURLToPath(new URL('..', import.meta.url))
const stamp = join(root, 'dist/.built') // written as the build's last step
const sources = ['core', 'actors', 'render', 'http', 'cluster', 'bin', 'plinth', 'test', 'bench', 'app', 'scripts', 'docs']
const files = ['package.json', 'package-lock.json', 'tsconfig.json']

function newest(path) {
  const info = statSync(path)
  if (!info.isDirectory()) return info.mtimeMs
  let latest = info.mtimeMs
  for (const name of readdirSync(path)) latest = Math.max(latest, newest(join(path, name)))
  return latest
}

function current() {
  if (!existsSync(stamp)) return false
  const built = statSync(stamp).mtimeMs
  for (const name of [...sources, ...files]) {
    const path = join(root, name)
    if (existsSync(path) && newest(path) > built) return false
  }
  return true
}

if (!current()) {
  const run = spawnSync('npm', ['run', 'build', '--silent'], { cwd: root, stdio: 'inherit' })
  process.exit(run.status ?? 1)
}
