/** A minimal leveled logger; secrets never reach it (callers pass ids, never credentials). */
export interface Logger {
  info(message: string, fields?: Record<string, unknown>): void
  warn(message: string, fields?: Record<string, unknown>): void
  error(message: string, fields?: Record<string, unknown>): void
}

function line(level: string, message: string, fields?: Record<string, unknown>): string {
  const extra = fields === undefined ? '' : ' ' + JSON.stringify(fields)
  return `${new Date().toISOString()} ${level} ${message}${extra}\n`
}

/** Logs to stderr, one line per event. */
export const stderrLogger: Logger = {
  info: (m, f) => process.stderr.write(line('info', m, f)),
  warn: (m, f) => process.stderr.write(line('warn', m, f)),
  error: (m, f) => process.stderr.write(line('error', m, f)),
}

/** Drops everything; for tests that assert on behaviour, not logs. */
export const silentLogger: Logger = { info() {}, warn() {}, error() {} }
