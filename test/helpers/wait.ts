/** The longest pause between two probes that ask the API: 4 a second stays inside the standard rate limit. */
export const API_POLL_MS = 250

/**
 * Waits until `probe` answers something truthy and returns it: the probe runs again as soon as its
 * last answer came back (after a pause that starts at 2 ms and doubles up to `maxPauseMs`), so a test
 * waits as long as the event takes and no longer. A probe that asks the API passes a `maxPauseMs` that
 * keeps it inside the rate limit (`API_POLL_MS`). Fails after `timeoutMs` with `what` and the last answer.
 */
export async function waitUntil<T>(
  probe: () => T | Promise<T>,
  what: string,
  timeoutMs = 15_000,
  maxPauseMs = 50,
): Promise<Exclude<NonNullable<T>, false | 0 | ''>> {
  const deadline = Date.now() + timeoutMs
  let pause = 2
  for (;;) {
    const answer = await probe()
    if (answer) return answer as Exclude<NonNullable<T>, false | 0 | ''>
    if (Date.now() > deadline) throw new Error(`waited ${timeoutMs} ms for ${what}; last answer: ${JSON.stringify(answer)}`)
    await new Promise((resolve) => setTimeout(resolve, pause))
    pause = Math.min(pause * 2, maxPauseMs)
  }
}
