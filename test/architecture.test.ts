import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import { relative } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { parseCircular, parseDependencyTree } from 'dpdm'

/** The repository root (this file runs as dist/test/architecture.test.js; the rules read the TypeScript sources). */
const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const ROOMS = ['core', 'render', 'actors', 'http', 'cluster', 'plinth', 'bin'] as const
type Room = (typeof ROOMS)[number]

/** Which rooms each room may import from (ARCHITECTURE.md, "One-way doors"). */
const DOORS: Record<Room, readonly Room[]> = {
  core: ['core'],
  render: ['render', 'core'],
  actors: ['actors', 'render', 'core'],
  http: ['http', 'actors', 'core'],
  cluster: ['cluster', 'core'],
  plinth: ['plinth', 'http', 'actors', 'render', 'cluster', 'core'],
  bin: ['bin', 'plinth', 'actors', 'core'],
}

let graph: ReturnType<typeof parseDependencyTree> | undefined

/** The server's import graph, parsed once for the file's tests. */
function importGraph() {
  graph ??= parseGraph()
  return graph
}

async function parseGraph() {
  // Type-only imports count: a circle of types is still a circle to read.
  const tree = await parseDependencyTree(
    ROOMS.map((room) => `${room}/**/*.ts`),
    {
      cwd: ROOT,
      context: ROOT,
      tsconfig: `${ROOT}/tsconfig.json`,
      transform: false,
      extensions: ['.ts', '.js'],
      exclude: /node_modules|dist/,
    },
  )
  return tree
}

const roomOf = (file: string): string => relative(ROOT, file).split('/')[0]

test('the source has no import circles, type-only imports included', async () => {
  const tree = await importGraph()
  assert.ok(Object.keys(tree).length > 80, `the graph looks empty: ${Object.keys(tree).length} files`)
  const circles = parseCircular(tree).map((circle) => circle.map((f) => relative(ROOT, f)).join(' -> '))
  assert.deepEqual(circles, [], `import circles:\n${circles.join('\n')}`)
})

test('imports flow one way between rooms: core imports nothing of ours, http never imports render', async () => {
  const tree = await importGraph()
  const wrong: string[] = []
  for (const [file, dependencies] of Object.entries(tree)) {
    const from = roomOf(file) as Room
    if (!ROOMS.includes(from)) continue
    for (const dependency of dependencies ?? []) {
      if (dependency.id === null || dependency.id.includes('node_modules') || !dependency.id.startsWith(ROOT)) continue
      const to = roomOf(dependency.id) as Room
      if (!DOORS[from].includes(to)) wrong.push(`${relative(ROOT, file)} -> ${relative(ROOT, dependency.id)}`)
    }
  }
  assert.deepEqual(wrong, [], `imports against the one-way doors:\n${wrong.join('\n')}`)
})

test('one owner writes the hostname table: only actors/domains/hostnames.ts touches the label index', async () => {
  const { readFileSync } = await import('node:fs')
  const tree = await importGraph()
  const touching = Object.keys(tree)
    .filter((file) => file.endsWith('.ts') && !file.includes('node_modules'))
    .filter((file) => /\.labels\b/.test(readFileSync(file, 'utf8')))
    .map((file) => relative(ROOT, file))
    // (The store opens the table: store.ts and table-set.ts.)
    .filter((file) => file !== 'core/store/store.ts' && file !== 'core/store/table-set.ts')
  assert.deepEqual(touching, ['actors/domains/hostnames.ts'])
})

