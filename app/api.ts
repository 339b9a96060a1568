/**
 * The dashboard's only way to the server: the public REST API, with the browser's session cookie
 * (same origin, so the browser sends the dashboard's Origin on every change, as the API requires).
 * Errors arrive as the API sends them, `{kind, message, details}`, so a screen shows the API's own
 * message next to the control that caused it.
 */

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly kind: string,
    message: string,
    readonly details: Record<string, unknown> | undefined,
  ) {
    super(message)
    this.name = 'ApiError'
  }

  /** The field the API named (`body.name` → `name`), when it named one. */
  get field(): string | null {
    const field = this.details?.field
    return typeof field === 'string' ? field.replace(/^(body|query|path)\.?/, '') : null
  }

  /**
   * The error in a person's words: the field named by its label on the screen (or, without one, by
   * its own name in plain words), the rule the API reports (`details.rule`, `details.limit`) said
   * plainly. Never an HTTP method, a path, a JSON pointer or a tool name.
   */
  say(label?: string): string {
    const field = this.field
    if (field === null || field === '') return plainText(this.message)
    const name = label ?? humanName(field)
    const limit = typeof this.details?.limit === 'number' ? this.details.limit : null
    const count = limit === null ? '' : limit.toLocaleString('en-US')
    switch (this.details?.rule) {
      case 'required':
        return `${name} is required.`
      case 'minLength':
        return limit === 1 ? `${name} is required.` : `${name} needs at least ${count} characters.`
      case 'maxLength':
        return `${name} can be at most ${count} characters.`
      case 'minimum':
        return `${name} must be at least ${count}.`
      case 'maximum':
        return `${name} can be at most ${count}.`
      case 'maxItems':
        return `${name} can hold at most ${count}.`
      case 'enum': {
        const allowed = Array.isArray(this.details?.allowed) ? this.details.allowed : []
        return `${name} must be one of: ${allowed.join(', ')}.`
      }
      case 'pattern':
      case 'format': {
        // `body.label must be: Subdomain label: 1-56 lowercase letters…`: what it must be, without the API's own name for it.
        const what = /must be:? (.*)$/.exec(this.message)?.[1]?.replace(/^[A-Z][\w ]*: /, '')
        if (what !== undefined) return `${name} must be ${what.replace(/\.$/, '')}.`
        return `${name} is not valid.`
      }
      default: {
        // The API's sentence starts with the field's path (`body.label must be: …`): the label instead.
        const rest = this.message.replace(/^(body|query|path)(\.[\w-]+|\[\d+\])*\s*/, '')
        return plainText(`${name} ${rest}`)
      }
    }
  }
}

/** `hostname` → `Hostname`, `files[0].path` → `Path`: the last part of a field path, as words. */
function humanName(field: string): string {
  const last =
    field
      .split(/[.[\]]/)
      .filter((part) => part !== '' && !/^\d+$/.test(part))
      .pop() ?? field
  const words = last
    .replace(/([a-z])([A-Z])/g, '$1 $2')
    .replace(/[_-]/g, ' ')
    .toLowerCase()
  return words.charAt(0).toUpperCase() + words.slice(1)
}

