import { useState, type FormEvent } from 'react'
import { Link } from '../router.js'
import type { AuditEntry } from '../types.js'
import { Button, Card, Code, Empty, Field, Loaded, PageTitle, Select, Table, Td, Time } from '../ui/kit.js'
import { Pager, usePaged } from '../ui/pager.js'

interface Filters {
  eventType?: string
  resourceType?: string
  websiteId?: string
  actorId?: string
  actorKind?: string
}

/** Who changed what and when, newest first, with the API's filters. */
export function Audit() {
  const [filters, setFilters] = useState<Filters>({})
  const log = usePaged<AuditEntry>('/v1/audit-log', { ...filters }, 25)
  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault()
    const form = new FormData(event.currentTarget)
    const next: Filters = {}
    for (const name of ['eventType', 'resourceType', 'websiteId', 'actorId', 'actorKind'] as const) {
      const value = String(form.get(name) ?? '').trim()
      if (value !== '') next[name] = value
    }
    setFilters(next)
  }
  return (
    <div className="flex flex-col gap-4">
      <PageTitle>Audit log</PageTitle>
      <Card title="Filters">
        <form onSubmit={submit} className="grid grid-cols-1 gap-3 sm:grid-cols-3">
          <Field label="Event types" name="eventType" placeholder="website.published,api_key.created" />
          <Field label="Resource type" name="resourceType" placeholder="website, api_key, domain…" />
          <Field label="Website id" name="websiteId" placeholder="ws_…" />
          <Field label="Actor id" name="actorId" placeholder="key_… or usr_…" />
          <Select label="Actor kind" name="actorKind" defaultValue="">
            <option value="">Any</option>
            <option value="api_key">API key</option>
            <option value="oauth">OAuth application</option>
            <option value="user">Person</option>
          </Select>
          <div className="flex items-end">
            <Button type="submit" tone="primary">
              Apply
            </Button>
          </div>
        </form>
      </Card>
      <Card title="Entries">
        <Loaded resource={log}>
          {(page) =>
            page.items.length === 0 ? (
              <Empty>No entries{Object.keys(filters).length > 0 ? ' match these filters' : ''}.</Empty>
            ) : (
              <Table caption="Audit log" head={['When', 'What', 'Who']}>
                {page.items.map((e) => (
                  <tr key={e.id}>
                    <Td className="whitespace-nowrap">
                      <Time at={e.at} />
                    </Td>
                    <Td className="break-all">
                      <Code>{e.eventType}</Code>{' '}
                      {e.websiteId !== null ? <Link to={`/websites/${e.websiteId}`}>{e.resourceId}</Link> : e.resourceId}
                    </Td>
                    <Td className="break-all">
                      {e.actor.name ?? e.actor.id}{' '}
                      <span className="text-zinc-600">
                        ({e.actor.kind}
                        {e.actor.agent !== undefined ? `, via ${e.actor.agent}` : ''})
                      </span>
                    </Td>
                  </tr>
                ))}
              </Table>
            )
          }
        </Loaded>
        <Pager pager={log.pager} label="Audit log" />
      </Card>
    </div>
  )
}
