import { useId, useRef, useState, type FormEvent } from 'react'
import { api } from '../../api.js'
import { useSession } from '../../session.js'
import type { Invitation, Member } from '../../types.js'
import { ConfirmButton } from '../../ui/confirm.js'
import { PasswordCard } from '../../ui/password.js'
import { CopyButton } from '../../ui/copy.js'
import { useAction, useResource } from '../../ui/data.js'
import { Button, Card, Code, ErrorNote, Field, Loaded, Notice, Select, Time } from '../../ui/kit.js'
import { useWebsite } from './context.js'
import {
  EMAIL_MAX_CHARS,
  SITE_PASSWORD_MAX_CHARS,
  SITE_PASSWORD_MIN_CHARS,
  SUBDOMAIN_LABEL_MAX_CHARS,
  WEBSITE_DESCRIPTION_MAX_CHARS,
  WEBSITE_NAME_MAX_CHARS,
} from '../../../core/limits.js'

/** Name, subdomain, trash and restore; collaborators on this website; its transfer to another workspace. */
export function Settings() {
  const { website: w } = useWebsite()
  const { can } = useSession()
  const manage = can('websites.manage')
  return (
    <div className="flex flex-col gap-4">
      {w.deletedAt === null && manage && <Rename />}
      {w.deletedAt === null && manage && <Subdomain />}
      {w.deletedAt === null && manage && w.kind !== 'storage' && <Password />}
      {w.deletedAt === null && manage && <Collaborators />}
      {w.deletedAt === null && manage && <Transfer />}
      {manage && <Trash />}
      {!manage && <p className="text-sm text-zinc-700">Your role in this workspace cannot change this website’s settings.</p>}
    </div>
  )
}

function Rename() {
  const { website: w, reload } = useWebsite()
  const [saved, setSaved] = useState(false)
  const save = useAction(async (body: Record<string, string>) => {
    await api('PATCH', `/v1/websites/${w.id}`, { body })
    await reload()
    setSaved(true)
  })
  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault()
    setSaved(false)
    const form = new FormData(event.currentTarget)
    void save.run({ name: String(form.get('name')), description: String(form.get('description')) })
  }
  return (
    <Card title="Name">
      <form onSubmit={submit} className="flex flex-col gap-3 sm:max-w-md">
        <Field label="Name" name="name" defaultValue={w.name} required maxLength={WEBSITE_NAME_MAX_CHARS} error={save.error} />
        <Field
          label="Description"
          name="description"
          defaultValue={w.description ?? ''}
          maxLength={WEBSITE_DESCRIPTION_MAX_CHARS}
          error={save.error}
        />
        <div>
          <Button type="submit" tone="primary" busy={save.busy}>
            Save
          </Button>
        </div>
        <ErrorNote error={save.error} fields={['name', 'description']} />
        {saved && <Notice>Saved. The site’s addresses are unchanged.</Notice>}
      </form>
    </Card>
  )
}

function Subdomain() {
  const { website: w, reload } = useWebsite()
  const ask = useRef<HTMLDialogElement>(null)
  const titleId = `${useId()}-title`
  const [wanted, setWanted] = useState<string | null>(null)
  const save = useAction(async (label: string) => {
    await api('PATCH', `/v1/websites/${w.id}/subdomain`, { body: { label } })
    await reload()
  })
  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault()
    const label = String(new FormData(event.currentTarget).get('label')).trim()
    if (label === w.subdomain) return
    // Not a label at all: the API's rule shows next to the field, nothing to ask.
    if (!/^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/.test(label)) return void save.run(label)
    // The old address ends at once: asked first.
    setWanted(label)
    ask.current?.showModal()
  }
  const close = () => (ask.current?.close(), setWanted(null))
  return (
    <Card title="Subdomain">
      <dialog
        ref={ask}
        onClose={() => setWanted(null)}
        aria-labelledby={titleId}
        className="m-auto w-[min(28rem,calc(100vw-2rem))] rounded-lg border border-zinc-200 p-5 shadow-xl"
      >
        {wanted !== null && (
          <div className="flex flex-col gap-3">
            <h2 id={titleId} className="text-lg font-semibold">
              Rename the subdomain to {wanted}?
            </h2>
            <p className="text-sm text-zinc-700">
              The site moves to its new address, and the old one, {w.urls.published ?? w.urls.draft ?? w.subdomain}, stops working at once:
              links to it and bookmarks break. Nothing redirects from it.
            </p>
            <div className="flex justify-end gap-2">
              <Button onClick={close}>Cancel</Button>
              <Button tone="primary" busy={save.busy} onClick={async () => (await save.run(wanted), close())}>
                Rename to {wanted}
              </Button>
            </div>
          </div>
        )}
      </dialog>
      <form onSubmit={submit} className="flex flex-col gap-3 sm:max-w-md">
        <Field
          label="Subdomain"
          name="label"
          defaultValue={w.subdomain}
          required
          maxLength={SUBDOMAIN_LABEL_MAX_CHARS}
          error={save.error}
          hint="Lowercase letters, digits and inner hyphens. The old address stops working at once."
        />
        <div>
          <Button type="submit" tone="primary" busy={save.busy}>
            Rename subdomain
          </Button>
        </div>
        <ErrorNote error={save.error} fields={['label']} />
      </form>
    </Card>
  )
}

