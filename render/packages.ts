import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

/**
 * Packages framework sites may import, pinned exactly in the specifier (`clsx@2.1.1`), and the UI
 * library. They resolve to the versions installed with Plinth; nothing is fetched at run time.
 */
export const PINNED_PACKAGES = ['clsx', 'date-fns', 'marked', 'slugify', 'lucide-react', 'zod'] as const

/** The UI library: imported without a version (`react`, `react/jsx-runtime`). */
export const UI_LIBRARY = 'react'

/** The folder packages resolve from: Plinth's own node_modules (this file is dist/render/packages.js). */
export const PACKAGES_ROOT = join(fileURLToPath(new URL('../../', import.meta.url)), 'node_modules')

function versionOf(name: string): string {
  // Read the file directly: some packages' `exports` hide their package.json from require.
  return (JSON.parse(readFileSync(join(PACKAGES_ROOT, name, 'package.json'), 'utf8')) as { version: string }).version
}

/** Installed version of each pinned package, read once. */
export const PACKAGE_VERSIONS: Readonly<Record<string, string>> = Object.freeze(
  Object.fromEntries([...PINNED_PACKAGES, UI_LIBRARY].map((name) => [name, versionOf(name)])),
)

/** Splits `zod@4.6.2/mini` or `@scope/name@1.0.0/x` into name, version and subpath; null if unpinned. */
export function parsePinned(specifier: string): { name: string; version: string; subpath: string } | null {
  const match = /^((?:@[^/@]+\/)?[^/@]+)@([^/]+)(\/.*)?$/.exec(specifier)
  return match === null ? null : { name: match[1], version: match[2], subpath: match[3] ?? '' }
}

/** The bare package name of a specifier: `zod/mini` -> `zod`, `@a/b/c` -> `@a/b`. */
export function packageName(specifier: string): string {
  const parts = specifier.split('/')
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]
}
