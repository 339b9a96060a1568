import { createServer } from 'node:net'
import { request } from 'node:http'

export interface RawResponse {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: Buffer
}

/** One request with any Host header (fetch cannot set Host), the whole body collected. */
export function rawRequest(
  port: number,
  host: string,
  path: string,
  headers: Record<string, string> = {},
  method = 'GET',
): Promise<RawResponse> {
  return send(port, method, path, { host, ...headers })
}

/** A POST with any Host header and a body. */
export function rawPost(
  port: number,
  host: string,
  path: string,
  body: string | Buffer,
  headers: Record<string, string> = {},
): Promise<RawResponse> {
  return send(port, 'POST', path, { host, ...headers }, body)
}

/**
 * A request on a connection of its own (no keep-alive agent), with any Host header and an optional
 * body: a run of them reaches each thread the kernel gives connections to.
 */
export function freshRequest(
  port: number,
  host: string,
  path: string,
  headers: Record<string, string> = {},
  method = 'GET',
  body?: string,
): Promise<RawResponse> {
  return send(port, method, path, { host, ...headers }, body, false)
}

function send(
  port: number,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string | Buffer,
  agent?: false,
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const withLength = body === undefined ? headers : { 'content-length': String(Buffer.byteLength(body)), ...headers }
    const req = request({ host: '127.0.0.1', port, method, path, headers: withLength, ...(agent === false ? { agent } : {}) }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }))
    })
    req.on('error', reject)
    req.end(body)
  })
}

/** A free loopback port (bound, read, released), for an outside server a test starts. */
export async function freePort(): Promise<number> {
  const probe = createServer()
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve))
  const port = (probe.address() as { port: number }).port
  await new Promise<void>((resolve) => probe.close(() => resolve()))
  return port
}

/** One part of a hand-written multipart/form-data body. */
export interface MultipartPart {
  name: string
  /** `filename="…"`: a string goes as UTF-8, as browsers and fetch send it; a Buffer as those exact bytes. */
  filename?: string | Buffer
  /** `filename*=UTF-8''…` (RFC 5987 percent-encoding), beside or instead of `filename`. */
  filenameStar?: string
  contentType?: string
  content: string | Buffer
}

/** RFC 5987 `value-chars`: what encodeURIComponent leaves alone, less the characters attr-char does not allow. */
function rfc5987(value: string): string {
  return encodeURIComponent(value).replace(/['()*!]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
}

/**
 * A multipart/form-data body written byte by byte, for what FormData cannot send (`filename*=`, a
 * name that is not UTF-8): the body and its Content-Type.
 */
export function multipartBody(parts: MultipartPart[], boundary = 'plinth-test-boundary'): { body: Buffer; contentType: string } {
  const chunks: Buffer[] = []
  for (const part of parts) {
    chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${part.name}"`))
    if (part.filename !== undefined) chunks.push(Buffer.from('; filename="'), Buffer.from(part.filename), Buffer.from('"'))
    if (part.filenameStar !== undefined) chunks.push(Buffer.from(`; filename*=UTF-8''${rfc5987(part.filenameStar)}`))
    chunks.push(Buffer.from(`\r\n${part.contentType === undefined ? '' : `Content-Type: ${part.contentType}\r\n`}\r\n`))
    chunks.push(Buffer.from(part.content), Buffer.from('\r\n'))
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`))
  return { body: Buffer.concat(chunks), contentType: `multipart/form-data; boundary=${boundary}` }
}

/** One API call to a spawned server on loopback with a key; the body parsed when it is JSON. */
export async function keyedCall(port: number, key: string, method: string, path: string, body?: unknown) {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const text = await res.text()
  let parsed: any = text
  try {
    parsed = JSON.parse(text)
  } catch {
    // not JSON
  }
  return { status: res.status, body: parsed, headers: res.headers }
}
