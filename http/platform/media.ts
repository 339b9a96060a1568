import { createReadStream } from 'node:fs'
import { imageParams } from '../../actors/files/images.js'
import type { Registry } from '../../actors/registry.js'
import type { Channel } from '../../actors/website/snapshot.js'
import { withCharset } from '../../core/content-type.js'
import { ApiError, errorBody } from '../../core/errors.js'
import type { Logger } from '../../core/log.js'
import { parseRange } from '../range.js'
import type { Exchange, Headers } from '../uws.js'

const MEDIA = /^\/_platform\/(media|img)\/(ast_[a-z0-9]{1,40})$/
const IMMUTABLE = 'public, max-age=31536000, immutable'

/**
 * A website's assets on its own hosts (issue 15): `/_platform/media/<id>` the original bytes (Range,
 * strong ETag, cached for good: an id's bytes never change), `/_platform/img/<id>?w&h&fit&fm&q` an
 * image resized on demand. A variant already rendered is answered from memory at once, like a
 * static file; a new one waits for sharp off the event loop, then joins the cache.
 */
export class MediaPlane {
  constructor(
    private readonly registry: Registry,
    private readonly log: Logger,
  ) {}

  /** Whether `path` is one of these routes. */
  static matches(path: string): RegExpExecArray | null {
    return MEDIA.exec(path)
  }

  serve(exchange: Exchange, channel: Channel, match: RegExpExecArray): void {
    const [, route, assetId] = match
    const served = this.registry.assets.served(channel.websiteId, assetId)
    if (served === null)
      return exchange.send(
        404,
        { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' },
        'No such asset on this site\n',
      )
    const { asset, file } = served
    // Behind a site password, nothing may be kept by a shared cache.
    const cache = this.registry.sitePasswords.locked(channel.websiteId) ? 'private, no-store' : IMMUTABLE
    const ifNoneMatch = exchange.header('if-none-match')
    if (route === 'media') {
      const etag = `"${asset.hash!.slice(0, 32)}"`
      const headers: Headers = {
        'content-type': withCharset(asset.contentType),
        etag,
        'cache-control': cache,
        'accept-ranges': 'bytes',
        'x-content-type-options': 'nosniff',
        'content-security-policy': 'sandbox',
      }
      if (ifNoneMatch.includes(etag)) return exchange.send(304, { etag, 'cache-control': cache })
      const range = exchange.header('range')
      exchange.detach()
      const parsed = range === '' ? null : parseRange(range, asset.bytes)
      if (parsed === 'unsatisfiable') return exchange.send(416, { 'content-range': `bytes */${asset.bytes}` })
      const send =
        parsed === null
          ? exchange.sendStream(200, headers, createReadStream(file, { highWaterMark: 256 * 1024 }), asset.bytes)
          : exchange.sendStream(
              206,
              { ...headers, 'content-range': `bytes ${parsed[0]}-${parsed[1]}/${asset.bytes}` },
              createReadStream(file, { start: parsed[0], end: parsed[1], highWaterMark: 256 * 1024 }),
              parsed[1] - parsed[0] + 1,
            )
      return void send.catch((error: unknown) => this.log.error('serving an asset failed', { assetId, error: String(error) }))
    }
    let key: string
    let params
    try {
      if (asset.kind !== 'image' || asset.contentType === 'image/svg+xml')
        throw new ApiError(
          'validation',
          `Asset ${assetId} is ${asset.contentType}; only raster images are resized (its bytes are at /_platform/media/${assetId})`,
        )
      ;({ params, key } = this.registry.images.keyFor(asset, imageParams(exchange.query, asset)))
    } catch (error) {
      return this.#fail(exchange, error)
    }
    const hit = this.registry.images.cached(asset.id, key)
    if (hit !== undefined) {
      if (ifNoneMatch.includes(hit.etag)) return exchange.send(304, { etag: hit.etag, 'cache-control': cache })
      return exchange.send(
        200,
        { 'content-type': hit.contentType, etag: hit.etag, 'cache-control': cache, 'x-content-type-options': 'nosniff' },
        hit.bytes,
      )
    }
    exchange.detach()
    this.registry.images
      .variant(asset, file, params, key)
      .then((variant) =>
        exchange.send(
          200,
          { 'content-type': variant.contentType, etag: variant.etag, 'cache-control': cache, 'x-content-type-options': 'nosniff' },
          variant.bytes,
        ),
      )
      .catch((error: unknown) => this.#fail(exchange, error))
  }

  #fail(exchange: Exchange, error: unknown): void {
    if (!(error instanceof ApiError))
      this.log.error('resizing an image failed', { path: exchange.path, error: (error as Error)?.stack ?? String(error) })
    const status = error instanceof ApiError ? error.status : 500
    exchange.send(
      status,
      { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' },
      JSON.stringify(errorBody(error)),
    )
  }
}
