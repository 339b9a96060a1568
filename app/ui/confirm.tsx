import { useId, useRef, useState, type ReactNode } from 'react'
import { useAction } from './data.js'
import { Button, ErrorNote } from './kit.js'

/**
 * A button whose action waits for a confirmation that says exactly what will happen ("Publish version
 * 4"), in a modal dialog (the browser's own, focus kept inside and Escape closes it). The API's error
 * shows in the dialog.
 */
export function ConfirmButton({
  label,
  title,
  children,
  confirmLabel,
  tone = 'secondary',
  onConfirm,
  disabled,
}: {
  label: string
  title: string
  children: ReactNode
  confirmLabel: string
  tone?: 'primary' | 'secondary' | 'danger'
  onConfirm: () => Promise<unknown>
  disabled?: boolean
}) {
  const dialog = useRef<HTMLDialogElement>(null)
  // An id of its own (a title has spaces and may repeat on a page): the dialog's accessible name is its heading.
  const titleId = `${useId()}-title`
  const action = useAction(onConfirm)
  const [open, setOpen] = useState(false)
  const close = () => {
    dialog.current?.close()
    setOpen(false)
    action.clear()
  }
  return (
    <>
      <Button tone={tone} disabled={disabled} onClick={() => (dialog.current?.showModal(), setOpen(true))}>
        {label}
      </Button>
      <dialog
        ref={dialog}
        onClose={() => setOpen(false)}
        aria-labelledby={titleId}
        className="m-auto w-[min(28rem,calc(100vw-2rem))] rounded-lg border border-zinc-200 p-5 shadow-xl"
      >
        {open && (
          <div className="flex flex-col gap-3">
            <h2 id={titleId} className="text-lg font-semibold">
              {title}
            </h2>
            <div className="text-sm text-zinc-700">{children}</div>
            <ErrorNote error={action.error} />
            <div className="flex justify-end gap-2">
              <Button onClick={close}>Cancel</Button>
              <Button
                tone={tone === 'danger' ? 'danger' : 'primary'}
                busy={action.busy}
                onClick={async () => (await action.run()) && close()}
              >
                {confirmLabel}
              </Button>
            </div>
          </div>
        )}
      </dialog>
    </>
  )
}