/** An MCP tool's name: `deploy_files`, `resume_object_upload`. */
const TOOL = '\\b[a-z]+(?:_[a-z]+)+\\b'
/** Where an API sentence names a call or a tool: `POST /v1/…`, `…/head/check`, `MCP: deploy_files`, `with list_source_files`. */
const CALL = new RegExp(`\\b(GET|POST|PUT|PATCH|DELETE) \\S|\\.\\.\\.\\/|\\bMCP\\b|\\b(with|call|use|using|via) ${TOOL}`)
/** A parenthesis that names a call or a tool: it goes whole. */
const CALL_ASIDE = new RegExp(`\\s*\\([^()]*(\\b(MCP|GET|POST|PUT|PATCH|DELETE)\\b|${TOOL})[^()]*\\)`, 'g')
/** Words a clause may end in once the call after them is cut: "poll", "with", a colon. */
const DANGLING = /(\s+|\b(with|using|call|poll|to|and|or|then|through)\b|[:,(])+$/

/**
 * An API sentence for a person: an operation's path and its MCP tool are the API's business, not
 * theirs. A parenthesis naming a call goes whole; a clause (`; `) is cut where it names a call, and
 * dropped when under two words are left ("poll GET …" says nothing without its call).
 */
function plainText(message: string): string {
  const clauses = message
    .replace(CALL_ASIDE, '')
    .split(/;\s+/)
    .map((clause) => {
      const at = clause.search(CALL)
      return (at < 0 ? clause : clause.slice(0, at).replace(DANGLING, '')).replace(/\s{2,}/g, ' ').trim()
    })
    .filter((clause) => clause.split(' ').filter(Boolean).length >= 2)
  const text = clauses.join('; ').replace(/[;:,]$/, '')
  if (text === '') return 'That did not work.'
  // A sentence starts with a capital, unless its first word is a name ("photo.jpg is empty").
  const first = /^[a-z]+(?=[\s,;:]|$)/.test(text) ? text.charAt(0).toUpperCase() : text.charAt(0)
  return `${first}${text.slice(1)}${/[.?!]$/.test(text) ? '' : '.'}`
}

/** The workspace the person acts in (X-Organization-Id); null: their personal workspace. */
let workspace: string | null = null

export function setWorkspace(id: string | null): void {
  workspace = id
}

export function currentWorkspace(): string | null {
  return workspace
}

export interface RequestOptions {
  body?: unknown
  query?: Record<string, string | number | boolean | undefined | null>
  /** Sent as is (a multipart form); otherwise the body is JSON. */
  form?: FormData
  accept?: string
  signal?: AbortSignal
}

export function url(path: string, query?: RequestOptions['query']): string {
  const params = new URLSearchParams()
  for (const [name, value] of Object.entries(query ?? {}))
    if (value !== undefined && value !== null && value !== '') params.set(name, String(value))
  const search = params.toString()
  return search === '' ? path : `${path}?${search}`
}

function headers(extra: Record<string, string> = {}): Record<string, string> {
  return { accept: 'application/json', ...(workspace === null ? {} : { 'x-organization-id': workspace }), ...extra }
}

async function failure(response: Response): Promise<ApiError> {
  let body: { kind?: string; message?: string; details?: Record<string, unknown> } = {}
  try {
    body = (await response.json()) as typeof body
  } catch {
    // Not the API's shape (a proxy in front, a dropped connection): the status says enough.
  }
  return new ApiError(response.status, body.kind ?? 'internal', body.message ?? `The server answered ${response.status}`, body.details)
}

/** Calls the API; resolves with the JSON answer, rejects with an ApiError. A 401 goes to sign-in. */
export async function api<T = any>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
  const init: RequestInit = {
    method,
    credentials: 'same-origin',
    headers: headers(options.accept === undefined ? {} : { accept: options.accept }),
    signal: options.signal,
  }
  if (options.form !== undefined) init.body = options.form
  else if (options.body !== undefined) {
    init.body = JSON.stringify(options.body)
    ;(init.headers as Record<string, string>)['content-type'] = 'application/json'
  }
  const response = await fetch(url(path, options.query), init)
  if (response.status === 401) signIn()
  if (!response.ok) throw await failure(response)
  if (response.status === 204) return undefined as T
  return (options.accept !== undefined && !options.accept.includes('json') ? await response.text() : await response.json()) as T
}

/** The session ended: back to the sign-in page, returning here after. */
export function signIn(): void {
  const here = `${location.pathname}${location.search}`
  location.assign(`/app/sign-in?next=${encodeURIComponent(here)}`)
}

/**
 * A request whose body's upload progress matters (a deploy of a folder, a file's bytes): XMLHttpRequest,
 * since fetch reports no upload progress. `onProgress` gets the fraction sent, 0 to 1.
 */
export function upload<T = any>(
  method: string,
  path: string,
  body: FormData | Blob,
  options: { headers?: Record<string, string>; onProgress?: (fraction: number) => void; signal?: AbortSignal } = {},
): Promise<T> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest()
    xhr.open(method, path)
    xhr.withCredentials = true
    for (const [name, value] of Object.entries(headers(options.headers))) xhr.setRequestHeader(name, value)
    xhr.upload.onprogress = (event) => {
      if (event.lengthComputable) options.onProgress?.(event.loaded / event.total)
    }
    options.signal?.addEventListener('abort', () => xhr.abort())
    xhr.onload = () => {
      let body: any = null
      try {
        body = JSON.parse(xhr.responseText)
      } catch {
        body = null
      }
      if (xhr.status === 401) signIn()
      if (xhr.status >= 200 && xhr.status < 300) resolve(body as T)
      else reject(new ApiError(xhr.status, body?.kind ?? 'internal', body?.message ?? `The server answered ${xhr.status}`, body?.details))
    }
    xhr.onerror = () => reject(new ApiError(0, 'network', 'The connection failed; check your network and try again', undefined))
    xhr.onabort = () => reject(new ApiError(0, 'aborted', 'Cancelled', undefined))
    xhr.send(body)
  })
}
