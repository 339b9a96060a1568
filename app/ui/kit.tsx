import {
  useId,
  useRef,
  useState,
  type ButtonHTMLAttributes,
  type InputHTMLAttributes,
  type ReactNode,
  type SelectHTMLAttributes,
} from 'react'
import type { ApiError } from '../api.js'

/** Class names joined, falsy ones left out. */
export function cx(...names: (string | false | null | undefined)[]): string {
  return names.filter(Boolean).join(' ')
}

type Tone = 'primary' | 'secondary' | 'danger'

const TONES: Record<Tone, string> = {
  primary: 'bg-zinc-900 text-white hover:bg-zinc-700 border-zinc-900',
  secondary: 'bg-white text-zinc-900 hover:bg-zinc-100 border-zinc-300',
  danger: 'bg-white text-red-700 hover:bg-red-50 border-red-300',
}

/** A button's look, for a control that must be another element (a file picker's label). */
export function buttonLook(tone: Tone = 'secondary'): string {
  return cx(
    'inline-flex items-center justify-center gap-2 rounded-md border px-3 py-1.5 text-sm font-medium shadow-sm transition-colors',
    TONES[tone],
  )
}

export function Button({
  tone = 'secondary',
  busy = false,
  className,
  children,
  ...rest
}: { tone?: Tone; busy?: boolean } & ButtonHTMLAttributes<HTMLButtonElement>) {
  return (
    <button
      type="button"
      {...rest}
      disabled={rest.disabled === true || busy}
      aria-busy={busy || undefined}
      className={cx(buttonLook(tone), 'disabled:cursor-not-allowed disabled:opacity-50', className)}
    >
      {children}
    </button>
  )
}

/** A labelled input; the API's error for this field (details.field) is shown under it. */
/** From this share of a field's limit on, the count of characters shows beside it. */
const COUNT_FROM = 0.8

export function Field({
  label,
  name,
  error,
  hint,
  className,
  ...rest
}: { label: string; name: string; error?: ApiError | null; hint?: ReactNode } & InputHTMLAttributes<HTMLInputElement>) {
  const id = useId()
  const mine = error != null && error.field === name
  // A text field with a limit: the count as the person nears it, and a word when a paste was cut to it.
  const max = rest.maxLength !== undefined && rest.type !== 'password' ? rest.maxLength : null
  const initial = String(rest.value ?? rest.defaultValue ?? '').length
  const [count, setCount] = useState(initial)
  const [cut, setCut] = useState<number | null>(null)
  const pasting = useRef(false)
  const counted = max !== null && count >= Math.floor(max * COUNT_FROM)
  const described = [mine ? `${id}-error` : null, counted || cut !== null ? `${id}-count` : null].filter((x) => x !== null).join(' ')
  return (
    <div className={cx('flex min-w-0 flex-col gap-1', className)}>
      <label htmlFor={id} className="text-sm font-medium text-zinc-800">
        {label}
      </label>
      <input
        id={id}
        name={name}
        aria-invalid={mine || undefined}
        aria-describedby={described === '' ? undefined : described}
        {...rest}
        onChange={(event) => {
          setCount(event.currentTarget.value.length)
          // A change that is not the paste the word is about: the word goes.
          if (!pasting.current) setCut(null)
          pasting.current = false
          rest.onChange?.(event)
        }}
        onPaste={(event) => {
          if (max !== null) {
            const input = event.currentTarget
            const kept = input.value.length - ((input.selectionEnd ?? 0) - (input.selectionStart ?? 0))
            const pasted = event.clipboardData.getData('text').length
            setCut(kept + pasted > max ? kept + pasted : null)
            pasting.current = true
          }
          rest.onPaste?.(event)
        }}
        className={cx(
          'w-full min-w-0 rounded-md border bg-white px-3 py-1.5 text-sm shadow-sm',
          mine ? 'border-red-500' : 'border-zinc-300',
        )}
      />
      {hint !== undefined && <p className="text-xs text-zinc-600">{hint}</p>}
      {max !== null && (
        <p id={`${id}-count`} aria-live="polite" className={cx('text-xs', cut !== null ? 'text-amber-800' : 'text-zinc-600')}>
          {cut !== null
            ? `The pasted text made ${cut.toLocaleString('en')} characters: it was cut to the first ${max.toLocaleString('en')}, this field’s limit. ${count.toLocaleString('en')} of ${max.toLocaleString('en')} characters.`
            : counted
              ? `${count.toLocaleString('en')} of ${max.toLocaleString('en')} characters`
              : ''}
        </p>
      )}
      {mine && (
        <p id={`${id}-error`} className="text-sm text-red-700">
          {error!.say(label)}
        </p>
      )}
    </div>
  )
}

export function Select({
  label,
  name,
  children,
  className,
  ...rest
}: { label: string; name: string; children: ReactNode } & SelectHTMLAttributes<HTMLSelectElement>) {
  const id = useId()
  return (
    <div className={cx('flex min-w-0 flex-col gap-1', className)}>
      <label htmlFor={id} className="text-sm font-medium text-zinc-800">
        {label}
      </label>
      <select
        id={id}
        name={name}
        {...rest}
        className="w-full min-w-0 rounded-md border border-zinc-300 bg-white px-2 py-1.5 text-sm shadow-sm"
      >
        {children}
      </select>
    </div>
  )
}

