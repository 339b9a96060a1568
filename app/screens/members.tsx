import { useState, type FormEvent } from 'react'
import { api } from '../api.js'
import { navigate } from '../router.js'
import { useSession } from '../session.js'
import type { Invitation, Member } from '../types.js'
import { ConfirmButton } from '../ui/confirm.js'
import { CopyButton } from '../ui/copy.js'
import { useAction } from '../ui/data.js'
import { Button, Card, Code, ErrorNote, Field, Loaded, Notice, PageTitle, Select, Time } from '../ui/kit.js'
import { Pager, usePaged } from '../ui/pager.js'
import { EMAIL_MAX_CHARS } from '../../core/limits.js'

const ROLES = ['content_editor', 'full_editor', 'admin'] as const

/** The workspace's members and their roles, invitations, and accepting a website transferred here. */
export function Members() {
  const { me } = useSession()
  const members = usePaged<Member>('/v1/members', {}, 50)
  const invitations = usePaged<Invitation>('/v1/members/invitations', {}, 50)
  const [sent, setSent] = useState<Invitation | null>(null)
  const resend = useAction(async (id: string) => {
    setSent(await api<Invitation>('POST', `/v1/members/invitations/${id}/resend`))
    await invitations.reload()
  })
  return (
    <div className="flex flex-col gap-4">
      <PageTitle>Members of {me.organization.name}</PageTitle>
      <Card title="Members">
        <Loaded resource={members}>
          {(page) => (
            <ul aria-label="Members" className="flex flex-col divide-y divide-zinc-100">
              {page.items.map((m) => (
                <MemberRow key={m.userId} member={m} self={m.userId === me.person?.id} onChange={() => void members.reload()} />
              ))}
            </ul>
          )}
        </Loaded>
        <Pager pager={members.pager} label="Members" />
      </Card>
      <Invite
        onInvited={(created) => {
          setSent(created)
          void invitations.reload()
        }}
      />
      {sent !== null && <InvitationSent invitation={sent} />}
      <Card title="Invitations">
        <Loaded resource={invitations}>
          {(page) =>
            page.items.length === 0 ? (
              <p className="text-sm text-zinc-600">No pending invitations.</p>
            ) : (
              <ul aria-label="Invitations" className="flex flex-col divide-y divide-zinc-100 text-sm">
                {page.items.map((i) => (
                  <li key={i.id} className="flex flex-wrap items-center justify-between gap-2 py-2">
                    <span className="break-all">
                      {i.email} · {i.role.replace('_', ' ')} · expires <Time at={i.expiresAt} />
                    </span>
                    <span className="flex gap-2">
                      <Button onClick={() => void resend.run(i.id)} busy={resend.busy} aria-label={`Send again to ${i.email}`}>
                        Send again
                      </Button>
                      <ConfirmButton
                        label="Revoke"
                        title={`Revoke the invitation of ${i.email}?`}
                        confirmLabel="Revoke invitation"
                        tone="danger"
                        onConfirm={async () => {
                          await api('DELETE', `/v1/members/invitations/${i.id}`)
                          await invitations.reload()
                        }}
                      >
                        The link sent to {i.email} stops working.
                      </ConfirmButton>
                    </span>
                  </li>
                ))}
              </ul>
            )
          }
        </Loaded>
        <ErrorNote error={resend.error} />
        <Pager pager={invitations.pager} label="Invitations" />
      </Card>
      <AcceptTransfer />
    </div>
  )
}

