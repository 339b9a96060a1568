import { useState, type FormEvent } from 'react'
import { DOMAIN_HOSTNAME_MAX_CHARS } from '../../../core/limits.js'
import { hostOfAddress } from '../../../core/text.js'
import { api } from '../../api.js'
import { useSession } from '../../session.js'
import type { Domain } from '../../types.js'
import { ConfirmButton } from '../../ui/confirm.js'
import { CopyButton } from '../../ui/copy.js'
import { useAction, useResource } from '../../ui/data.js'
import { Badge, Button, Card, Code, Empty, ErrorNote, Field, Loaded, Notice, Time } from '../../ui/kit.js'
import { useWebsite } from './context.js'

/** Custom domains: add one, the DNS records exactly as the API answers them, verify, primary, remove. */
export function Domains() {
  const { website: w } = useWebsite()
  const { can } = useSession()
  const domains = useResource(`domains:${w.id}`, (signal) =>
    api<{ items: Domain[] }>('GET', `/v1/websites/${w.id}/domains`, { query: { limit: 100 }, signal }),
  )
  const add = useAction(async (hostname: string) => {
    await api('POST', `/v1/websites/${w.id}/domains`, { body: { hostname } })
    await domains.reload()
  })
  const [took, setTook] = useState<string | null>(null)
  const submit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault()
    const form = event.currentTarget
    const typed = String(new FormData(form).get('hostname')).trim()
    // An address pasted whole (https://www.example.com/path): its host name is the domain.
    const host = hostOfAddress(typed)
    setTook(host === null ? null : `Added ${host}, the host name of the address you pasted.`)
    if (await add.run(host ?? typed)) form.reset()
    else setTook(null)
  }
  const manage = can('domains.manage') && w.deletedAt === null
  return (
    <div className="flex flex-col gap-4">
      {manage && (
        <Card title="Add a domain">
          <form onSubmit={submit} className="flex flex-wrap items-end gap-2">
            <Field
              label="Hostname"
              name="hostname"
              placeholder="www.example.com"
              required
              maxLength={DOMAIN_HOSTNAME_MAX_CHARS}
              error={add.error}
              className="min-w-0 flex-1 sm:max-w-sm"
            />
            <Button type="submit" tone="primary" busy={add.busy}>
              Add domain
            </Button>
          </form>
          <div className="mt-2">
            <ErrorNote error={add.error} fields={['hostname']} />
            {took !== null && <Notice>{took}</Notice>}
          </div>
        </Card>
      )}
      <Loaded resource={domains}>
        {(page) =>
          page.items.length === 0 ? (
            <Empty>No custom domains. The site is at its platform address until you add one.</Empty>
          ) : (
            <ul aria-label="Domains" className="flex flex-col gap-4">
              {page.items.map((d) => (
                <DomainCard key={d.id} domain={d} manage={manage} onChange={() => void domains.reload()} />
              ))}
            </ul>
          )
        }
      </Loaded>
    </div>
  )
}

function DomainCard({ domain: d, manage, onChange }: { domain: Domain; manage: boolean; onChange: () => void }) {
  const { website: w } = useWebsite()
  const base = `/v1/websites/${w.id}/domains/${d.id}`
  const verify = useAction(async () => {
    await api('POST', `${base}/verify`)
    onChange()
  })
  const primary = useAction(async () => {
    await api('POST', `${base}/primary`)
    onChange()
  })
  return (
    <li>
      <Card
        title={
          <span className="flex flex-wrap items-center gap-2 break-all">
            {d.hostname} <Badge>{d.state}</Badge> {d.primary && <Badge>primary</Badge>}
          </span>
        }
      >
        <p className="text-sm text-zinc-700">{nextStep(d)}</p>
        {!d.dnsRecords.some((r) => r.type !== 'TXT') && d.state !== 'active' && (
          <p className="mt-1 text-sm text-zinc-700">
            This server does not say where the domain should point. Ask whoever runs it for the name to point a CNAME record at (or the
            addresses for A and AAAA records), create that record at your DNS provider, then press Verify.
          </p>
        )}
        {d.reason !== null && d.state !== 'active' && (
          <p role="alert" className="mt-1 text-sm text-red-800">
            {d.reason}
          </p>
        )}
        <p className="mt-1 text-xs text-zinc-600">
          Last checked <Time at={d.checkedAt} />
        </p>
        <table className="mt-3 w-full table-fixed text-left text-sm">
          <caption className="sr-only">DNS records for {d.hostname}</caption>
          <thead className="text-xs text-zinc-600 uppercase">
            <tr>
              <th scope="col" className="w-16 py-1">
                Type
              </th>
              <th scope="col" className="py-1">
                Name and value
              </th>
            </tr>
          </thead>
          <tbody className="divide-y divide-zinc-100">
            {d.dnsRecords.map((r) => (
              <tr key={`${r.type} ${r.name}`}>
                <td className="py-2 align-top font-mono text-xs">{r.type}</td>
                <td className="py-2">
                  <div className="flex flex-wrap items-center gap-2">
                    <Code>{r.name}</Code> <CopyButton text={r.name} label={`the ${r.type} record's name`} />
                  </div>
                  <div className="mt-1 flex flex-wrap items-center gap-2">
                    <Code>{r.value}</Code> <CopyButton text={r.value} label={`the ${r.type} record's value`} />
                  </div>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
        {manage && (
          <div className="mt-3 flex flex-wrap gap-2">
            {d.state !== 'active' && (
              <Button tone="primary" onClick={() => void verify.run()} busy={verify.busy}>
                Verify
              </Button>
            )}
            {d.state === 'active' && !d.primary && (
              <Button onClick={() => void primary.run()} busy={primary.busy}>
                Make primary
              </Button>
            )}
            <ConfirmButton
              label="Remove"
              title={`Remove ${d.hostname}?`}
              confirmLabel="Remove domain"
              tone="danger"
              onConfirm={async () => {
                await api('DELETE', base)
                onChange()
              }}
            >
              {d.hostname} stops serving the site at once. The DNS records can be deleted afterwards.
            </ConfirmButton>
          </div>
        )}
        <ErrorNote error={verify.error ?? primary.error} />
      </Card>
    </li>
  )
}

/** What the person does next, in the dashboard's words (the API's `next.message` speaks to programs). */
function nextStep(d: Domain): string {
  const routing = d.dnsRecords.filter((r) => r.type !== 'TXT').map((r) => r.type)
  const point = routing.length === 0 ? '' : ` and the ${[...new Set(routing)].join(' or ')} record that points it here`
  switch (d.state) {
    case 'pending':
      return `At your DNS provider, create the TXT record below${point}, then press Verify. DNS changes can take a few minutes (sometimes hours) to show.`
    case 'verified':
      return `Ownership is proven. Create the routing record below${point === '' ? '' : ` (${[...new Set(routing)].join(' or ')})`} if you have not yet, then press Verify again.`
    case 'failed':
      return 'The last check did not find the records below. Check them at your DNS provider, then press Verify again.'
    default:
      return d.primary
        ? `${d.hostname} serves the published site, and every other address of the site sends visitors here.`
        : `${d.hostname} serves the published site. Make it primary to send every other address of the site here.`
  }
}
