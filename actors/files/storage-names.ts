/** Folder paths and file names of shared files as stored: the rules a path or name must meet. */

import { ApiError } from '../../core/errors.js'
import { STORAGE_FOLDER_MAX_CHARS, STORAGE_NAME_MAX_CHARS } from '../../core/limits.js'

/** A folder path as stored: segments without `.`/`..`, control characters or slashes at the ends. */
export function folderOf(text: string | undefined, field: string): string {
  const folder = (text ?? '').trim().replace(/^\/+|\/+$/g, '')
  if (folder === '') return ''
  const segments = folder.split('/')
  if (
    folder.length > STORAGE_FOLDER_MAX_CHARS ||
    segments.some((s) => s === '' || s === '.' || s === '..' || s.length > 100 || /[\u0000-\u001f\u007f\\]/.test(s))
  ) {
    throw new ApiError(
      'validation',
      `${field} is a folder path such as "photos/2026": segments of 1-100 characters, no "." or ".." segments, no backslashes or control characters, at most ${STORAGE_FOLDER_MAX_CHARS} characters`,
      { field },
    )
  }
  return segments.join('/')
}

/** A file name as stored. */
export function nameOf(text: string, field: string): string {
  const name = text.trim()
  if (name === '' || name === '.' || name === '..' || name.length > STORAGE_NAME_MAX_CHARS || /[\u0000-\u001f\u007f/\\]/.test(name)) {
    throw new ApiError(
      'validation',
      `${field} is a file name of 1-${STORAGE_NAME_MAX_CHARS} characters without slashes or control characters`,
      { field },
    )
  }
  return name
}
