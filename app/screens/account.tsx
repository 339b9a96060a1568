import { api } from '../api.js'
import { useSession } from '../session.js'
import { ConfirmButton } from '../ui/confirm.js'
import { useResource } from '../ui/data.js'
import { Card, Loaded, PageTitle, Time } from '../ui/kit.js'

interface Connection {
  id: string
  application: string
  scope: string
  organizationId: string
  createdAt: string
  lastUsedAt: string | null
}

/** The person: who they are, their workspaces, and the applications (agents) connected over OAuth. */
export function Account() {
  const { me } = useSession()
  const connections = useResource('connections', (signal) =>
    api<{ items: Connection[] }>('GET', '/v1/me/connections', { query: { limit: 100 }, signal }),
  )
  return (
    <div className="flex flex-col gap-4">
      <PageTitle>Account</PageTitle>
      <Card title="You">
        <dl className="grid gap-1 text-sm sm:grid-cols-[8rem_1fr]">
          <dt className="font-medium">Name</dt>
          <dd>{me.person?.name}</dd>
          <dt className="font-medium">Email</dt>
          <dd className="break-all">{me.person?.email ?? 'none'}</dd>
          <dt className="font-medium">Workspaces</dt>
          <dd>{(me.workspaces ?? []).map((w) => `${w.name} (${w.role})`).join(', ')}</dd>
        </dl>
      </Card>
      <Card title="Connected applications">
        <Loaded resource={connections}>
          {(page) =>
            page.items.length === 0 ? (
              <p className="text-sm text-zinc-600">
                No application acts for you. An agent connects over OAuth at the MCP endpoint and asks you here first.
              </p>
            ) : (
              <ul aria-label="Connected applications" className="flex flex-col divide-y divide-zinc-100 text-sm">
                {page.items.map((c) => (
                  <li key={c.id} className="flex flex-wrap items-center justify-between gap-2 py-2">
                    <span>
                      <span className="font-medium">{c.application}</span> · {c.scope} in{' '}
                      {(me.workspaces ?? []).find((w) => w.id === c.organizationId)?.name ?? c.organizationId} · since{' '}
                      <Time at={c.createdAt} />
                    </span>
                    <ConfirmButton
                      label="Disconnect"
                      title={`Disconnect ${c.application}?`}
                      confirmLabel="Disconnect"
                      tone="danger"
                      onConfirm={async () => {
                        await api('DELETE', `/v1/me/connections/${c.id}`)
                        await connections.reload()
                      }}
                    >
                      {c.application} can no longer act for you: its tokens stop working at once.
                    </ConfirmButton>
                  </li>
                ))}
              </ul>
            )
          }
        </Loaded>
      </Card>
    </div>
  )
}