test('the dashboard (app/) is a client of the public API: it imports nothing of the server, and has no import circles', async () => {
  const tree = await parseDependencyTree(['app/**/*.ts', 'app/**/*.tsx'], {
    cwd: ROOT,
    context: ROOT,
    tsconfig: `${ROOT}/app/tsconfig.json`,
    transform: false,
    extensions: ['.ts', '.tsx', '.js'],
    exclude: /node_modules|dist/,
  })
  assert.ok(Object.keys(tree).length > 20, `the dashboard's graph looks empty: ${Object.keys(tree).length} files`)
  const circles = parseCircular(tree).map((circle) => circle.map((f) => relative(ROOT, f)).join(' -> '))
  assert.deepEqual(circles, [], `import circles in the dashboard:\n${circles.join('\n')}`)
  const outside: string[] = []
  for (const [file, dependencies] of Object.entries(tree)) {
    for (const dependency of dependencies ?? []) {
      if (dependency.id === null || dependency.id.includes('node_modules') || !dependency.id.startsWith(ROOT)) continue
      if (roomOf(dependency.id) !== 'app') outside.push(`${relative(ROOT, file)} -> ${relative(ROOT, dependency.id)}`)
    }
  }
  assert.deepEqual(outside, [])
})

/** Methods that change the store: on its tables, on the Store itself, and on lmdb's databases. */
const WRITE_METHODS = new Set([
  'put',
  'remove',
  'add',
  'commit',
  'putBlob',
  'putContent',
  'putVariant',
  'putVersion',
  'removeVersion',
  'putBuild',
  'removeBuild',
  'putSubmission',
  'removeSubmission',
  'releaseFiles',
  'nextSeq',
  'secret',
  'ensureBlobReferences',
  'adopt',
  'place',
  'release',
  'sweep',
  'transaction',
  'transactionSync',
  'childTransaction',
  'clearSync',
  'clearAsync',
  'drop',
  'dropSync',
  'putSync',
  'removeSync',
  'ifNoExists',
  'ifVersion',
])
const WRITABLE_CLASSES = new Set([
  'RecordTable',
  'IndexTable',
  'CounterTable',
  'Store',
  'BlobFiles',
  'BlobKeeper',
  'Database',
  'RootDatabase',
])

let typed: Promise<{
  ts: typeof import('typescript')
  program: import('typescript').Program
  checker: import('typescript').TypeChecker
}> | null = null

/** The store itself, or a concern's handle on it (`StoreFor<…>`, an intersection with no class name of its own). */
function isStore(checker: import('typescript').TypeChecker, node: import('typescript').Node): boolean {
  const type = checker.getTypeAtLocation(node)
  return type.getProperty('commit') !== undefined && type.getProperty('websites') !== undefined
}

/** The sources as the compiler sees them, with their types (made once for the tests that walk write calls). */
function typedSources() {
  typed ??= (async () => {
    // By require: an import() of TypeScript's CommonJS file scans its 9 MB for export names first.
    const ts = createRequire(import.meta.url)('typescript') as typeof import('typescript')
    const config = ts.getParsedCommandLineOfConfigFile(
      `${ROOT}/tsconfig.json`,
      {},
      { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => undefined },
    )!
    // The rooms' files only (the tests, benchmarks and dashboard are never scanned: parsing them would only cost time).
    const rootNames = config.fileNames.filter((name) => (ROOMS as readonly string[]).includes(relative(ROOT, name).split('/')[0]!))
    const program = ts.createProgram({ rootNames, options: { ...config.options, noEmit: true } })
    return { ts, program, checker: program.getTypeChecker() }
  })()
  return typed
}

