/** Text as a literal inside a regular expression (Node 20 has no RegExp.escape yet). */
export function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}
