/** The status lines the server writes: each status code with its reason phrase. */

const STATUS_TEXT: Record<number, string> = {
  200: '200 OK',
  201: '201 Created',
  202: '202 Accepted',
  204: '204 No Content',
  206: '206 Partial Content',
  301: '301 Moved Permanently',
  302: '302 Found',
  304: '304 Not Modified',
  307: '307 Temporary Redirect',
  308: '308 Permanent Redirect',
  400: '400 Bad Request',
  401: '401 Unauthorized',
  402: '402 Payment Required',
  403: '403 Forbidden',
  404: '404 Not Found',
  405: '405 Method Not Allowed',
  408: '408 Request Timeout',
  406: '406 Not Acceptable',
  409: '409 Conflict',
  410: '410 Gone',
  413: '413 Payload Too Large',
  415: '415 Unsupported Media Type',
  416: '416 Range Not Satisfiable',
  422: '422 Unprocessable Content',
  429: '429 Too Many Requests',
  303: '303 See Other',
  500: '500 Internal Server Error',
  502: '502 Bad Gateway',
  503: '503 Service Unavailable',
}

/** The status line text for a code. */
export function statusLine(status: number): string {
  return STATUS_TEXT[status] ?? `${status} Status`
}
