import * as esbuild from 'esbuild'
import { failure, OPTIONS, rebuildWithin, sitePlugin, type Bundlers, type Diagnostic, type SiteFiles } from './bundle.js'
import { PACKAGES_ROOT } from './packages.js'

/** Hashed assets are served from here (immutable on the live host). */
export const ASSET_PREFIX = '_platform/assets/'

export interface ClientBundle {
  /** Output path (under ASSET_PREFIX) to JavaScript. */
  files: Map<string, string>
  /** Page name to its entry script's URL path. */
  entries: Map<string, string>
}

/** A page's hydration entry: the same element the server rendered, from the state in the document. */
function entry(name: string): string {
  return `import { hydrateRoot } from 'react-dom/client'
import page from ${JSON.stringify(`@pages/${name}`)}
const state = JSON.parse(document.getElementById('__plinth_state').textContent)
hydrateRoot(document.getElementById('root'), page.render({ data: state.data, params: state.params }))
`
}

function clientEntries(): esbuild.Plugin {
  return {
    name: 'plinth-client-entries',
    setup(build) {
      build.onResolve({ filter: /^plinth-client:/ }, (args) => ({
        path: args.path.slice('plinth-client:'.length),
        namespace: 'plinth-client',
      }))
      build.onLoad({ filter: /.*/, namespace: 'plinth-client' }, (args) => ({
        contents: entry(args.path),
        loader: 'js',
        resolveDir: PACKAGES_ROOT,
      }))
    },
  }
}

/**
 * Client bundles for hydration: one ES module entry per page and shared chunks, hashed names, built
 * in a warm incremental context per site. React's client renderer comes from Plinth's node_modules.
 */
export async function bundleClient(
  files: SiteFiles,
  pages: string[],
  bundlers: Bundlers,
  siteKey: string,
): Promise<{ ok: true; bundle: ClientBundle } | { ok: false; diagnostics: Diagnostic[] }> {
  const key = `${siteKey}:client:${[...pages].sort().join(',')}`
  const warm = await bundlers.context(key, (current) =>
    esbuild.context({
      ...OPTIONS,
      format: 'esm',
      splitting: true,
      minify: true,
      outdir: '/plinth-out',
      entryNames: 'p-[hash]',
      chunkNames: 'c-[hash]',
      metafile: true,
      entryPoints: pages.map((name) => `plinth-client:${name}`),
      plugins: [clientEntries(), sitePlugin(current)],
    }),
  )
  const run = warm.queue.then(async () => {
    warm.current.files = files
    try {
      const result = await rebuildWithin(warm)
      const out: ClientBundle = { files: new Map(), entries: new Map() }
      for (const file of result.outputFiles ?? []) out.files.set(ASSET_PREFIX + file.path.slice('/plinth-out/'.length), file.text)
      for (const [path, meta] of Object.entries(result.metafile!.outputs)) {
        if (meta.entryPoint?.startsWith('plinth-client:'))
          out.entries.set(meta.entryPoint.slice('plinth-client:'.length), `/${ASSET_PREFIX}${path.slice(path.lastIndexOf('/') + 1)}`)
      }
      return { ok: true as const, bundle: out }
    } catch (error) {
      return failure(error)
    }
  })
  warm.queue = run.catch(() => undefined)
  return run
}
