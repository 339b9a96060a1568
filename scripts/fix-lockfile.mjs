// The npm registry reachable here lacks some platform builds of optional native packages
// (e.g. @msgpackr-extract/*-darwin-arm64). `npm install` then leaves them out of package-lock.json
// and `npm ci` refuses the lock as out of sync. This adds each missing optional platform package
// with its os/cpu, so `npm ci` skips it on other platforms. Run after every `npm install`.
import { readFileSync, writeFileSync } from 'node:fs'

const PLATFORM = /-(darwin|linux|win32|freebsd|android|sunos|openbsd)-(arm64|x64|arm|ia32|ppc64|s390x|riscv64)(-gnu|-musl|-msvc)?$/
const lock = JSON.parse(readFileSync('package-lock.json', 'utf8'))
const packages = lock.packages
let added = 0
for (const [path, entry] of Object.entries(packages)) {
  for (const [name, version] of Object.entries(entry.optionalDependencies ?? {})) {
    const match = PLATFORM.exec(name)
    if (match === null) continue
    const base = path === '' ? '' : `${path}/`
    if (packages[`${base}node_modules/${name}`] || packages[`node_modules/${name}`]) continue
    packages[`node_modules/${name}`] = { version: version.replace(/^[\^~]/, ''), cpu: [match[2]], optional: true, os: [match[1]] }
    added++
  }
}
lock.packages = Object.fromEntries(Object.entries(packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a < b ? -1 : a > b ? 1 : 0)))
writeFileSync('package-lock.json', JSON.stringify(lock, null, 2) + '\n')
console.log(`fix-lockfile: added ${added} optional platform entries`)
