// What each of a website's two channels serves: a static site's versions (beside its generated pages), or ready builds.
import { manifestDigest } from '../../core/content.js'
import type { BuildRecord, GeneratedPagesRecord, VersionRecord, WebsiteRecord } from '../../core/schemas/records.js'
import { isServing } from '../../core/website-state.js'
import type { ContentCache } from '../content-cache.js'
import type { FrameworkBuilds } from './builds.js'
import type { Channel, ServedFiles } from './snapshot.js'

/** The committed state the channels follow (WebsiteState). */
export interface ServingState {
  readonly record: WebsiteRecord
  readonly head: VersionRecord
  readonly publishedVersion: VersionRecord | null
  /** Pages a static site serves beside its deployed files (its blog), as stored. */
  readonly generated: GeneratedPagesRecord | null
}

/**
 * What a build serves, keyed by what is served, not when it was built: a rebuild that renders
 * different bytes (or routing) swaps the snapshot, one that renders the same keeps it.
 */
function fromBuild(b: BuildRecord | undefined): ServedFiles | null {
  return b === undefined
    ? null
    : {
        version: b.version,
        key: `b${b.version}:${manifestDigest(b.files)}:${JSON.stringify(b.routing ?? null)}`,
        files: b.files,
        routing: b.routing,
      }
}

/**
 * What a version's own address (`v{N}--{label}`) serves: a static version's files exactly as
 * deployed, or a framework version's ready build; null when there is nothing (an empty version, a
 * build not ready).
 */
export function versionServed(version: VersionRecord, builds: FrameworkBuilds | null): ServedFiles | null {
  if (builds === null)
    return version.fileCount === 0 ? null : { version: version.version, key: `v${version.version}`, files: version.files }
  const build = builds.record(version.version)
  return fromBuild(build?.status === 'ready' ? build : undefined)
}

/**
 * Points both channels at the committed state; a site that is not live serves nothing. Static
 * sites serve their files; framework sites serve build output only (never their source): the
 * draft host the newest ready build up to the head, the live host the published version's build.
 */
export function pointChannels(
  channels: { readonly draft: Channel; readonly published: Channel },
  state: ServingState,
  /** Background builds; framework websites only. */
  builds: FrameworkBuilds | null,
  cache: ContentCache,
): void {
  const record = state.record
  const live = isServing(record)
  const want = (channel: Channel, served: ServedFiles | null) => channel.point(live ? served : null, cache)
  // A live site's draft host says why it shows nothing: no files yet, or no build ready yet.
  channels.draft.waiting = !live ? null : state.head.fileCount === 0 ? 'empty' : builds !== null ? 'building' : null
  if (builds === null) {
    // A static site's generated pages (its blog) are served beside its files; its own files win.
    const generated = state.generated
    const asServed = (v: VersionRecord | null): ServedFiles | null =>
      v === null
        ? null
        : generated === null
          ? { version: v.version, key: `v${v.version}`, files: v.files }
          : { version: v.version, key: `v${v.version}:g${generated.key}`, files: { ...generated.files, ...v.files } }
    want(channels.draft, state.head.fileCount === 0 ? null : asServed(state.head))
    want(channels.published, asServed(state.publishedVersion))
    return
  }
  want(channels.draft, fromBuild(builds.newestReady(state.head.version)))
  const published = state.publishedVersion === null ? undefined : builds.record(state.publishedVersion.version)
  want(channels.published, fromBuild(published?.status === 'ready' ? published : undefined))
}
