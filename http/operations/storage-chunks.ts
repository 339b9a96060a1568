/** An upload's bytes received: the Content-Range read, then one PUT's body streamed into the upload. */

import type { SharedFiles } from '../../actors/files/storage.js'
import { missingParts, partRange, type ChunkWriter } from '../../actors/files/storage-uploads.js'
import { ApiError } from '../../core/errors.js'
import type { BodyStream } from '../operation.js'

/** `bytes start-end/total`, or a 400 that says how to write it (or to leave it out for the whole file). */
function contentRange(header: string, contentLength: number | null): { start: number; end: number; total: number } {
  const match = /^bytes (\d{1,15})-(\d{1,15})\/(\d{1,15})$/.exec(header.trim())
  if (match === null) {
    throw new ApiError(
      'validation',
      'Send Content-Range: bytes <start>-<end>/<size> (end inclusive), or no Content-Range to send the whole file',
      { field: 'header.content-range' },
    )
  }
  const [start, end, total] = match.slice(1).map(Number)
  if (contentLength !== null && contentLength !== end - start + 1)
    throw new ApiError(
      'validation',
      `Content-Length ${contentLength} does not match Content-Range bytes ${start}-${end} (${end - start + 1} bytes)`,
      { field: 'header.content-range' },
    )
  return { start, end, total }
}

/** Streams one PUT's bytes into an upload at the offset its Content-Range names; answers the offset stored. */
export async function receiveChunk(
  files: SharedFiles,
  websiteId: string,
  uploadId: string,
  stream: BodyStream,
): Promise<{ uploadId: string; offset: number; size: number; complete: boolean }> {
  // No Content-Range: the body is the whole file (what the agent helper and a plain `curl -T` send).
  const range = stream.contentRange.trim() === '' ? 'whole' : contentRange(stream.contentRange, stream.contentLength)
  const upload = files.upload(websiteId, uploadId)
  if (range === 'whole' && stream.contentLength !== null && stream.contentLength !== upload.size)
    throw new ApiError(
      'validation',
      `The body has ${stream.contentLength} bytes; ${upload.name} was announced with ${upload.size} (byteSize). Send exactly those ${upload.size} bytes, or, if the file changed, cancel this upload and begin it again with its byteSize`,
      {
        field: 'header.content-length',
      },
    )
  const chunk = await files.openChunk(websiteId, uploadId, range)
  const length = range === 'whole' ? upload.size : range.end - range.start + 1
  const total = range === 'whole' ? upload.size : range.total
  await pipeInto(stream, length, chunk)
  const offset = await chunk.done()
  return { uploadId, offset, size: total, complete: offset === total }
}

/** Streams one PUT's body into one part of a file sent in parts; answers the parts still missing. */
export async function receivePart(
  files: SharedFiles,
  websiteId: string,
  uploadId: string,
  partNumber: number,
  stream: BodyStream,
): Promise<{ uploadId: string; partNumber: number; size: number; missingParts: number[] }> {
  const part = await files.openPart(websiteId, uploadId, partNumber, stream.contentLength)
  const upload = files.upload(websiteId, uploadId)
  const { length } = partRange(upload, partNumber)
  await pipeInto(stream, length, part)
  const size = await part.done()
  return { uploadId, partNumber, size, missingParts: missingParts(files.upload(websiteId, uploadId)) }
}

/** The body into a writer, in order, one write at a time; the socket pauses while more than 4 MiB waits. */
export async function pipeInto(stream: BodyStream, length: number, writer: ChunkWriter): Promise<void> {
  let pending = Promise.resolve()
  let queued = 0
  let failed: unknown = null
  let drained: (() => void) | null = null
  const sink = {
    write(bytes: Buffer): boolean {
      queued += bytes.length
      pending = pending.then(async () => {
        if (failed === null) await writer.write(bytes).catch((error: unknown) => (failed = error))
        queued -= bytes.length
        if (queued < 1 << 20 && drained !== null) {
          const resume = drained
          drained = null
          resume()
        }
      })
      return queued < 4 << 20
    },
    onceDrained(resume: () => void) {
      drained = resume
    },
  }
  try {
    await stream.pipe(length, sink)
    await pending
    if (failed !== null) throw failed
  } catch (error) {
    await pending
    await writer.abort()
    throw error
  }
}
