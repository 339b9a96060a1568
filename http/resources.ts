import type { Static } from '@sinclair/typebox'
import type { Registry } from '../actors/registry.js'
import type { WebsiteActor } from '../actors/website/actor.js'
import { firstWrite } from '../actors/website/rules.js'
import { canonicalRoutes } from '../actors/website/routes.js'
import { isRuleFile } from '../core/site-rules.js'
import { iso } from '../core/clock.js'
import type { PublicUrls } from '../core/hostnames.js'
import type { VersionRecord } from '../core/schemas/records.js'
import type { FunctionRoute, FunctionWarning } from '../core/schemas/source.js'
import type { WebsiteResource } from '../core/schemas/website.js'
import { isLive, isServing, isSharing } from '../core/website-state.js'

/*
 * The API shapes of what actors hold, in one place: records and versions become the resources of
 * the spec (ISO times, URLs, next steps). Operation files map through these and share nothing else.
 */

/** The API resource of a website record. */
export function websiteResource(website: WebsiteActor, urls: PublicUrls, registry: Registry): WebsiteResource {
  const record = website.record
  return {
    id: record.id,
    name: record.name,
    kind: record.kind,
    slug: record.slug,
    subdomain: record.subdomain,
    description: record.description,
    headVersion: record.headVersion,
    publishedVersion: record.publishedVersion,
    hasUnpublishedChanges: website.hasUnpublishedChanges,
    urls: { ...siteUrls(website, urls), ...liveAddresses(website, urls, registry) },
    suspendedAt: record.suspendedAt === null ? null : iso(record.suspendedAt),
    suspendedReason: record.suspendedReason,
    claimHeld: record.held === true,
    buildStatus: headBuildStatus(website),
    analytics: analyticsOf(website, urls, registry),
    passwordProtected: registry.sitePasswords.locked(record.id),
    deletedAt: record.deletedAt === null ? null : iso(record.deletedAt),
    createdAt: iso(record.createdAt),
    updatedAt: iso(record.updatedAt),
  }
}

/** The head's build on a framework site (building, ready, failed); null for other kinds, or an empty head. */
function headBuildStatus(website: WebsiteActor): 'building' | 'ready' | 'failed' | null {
  if (website.builds === null || website.head.fileCount === 0) return null
  return website.builds.status(website.head.version)?.status ?? 'failed'
}

/**
 * Where the website's analytics come from (the tracker once the site has tracker data, else the edge
 * beacon), whether the tracker script is on (a framework site's website_config.analytics.enabled, or
 * a static site that has sent events), the snippet a static site adds, and the shareable dashboard's
 * link while sharing is on.
 */
export function analyticsOf(website: WebsiteActor, urls: PublicUrls, registry: Registry) {
  const secret = registry.analyticsShares.secret(website.id)
  const data = registry.tracker.has(website.id)
  const published = website.record.publishedVersion
  const enabled =
    published !== null &&
    website.record.kind === 'framework' &&
    registry.reads.builds.get([website.id, published])?.routing?.analytics === true
  return {
    provider: data ? ('tracker' as const) : ('beacon' as const),
    tracking: enabled || data,
    trackerId: website.id,
    snippet: `<script defer src="/_platform/a.js" data-website-id="${website.id}"></script>`,
    dashboardUrl: secret === null ? null : urls.app(`/share/analytics/${website.id}/${secret}`),
  }
}

/**
 * The draft host's URL (null for a storage website: it has no draft, its files are live at once), and
 * the live host's while the site is live.
 */
export function siteUrls(website: WebsiteActor, urls: PublicUrls): { draft: string | null; published: string | null } {
  const r = website.record
  return {
    draft: r.kind === 'storage' ? null : urls.draft(r.subdomain),
    published: isLive(r) || isSharing(r) ? urls.published(r.subdomain) : null,
  }
}

/**
 * The addresses a live site answers at: its vanity one (a workspace with a namespace), the one to
 * share (a live primary custom domain, else the vanity, else its own) and all of them. Custom domains
 * are given with the scheme sites are served over behind the front (`https:`, or the API's).
 */
function liveAddresses(
  website: WebsiteActor,
  urls: PublicUrls,
  registry: Registry,
): { vanity: string | null; primary: string | null; all: string[] } {
  const r = website.record
  if (!(isLive(r) || isSharing(r))) return { vanity: null, primary: null, all: [] }
  const host = registry.hostnames.vanityHost(r)
  const vanity = host === null ? null : urls.site(host)
  const domains = registry.domains.list(r.id).filter((d) => d.state === 'active')
  const scheme = registry.hostnames.siteScheme
  const custom = domains.map((d) => `${scheme}//${d.hostname}`)
  const primaryDomain = domains.find((d) => d.primary)
  const own = urls.published(r.subdomain)
  return {
    vanity,
    primary: primaryDomain !== undefined ? `${scheme}//${primaryDomain.hostname}` : (vanity ?? own),
    all: [own, ...(vanity === null ? [] : [vanity]), ...custom],
  }
}

