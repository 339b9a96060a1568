import type { Picked } from './dropped.js'
import { buttonLook, cx } from './kit.js'

/**
 * A file input that looks like a button: the label is what shows and what names the input for a screen
 * reader; the input itself is visually hidden but stays in the tab order (Enter or Space opens the
 * browser's picker), so the focus ring is drawn on the label. `folder`: picks a folder, each file with
 * its path from the folder's name (`trip/day 1/a.jpg`), as a dropped folder gives them.
 */
export function FilePicker({ label, folder = false, onPick }: { label: string; folder?: boolean; onPick: (picked: Picked[]) => void }) {
  return (
    <label
      className={cx(
        buttonLook(),
        'cursor-pointer has-focus-visible:outline-2 has-focus-visible:outline-offset-2 has-focus-visible:outline-blue-600',
      )}
    >
      <input
        type="file"
        multiple
        className="sr-only"
        {...(folder ? { webkitdirectory: '' } : {})}
        onChange={(event) => {
          const files = [...(event.target.files ?? [])]
          // Emptied, so that picking the same files again is a change too.
          event.target.value = ''
          onPick(files.map((file) => ({ path: file.webkitRelativePath || file.name, file })))
        }}
      />
      {label}
    </label>
  )
}