/** The API's message for a failed action, where the action is (unless a field shows it). */
export function ErrorNote({ error, fields = [] }: { error: ApiError | null; fields?: string[] }) {
  if (error === null || (error.field !== null && fields.includes(error.field))) return null
  return (
    <p role="alert" className="rounded-md border border-red-200 bg-red-50 px-3 py-2 text-sm text-red-800">
      {error.say()}
    </p>
  )
}

export function Notice({ children }: { children: ReactNode }) {
  return (
    <p role="status" className="rounded-md border border-green-200 bg-green-50 px-3 py-2 text-sm text-green-800">
      {children}
    </p>
  )
}

export function Card({
  title,
  actions,
  children,
  className,
}: {
  title?: ReactNode
  actions?: ReactNode
  children: ReactNode
  className?: string
}) {
  return (
    <section className={cx('rounded-lg border border-zinc-200 bg-white p-4 shadow-sm', className)}>
      {(title !== undefined || actions !== undefined) && (
        <div className="mb-3 flex flex-wrap items-center justify-between gap-2">
          {title !== undefined && <h2 className="text-base font-semibold">{title}</h2>}
          {actions}
        </div>
      )}
      {children}
    </section>
  )
}

export function PageTitle({ children, actions }: { children: ReactNode; actions?: ReactNode }) {
  return (
    <div className="mb-4 flex flex-wrap items-center justify-between gap-3">
      <h1 className="text-xl font-semibold break-all">{children}</h1>
      {actions}
    </div>
  )
}

const BADGES: Record<string, string> = {
  live: 'bg-green-100 text-green-800',
  ready: 'bg-green-100 text-green-800',
  active: 'bg-green-100 text-green-800',
  verified: 'bg-green-100 text-green-800',
  building: 'bg-amber-100 text-amber-800',
  pending: 'bg-amber-100 text-amber-800',
  'draft only': 'bg-zinc-200 text-zinc-800',
  failed: 'bg-red-100 text-red-800',
  suspended: 'bg-red-100 text-red-800',
  'in trash': 'bg-zinc-200 text-zinc-700',
  revoked: 'bg-zinc-200 text-zinc-700',
  held: 'bg-amber-100 text-amber-800',
  sharing: 'bg-blue-100 text-blue-800',
}

/** The lock shown on a site or shared folder behind a password (its text for screen readers and tooltips). */
export function Locked({ what }: { what: 'site' | 'folder' }) {
  const label = `Password protected ${what}`
  return (
    <span role="img" aria-label={label} title={label} className="text-sm">
      🔒
    </span>
  )
}

export function Badge({ children }: { children: string }) {
  return (
    <span
      className={cx(
        'inline-block rounded-full px-2 py-0.5 text-xs font-medium whitespace-nowrap',
        BADGES[children] ?? 'bg-zinc-100 text-zinc-700',
      )}
    >
      {children}
    </span>
  )
}

export function Loading({ what = 'Loading' }: { what?: string }) {
  return (
    <p role="status" className="text-sm text-zinc-600">
      {what}…
    </p>
  )
}

/** Loading, the API's error, or the content once the data is there. */
export function Loaded<T>({
  resource,
  children,
}: {
  resource: { data: T | undefined; error: ApiError | null }
  children: (data: T) => ReactNode
}) {
  if (resource.error !== null && resource.data === undefined) return <ErrorNote error={resource.error} />
  if (resource.data === undefined) return <Loading />
  return <>{children(resource.data)}</>
}

export function Time({ at }: { at: string | null | undefined }) {
  if (at == null) return <span className="text-zinc-500">never</span>
  const date = new Date(at)
  return (
    <time dateTime={at} title={date.toISOString()}>
      {date.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' })}
    </time>
  )
}

export function Table({ caption, head, children }: { caption: string; head: string[]; children: ReactNode }) {
  return (
    <div className="overflow-x-auto">
      <table className="w-full text-left text-sm">
        <caption className="sr-only">{caption}</caption>
        <thead className="border-b border-zinc-200 text-xs text-zinc-600 uppercase">
          <tr>
            {head.map((h) => (
              <th key={h} scope="col" className="px-2 py-2 font-medium">
                {h}
              </th>
            ))}
          </tr>
        </thead>
        <tbody className="divide-y divide-zinc-100">{children}</tbody>
      </table>
    </div>
  )
}

export function Td({ children, className }: { children?: ReactNode; className?: string }) {
  return <td className={cx('px-2 py-2 align-top', className)}>{children}</td>
}

export function Empty({ children }: { children: ReactNode }) {
  return <div className="rounded-md border border-dashed border-zinc-300 p-6 text-center text-sm text-zinc-600">{children}</div>
}

/** A value shown in code type, breaking anywhere (URLs, DNS records) so narrow screens never scroll sideways. */
export function Code({ children }: { children: ReactNode }) {
  return <code className="rounded bg-zinc-100 px-1 py-0.5 font-mono text-xs break-all">{children}</code>
}
