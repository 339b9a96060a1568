/**
 * A backup, verify or restore refused for what it was given (not a backup, an incomplete one, a newer
 * format, a non-empty target, a damaged file): the message names it and says what to do. The command
 * line exits 2 and nothing was changed.
 */
export class BackupError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'BackupError'
  }
}
