import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { test } from 'node:test'
import semver from 'semver'

const root = new URL('../../../', import.meta.url)
const pkg = JSON.parse(readFileSync(new URL('package.json', root), 'utf8'))
const lock = JSON.parse(readFileSync(new URL('package-lock.json', root), 'utf8'))
const readme = readFileSync(new URL('README.md', root), 'utf8')

test('every installed package accepts the Node.js version the README requires', () => {
  // The README's floor ("Needs Node.js 20.19+") is package.json's engines, and both hold for this Node.
  const floor = semver.minVersion(pkg.engines.node)!.version
  assert.match(readme, new RegExp(`Needs Node\\.js ${floor.replace(/\.0$/, '').replace(/\./g, '\\.')}\\+`))
  assert.ok(semver.satisfies(process.version, pkg.engines.node), `this Node (${process.version}) is outside ${pkg.engines.node}`)
  const refused: string[] = []
  for (const [path, entry] of Object.entries<any>(lock.packages)) {
    const range = entry.engines?.node
    if (path === '' || typeof range !== 'string') continue
    // Both the floor and the Node the suite runs on: an install on either must not warn EBADENGINE.
    for (const version of [floor, process.versions.node])
      if (!semver.satisfies(version, range)) refused.push(`${path.replace(/^node_modules\//, '')} wants node ${range}, not ${version}`)
  }
  assert.deepEqual(refused, [])
})

test('allowScripts decides every install script: the ones Plinth needs run, the others are denied', () => {
  const withScripts = Object.entries<any>(lock.packages)
    .filter(([path, entry]) => path !== '' && entry.hasInstallScript === true)
    .map(([path]) => path.split('node_modules/').pop()!)
  assert.ok(withScripts.includes('isolated-vm'), 'the lockfile was read')
  for (const name of withScripts)
    assert.equal(typeof pkg.allowScripts[name], 'boolean', `${name} has an install script that allowScripts neither approves nor denies`)
  // isolated-vm compiles at install; lmdb, msgpackr-extract and esbuild fetch or pick their native parts.
  for (const name of ['isolated-vm', 'esbuild', 'lmdb', 'msgpackr-extract']) assert.equal(pkg.allowScripts[name], true, name)
})
