// Domain Connect (domainconnect.org): which DNS provider serves a domain, its control panel, and, when the
// operator has a template and a signing key, a link that applies the records at the provider in one approval.
import { createSign } from 'node:crypto'
import { Resolver } from 'node:dns/promises'
import { getDomain } from 'tldts'
import type { OutboundGuard } from '../outbound.js'

/** The operator's Domain Connect template (PLINTH_DOMAIN_CONNECT_*): without it, no apply link is made. */
export interface DomainConnectTemplate {
  /** The template's provider id and service id (`plinth.example/website`), as published in the templates repository. */
  providerId: string
  serviceId: string
  /** The private key (PEM) the apply link is signed with. */
  privateKey: string
  /** Where the provider finds the public key: the `key` parameter (a host under the provider id's domain, `_dck1`). */
  keyHost: string
}

/** What a provider says of itself (GET {settings host}/v2/{domain}/settings). */
export interface ProviderSettings {
  providerId: string
  providerName: string
  providerDisplayName?: string
  urlSyncUX?: string
  urlAPI?: string
  urlControlPanel?: string
}

export interface Discovery {
  /** The zone asked about (the registrable domain of the hostname). */
  domain: string
  /** The part of the hostname under it (`www`; '' for the domain itself). */
  host: string
  /** The provider, or null: no `_domainconnect` record, or its settings could not be read (`why`). */
  provider: { id: string; name: string; controlPanel: string | null } | null
  /** The signed synchronous apply link, or null (no template configured, or the provider lacks it). */
  url: string | null
  /** Why there is no provider or no link, in words for the person. */
  why: string | null
}

/** A setting's URL as the provider gave it (`%domain%` filled in), only when it is http(s). */
function providerUrl(raw: string | undefined, domain: string): string | null {
  if (raw === undefined) return null
  try {
    const url = new URL(raw.replace(/%domain%/gi, domain))
    return url.protocol === 'https:' || url.protocol === 'http:' ? url.href : null
  } catch {
    return null
  }
}

/**
 * Discovers a hostname's DNS provider: the TXT record `_domainconnect.{domain}` names the provider's
 * settings host, whose `/v2/{domain}/settings` says its name, control panel and endpoints. Every request
 * goes through the outbound guard (the settings host is whatever a domain's DNS says). With the
 * operator's template (and the provider supporting it), the apply link is signed (RSA-SHA256 over the
 * query, as the protocol's synchronous flow asks).
 */
export async function discover(
  hostname: string,
  resolver: Resolver,
  outbound: OutboundGuard,
  template: DomainConnectTemplate | null,
  params: Record<string, string>,
): Promise<Discovery> {
  const domain = getDomain(hostname, { allowPrivateDomains: true }) ?? hostname
  const host = hostname === domain ? '' : hostname.slice(0, -domain.length - 1)
  const none = (why: string): Discovery => ({ domain, host, provider: null, url: null, why })
  let settingsHost: string
  try {
    const txt = (await resolver.resolveTxt(`_domainconnect.${domain}`)).map((chunks) => chunks.join('').trim())
    settingsHost = txt.find((value) => value !== '') ?? ''
  } catch {
    return none(`${domain}'s DNS provider does not support Domain Connect (no _domainconnect record)`)
  }
  if (settingsHost === '') return none(`${domain}'s DNS provider does not support Domain Connect (an empty _domainconnect record)`)
  let settings: ProviderSettings
  try {
    const answer = await outbound.request(`https://${settingsHost.replace(/\/+$/, '')}/v2/${domain}/settings`, {
      method: 'GET',
      headers: { accept: 'application/json' },
      body: '',
      maxBytes: 64 * 1024,
    })
    if (answer.status !== 200) return none(`${domain}'s DNS provider answered ${answer.status} for its Domain Connect settings`)
    settings = JSON.parse(answer.body.toString('utf8')) as ProviderSettings
    if (typeof settings.providerId !== 'string' || typeof settings.providerName !== 'string') throw new Error('no provider id or name')
  } catch (error) {
    return none(`${domain}'s DNS provider's Domain Connect settings could not be read (${(error as Error).message})`)
  }
  const provider = {
    id: settings.providerId,
    name: settings.providerDisplayName ?? settings.providerName,
    controlPanel: providerUrl(settings.urlControlPanel, domain),
  }
  if (template === null)
    return { domain, host, provider, url: null, why: 'This server has no Domain Connect template: create the records by hand' }
  const sync = providerUrl(settings.urlSyncUX, domain)
  const api = providerUrl(settings.urlAPI, domain)
  if (sync === null || api === null)
    return { domain, host, provider, url: null, why: `${provider.name} has no synchronous Domain Connect flow` }
  const templatePath = `/v2/domainTemplates/providers/${encodeURIComponent(template.providerId)}/services/${encodeURIComponent(template.serviceId)}`
  try {
    const supported = await outbound.request(`${api.replace(/\/+$/, '')}${templatePath}`, {
      method: 'GET',
      headers: {},
      body: '',
      maxBytes: 4096,
    })
    if (supported.status !== 200)
      return { domain, host, provider, url: null, why: `${provider.name} does not have this server's Domain Connect template` }
  } catch (error) {
    return {
      domain,
      host,
      provider,
      url: null,
      why: `${provider.name} could not be asked for this server's template (${(error as Error).message})`,
    }
  }
  const query = new URLSearchParams({ domain, ...(host === '' ? {} : { host }), ...params })
  const signature = createSign('RSA-SHA256').update(query.toString()).sign(template.privateKey, 'base64')
  query.set('key', template.keyHost)
  const signed = `${query.toString()}&sig=${encodeURIComponent(signature)}`
  return { domain, host, provider, url: `${sync.replace(/\/+$/, '')}${templatePath}/apply?${signed}`, why: null }
}