/** The head's functions as a deploy's answer tells them: their routes and type problems (nothing when it has none). */
export function functionsOf(website: WebsiteActor): {
  functions?: Static<typeof FunctionRoute>[]
  functionWarnings?: Static<typeof FunctionWarning>[]
} {
  const manifest = website.functionsManifest(website.head)
  if (manifest === null) return {}
  const warnings = manifest.typeProblems ?? []
  return { functions: manifest.routes, ...(warnings.length === 0 ? {} : { functionWarnings: warnings }) }
}

/** A source change's answer: the head it left, the URLs, and what to do next. */
export function commitResult(website: WebsiteActor, urls: PublicUrls, result: { version: number; changed: boolean }) {
  const sites = siteUrls(website, urls)
  const next = result.changed
    ? {
        message: `Version ${result.version} is the new head. Preview it at ${sites.draft}, then publish with POST /v1/websites/${website.id}/publish (MCP: publish_website).`,
        actions: ['preview', 'publish'],
      }
    : { message: `Nothing changed: the content equals the head, which stays version ${result.version}.`, actions: [] }
  return {
    version: result.version,
    changed: result.changed,
    urls: sites,
    next,
    warnings: website.ruleProblems(website.head),
    ...functionsOf(website),
  }
}

/** Who made a version and when, as every version-shaped resource shows it. */
function versionOrigin(website: WebsiteActor, v: VersionRecord) {
  return {
    version: v.version,
    isHead: v.version === website.head.version,
    isPublished: v.version === website.record.publishedVersion,
    createdAt: iso(v.createdAt),
    createdBy: v.createdBy,
    apiKeyId: v.createdBy?.kind === 'api_key' ? v.createdBy.id : null,
  }
}

/** One entry of the version history. */
export function versionEntry(website: WebsiteActor, urls: PublicUrls, v: VersionRecord) {
  const { version, isHead, isPublished, createdAt, createdBy, apiKeyId } = versionOrigin(website, v)
  const r = website.record
  return {
    version,
    isHead,
    isPublished,
    source: v.source,
    message: v.message,
    fileCount: v.fileCount,
    totalBytes: v.totalBytes,
    createdAt,
    createdBy,
    apiKeyId,
    urls: { preview: isServing(r) && v.fileCount > 0 ? urls.version(r.subdomain, v.version) : null },
  }
}

/**
 * Build status of a version. A static version is ready as soon as it is committed; a framework
 * version is building, ready or failed, with the gate's diagnostics and render failures.
 */
export function deploymentStatus(website: WebsiteActor, version: VersionRecord) {
  const record = website.record
  const publishable = version.fileCount > 0 && isServing(record)
  const common = versionOrigin(website, version)
  if (website.builds === null) {
    return {
      ...common,
      status: 'ready' as const,
      canPublish: publishable,
      // Every file's address but the rule files' (never served).
      routes: canonicalRoutes(Object.keys(version.files).filter((path) => !isRuleFile(path))),
      // The bad lines of its _redirects and _headers, as warnings (those lines do not apply).
      diagnostics: website.ruleProblems(version).map((p) => ({ step: 'rules', severity: 'warning' as const, ...p })),
    }
  }
  const state = website.builds.status(version.version)
  if (state === null && version.fileCount === 0) {
    const message = `Version ${version.version} is empty: nothing is built yet, and there is nothing to publish; ${firstWrite(record)}. Each write builds the new head in the background`
    return {
      ...common,
      status: 'failed' as const,
      canPublish: false,
      routes: [],
      diagnostics: [{ step: 'build', severity: 'error' as const, message }],
    }
  }
  if (state === null) {
    const message = `Version ${version.version} was not built (a newer head superseded it); POST deployments/ensure with {"version": ${version.version}} (MCP: ensure_deployment) builds it`
    return {
      ...common,
      status: 'failed' as const,
      canPublish: false,
      routes: [],
      diagnostics: [{ step: 'build', severity: 'warning' as const, message }],
    }
  }
  const result = state.result
  return {
    ...common,
    status: state.status,
    canPublish: publishable && state.status === 'ready',
    routes: (result?.pages ?? []).flatMap((p) => (p.route === null ? [] : [p.route])).sort(),
    // Render failures are among the gate's diagnostics, located in the site's files when the stack allowed.
    diagnostics: [
      ...(result?.diagnostics ?? []),
      ...(state.record?.rerenderFailure === undefined
        ? []
        : [
            {
              step: 'render' as const,
              severity: 'warning' as const,
              message: `The re-render after a CMS change failed at ${new Date(state.record.rerenderFailure.at).toISOString()} (${state.record.rerenderFailure.message}); the site still serves the rendering before it. Fix the item or the page; the next change renders again`,
            },
          ]),
    ],
  }
}
