import { useState, type FormEvent } from 'react'
import { SITE_PASSWORD_MAX_CHARS, SITE_PASSWORD_MIN_CHARS } from '../../core/limits.js'
import { ConfirmButton } from './confirm.js'
import { useAction } from './data.js'
import { Button, Card, ErrorNote, Field, Notice } from './kit.js'

/**
 * A password on a site or a shared folder: set it, change it, remove it (confirmed). `save` sends the
 * new password, or null to remove it; the texts say what it protects.
 */
export function PasswordCard(props: {
  title: string
  intro?: string
  /** The field's label: before one is set, and when one is. */
  labels: [unset: string, set: string]
  hint: string
  locked: boolean
  save: (password: string | null) => Promise<unknown>
  /** What is said once saved or removed, the removal dialog's title, and what it asks before the removal (the consequence, not yet done). */
  said: { saved: string; removed: string; removal: string; ask: string }
}) {
  const { locked, said } = props
  const [done, setDone] = useState<string | null>(null)
  const save = useAction(async (password: string | null) => {
    await props.save(password)
    setDone(password === null ? said.removed : said.saved)
  })
  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault()
    setDone(null)
    const form = event.currentTarget
    void save.run(String(new FormData(form).get('password'))).then((ok) => ok && form.reset())
  }
  return (
    <Card title={props.title}>
      {props.intro !== undefined && <p className="mb-3 text-sm text-zinc-700">{props.intro}</p>}
      <form onSubmit={submit} className="flex flex-col gap-3 sm:max-w-md">
        <Field
          label={locked ? props.labels[1] : props.labels[0]}
          name="password"
          type="password"
          autoComplete="new-password"
          required
          minLength={SITE_PASSWORD_MIN_CHARS}
          maxLength={SITE_PASSWORD_MAX_CHARS}
          error={save.error}
          hint={props.hint}
        />
        <div className="flex flex-wrap gap-2">
          <Button type="submit" tone="primary" busy={save.busy}>
            {locked ? 'Change password' : 'Set password'}
          </Button>
          {locked && (
            <ConfirmButton
              label="Remove password"
              title={`${said.removal}?`}
              confirmLabel="Remove password"
              tone="danger"
              onConfirm={() => save.run(null)}
            >
              {said.ask}
            </ConfirmButton>
          )}
        </div>
        <ErrorNote error={save.error} fields={['password']} />
        {done !== null && <Notice>{done}</Notice>}
      </form>
    </Card>
  )
}
