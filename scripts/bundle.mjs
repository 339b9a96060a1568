// The build's last step: every file Node starts from (the CLI, the serving thread, the render and tool
// workers, each test and benchmark) is bundled with esbuild over the file tsc wrote, the code they share
// in dist/chunks/. Node's module loader spends about 2 ms a file, and a server is 300 of ours and 400
// of its libraries': a process starts in about half the CPU (measured: importing the server took
// 1.2 s of CPU from tsc's files, 0.5 s bundled), which every test file, spawned server and worker pays.
//
// Two things a bundle would change are kept as they were:
// - `import.meta.url` means the file it is written in: each module's is replaced with its own file's
//   URL (computed from where its code lands, so the tree can move), and a worker or a page of the docs
//   is found where it was.
// - Libraries with native code or that find their own files at run time stay external (loaded from
//   node_modules, as before).
// One thing differs: a CommonJS library loaded with import() gives only its `default` (module.exports)
// in a bundle, where Node also gives its named exports. Import such a library statically in the module
// that uses it (cluster/user-key.ts), or read `default` (stripe).
import { build } from 'esbuild'
import { readdirSync, writeFileSync, mkdirSync, rmSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { dirname, join, posix, relative, sep } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const dist = join(root, 'dist')

/** Packages never bundled: native addons, and those that locate files, plugins or workers of their own. */
const EXTERNAL = new Set([
  'lmdb',
  'msgpackr',
  'msgpackr-extract',
  'uWebSockets.js',
  'isolated-vm',
  'sharp',
  'esbuild',
  'typescript',
  'prettier',
  'piscina',
  'playwright-core',
  'axe-core',
  'react',
  'react-dom',
  'lucide-react',
  'tailwindcss',
  'node-gyp-build-optional-packages',
])
const EXTERNAL_SCOPES = new Set(['@lmdb', '@msgpackr-extract', '@esbuild', '@img'])

function* files(dir, test) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) yield* files(path, test)
    else if (test(path)) yield path
  }
}

/** The files Node is started on, or starts a worker, thread or process on. */
const entries = [
  join(dist, 'bin', 'plinth.js'),
  join(dist, 'http', 'serve-thread.js'),
  join(dist, 'render', 'render.worker.js'),
  join(dist, 'render', 'tool.worker.js'),
  join(dist, 'render', 'functions', 'function.worker.js'),
  join(dist, 'test', 'helpers', 'purge-child.js'),
  ...files(join(dist, 'test'), (path) => /\.(test|soak)\.js$/.test(path)),
  ...readdirSync(join(dist, 'bench'))
    .filter((name) => name.endsWith('.js'))
    .map((name) => join(dist, 'bench', name)),
]

const META = '__plinth_import_meta_url__:'
const toPosix = (path) => path.split(sep).join('/')

const result = await build({
  entryPoints: entries.map((path) => ({ in: path, out: toPosix(relative(dist, path)).replace(/\.js$/, '') })),
  outdir: dist,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  chunkNames: 'chunks/[name]-[hash]',
  write: false,
  logLevel: 'warning',
  // Libraries in CommonJS call require(): one made for the file, as Node gives a CommonJS module.
  banner: {
    js: "import { createRequire as __plinthCreateRequire } from 'node:module'; const require = __plinthCreateRequire(import.meta.url);",
  },
  plugins: [
    {
      name: 'plinth',
      setup(b) {
        b.onResolve({ filter: /^[^./]/ }, (args) => {
          if (args.path.startsWith('node:')) return { external: true }
          const [first, second] = args.path.split('/')
          const name = first.startsWith('@') ? `${first}/${second}` : first
          if (EXTERNAL.has(name) || EXTERNAL_SCOPES.has(first)) return { external: true }
          return undefined
        })
        // Our own modules: import.meta.url becomes a marker naming the module's file, replaced below.
        b.onLoad({ filter: /\.js$/ }, async (args) => {
          if (!args.path.startsWith(dist + sep)) return undefined
          const text = await readFile(args.path, 'utf8')
          if (!text.includes('import.meta.url')) return { contents: text, loader: 'js' }
          const marker = JSON.stringify(META + toPosix(relative(dist, args.path)))
          return { contents: text.replaceAll('import.meta.url', marker), loader: 'js' }
        })
      },
    },
  ],
})

rmSync(join(dist, 'chunks'), { recursive: true, force: true })
const markers = new RegExp(`"${META}([^"]+)"`, 'g')
for (const file of result.outputFiles) {
  const text = file.text.replace(markers, (_, original) => {
    let path = posix.relative(toPosix(dirname(relative(dist, file.path))), original)
    if (!path.startsWith('.')) path = `./${path}`
    return `new URL(${JSON.stringify(path)}, import.meta.url).href`
  })
  if (text.includes(META)) throw new Error(`${file.path}: an import.meta.url marker was left unreplaced`)
  mkdirSync(dirname(file.path), { recursive: true })
  writeFileSync(file.path, text)
}
