import { useState, type FormEvent } from 'react'
import { api } from '../../api.js'
import { Link, navigate } from '../../router.js'
import { useSession } from '../../session.js'
import { formatBytes, type FormSummary, type Submission } from '../../types.js'
import { ConfirmButton } from '../../ui/confirm.js'
import { CopyButton } from '../../ui/copy.js'
import { useAction, useResource } from '../../ui/data.js'
import { Button, Card, Code, Empty, ErrorNote, Field, Loaded, Table, Td, Time } from '../../ui/kit.js'
import { EMAIL_MAX_CHARS } from '../../../core/limits.js'
import { Pager, usePaged } from '../../ui/pager.js'
import { useWebsite } from './context.js'

interface FormsPage {
  items: FormSummary[]
  nextCursor: string | null
  webhookSigning: { secret: string; header: string }
}

/** The forms of the site with counts, a form's submissions newest first, one submission, the webhook signing secret. */
export function Forms({ form, submissionId }: { form?: string; submissionId?: string }) {
  const { website: w } = useWebsite()
  const forms = useResource(`forms:${w.id}`, (signal) =>
    api<FormsPage>('GET', `/v1/websites/${w.id}/forms`, { query: { limit: 100 }, signal }),
  )
  return (
    <div className="flex flex-col gap-4">
      <Loaded resource={forms}>
        {(page) =>
          page.items.length === 0 ? (
            <Empty>
              No forms yet. A page posts a form to <Code>/_platform/forms/&lt;name&gt;</Code>; its submissions show here.
            </Empty>
          ) : (
            <Card title="Forms">
              <ul aria-label="Forms" className="flex flex-wrap gap-2">
                {page.items.map((f) => (
                  <li key={f.name}>
                    <Link
                      to={`/websites/${w.id}/forms/${encodeURIComponent(f.name)}`}
                      aria-current={f.name === form ? 'page' : undefined}
                      className={`inline-flex items-center gap-2 rounded-md border px-3 py-1.5 text-sm no-underline ${f.name === form ? 'border-zinc-900 bg-zinc-900 text-white' : 'border-zinc-300 bg-white text-zinc-900'}`}
                    >
                      {f.name} <span className="tabular-nums">{f.submissions}</span>
                    </Link>
                  </li>
                ))}
              </ul>
            </Card>
          )
        }
      </Loaded>
      {form !== undefined && submissionId === undefined && forms.data !== undefined && (
        <Submissions form={forms.data.items.find((f) => f.name === form) ?? null} name={form} />
      )}
      {form !== undefined && submissionId === undefined && <Notifications form={form} />}
      {form !== undefined && submissionId !== undefined && <SubmissionView form={form} id={submissionId} />}
      {forms.data !== undefined && (
        <Webhooks signing={forms.data.webhookSigning} forms={forms.data.items} onRotated={() => void forms.reload()} />
      )}
    </div>
  )
}

function preview(data: Submission['data']): string {
  return Object.entries(data)
    .map(([k, v]) => `${k}: ${Array.isArray(v) ? v.join(', ') : v}`)
    .join(' · ')
    .slice(0, 140)
}

