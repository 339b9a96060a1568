/**
 * Absolute URLs the API hands out: the API origin and the site hosts. Sites use the API origin's
 * scheme and port, so `http://localhost:8080` gives sites at `http://{label}.localhost:8080`.
 */
export class PublicUrls {
  readonly apiOrigin: string
  readonly siteDomain: string
  readonly #scheme: string
  readonly #port: string

  constructor(apiOrigin: string, siteDomain: string) {
    const url = new URL(apiOrigin)
    this.apiOrigin = url.origin
    this.siteDomain = siteDomain
    this.#scheme = url.protocol
    this.#port = url.port === '' ? '' : `:${url.port}`
  }

  /** `{scheme}//{label}.{siteDomain}{:port}` */
  published(label: string): string {
    return `${this.#scheme}//${label}.${this.siteDomain}${this.#port}`
  }

  /** `{scheme}//draft--{label}.{siteDomain}{:port}` */
  draft(label: string): string {
    return `${this.#scheme}//draft--${label}.${this.siteDomain}${this.#port}`
  }

  api(path: string): string {
    return this.apiOrigin + path
  }
}