test('one writer by construction: no module outside actors/ (and the store itself) calls a write method of the store', async () => {
  const { ts, program, checker } = await typedSources()
  const writes: string[] = []
  let calls = 0
  for (const source of program.getSourceFiles()) {
    const file = relative(ROOT, source.fileName)
    if (file.startsWith('..') || file.includes('node_modules') || !(ROOMS as readonly string[]).includes(file.split('/')[0])) continue
    const allowed = file.startsWith('actors/') || file.startsWith('core/store/')
    const visit = (node: import('typescript').Node): void => {
      if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression) && WRITE_METHODS.has(node.expression.name.text)) {
        const owner = checker.getTypeAtLocation(node.expression.expression)
        const name = (owner.getSymbol() ?? owner.aliasSymbol)?.getName() ?? ''
        if (WRITABLE_CLASSES.has(name) || isStore(checker, node.expression.expression)) {
          calls++
          if (!allowed) {
            const { line } = source.getLineAndCharacterOfPosition(node.getStart())
            writes.push(`${file}:${line + 1} ${node.expression.getText(source)}()`)
          }
        }
      }
      ts.forEachChild(node, visit)
    }
    visit(source)
  }
  assert.ok(calls > 100, `the scan found only ${calls} write calls in actors/: it no longer recognises the store's tables`)
  assert.deepEqual(writes, [], 'writes outside actors/: move them into the actor that owns the table')
})

/**
 * Store methods that are not a concern's table: a transaction (any concern commits its own writes)
 * and the installation-wide sequence every list and log orders by.
 */
const SHARED_STORE_WRITES = new Set(['commit', 'transaction', 'transactionSync', 'childTransaction', 'nextSeq'])

test('each concern owns its tables: a table is written from one folder of actors/ only', async () => {
  const { ts, program, checker } = await typedSources()
  const typeName = (node: import('typescript').Node): string => {
    const type = checker.getTypeAtLocation(node)
    return (type.getSymbol() ?? type.aliasSymbol)?.getName() ?? ''
  }
  /** table (or Store write method) -> concern -> where */
  const writers = new Map<string, Map<string, string[]>>()
  const unresolved: string[] = []
  for (const source of program.getSourceFiles()) {
    const file = relative(ROOT, source.fileName)
    if (!file.startsWith('actors/')) continue
    const parts = file.split('/')
    // A concern is a folder of actors/; a file directly in actors/ is a concern of its own.
    const concern = parts.length > 2 ? parts[1] : parts[1].replace(/\.ts$/, '')
    const visit = (node: import('typescript').Node): void => {
      if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression) && WRITE_METHODS.has(node.expression.name.text)) {
        const method = node.expression.name.text
        const receiver = node.expression.expression
        const where = `${file}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1}`
        let table: string | null = null
        if (isStore(checker, receiver)) table = `Store.${method}()`
        else if (WRITABLE_CLASSES.has(typeName(receiver))) {
          // Up the chain (`store.analyticsMinutely.db`) to the property read off the Store: that is the table.
          for (let at: import('typescript').Expression = receiver; ts.isPropertyAccessExpression(at); at = at.expression) {
            if (isStore(checker, at.expression)) {
              table = at.name.text
              break
            }
          }
          if (table === null) unresolved.push(`${where} ${node.expression.getText(source)}()`)
          // The blob directory's files come and go through store.blobs, which pins and takes turns per hash.
          if (table === 'files')
            unresolved.push(`${where} ${node.expression.getText(source)}(): add or remove blob files through store.blobs`)
        }
        if (table !== null && !SHARED_STORE_WRITES.has(method)) {
          const byConcern = writers.get(table) ?? new Map<string, string[]>()
          writers.set(table, byConcern)
          byConcern.set(concern, [...(byConcern.get(concern) ?? []), where])
        }
      }
      ts.forEachChild(node, visit)
    }
    visit(source)
  }
  assert.ok(writers.size > 60, `the scan found only ${writers.size} tables written: it no longer recognises the store's tables`)
  // A table handed around as a value would hide its writer from this rule.
  assert.deepEqual(unresolved, [], 'writes to a table not read off the store: name it as store.<table> where it is written')
  const shared = [...writers]
    .filter(([, byConcern]) => byConcern.size > 1)
    .map(([table, byConcern]) => `${table}: ${[...byConcern].map(([concern, at]) => `${concern} (${at.join(', ')})`).join('; ')}`)
  assert.deepEqual(shared, [], "tables written by more than one concern: move the write into the owner's folder and call it there")
})
