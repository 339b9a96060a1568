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