function Submissions({ form, name }: { form: FormSummary | null; name: string }) {
  const { website: w } = useWebsite()
  const [spam, setSpam] = useState(false)
  const list = usePaged<Submission>(`/v1/websites/${w.id}/forms/${encodeURIComponent(name)}/submissions`, { spam }, 20)
  const csv = useAction(async () => {
    const text = await api<string>('GET', `/v1/websites/${w.id}/forms/${encodeURIComponent(name)}/submissions`, {
      accept: 'text/csv',
      query: { spam, limit: 100 },
    })
    const link = document.createElement('a')
    link.href = URL.createObjectURL(new Blob([text], { type: 'text/csv' }))
    link.download = `${w.subdomain}-${name}${spam ? '-spam' : ''}.csv`
    link.click()
    URL.revokeObjectURL(link.href)
  })
  return (
    <Card
      title={`Submissions of ${name}`}
      actions={
        <div className="flex flex-wrap gap-2">
          <Button aria-pressed={spam} onClick={() => setSpam((s) => !s)}>
            {spam ? `Kept (${form?.submissions ?? 0})` : `Spam (${form?.spam ?? 0})`}
          </Button>
          <Button onClick={() => void csv.run()} busy={csv.busy}>
            Export CSV
          </Button>
        </div>
      }
    >
      <ErrorNote error={csv.error} />
      <Loaded resource={list}>
        {(page) =>
          page.items.length === 0 ? (
            <p className="text-sm text-zinc-600">{spam ? 'No spam.' : 'No submissions yet.'}</p>
          ) : (
            <Table caption={`Submissions of ${name}`} head={['Received', 'Fields']}>
              {page.items.map((s) => (
                <tr key={s.id} className={s.read ? '' : 'font-medium'}>
                  <Td className="whitespace-nowrap">
                    <Link to={`/websites/${w.id}/forms/${encodeURIComponent(name)}/${s.id}`}>
                      <Time at={s.createdAt} />
                    </Link>
                  </Td>
                  <Td className="break-all">{preview(s.data)}</Td>
                </tr>
              ))}
            </Table>
          )
        }
      </Loaded>
      <Pager pager={list.pager} label="Submissions" />
    </Card>
  )
}

function SubmissionView({ form, id }: { form: string; id: string }) {
  const { website: w } = useWebsite()
  const { can } = useSession()
  const path = `/v1/websites/${w.id}/forms/${encodeURIComponent(form)}/submissions/${id}`
  const submission = useResource(path, (signal) => api<Submission>('GET', path, { signal }))
  const back = `/websites/${w.id}/forms/${encodeURIComponent(form)}`
  return (
    <Card title="Submission" actions={<Link to={back}>Back to {form}</Link>}>
      <Loaded resource={submission}>
        {(s) => (
          <div className="flex flex-col gap-3 text-sm">
            <p className="text-zinc-600">
              Received <Time at={s.createdAt} />
              {s.spam ? ' · marked as spam' : ''}
            </p>
            <dl className="grid gap-x-4 gap-y-1 sm:grid-cols-[10rem_1fr]">
              {Object.entries(s.data).map(([k, v]) => (
                <div key={k} className="contents">
                  <dt className="font-medium break-all">{k}</dt>
                  <dd className="break-words whitespace-pre-wrap">{Array.isArray(v) ? v.join(', ') : v}</dd>
                </div>
              ))}
            </dl>
            {s.files.length > 0 && (
              <ul className="list-disc pl-5">
                {s.files.map((f) => (
                  <li key={f.field}>
                    {f.field}: {f.filename} ({f.contentType}, {formatBytes(f.size)})
                  </li>
                ))}
              </ul>
            )}
            {s.webhook !== undefined && s.webhook.state !== 'none' && (
              <p>
                Webhook: {s.webhook.state}
                {s.webhook.attempts.length > 0
                  ? ` after ${s.webhook.attempts.length} attempt(s); last: ${s.webhook.attempts.at(-1)!.status ?? s.webhook.attempts.at(-1)!.error}`
                  : ''}
              </p>
            )}
            {can('forms.manage') && (
              <div>
                <ConfirmButton
                  label="Delete"
                  title="Delete this submission?"
                  confirmLabel="Delete submission"
                  tone="danger"
                  onConfirm={async () => {
                    await api('DELETE', path)
                    navigate(back)
                  }}
                >
                  The submission and its files are deleted for good.
                </ConfirmButton>
              </div>
            )}
          </div>
        )}
      </Loaded>
    </Card>
  )
}

