// A workspace's namespace and its sites' vanity labels: `{label}.{namespace}.{siteDomain}` for each published site.
import type { Clock } from '../../core/clock.js'
import { ApiError } from '../../core/errors.js'
import { NAMESPACE_RENAMES_BY_PLAN } from '../../core/limits.js'
import type { AuditActorValue } from '../../core/schemas/audit.js'
import type { NamespaceRecord } from '../../core/schemas/domains.js'
import type { WebsiteRecord } from '../../core/schemas/records.js'
import type { Plans } from '../billing/plans.js'
import { assertUsableLabel } from '../names.js'
import { appendAudit } from '../organization/audit.js'
import type { HostnameTable } from './hostnames.js'
import type { DomainsStore } from './tables.js'

/** How many renames are left, of how many. */
export interface Renames {
  used: number
  limit: number
  left: number
}

/**
 * Namespaces. A workspace takes one name (from the same name space as the sites' own labels: one
 * cannot take another's), and each of its published sites then also answers at
 * `{label}.{name}.{siteDomain}`: the label is the site's subdomain (made from its name) unless one was
 * chosen with `renameVanity`, unique within the namespace. Renaming the namespace or a label ends the
 * old addresses at once (the hostname table is routed again in the same turn). Renames are limited for
 * the workspace's (or the site's) lifetime: PLINTH_NAMESPACE_RENAMES with billing off, the plan's with
 * billing on (the free plan has no namespace).
 */
export class Namespaces {
  constructor(
    private readonly store: DomainsStore,
    private readonly clock: Clock,
    private readonly hostnames: HostnameTable,
    private readonly plans: Plans,
    /** Renames allowed with billing off. */
    private readonly renamesWithoutBilling: number,
    /** Routes every given website again (their vanity addresses moved). */
    private readonly reroute: (websiteIds: string[]) => void,
  ) {}

  get(orgId: string): NamespaceRecord | undefined {
    return this.store.namespaces.get(orgId)
  }

  /** How many renames a workspace (or each of its sites) gets for its lifetime. */
  renameLimit(orgId: string): number {
    return this.plans.billing.enabled ? NAMESPACE_RENAMES_BY_PLAN[this.plans.record(orgId).plan] : this.renamesWithoutBilling
  }

  renames(orgId: string): Renames {
    const used = this.get(orgId)?.renames ?? 0
    const limit = this.renameLimit(orgId)
    return { used, limit, left: Math.max(0, limit - used) }
  }

  vanityRenames(website: WebsiteRecord): Renames {
    const used = this.store.vanityRenames.get([website.id])
    const limit = this.renameLimit(website.orgId)
    return { used, limit, left: Math.max(0, limit - used) }
  }

  /** Whether `name` may be taken as a namespace now: free, or why not. */
  check(name: string, orgId: string): { available: boolean; reason: string | null } {
    try {
      assertUsableLabel(name, this.hostnames.reservedLabels, 'query.name')
    } catch (error) {
      return { available: false, reason: (error as ApiError).message }
    }
    if (this.store.namespaceNames.get(name) === orgId) return { available: true, reason: 'It is this workspace’s namespace already' }
    if (this.store.namespaceNames.get(name) !== undefined) return { available: false, reason: `"${name}" is another workspace's namespace` }
    if (this.hostnames.holderOfLabel(name) !== undefined)
      return { available: false, reason: `"${name}" is a site's subdomain (sites and namespaces share one name space)` }
    return { available: true, reason: null }
  }