function MemberRow({ member: m, self, onChange }: { member: Member; self: boolean; onChange: () => void }) {
  const change = useAction(async (role: string) => {
    await api('PATCH', `/v1/members/${m.userId}`, { body: { role } })
    onChange()
  })
  return (
    <li className="flex flex-col gap-2 py-2 text-sm sm:flex-row sm:items-center sm:justify-between">
      <span className="break-all">
        <span className="font-medium">{m.name}</span> <span className="text-zinc-600">{m.email}</span>
        {self ? ' (you)' : ''} · joined <Time at={m.joinedAt} />
      </span>
      <div className="flex flex-wrap items-center gap-2">
        {m.role === 'owner' ? (
          <span className="text-zinc-700">owner</span>
        ) : (
          <label className="flex items-center gap-1">
            <span className="sr-only">Role of {m.name}</span>
            <select
              value={m.role}
              onChange={(e) => void change.run(e.target.value)}
              disabled={change.busy}
              className="rounded-md border border-zinc-300 bg-white px-2 py-1 text-sm"
            >
              {ROLES.map((r) => (
                <option key={r} value={r}>
                  {r.replace('_', ' ')}
                </option>
              ))}
            </select>
          </label>
        )}
        {m.role !== 'owner' && (
          <ConfirmButton
            label={self ? 'Leave' : 'Remove'}
            title={self ? 'Leave this workspace?' : `Remove ${m.name}?`}
            confirmLabel={self ? 'Leave' : 'Remove member'}
            tone="danger"
            onConfirm={async () => {
              await api('DELETE', `/v1/members/${m.userId}`)
              if (self) navigate('?')
              else onChange()
            }}
          >
            {self
              ? 'You lose access to this workspace at once.'
              : `${m.name} loses access to this workspace at once; their sessions and tokens stop working here.`}
          </ConfirmButton>
        )}
      </div>
      <ErrorNote error={change.error} />
    </li>
  )
}

/** What became of an invitation just made or sent again: emailed or not, and its link (shown once). */
function InvitationSent({ invitation }: { invitation: Invitation }) {
  const link = invitation.acceptUrl ?? ''
  return (
    <Notice>
      <span className="flex flex-wrap items-center gap-2">
        {invitation.emailed
          ? `The invitation is on its way to ${invitation.email}. The link, in case it does not arrive (shown once, valid 7 days):`
          : `This server sends no email: send ${invitation.email} this link yourself (shown once, valid 7 days):`}{' '}
        <Code>{link}</Code> <CopyButton text={link} label="the invitation link" />
      </span>
    </Notice>
  )
}

function Invite({ onInvited }: { onInvited: (created: Invitation) => void }) {
  const invite = useAction(async (body: Record<string, string>) => {
    onInvited(await api<Invitation>('POST', '/v1/members/invitations', { body }))
  })
  const submit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault()
    const element = event.currentTarget
    const form = new FormData(element)
    if (await invite.run({ email: String(form.get('email')).trim(), role: String(form.get('role')) })) element.reset()
  }
  return (
    <Card title="Invite someone">
      <form onSubmit={submit} className="flex flex-wrap items-end gap-2">
        <Field
          label="Email"
          name="email"
          type="email"
          required
          maxLength={EMAIL_MAX_CHARS}
          error={invite.error}
          className="min-w-0 flex-1"
        />
        <Select label="Role" name="role" defaultValue="full_editor">
          {ROLES.map((r) => (
            <option key={r} value={r}>
              {r.replace('_', ' ')}
            </option>
          ))}
        </Select>
        <Button type="submit" tone="primary" busy={invite.busy}>
          Invite
        </Button>
      </form>
      <ErrorNote error={invite.error} fields={['email']} />
    </Card>
  )
}

function AcceptTransfer() {
  const [accepted, setAccepted] = useState<string | null>(null)
  const accept = useAction(async (code: string) => {
    const result = await api<{ website?: { id: string; name: string }; websiteId?: string }>('POST', '/v1/websites/transfers/accept', {
      body: { code },
    })
    setAccepted(result.website?.name ?? result.websiteId ?? 'The website')
  })
  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault()
    void accept.run(String(new FormData(event.currentTarget).get('code')).trim())
  }
  return (
    <Card title="Accept a website transferred to this workspace">
      <form onSubmit={submit} className="flex flex-wrap items-end gap-2">
        <Field label="Transfer code" name="code" required error={accept.error} className="min-w-0 flex-1" />
        <Button type="submit" busy={accept.busy}>
          Accept
        </Button>
      </form>
      <ErrorNote error={accept.error} fields={['code']} />
      {accepted !== null && <Notice>{accepted} is now in this workspace.</Notice>}
    </Card>
  )
}