function Webhooks({ signing, forms, onRotated }: { signing: FormsPage['webhookSigning']; forms: FormSummary[]; onRotated: () => void }) {
  const { website: w } = useWebsite()
  const { can } = useSession()
  const hooks = forms.filter((f) => f.config?.webhook !== undefined)
  return (
    <Card title="Webhooks">
      {hooks.length === 0 ? (
        <p className="text-sm text-zinc-700">
          {w.kind === 'framework'
            ? 'No form sends its entries anywhere yet. Ask whoever builds this site (or your agent) to give a form a webhook address: each new entry is then also sent there as it arrives, to a chat, a spreadsheet or your own server.'
            : 'No form sends its entries anywhere: they are kept here, to read or export as CSV. Sending each entry to another service as it arrives (a webhook) needs a framework site.'}
        </p>
      ) : (
        <ul className="mb-2 text-sm">
          {hooks.map((f) => (
            <li key={f.name}>
              {f.name} → <Code>{f.config!.webhook!}</Code>
            </li>
          ))}
        </ul>
      )}
      <p className="mt-2 flex flex-wrap items-center gap-2 text-sm">
        Signed in <Code>{signing.header}</Code> with <Code>{signing.secret}</Code>{' '}
        <CopyButton text={signing.secret} label="the signing secret" />
      </p>
      {can('forms.manage') && (
        <div className="mt-2">
          <ConfirmButton
            label="Rotate the signing secret"
            title="Rotate the webhook signing secret?"
            confirmLabel="Rotate"
            onConfirm={async () => {
              await api('POST', `/v1/websites/${w.id}/forms/webhook-secret`)
              onRotated()
            }}
          >
            Webhooks are signed with a new secret from now on; the old one stops verifying at once. Update your receiver.
          </ConfirmButton>
        </div>
      )}
    </Card>
  )
}

interface NotifyList {
  recipients: { email: string; state: 'active' | 'pending' }[]
  perMinute: number
  mailSent: boolean
}

/** Who is emailed the form's submissions: add an address (a member's is active at once, another confirms first), remove one. */
function Notifications({ form }: { form: string }) {
  const { website: w } = useWebsite()
  const { can } = useSession()
  const path = `/v1/websites/${w.id}/forms/${encodeURIComponent(form)}/notifications`
  const list = useResource(`notify:${w.id}:${form}`, (signal) => api<NotifyList>('GET', path, { signal }))
  const save = useAction(async (recipients: string[]) => {
    list.setData(await api<NotifyList>('PUT', path, { body: { recipients } }))
  })
  const add = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault()
    const element = event.currentTarget
    const email = String(new FormData(element).get('email')).trim()
    if (await save.run([...(list.data?.recipients ?? []).map((r) => r.email), email])) element.reset()
  }
  const manage = can('forms.manage')
  return (
    <Card title="Email notifications">
      <Loaded resource={list}>
        {(page) => (
          <>
            <p className="mb-2 text-sm text-zinc-600">
              Each kept submission of {form} is emailed to these addresses (past {page.perMinute} a minute, one digest instead). A
              member&rsquo;s address works at once; any other first gets a link to confirm.
              {!page.mailSent && ' This server sends no email: its operator has to set up a relay first.'}
            </p>
            {page.recipients.length === 0 ? (
              <p className="text-sm">Nobody is emailed yet.</p>
            ) : (
              <ul aria-label="Notified addresses" className="flex flex-col divide-y divide-zinc-100 text-sm">
                {page.recipients.map((r) => (
                  <li key={r.email} className="flex flex-wrap items-center justify-between gap-2 py-2">
                    <span className="break-all">
                      {r.email} · {r.state === 'active' ? 'receives them' : 'waits for its confirmation'}
                    </span>
                    {manage && (
                      <Button
                        aria-label={`Remove ${r.email}`}
                        busy={save.busy}
                        onClick={() => void save.run(page.recipients.filter((x) => x.email !== r.email).map((x) => x.email))}
                      >
                        Remove
                      </Button>
                    )}
                  </li>
                ))}
              </ul>
            )}
          </>
        )}
      </Loaded>
      {manage && (
        <form onSubmit={(e) => void add(e)} className="mt-2 flex flex-wrap items-end gap-2">
          <Field
            label="Email to notify"
            name="email"
            type="email"
            required
            maxLength={EMAIL_MAX_CHARS}
            error={save.error}
            className="min-w-0 flex-1"
          />
          <Button type="submit" busy={save.busy}>
            Add
          </Button>
        </form>
      )}
      <ErrorNote error={save.error} fields={['email']} />
    </Card>
  )
}
