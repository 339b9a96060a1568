import { useState, type FormEvent } from 'react'
import { api } from '../api.js'
import type { ApiKey, Website } from '../types.js'
import { ConfirmButton } from '../ui/confirm.js'
import { CopyButton } from '../ui/copy.js'
import { useAction, useResource } from '../ui/data.js'
import { Badge, Button, Card, Code, Empty, ErrorNote, Field, Loaded, PageTitle, Select, Time } from '../ui/kit.js'
import { Pager, usePaged } from '../ui/pager.js'
import { API_KEY_NAME_MAX_CHARS } from '../../core/limits.js'

const ROLES = [
  ['content_editor', 'Content editor: assets, CMS items, reads'],
  ['full_editor', 'Full editor: source, deploys, publishing, domains'],
  ['admin', 'Admin: everything, keys and members included'],
] as const

/** API keys: list, create (role and scope; the secret shown once), rotate, revoke. */
export function Keys() {
  const [all, setAll] = useState(false)
  const keys = usePaged<ApiKey>('/v1/api-keys', { status: all ? 'all' : undefined }, 20)
  // The websites a key is kept to, by name.
  const sites = useResource('key-scope-names', (signal) =>
    api<{ items: Website[] }>('GET', '/v1/websites', { query: { limit: 100 }, signal }).then(
      (page) => new Map(page.items.map((w) => [w.id, w.name])),
    ),
  )
  const [secret, setSecret] = useState<{ id: string; secret: string; what: string } | null>(null)
  return (
    <div className="flex flex-col gap-4">
      <PageTitle>API keys</PageTitle>
      <p className="text-sm text-zinc-700">
        A key lets a program or an agent call the API and the MCP endpoint (<Code>{`${location.origin}/v1/mcp`}</Code>) as this workspace:
        send it as <Code>Authorization: Bearer wb_…</Code>.
      </p>
      {secret !== null && <Secret {...secret} onDone={() => setSecret(null)} />}
      <CreateKey
        onCreated={(key) => {
          setSecret({ id: key.id, secret: key.secret!, what: `The secret of ${key.name ?? key.id}` })
          void keys.reload()
        }}
      />
      <Card
        title="Keys"
        actions={
          <label className="flex items-center gap-2 text-sm">
            <input type="checkbox" checked={all} onChange={(e) => setAll(e.target.checked)} /> Show revoked
          </label>
        }
      >
        <Loaded resource={keys}>
          {(page) =>
            page.items.length === 0 ? (
              <Empty>No keys yet.</Empty>
            ) : (
              <ul aria-label="API keys" className="flex flex-col divide-y divide-zinc-100">
                {page.items.map((k) => (
                  <li key={k.id} className="flex flex-col gap-2 py-3 text-sm sm:flex-row sm:items-center sm:justify-between">
                    <div className="min-w-0">
                      <div className="flex flex-wrap items-center gap-2">
                        <span className="font-semibold">{k.name ?? 'Unnamed key'}</span>
                        <Badge>{k.status}</Badge>
                        <Code>{k.secretHint.endsWith('…') ? k.secretHint : `${k.secretHint}…`}</Code>
                      </div>
                      <p className="text-zinc-700">
                        {k.access.role.replace('_', ' ')} of{' '}
                        {k.access.kind === 'organization' ? 'the whole workspace' : scopeWords(k.access.websiteIds ?? [], sites.data)} ·
                        made <Time at={k.createdAt} />
                        {k.expiresAt !== null && (
                          <>
                            {' '}
                            · expires <Time at={k.expiresAt} />
                          </>
                        )}
                      </p>
                    </div>
                    {k.status === 'active' && (
                      <div className="flex shrink-0 gap-2">
                        <ConfirmButton
                          label="Rotate"
                          title={`Rotate ${k.name ?? k.id}?`}
                          confirmLabel="Rotate key"
                          onConfirm={async () => {
                            const rotated = await api<ApiKey>('POST', `/v1/api-keys/${k.id}/rotate`)
                            setSecret({ id: k.id, secret: rotated.secret!, what: `The new secret of ${k.name ?? k.id}` })
                            await keys.reload()
                          }}
                        >
                          A new secret is made; the old one stops working at once.
                        </ConfirmButton>
                        <ConfirmButton
                          label="Revoke"
                          title={`Revoke ${k.name ?? k.id}?`}
                          confirmLabel="Revoke key"
                          tone="danger"
                          onConfirm={async () => {
                            await api('DELETE', `/v1/api-keys/${k.id}`)
                            await keys.reload()
                          }}
                        >
                          The key stops working at once, for good.
                        </ConfirmButton>
                      </div>
                    )}
                  </li>
                ))}
              </ul>
            )
          }
        </Loaded>
        <Pager pager={keys.pager} label="API keys" />
      </Card>
    </div>
  )
}

