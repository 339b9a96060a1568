/** `[start, end]` inclusive for a single `bytes=` range, 'unsatisfiable', or null to ignore the header. */
export function parseRange(header: string, size: number): [number, number] | 'unsatisfiable' | null {
  // An empty file has no byte to point at and Content-Range cannot say "no bytes": the whole (empty)
  // file with 200, as RFC 9110 lets a server ignore Range.
  if (size === 0) return null
  const match = /^bytes=\s*(\d*)\s*-\s*(\d*)\s*$/.exec(header)
  if (match === null) return null // multiple ranges or another unit: serve the whole file
  const [, a, b] = match
  if (a === '' && b === '') return null
  if (a === '') {
    const suffix = Number(b)
    if (suffix === 0) return 'unsatisfiable'
    return [Math.max(0, size - suffix), size - 1]
  }
  const start = Number(a)
  const end = b === '' ? size - 1 : Math.min(Number(b), size - 1)
  if (start >= size || start > end) return 'unsatisfiable'
  return [start, end]
}
