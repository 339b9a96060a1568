import { ApiError } from '../core/errors.js'
import { isDraftLabel, labelOfHost, siteHostnames } from '../core/hostnames.js'
import type { WebsiteRecord } from '../core/schemas/records.js'
import type { Store } from '../core/store/store.js'
import { isServing } from '../core/website-state.js'
import { freeName } from './names.js'
import type { Channel } from './website/snapshot.js'

/** The channels of one website, as the hostname table routes them. */
export interface Routed {
  readonly draft: Channel
  readonly published: Channel
}

/**
 * The one owner of hostnames: the platform-wide label index in the store (which website holds
 * `{label}.{siteDomain}`; custom domains will join it here) and the in-memory table from hostname to
 * the channel it serves. Actors claim and free labels only through it, inside their own commit (one
 * LMDB write transaction at a time, so a label checked free is still free when written).
 */
export class HostnameTable {
  /** Hostname (lowercase, no port) to the channel it serves: the hosting plane's one lookup. */
  readonly #hosts = new Map<string, Channel>()

  constructor(
    private readonly store: Store,
    private readonly siteDomain: string,
    /** Labels no website may take (the API host's label when it sits under the site domain). */
    readonly reservedLabels: ReadonlySet<string>,
  ) {}

  /** The channel routed for this exact hostname, if any (no folding; the hot path). */
  channel(host: string): Channel | undefined {
    return this.#hosts.get(host)
  }

  /** The website id a site hostname names by its label (routed or not), or undefined. */
  websiteOfHost(host: string): string | undefined {
    const named = labelOfHost(host, this.siteDomain)
    return named === null ? undefined : this.store.labels.get(named.label)
  }

  /** Whether a website may take this label now (inside a commit). */
  isFree(label: string): boolean {
    return this.store.labels.get(label) === undefined && !this.reservedLabels.has(label) && !isDraftLabel(label)
  }

  /** A free label from `base` (a random suffix when taken); inside a commit. */
  freeLabel(base: string, maxChars: number): string {
    return freeName(base, maxChars, (label) => this.isFree(label))
  }

  /** Gives `label` to a website; 409 when another holds it. Inside the commit that records it. */
  claim(label: string, websiteId: string, field: string, hint: string): void {
    const holder = this.store.labels.get(label)
    if (holder !== undefined && holder !== websiteId) throw new ApiError('conflict', `subdomain "${label}" is taken; ${hint}`, { field })
    this.store.labels.put(label, websiteId)
  }

  /** Frees a website's label (inside the commit that moves it elsewhere); the next claim may take it. */
  free(label: string, websiteId: string): void {
    if (this.store.labels.get(label) === websiteId) this.store.labels.remove(label)
  }

  /** Keeps the in-memory table in step with a website's label and liveness (after its commit). */
  route(routed: Routed, previous: WebsiteRecord | null, next: WebsiteRecord): void {
    if (previous !== null) this.unroute(routed, previous)
    if (isServing(next)) {
      const hosts = siteHostnames(next.subdomain, this.siteDomain)
      this.#hosts.set(hosts.published, routed.published)
      this.#hosts.set(hosts.draft, routed.draft)
    }
  }

  /** Takes a website's channels out of the in-memory table, as `record` routed them. */
  unroute(routed: Routed, record: WebsiteRecord): void {
    const hosts = siteHostnames(record.subdomain, this.siteDomain)
    for (const host of [hosts.published, hosts.draft]) {
      const channel = this.#hosts.get(host)
      if (channel === routed.draft || channel === routed.published) this.#hosts.delete(host)
    }
  }
}
