import { useState, type FormEvent } from 'react'
import { AUDIT_EVENT_TYPES, AUDIT_RESOURCE_TYPES } from '../../core/audit-names.js'
import { api } from '../api.js'
import { Link } from '../router.js'
import { useSession } from '../session.js'
import type { ApiKey, AuditEntry, Member, Website } from '../types.js'
import { useResource } from '../ui/data.js'
import { Button, Card, Empty, Loaded, PageTitle, Select, Table, Td, Time } from '../ui/kit.js'
import { Pager, usePaged } from '../ui/pager.js'

interface Filters {
  eventType?: string
  resourceType?: string
  websiteId?: string
  actorId?: string
  actorKind?: string
}

/** Words written as people write them (`api_key` → `API key`, `oauth` → `OAuth`). */
const SPELLED: Record<string, string> = { api: 'API', oauth: 'OAuth', cms: 'CMS', dns: 'DNS', url: 'URL', mcp: 'MCP', csv: 'CSV' }

/** `website.subdomain_renamed` → `Website subdomain renamed`, `api_key.created` → `API key created`: an event or a type, in words. */
function words(name: string): string {
  const text = name
    .split(/[._]/)
    .map((word) => SPELLED[word] ?? word)
    .join(' ')
  return text.charAt(0).toUpperCase() + text.slice(1)
}

interface Names {
  websites: { id: string; name: string }[]
  people: { id: string; name: string }[]
  keys: { id: string; name: string }[]
  /** Any id above to its name. */
  of: Map<string, string>
}

/** The names the log's ids stand for (websites, people, keys), as far as this person may list them. */
function useNames() {
  const { can } = useSession()
  return useResource('audit-names', async (signal): Promise<Names> => {
    const list = <T,>(path: string, query: Record<string, string | number>, allowed: boolean) =>
      allowed ? api<{ items: T[] }>('GET', path, { query, signal }).then((page) => page.items) : Promise.resolve([] as T[])
    const [websites, members, keys] = await Promise.all([
      list<Website>('/v1/websites', { limit: 100 }, true),
      list<Member>('/v1/members', { limit: 100 }, can('members.manage')),
      list<ApiKey>('/v1/api-keys', { status: 'all', limit: 100 }, can('apiKeys.manage')),
    ])
    const names: Names = {
      websites: websites.map((w) => ({ id: w.id, name: w.name })),
      people: members.map((m) => ({ id: m.userId, name: m.name || m.email || m.userId })),
      keys: keys.map((k) => ({ id: k.id, name: k.name ?? 'Unnamed key' })),
      of: new Map(),
    }
    for (const entry of [...names.websites, ...names.people, ...names.keys]) names.of.set(entry.id, entry.name)
    return names
  })
}

/** What an entry changed, by name where the log's id has one (the id on hover). */
function Resource({ entry, names }: { entry: AuditEntry; names: Names | undefined }) {
  const meta = entry.metadata ?? {}
  const label =
    names?.of.get(entry.resourceId) ??
    [meta.name, meta.hostname, meta.email].find((v): v is string => typeof v === 'string') ??
    entry.resourceId
  const text = (
    <span title={entry.resourceId} className={label === entry.resourceId ? 'font-mono text-xs' : undefined}>
      {label}
    </span>
  )
  return entry.resourceType === 'website' && entry.websiteId !== null ? <Link to={`/websites/${entry.websiteId}`}>{text}</Link> : text
}

/** Who changed what and when, newest first, by name; filtered by pickers (the API's filters). */
export function Audit() {
  const [filters, setFilters] = useState<Filters>({})
  const log = usePaged<AuditEntry>('/v1/audit-log', { ...filters }, 25)
  const names = useNames()
  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault()
    const form = new FormData(event.currentTarget)
    const next: Filters = {}
    for (const name of ['eventType', 'resourceType', 'websiteId', 'actorId', 'actorKind'] as const) {
      const value = String(form.get(name) ?? '')
      if (value !== '') next[name] = value
    }
    setFilters(next)
  }
  const n = names.data
  return (
    <div className="flex flex-col gap-4">
      <PageTitle>Audit log</PageTitle>
      <Card title="Filters">
        <form onSubmit={submit} className="grid grid-cols-1 gap-3 sm:grid-cols-3">
          <Select label="What happened" name="eventType" defaultValue="">
            <option value="">Anything</option>
            {AUDIT_EVENT_TYPES.map((type) => (
              <option key={type} value={type}>
                {words(type)}
              </option>
            ))}
          </Select>
          <Select label="To what" name="resourceType" defaultValue="">
            <option value="">Anything</option>
            {AUDIT_RESOURCE_TYPES.map((type) => (
              <option key={type} value={type}>
                {words(type)}
              </option>
            ))}
          </Select>
          <Select label="Website" name="websiteId" defaultValue="">
            <option value="">Any website</option>
            {n?.websites.map((w) => (
              <option key={w.id} value={w.id}>
                {w.name}
              </option>
            ))}
          </Select>
          <Select label="Who" name="actorId" defaultValue="">
            <option value="">Anyone</option>
            {n !== undefined && n.people.length > 0 && (
              <optgroup label="People">
                {n.people.map((p) => (
                  <option key={p.id} value={p.id}>
                    {p.name}
                  </option>
                ))}
              </optgroup>
            )}
            {n !== undefined && n.keys.length > 0 && (
              <optgroup label="API keys">
                {n.keys.map((k) => (
                  <option key={k.id} value={k.id}>
                    {k.name}
                  </option>
                ))}
              </optgroup>
            )}
          </Select>
          <Select label="Acting as" name="actorKind" defaultValue="">
            <option value="">Any</option>
            <option value="user">A person in the dashboard</option>
            <option value="api_key">An API key</option>
            <option value="oauth">An application (OAuth)</option>
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
                    <Td className="[overflow-wrap:anywhere]">
                      {words(e.eventType)}: <Resource entry={e} names={n} />
                    </Td>
                    <Td className="[overflow-wrap:anywhere]">
                      <span title={e.actor.id}>{e.actor.name ?? n?.of.get(e.actor.id) ?? e.actor.id}</span>{' '}
                      <span className="text-zinc-600">
                        ({ACTOR_WORDS[e.actor.kind] ?? e.actor.kind}
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

const ACTOR_WORDS: Record<string, string> = { user: 'person', api_key: 'API key', oauth: 'application', anonymous: 'anonymous' }
