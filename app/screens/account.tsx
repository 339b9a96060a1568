import { useState, type FormEvent } from 'react'
import { api, type ApiError } from '../api.js'
import { useLocation } from '../router.js'
import { useSession } from '../session.js'
import { ConfirmButton } from '../ui/confirm.js'
import { useAction, useResource, type Resource } from '../ui/data.js'
import { Button, Card, ErrorNote, Field, Loaded, Notice, PageTitle, Time } from '../ui/kit.js'
import { EMAIL_MAX_CHARS, PASSWORD_MAX_CHARS, PASSWORD_MIN_CHARS, PERSON_NAME_MAX_CHARS } from '../../core/limits.js'

interface Connection {
  id: string
  application: string
  scope: string
  organizationId: string
  createdAt: string
  lastUsedAt: string | null
}

interface SignedIn {
  id: string
  device: string | null
  createdAt: string
  lastSeenAt: string
  expiresAt: string
  current: boolean
}

/** A form's fields by name, trimmed where they are not passwords. */
function fields(event: FormEvent<HTMLFormElement>): Record<string, string> {
  event.preventDefault()
  return Object.fromEntries([...new FormData(event.currentTarget)].map(([k, v]) => [k, String(v)]))
}

/** Name: the one the person is shown by to the members of their workspaces. */
function NameCard() {
  const { me, refresh } = useSession()
  const [saved, setSaved] = useState(false)
  const save = useAction(async (name: string) => {
    await api('PATCH', '/v1/me', { body: { name } })
    await refresh()
    setSaved(true)
  })
  return (
    <Card title="Name">
      <form onSubmit={(e) => (setSaved(false), void save.run(fields(e).name.trim()))} className="flex flex-wrap items-end gap-2">
        <Field
          label="Your name"
          name="name"
          required
          defaultValue={me.person?.name}
          maxLength={PERSON_NAME_MAX_CHARS}
          error={save.error}
          className="min-w-0 flex-1"
        />
        <Button type="submit" busy={save.busy}>
          Save the name
        </Button>
      </form>
      <ErrorNote error={save.error} fields={['name']} />
      {saved && <Notice>Your name is saved.</Notice>}
    </Card>
  )
}

/** The current password, which a change of password or email asks for first. */
function CurrentPassword({ error }: { error: ApiError | null }) {
  return (
    <Field
      label="Current password"
      name="currentPassword"
      type="password"
      autoComplete="current-password"
      required
      maxLength={PASSWORD_MAX_CHARS}
      error={error}
      className="min-w-0 flex-1"
    />
  )
}

/** Password: the current one first; every other session ends, this one stays. */
function PasswordChange({ onChanged }: { onChanged: () => void }) {
  const [said, setSaid] = useState<string | null>(null)
  const change = useAction(async (body: Record<string, string>, form: HTMLFormElement) => {
    const done = await api<{ otherSessionsEnded: number }>('PUT', '/v1/me/password', { body })
    form.reset()
    const n = done.otherSessionsEnded
    setSaid(
      `Your password is changed. ${n === 0 ? 'You were signed in nowhere else.' : `${n} other session${n === 1 ? ' was' : 's were'} signed out; this one stays.`}`,
    )
    onChanged()
  })
  const submit = (event: FormEvent<HTMLFormElement>) => {
    setSaid(null)
    const form = event.currentTarget
    const { currentPassword, newPassword } = fields(event)
    void change.run({ currentPassword, newPassword }, form)
  }
  return (
    <Card title="Password">
      <form onSubmit={submit} className="flex flex-wrap items-end gap-2">
        <CurrentPassword error={change.error} />
        <Field
          label={`New password (at least ${PASSWORD_MIN_CHARS} characters)`}
          name="newPassword"
          type="password"
          autoComplete="new-password"
          required
          minLength={PASSWORD_MIN_CHARS}
          maxLength={PASSWORD_MAX_CHARS}
          error={change.error}
          className="min-w-0 flex-1"
        />
        <Button type="submit" busy={change.busy}>
          Change the password
        </Button>
      </form>
      <ErrorNote error={change.error} fields={['currentPassword', 'newPassword']} />
      {said !== null && <Notice>{said}</Notice>}
    </Card>
  )
}