/** The websites a key is kept to, by name: `Blog`, `Blog and Shop`, `Blog, Shop and 1 more website`. */
function scopeWords(ids: string[], names: Map<string, string> | undefined): string {
  if (ids.length === 0) return 'no website'
  const named = ids.map((id) => names?.get(id)).filter((name): name is string => name !== undefined)
  if (named.length === 0) return ids.length === 1 ? '1 website' : `${ids.length} websites`
  const shown = named.slice(0, 3)
  const more = ids.length - shown.length
  if (more > 0) return `${shown.join(', ')} and ${more} more website${more === 1 ? '' : 's'}`
  return shown.length === 1 ? shown[0]! : `${shown.slice(0, -1).join(', ')} and ${shown.at(-1)}`
}

function Secret({ secret, what, onDone }: { id: string; secret: string; what: string; onDone: () => void }) {
  return (
    <div role="status" className="flex flex-col gap-2 rounded-lg border border-amber-300 bg-amber-50 p-4 text-sm">
      <p className="font-semibold">{what}, shown this once. Store it now: it cannot be shown again.</p>
      <p className="flex flex-wrap items-center gap-2">
        <Code>{secret}</Code> <CopyButton text={secret} label="the secret" />
      </p>
      <div>
        <Button onClick={onDone}>I have stored it</Button>
      </div>
    </div>
  )
}

function CreateKey({ onCreated }: { onCreated: (key: ApiKey) => void }) {
  const [kind, setKind] = useState<'organization' | 'websites'>('organization')
  const websites = useResource(`key-websites:${kind}`, (signal) =>
    kind === 'websites'
      ? api<{ items: Website[] }>('GET', '/v1/websites', { query: { limit: 100 }, signal })
      : Promise.resolve({ items: [] as Website[] }),
  )
  const create = useAction(async (body: Record<string, unknown>) => onCreated(await api<ApiKey>('POST', '/v1/api-keys', { body })))
  const submit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault()
    const element = event.currentTarget
    const form = new FormData(element)
    const role = String(form.get('role'))
    const access: Record<string, unknown> = { kind, role }
    if (kind === 'websites') access.websiteIds = form.getAll('websiteIds').map(String)
    const body: Record<string, unknown> = { name: String(form.get('name')).trim() || undefined, access }
    const days = Number(form.get('days'))
    if (days > 0) body.expiresAt = new Date(Date.now() + days * 86_400_000).toISOString()
    if (await create.run(body)) element.reset()
  }
  return (
    <Card title="New key">
      <form onSubmit={submit} className="grid grid-cols-1 gap-3 sm:grid-cols-2">
        <Field label="Name" name="name" placeholder="ci, my agent…" required maxLength={API_KEY_NAME_MAX_CHARS} error={create.error} />
        <Select label="Role" name="role" defaultValue="full_editor">
          {ROLES.filter(([role]) => kind === 'organization' || role !== 'admin').map(([role, label]) => (
            <option key={role} value={role}>
              {label}
            </option>
          ))}
        </Select>
        <Select label="Scope" name="kind" value={kind} onChange={(e) => setKind(e.target.value as 'organization' | 'websites')}>
          <option value="organization">Every website of the workspace</option>
          <option value="websites">Only some websites</option>
        </Select>
        <Field label="Expires after (days, empty for never)" name="days" type="number" min={1} max={3650} />
        {kind === 'websites' && (
          <fieldset className="sm:col-span-2">
            <legend className="text-sm font-medium">Websites</legend>
            <Loaded resource={websites}>
              {(page) => (
                <div className="mt-1 flex flex-wrap gap-3">
                  {page.items.map((w) => (
                    <label key={w.id} className="flex items-center gap-1 text-sm">
                      <input type="checkbox" name="websiteIds" value={w.id} /> {w.name}
                    </label>
                  ))}
                </div>
              )}
            </Loaded>
          </fieldset>
        )}
        <div className="sm:col-span-2">
          <Button type="submit" tone="primary" busy={create.busy}>
            Create key
          </Button>
        </div>
        <div className="sm:col-span-2">
          <ErrorNote error={create.error} fields={['name']} />
        </div>
      </form>
    </Card>
  )
}
