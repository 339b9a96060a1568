// Builds the dashboard (app/) into dist/app: one esbuild bundle of the React app with its lazily loaded
// chunks, one stylesheet from Tailwind (the classes the app's sources use) and uPlot's, every file named
// by its content hash and precompressed (gzip and brotli), and manifest.json, which the server reads to
// write the page shell. Run by `npm run build` after tsc.
import { createHash } from 'node:crypto'
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { brotliCompressSync, constants, gzipSync } from 'node:zlib'
import { build, transform } from 'esbuild'
import { compile } from 'tailwindcss'

const root = fileURLToPath(new URL('..', import.meta.url))
const out = join(root, 'dist', 'app')
const assets = join(out, 'assets')
rmSync(out, { recursive: true, force: true })
mkdirSync(assets, { recursive: true })

// Scripts: the entry and the chunks it loads on demand (the analytics chart), minified for the browser.
const result = await build({
  entryPoints: { main: join(root, 'app', 'main.tsx') },
  bundle: true,
  splitting: true,
  format: 'esm',
  minify: true,
  target: ['es2022', 'chrome111', 'firefox115', 'safari16'],
  jsx: 'automatic',
  outdir: assets,
  entryNames: '[name]-[hash]',
  chunkNames: 'chunk-[hash]',
  define: { 'process.env.NODE_ENV': '"production"' },
  legalComments: 'none',
  metafile: true,
  logLevel: 'warning',
})
const entry = Object.entries(result.metafile.outputs).find(([, o]) => o.entryPoint !== undefined)
const js = relative(assets, join(root, entry[0]))

// Styles: Tailwind v4 with the candidates found in the app's sources, then uPlot's own.
const sources = []
const walk = (dir) => {
  for (const item of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, item.name)
    if (item.isDirectory()) walk(path)
    else if (/\.(tsx?|css)$/.test(item.name)) sources.push(readFileSync(path, 'utf8'))
  }
}
walk(join(root, 'app'))
const tailwind = join(root, 'node_modules', 'tailwindcss')
const compiler = await compile(readFileSync(join(root, 'app', 'app.css'), 'utf8'), {
  base: root,
  loadStylesheet: async (id) => {
    const file = id === 'tailwindcss' ? 'index.css' : `${id.slice('tailwindcss/'.length).replace(/\.css$/, '')}.css`
    const path = join(tailwind, file)
    return { path, base: tailwind, content: readFileSync(path, 'utf8') }
  },
})
const candidates = new Set()
for (const source of sources) for (const token of source.match(/[A-Za-z0-9_\-:/.[\]#%!()&*+,~@=]+/g) ?? []) candidates.add(token)
const uplotCss = readFileSync(join(root, 'node_modules', 'uplot', 'dist', 'uPlot.min.css'), 'utf8')
const css = (await transform(`${compiler.build([...candidates])}\n${uplotCss}`, { loader: 'css', minify: true })).code
const cssName = `main-${createHash('sha256').update(css).digest('hex').slice(0, 8).toUpperCase()}.css`
writeFileSync(join(assets, cssName), css)

// Every asset precompressed once, here, so the server never compresses them per request.
const files = readdirSync(assets).filter((f) => !f.endsWith('.gz') && !f.endsWith('.br'))
let firstLoad = { raw: 0, gzip: 0, brotli: 0 }
for (const file of files) {
  const bytes = readFileSync(join(assets, file))
  const gz = gzipSync(bytes, { level: 9 })
  const br = brotliCompressSync(bytes, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } })
  writeFileSync(join(assets, `${file}.gz`), gz)
  writeFileSync(join(assets, `${file}.br`), br)
  if (
    file === js ||
    file === cssName ||
    (result.metafile.outputs[`dist/app/assets/${js}`]?.imports ?? []).some((i) => i.path.endsWith(file) && i.kind === 'import-statement')
  ) {
    firstLoad = { raw: firstLoad.raw + bytes.length, gzip: firstLoad.gzip + gz.length, brotli: firstLoad.brotli + br.length }
  }
}
// The chunks the entry imports statically load with it (modulepreload), the lazy ones on demand.
const preload = (result.metafile.outputs[`dist/app/assets/${js}`]?.imports ?? [])
  .filter((i) => i.kind === 'import-statement')
  .map((i) => relative(assets, join(root, i.path)))
writeFileSync(join(out, 'manifest.json'), JSON.stringify({ js, css: cssName, preload, files, firstLoad }, null, 2))
console.log(
  `dashboard: ${js}, ${cssName}; first load ${(firstLoad.gzip / 1024).toFixed(1)} KiB gzipped, ${(firstLoad.brotli / 1024).toFixed(1)} KiB brotli`,
)