/** The site's password (every address asks for it, the draft's and each version's too). */
function Password() {
  const { website: w, reload } = useWebsite()
  return (
    <PasswordCard
      title="Password protection"
      intro={
        w.passwordProtected
          ? 'Visitors need a password on every address of this site (published, draft and each version). Programs send it as HTTP Basic auth.'
          : 'Anyone with an address of this site can see it. A password keeps it for the people you give it to.'
      }
      labels={['Password', 'New password']}
      hint={`${SITE_PASSWORD_MIN_CHARS} to ${SITE_PASSWORD_MAX_CHARS} characters. Only a slow hash is kept: it cannot be shown again.`}
      locked={w.passwordProtected}
      save={async (password) => {
        await api('PUT', `/v1/websites/${w.id}/password`, { body: { password } })
        await reload()
      }}
      said={{
        saved: 'Saved: visitors now need this password. Tell them with the link.',
        removed: 'Removed: anyone with an address sees the site.',
        removal: 'Remove the password',
        ask: 'Once it is removed, anyone with an address of this site sees it.',
      }}
    />
  )
}

/** Move to the trash, or (when it is there) restore: the Settings section, and the Overview's of a trashed website. */
export function Trash() {
  const { website: w, reload } = useWebsite()
  if (w.deletedAt !== null) {
    return (
      <Card title="In the trash">
        <p className="mb-3 text-sm text-zinc-700">
          Deleted <Time at={w.deletedAt} />. It serves nothing until restored.
        </p>
        <ConfirmButton
          label="Restore"
          title={`Restore ${w.name}?`}
          confirmLabel="Restore website"
          tone="primary"
          onConfirm={async () => {
            await api('POST', `/v1/websites/${w.id}/restore`)
            await reload()
          }}
        >
          The website comes back with its versions; a published version serves again.
        </ConfirmButton>
      </Card>
    )
  }
  return (
    <Card title="Delete">
      <p className="mb-3 text-sm text-zinc-700">The website goes to the trash: it is offline on every address and can be restored.</p>
      <ConfirmButton
        label="Move to trash"
        title={`Delete ${w.name}?`}
        confirmLabel="Move to trash"
        tone="danger"
        onConfirm={async () => {
          await api('DELETE', `/v1/websites/${w.id}`)
          await reload()
        }}
      >
        {w.name} goes offline on every address now. You can restore it from the trash.
      </ConfirmButton>
    </Card>
  )
}