  /**
   * Takes `name` for the workspace (its first namespace) or renames its namespace to it. 402 on the free
   * plan with billing on; 409 when taken, or when no rename is left.
   */
  async take(actor: AuditActorValue, orgId: string, name: string): Promise<{ record: NamespaceRecord; renamed: string | null }> {
    assertUsableLabel(name, this.hostnames.reservedLabels, 'body.name')
    this.plans.assertPaid(orgId, 'A namespace')
    const now = this.clock.now()
    const result = await this.store.commit(() => {
      const current = this.store.namespaces.get(orgId)
      if (current?.name === name) return { record: current, renamed: null, changed: false }
      const holder = this.store.namespaceNames.get(name)
      if (holder !== undefined)
        throw new ApiError('conflict', `"${name}" is another workspace's namespace; check another with check_namespace`, {
          field: 'body.name',
        })
      if (this.hostnames.holderOfLabel(name) !== undefined)
        throw new ApiError('conflict', `"${name}" is a site's subdomain (sites and namespaces share one name space); choose another`, {
          field: 'body.name',
        })
      if (current !== undefined) {
        const limit = this.renameLimit(orgId)
        if (current.renames >= limit) throw renameLimit('namespace', limit, this.plans)
        this.store.namespaceNames.remove(current.name)
      }
      const record: NamespaceRecord = {
        v: 1,
        orgId,
        name,
        renames: current === undefined ? 0 : current.renames + 1,
        certificateAt: null,
        createdAt: current?.createdAt ?? now,
        renamedAt: current === undefined ? null : now,
      }
      this.store.namespaces.put(orgId, record)
      this.store.namespaceNames.put(name, orgId)
      appendAudit(this.store, orgId, actor, now, {
        eventType: current === undefined ? 'namespace.taken' : 'namespace.renamed',
        resourceType: 'namespace',
        resourceId: orgId,
        websiteId: null,
        metadata: current === undefined ? { name } : { name, from: current.name },
      })
      return { record, renamed: current?.name ?? null, changed: true }
    })
    // Taken or renamed: every site of the workspace gets its new vanity address, and loses the old one, now.
    if (result.changed) this.reroute(this.#websites(orgId))
    return { record: result.record, renamed: result.renamed }
  }

  /**
   * Gives a website the vanity label `label` in its workspace's namespace. 409 without a namespace,
   * when another site of the namespace answers at that label, or when no rename is left.
   */
  async renameVanity(actor: AuditActorValue, website: WebsiteRecord, label: string): Promise<{ label: string; host: string }> {
    assertUsableLabel(label, new Set(), 'body.label')
    const now = this.clock.now()
    const from = await this.store.commit(() => {
      const namespace = this.store.namespaces.get(website.orgId)
      if (namespace === undefined)
        throw new ApiError(
          'conflict',
          'This workspace has no namespace, so its sites have no vanity address; take one with rename_namespace first',
        )
      const current = this.hostnames.vanityLabel(website)
      if (current === label) return null
      const chosen = this.store.vanityLabels.get([website.orgId, label])
      const byDefault = this.hostnames.holderOfLabel(label)
      const other =
        chosen ?? (byDefault !== undefined && this.store.websites.get(byDefault)?.orgId === website.orgId ? byDefault : undefined)
      if (other !== undefined && other !== website.id)
        throw new ApiError('conflict', `Another site of this namespace answers at "${label}"; choose another label`, {
          field: 'body.label',
        })
      const used = this.store.vanityRenames.get([website.id])
      const limit = this.renameLimit(website.orgId)
      if (used >= limit) throw renameLimit('vanity', limit, this.plans)
      const previous = this.store.vanityOf.get(website.id)
      if (previous !== undefined) this.store.vanityLabels.remove([website.orgId, previous])
      this.store.vanityLabels.put([website.orgId, label], website.id)
      this.store.vanityOf.put(website.id, label)
      this.store.vanityRenames.add([website.id], 1)
      appendAudit(this.store, website.orgId, actor, now, {
        eventType: 'website.vanity_renamed',
        resourceType: 'website',
        resourceId: website.id,
        websiteId: website.id,
        metadata: { label, from: current ?? '' },
      })
      return current
    })
    if (from !== null) this.reroute([website.id])
    return { label, host: this.hostnames.vanityHost(website)! }
  }

  /**
   * The front asked for a certificate for a vanity address (Caddy's on-demand TLS): the namespace's
   * addresses get theirs as they are first asked for. Recorded once per name; a replica that cannot
   * write leaves it to the primary's next ask.
   */
  certified(orgId: string): void {
    const record = this.store.namespaces.get(orgId)
    if (record === undefined || record.certificateAt !== null) return
    const now = this.clock.now()
    void this.store
      .commit(() => {
        const current = this.store.namespaces.get(orgId)
        if (current !== undefined && current.name === record.name && current.certificateAt === null)
          this.store.namespaces.put(orgId, { ...current, certificateAt: now })
      })
      .catch(() => undefined)
  }

  /** Forgets a purged website's vanity label (inside the purge's commit). */
  removeWebsite(websiteId: string): void {
    const label = this.store.vanityOf.get(websiteId)
    if (label === undefined) return
    const orgId = this.store.websites.get(websiteId)?.orgId
    // A label left behind (the record gone first) names a website that is not there: no address answers at it.
    if (orgId !== undefined && this.store.vanityLabels.get([orgId, label]) === websiteId) this.store.vanityLabels.remove([orgId, label])
    this.store.vanityOf.remove(websiteId)
    this.store.vanityRenames.add([websiteId], -this.store.vanityRenames.get([websiteId]))
  }

  #websites(orgId: string): string[] {
    return [...this.store.websitesByOrg.range({ start: [orgId, ''], end: [orgId, '\uffff'] })].map((entry) => entry.value)
  }
}

/** 409 (402 with billing on, where a bigger plan has more) when every rename is used. */
function renameLimit(what: 'namespace' | 'vanity', limit: number, plans: Plans): ApiError {
  const said = `${what === 'namespace' ? 'The namespace' : "This site's vanity label"} was renamed ${limit} time${limit === 1 ? '' : 's'}, all this workspace's plan allows`
  if (plans.billing.enabled && limit < NAMESPACE_RENAMES_BY_PLAN.max)
    return new ApiError('payment_required', `${said}; a bigger plan allows more: upgrade at ${plans.upgradeUrl()}`, {
      reason: 'plan_limit',
      upgradeUrl: plans.upgradeUrl(),
      limit,
    })
  return new ApiError('conflict', `${said}; the names in use stay as they are`, { reason: 'rename_limit', limit })
}
