/** A progress bar with its value as text for screen readers. */
export function Progress({ label, value }: { label: string; value: number }) {
  const percent = Math.round(Math.max(0, Math.min(1, value)) * 100)
  return (
    <div className="flex items-center gap-2">
      <progress
        aria-label={label}
        max={100}
        value={percent}
        className="h-2 w-full overflow-hidden rounded [&::-webkit-progress-bar]:bg-zinc-200 [&::-webkit-progress-value]:bg-blue-600"
      />
      <span className="w-10 text-right text-xs text-zinc-700 tabular-nums">{percent}%</span>
    </div>
  )
}