function Collaborators() {
  const { website: w } = useWebsite()
  const people = useResource(`collaborators:${w.id}`, (signal) =>
    api<{ items: (Member & { websiteId: string; addedAt: string })[] }>('GET', `/v1/websites/${w.id}/collaborators`, {
      query: { limit: 100 },
      signal,
    }),
  )
  const invitations = useResource(`collaborator-invitations:${w.id}`, (signal) =>
    api<{ items: Invitation[] }>('GET', `/v1/websites/${w.id}/collaborators/invitations`, { query: { limit: 100 }, signal }),
  )
  const [link, setLink] = useState<string | null>(null)
  const invite = useAction(async (body: Record<string, string>) => {
    const created = await api<Invitation>('POST', `/v1/websites/${w.id}/collaborators/invitations`, { body })
    setLink(created.acceptUrl ?? null)
    await invitations.reload()
  })
  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault()
    const form = new FormData(event.currentTarget)
    void invite.run({ email: String(form.get('email')).trim(), role: String(form.get('role')) })
  }
  return (
    <Card title="Collaborators">
      <p className="mb-3 text-sm text-zinc-700">People outside this workspace who work on this one website.</p>
      <Loaded resource={people}>
        {(page) => (
          <ul aria-label="Collaborators" className="mb-3 flex flex-col divide-y divide-zinc-100 text-sm">
            {page.items.length === 0 && <li className="py-1 text-zinc-600">None yet.</li>}
            {page.items.map((p) => (
              <li key={p.userId} className="flex flex-wrap items-center justify-between gap-2 py-2">
                <span>
                  {p.name} <span className="text-zinc-600">{p.email}</span> · {p.role}
                </span>
                <ConfirmButton
                  label="Remove"
                  title={`Remove ${p.name}?`}
                  confirmLabel="Remove collaborator"
                  tone="danger"
                  onConfirm={async () => {
                    await api('DELETE', `/v1/websites/${w.id}/collaborators/${p.userId}`)
                    await people.reload()
                  }}
                >
                  {p.name} loses access to {w.name} at once.
                </ConfirmButton>
              </li>
            ))}
          </ul>
        )}
      </Loaded>
      <Loaded resource={invitations}>
        {(page) =>
          page.items.length === 0 ? null : (
            <ul aria-label="Pending invitations" className="mb-3 text-sm">
              {page.items.map((i) => (
                <li key={i.id} className="flex flex-wrap items-center justify-between gap-2 py-1">
                  <span>
                    {i.email} · {i.role} · expires <Time at={i.expiresAt} />
                  </span>
                  <Button
                    className="px-2 py-1 text-xs"
                    onClick={async () => {
                      await api('DELETE', `/v1/websites/${w.id}/collaborators/invitations/${i.id}`)
                      await invitations.reload()
                    }}
                  >
                    Revoke
                  </Button>
                </li>
              ))}
            </ul>
          )
        }
      </Loaded>
      <form onSubmit={submit} className="flex flex-wrap items-end gap-2">
        <Field
          label="Invite by email"
          name="email"
          type="email"
          required
          maxLength={EMAIL_MAX_CHARS}
          error={invite.error}
          className="min-w-0 flex-1"
        />
        <Select label="Role" name="role" defaultValue="content_editor">
          <option value="content_editor">Content editor</option>
          <option value="full_editor">Full editor</option>
        </Select>
        <Button type="submit" busy={invite.busy}>
          Invite
        </Button>
      </form>
      <ErrorNote error={invite.error} fields={['email']} />
      {link !== null && (
        <p className="mt-2 flex flex-wrap items-center gap-2 text-sm">
          Send this link to them (shown once): <Code>{link}</Code> <CopyButton text={link} label="the invitation link" />
        </p>
      )}
    </Card>
  )
}

interface TransferState {
  id: string
  status: string
  expiresAt: string
  toOrganizationId: string | null
  code?: string
}

function Transfer() {
  const { website: w } = useWebsite()
  const { me } = useSession()
  const current = useResource(
    `transfer:${w.id}`,
    async (signal) => (await api<{ transfer: TransferState | null }>('GET', `/v1/websites/${w.id}/transfer`, { signal })).transfer,
  )
  const [code, setCode] = useState<string | null>(null)
  const start = useAction(async (toOrganizationId: string) => {
    const started = await api<TransferState>('POST', `/v1/websites/${w.id}/transfer`, {
      body: toOrganizationId === '' ? {} : { toOrganizationId },
    })
    setCode(started.code ?? null)
    await current.reload()
  })
  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault()
    void start.run(String(new FormData(event.currentTarget).get('to')))
  }
  const others = (me.workspaces ?? []).filter((o) => o.id !== me.organization.id)
  return (
    <Card title="Transfer to another workspace">
      <Loaded resource={current}>
        {(t) =>
          t !== null && t.status === 'pending' ? (
            <div className="flex flex-col gap-2 text-sm">
              <p>
                A transfer is pending until <Time at={t.expiresAt} />. An admin of the receiving workspace accepts it with the code, on
                their Members page (or through the API).
              </p>
              {code !== null && (
                <p className="flex flex-wrap items-center gap-2">
                  Code (shown once): <Code>{code}</Code> <CopyButton text={code} label="the transfer code" />
                </p>
              )}
              <div>
                <ConfirmButton
                  label="Cancel the transfer"
                  title="Cancel the transfer?"
                  confirmLabel="Cancel transfer"
                  onConfirm={async () => {
                    await api('DELETE', `/v1/websites/${w.id}/transfer`)
                    setCode(null)
                    await current.reload()
                  }}
                >
                  The code stops working; the website stays here.
                </ConfirmButton>
              </div>
            </div>
          ) : (
            <form onSubmit={submit} className="flex flex-wrap items-end gap-2">
              <Select label="To" name="to" defaultValue="">
                <option value="">Any workspace (whoever holds the code)</option>
                {others.map((o) => (
                  <option key={o.id} value={o.id}>
                    {o.name}
                  </option>
                ))}
              </Select>
              <Button type="submit" busy={start.busy}>
                Start a transfer
              </Button>
            </form>
          )
        }
      </Loaded>
      <ErrorNote error={start.error} />
    </Card>
  )
}
