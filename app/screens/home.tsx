import { useState, type FormEvent } from 'react'
import { api } from '../api.js'
import { Link, navigate } from '../router.js'
import { useSession } from '../session.js'
import { websiteStatus, type Website } from '../types.js'
import { CopyButton } from '../ui/copy.js'
import { useAction } from '../ui/data.js'
import { Badge, Button, Card, Code, Empty, ErrorNote, Field, Loaded, Locked, PageTitle, Select, Time } from '../ui/kit.js'
import { Pager, usePaged } from '../ui/pager.js'
import { SUBDOMAIN_LABEL_MAX_CHARS, WEBSITE_NAME_MAX_CHARS } from '../../core/limits.js'

/** The workspace's websites: filter by name, the trash, and a new one. */
export function Home() {
  const { me, can } = useSession()
  const [filter, setFilter] = useState('')
  const [scope, setScope] = useState<'live' | 'trash'>('live')
  const list = usePaged<Website>('/v1/websites', { scope, name: filter.trim() === '' ? undefined : filter.trim() }, 20)
  const [creating, setCreating] = useState(false)
  return (
    <div className="flex flex-col gap-4">
      <PageTitle
        actions={
          can('websites.create') && (
            <Button tone="primary" onClick={() => setCreating((v) => !v)} aria-expanded={creating}>
              New website
            </Button>
          )
        }
      >
        Websites
        {me.workspaces !== undefined && me.workspaces.length > 1 ? (
          <span className="ml-2 text-base font-normal text-zinc-600">in {me.organization.name}</span>
        ) : null}
      </PageTitle>
      {creating && <CreateWebsite onCancel={() => setCreating(false)} />}
      <div className="flex flex-wrap items-end gap-3">
        <Field
          label="Filter by name"
          name="filter"
          type="search"
          value={filter}
          onChange={(e) => setFilter(e.target.value)}
          placeholder="Name, slug or subdomain"
          className="min-w-0 flex-1 sm:max-w-xs"
        />
        <div role="group" aria-label="Which websites" className="flex gap-1">
          <Button tone={scope === 'live' ? 'primary' : 'secondary'} aria-pressed={scope === 'live'} onClick={() => setScope('live')}>
            Websites
          </Button>
          <Button tone={scope === 'trash' ? 'primary' : 'secondary'} aria-pressed={scope === 'trash'} onClick={() => setScope('trash')}>
            Trash
          </Button>
        </div>
      </div>
      <Loaded resource={list}>
        {(page) =>
          page.items.length === 0 ? (
            filter !== '' || scope === 'trash' ? (
              <Empty>{scope === 'trash' ? 'The trash is empty.' : `No website matches “${filter}”.`}</Empty>
            ) : (
              <FirstSite />
            )
          ) : (
            <ul aria-label="Websites" className="flex flex-col divide-y divide-zinc-200 rounded-lg border border-zinc-200 bg-white">
              {page.items.map((w) => (
                <WebsiteRow key={w.id} website={w} />
              ))}
            </ul>
          )
        }
      </Loaded>
      <Pager pager={list.pager} label="Websites" />
    </div>
  )
}

function WebsiteRow({ website: w }: { website: Website }) {
  const status = websiteStatus(w)
  return (
    <li className="flex flex-col gap-2 p-3 sm:flex-row sm:items-center sm:justify-between">
      <div className="min-w-0">
        <div className="flex flex-wrap items-center gap-2">
          <Link to={`/websites/${w.id}`} className="font-semibold break-all">
            {w.name}
          </Link>
          <Badge>{status}</Badge>
          {w.passwordProtected && <Locked what="site" />}
          {status === 'live' && w.buildStatus !== null && w.buildStatus !== 'ready' && <Badge>{w.buildStatus}</Badge>}
          <span className="text-xs text-zinc-600">{w.kind}</span>
        </div>
        <div className="mt-1 flex flex-col gap-0.5 text-sm break-all">
          {w.urls.published !== null && w.deletedAt === null && (
            <a href={w.urls.published} target="_blank" rel="noreferrer">
              {w.urls.published.replace(/^https?:\/\//, '')}
            </a>
          )}
          {w.urls.draft !== null && w.deletedAt === null && (
            <span className="text-zinc-600">
              draft:{' '}
              <a href={w.urls.draft} target="_blank" rel="noreferrer">
                {w.urls.draft.replace(/^https?:\/\//, '')}
              </a>
            </span>
          )}
        </div>
      </div>
      <div className="shrink-0 text-sm text-zinc-600 sm:text-right">
        <div>{w.kind === 'storage' ? 'files' : w.publishedVersion === null ? 'not published' : `version ${w.publishedVersion} live`}</div>
        <div>
          changed <Time at={w.updatedAt} />
        </div>
      </div>
    </li>
  )
}

function CreateWebsite({ onCancel }: { onCancel: () => void }) {
  const create = useAction(async (body: Record<string, string>) => {
    const website = await api<Website>('POST', '/v1/websites', { body })
    navigate(`/websites/${website.id}`)
  })
  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault()
    const form = new FormData(event.currentTarget)
    const body: Record<string, string> = { name: String(form.get('name')), kind: String(form.get('kind')) }
    const subdomain = String(form.get('subdomain') ?? '').trim()
    if (subdomain !== '') body.subdomain = subdomain
    void create.run(body)
  }
  return (
    <Card title="New website">
      <form onSubmit={submit} className="grid grid-cols-1 gap-3 sm:grid-cols-3">
        <Field label="Name" name="name" required maxLength={WEBSITE_NAME_MAX_CHARS} autoFocus error={create.error} />
        <Select label="Kind" name="kind" defaultValue="static">
          <option value="static">Static: upload files</option>
          <option value="framework">Framework: typed source, built and checked</option>
          <option value="storage">Storage: share files by link</option>
        </Select>
        <Field
          label="Subdomain (optional)"
          name="subdomain"
          maxLength={SUBDOMAIN_LABEL_MAX_CHARS}
          error={create.error}
          hint="Derived from the name when empty"
        />
        <div className="flex gap-2 sm:col-span-3">
          <Button type="submit" tone="primary" busy={create.busy}>
            Create
          </Button>
          <Button onClick={onCancel}>Cancel</Button>
        </div>
        <div className="sm:col-span-3">
          <ErrorNote error={create.error} fields={['name', 'subdomain']} />
        </div>
      </form>
    </Card>
  )
}

/** An empty workspace: how to make a first site, here or with an agent. */
function FirstSite() {
  const { can } = useSession()
  const mcp = `${location.origin}/v1/mcp`
  return (
    <Empty>
      <div className="flex flex-col items-center gap-3 text-left">
        <p className="text-base font-medium text-zinc-900">No websites in this workspace yet.</p>
        <ol className="list-decimal space-y-2 pl-5 text-sm text-zinc-700">
          <li>
            {can('websites.create')
              ? 'Create one here with New website: a static site takes a folder dropped on its page.'
              : 'Ask an admin of this workspace to create one.'}
          </li>
          <li>
            Or let an agent do it: give it an API key from <Link to="/keys">API keys</Link> and the MCP address <Code>{mcp}</Code>{' '}
            <CopyButton text={mcp} label="the MCP address" />
          </li>
          <li>
            Or deploy with the REST API: <a href="/docs#your-first-site-in-five-minutes">the first site in five minutes</a>.
          </li>
        </ol>
      </div>
    </Empty>
  )
}