/** Email: a link goes to the new address, and the old one stays until it is opened. */
function EmailChange() {
  const { me, refresh } = useSession()
  const { query } = useLocation()
  const [said, setSaid] = useState<string | null>(null)
  const change = useAction(async (body: Record<string, string>, form: HTMLFormElement) => {
    const asked = await api<{ pendingEmail: string; mailSent: boolean }>('POST', '/v1/me/email', { body })
    form.reset()
    await refresh()
    setSaid(
      asked.mailSent
        ? `A link is on its way to ${asked.pendingEmail}: open it within 24 hours to sign in with that address. Until then you keep ${me.person?.email ?? 'your address'}.`
        : `This server sends no email: ask its operator for the link sent to ${asked.pendingEmail} (plinth mail list). Until it is opened you keep ${me.person?.email ?? 'your address'}.`,
    )
  })
  const submit = (event: FormEvent<HTMLFormElement>) => {
    setSaid(null)
    const form = event.currentTarget
    const { email, currentPassword } = fields(event)
    void change.run({ email: email.trim(), currentPassword }, form)
  }
  const pending = me.person?.pendingEmail ?? null
  return (
    <Card title="Email">
      <p className="mb-2 text-sm">
        You sign in with <strong className="break-all">{me.person?.email ?? 'no address yet'}</strong>.
        {pending !== null && said === null && <> A change to {pending} waits for the link sent there to be opened.</>}
      </p>
      {query.get('email_changed') === '1' && said === null && <Notice>Your new address is confirmed: sign in with it from now on.</Notice>}
      <form onSubmit={submit} className="flex flex-wrap items-end gap-2">
        <Field
          label="New email"
          name="email"
          type="email"
          autoComplete="email"
          required
          maxLength={EMAIL_MAX_CHARS}
          error={change.error}
          className="min-w-0 flex-1"
        />
        <CurrentPassword error={change.error} />
        <Button type="submit" busy={change.busy}>
          Change the email
        </Button>
      </form>
      <ErrorNote error={change.error} fields={['email', 'currentPassword']} />
      {said !== null && <Notice>{said}</Notice>}
    </Card>
  )
}

/** Where the person is signed in: each session with its device, and a way to sign it out. */
function Sessions({ sessions }: { sessions: Resource<{ items: SignedIn[] }> }) {
  return (
    <Card title="Where you are signed in">
      <Loaded resource={sessions}>
        {(page) => (
          <ul aria-label="Sessions" className="flex flex-col divide-y divide-zinc-100 text-sm">
            {page.items.map((s) => (
              <li key={s.id} className="flex flex-wrap items-center justify-between gap-2 py-2">
                <span>
                  <span className="font-medium">{s.device ?? 'An unknown browser'}</span>
                  {s.current ? ' · this session' : ''} · signed in <Time at={s.createdAt} /> · last seen <Time at={s.lastSeenAt} />
                </span>
                {!s.current && (
                  <ConfirmButton
                    label="Sign out"
                    title={`Sign out ${s.device ?? 'this session'}?`}
                    confirmLabel="Sign out"
                    tone="danger"
                    onConfirm={async () => {
                      await api('DELETE', `/v1/me/sessions/${s.id}`)
                      await sessions.reload()
                    }}
                  >
                    That browser is signed out on its next request.
                  </ConfirmButton>
                )}
              </li>
            ))}
          </ul>
        )}
      </Loaded>
    </Card>
  )
}

/** The person: who they are, their password, email and sessions, and the applications (agents) connected over OAuth. */
export function Account() {
  const { me } = useSession()
  const sessions = useResource('sessions', (signal) =>
    api<{ items: SignedIn[] }>('GET', '/v1/me/sessions', { query: { limit: 100 }, signal }),
  )
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
      <NameCard />
      <PasswordChange onChanged={() => void sessions.reload()} />
      <EmailChange />
      <Sessions sessions={sessions} />
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
