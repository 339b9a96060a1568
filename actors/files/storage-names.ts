/** Folder paths and file names of shared files as stored: the rules a path or name must meet. */

import { ApiError } from '../../core/errors.js'
import { randomToken } from '../../core/ids.js'
import { STORAGE_FOLDER_MAX_CHARS, STORAGE_FOLDER_SUFFIX_CHARS, STORAGE_NAME_MAX_CHARS } from '../../core/limits.js'
import { slugify } from '../names.js'

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

/**
 * A file announced by its path inside the folder (`src/main.cpp`, `.gitignore`): the subfolders it
 * sits in and its own name, each segment checked as a folder segment and the last as a name.
 */
export function pathOf(text: string, field: string): { dirs: string[]; name: string } {
  const segments = text.trim().replace(/^\/+/, '').split('/')
  const name = nameOf(segments.pop() ?? '', field)
  const dirs = segments.length === 0 ? '' : folderOf(segments.join('/'), field)
  return { dirs: dirs === '' ? [] : dirs.split('/'), name }
}

/**
 * A new folder's name: the caller's hint (or the first file's) as a slug, then a random suffix
 * nobody can guess, so a folder link is as private as a file link (`holiday-3f9a2c1b5e7d90a1c2b4`).
 */
export function newFolderName(hint: string | undefined): string {
  const base = slugify(hint ?? '', 60)
  const suffix = randomToken(STORAGE_FOLDER_SUFFIX_CHARS, 'abcdefghijklmnopqrstuvwxyz0123456789')
  return base === '' ? suffix : `${base}-${suffix}`
}
