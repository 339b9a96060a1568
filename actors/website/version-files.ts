// A version's files read back as text: typed source for the gate, the serving rules and their problems.
import { STATIC_FILE_MAX_BYTES } from '../../core/limits.js'
import type { VersionRecord, WebsiteRecord } from '../../core/schemas/records.js'
import { HEADERS_FILE, parseHeaders, parseRedirects, REDIRECTS_FILE, type RuleProblem } from '../../core/site-rules.js'
import type { StoreReader } from '../../core/store/reader.js'
import { fileIdOf } from '../../core/typed-files.js'
import { FUNCTIONS_MANIFEST, type FunctionsManifest } from '../../render/functions/files.js'

/** The text of a file of a version (its bytes from the store), or undefined when the version has no such path. */
export function versionText(
  store: Pick<StoreReader, 'getBlob'>,
  websiteId: string,
  version: VersionRecord,
  path: string,
): string | undefined {
  const entry = version.files[path]
  if (entry === undefined) return undefined
  const bytes = store.getBlob(entry.hash)
  if (bytes === undefined) throw new Error(`blob ${entry.hash} of ${websiteId} is missing`)
  return bytes.toString('utf8')
}

/** Every typed source file of a version, manifest path to text: what the quality gate takes. */
export function sourceTexts(store: Pick<StoreReader, 'getBlob'>, websiteId: string, version: VersionRecord): Map<string, string> {
  const texts = new Map<string, string>()
  for (const path of Object.keys(version.files)) if (fileIdOf(path) !== null) texts.set(path, versionText(store, websiteId, version, path)!)
  return texts
}

/**
 * The bad lines of a static version's `_redirects` and `_headers` (those files still deploy, as on
 * the peers; their good lines apply): what a deploy's answer and its deployment status show.
 */
export function ruleProblems(store: Pick<StoreReader, 'getBlob'>, websiteId: string, version: VersionRecord): RuleProblem[] {
  const problems: RuleProblem[] = []
  for (const [file, parse] of [
    [REDIRECTS_FILE, parseRedirects],
    [HEADERS_FILE, parseHeaders],
  ] as const) {
    const entry = version.files[file]
    if (entry === undefined) continue
    if (entry.size > STATIC_FILE_MAX_BYTES) {
      problems.push({ file, line: 0, message: `${file} is over 1 MiB: it is not read, and none of its rules apply` })
      continue
    }
    problems.push(...parse(versionText(store, websiteId, version, file)!).problems)
  }
  return problems
}

/**
 * A version's functions (its generated manifest: in a static version's files, in a framework version's
 * build): the routes they answer and a static deploy's type problems; null when it has none (or a
 * framework version is not built).
 */
export function functionsManifest(
  store: Pick<StoreReader, 'getBlob' | 'builds'>,
  website: Pick<WebsiteRecord, 'id' | 'kind'>,
  version: VersionRecord,
): FunctionsManifest | null {
  const files = website.kind === 'framework' ? store.builds.get([website.id, version.version])?.files : version.files
  const entry = files?.[FUNCTIONS_MANIFEST]
  if (entry === undefined) return null
  const bytes = store.getBlob(entry.hash)
  return bytes === undefined ? null : (JSON.parse(bytes.toString('utf8')) as FunctionsManifest)
}
