import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Diagnostic } from './bundle.js'
import { PACKAGES_ROOT } from './packages.js'

export type CssDiagnostic = Diagnostic & { step: 'css'; severity: 'error'; file: 'global_css' }

/** Tokens that may be class names; Tailwind ignores what is not a utility. */
const CANDIDATE = /[A-Za-z0-9_\-:/.[\]#%!()&*+,~@]+/g

/**
 * The css step: global_css through Tailwind v4 (built in), with utilities generated from the classes
 * found in the site's sources. JavaScript plugins and config files (`@plugin`, `@config`) and imports
 * other than Tailwind's own are refused with a css diagnostic.
 */
export async function buildCss(globalCss: string, sources: string[]): Promise<{ css: string; diagnostics: CssDiagnostic[] }> {
  const diagnostics: CssDiagnostic[] = []
  globalCss.split('\n').forEach((text, i) => {
    const directive = /@(plugin|config)\b/.exec(text)
    if (directive !== null) {
      diagnostics.push({
        step: 'css',
        severity: 'error',
        file: 'global_css',
        line: i + 1,
        column: directive.index + 1,
        message: `@${directive[1]} is not supported: JavaScript plugins and config files cannot run on the platform; use CSS-first configuration (@theme, @utility, @variant)`,
      })
    }
  })
  if (diagnostics.length > 0) return { css: '', diagnostics }
  const { compile } = await import('tailwindcss')
  try {
    const compiler = await compile(globalCss, {
      base: '/',
      loadStylesheet: async (id: string) => {
        if (id !== 'tailwindcss' && !id.startsWith('tailwindcss/')) {
          throw new Error(`@import "${id}" is not available: only @import "tailwindcss" (and its parts) is built in`)
        }
        const file = id === 'tailwindcss' ? 'index.css' : `${id.slice('tailwindcss/'.length).replace(/\.css$/, '')}.css`
        const path = join(PACKAGES_ROOT, 'tailwindcss', file)
        return { path, base: '/', content: readFileSync(path, 'utf8') }
      },
      loadModule: async () => {
        throw new Error('JavaScript plugins and config files are not supported')
      },
    })
    const candidates = new Set<string>()
    for (const source of sources) for (const token of source.match(CANDIDATE) ?? []) candidates.add(token)
    return { css: compiler.build([...candidates]), diagnostics }
  } catch (error) {
    return {
      css: '',
      diagnostics: [{ step: 'css', severity: 'error', file: 'global_css', message: (error as Error).message.split('\n')[0] }],
    }
  }
}
