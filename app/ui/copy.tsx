import { useState } from 'react'
import { Button } from './kit.js'

/** Copies `text` to the clipboard and says so; `label` names what is copied for a screen reader (the button reads “Copy the secret”). */
export function CopyButton({ text, label }: { text: string; label: string }) {
  const [copied, setCopied] = useState(false)
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text)
    } catch {
      // No clipboard permission (an insecure origin): select the text for the person to copy.
      const area = document.createElement('textarea')
      area.value = text
      document.body.append(area)
      area.select()
      document.execCommand('copy')
      area.remove()
    }
    setCopied(true)
    setTimeout(() => setCopied(false), 2000)
  }
  return (
    <Button onClick={copy} className="px-2 py-1 text-xs">
      <span aria-live="polite">{copied ? 'Copied' : 'Copy'}</span>
      <span className="sr-only"> {label}</span>
    </Button>
  )
}
