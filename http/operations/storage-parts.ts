// Parts of a large shared file (over 100 MiB, signed-in plans only): one PUT each, with the API's credential or the command's upload token.
import { Type } from '@sinclair/typebox'
import { ApiError } from '../../core/errors.js'
import { defineOperation } from '../operation.js'
import { receivePart } from './storage-chunks.js'
import { UPLOAD_BODY } from './storage-shapes.js'

const PartResult = Type.Object({
  uploadId: Type.String(),
  partNumber: Type.Integer(),
  size: Type.Integer({ description: 'Bytes of the part stored' }),
  missingParts: Type.Array(Type.Integer(), { description: 'Parts still to send; none: finalize the upload' }),
})

const partNumberParam = Type.String({ pattern: '^[1-9][0-9]{0,4}$', description: 'The part, from 1' })

const description =
  "Exactly the part's bytes (part n is the file from (n - 1) * partSize, partSize bytes or what is left), in any order, two at a time if you like; a part sent again replaces itself. begin and resume answer each part's url and headers."

export const storagePartOperations = [
  defineOperation({
    method: 'PUT',
    path: '/v1/websites/{websiteId}/objects/{objectId}/parts/{partNumber}',
    operationId: 'storage.uploadPart',
    capability: 'storage.write',
    rateClass: 'standard',
    uploadToken: true,
    tool: null,
    tag: 'Storage',
    summary: 'Send one part of a large upload',
    description: `${description} Takes the credential of the API, or the upload token of the part's ready command.`,
    params: Type.Object(
      {
        websiteId: Type.String({ description: 'Website id (`ws_…`)' }),
        objectId: Type.String({ description: 'The upload id (`upl_…`)' }),
        partNumber: partNumberParam,
      },
      { additionalProperties: false },
    ),
    streamsBody: UPLOAD_BODY,
    response: PartResult,
    async handle(ctx, { params, stream }) {
      const site = ctx.website!.record
      if (site.kind !== 'storage')
        throw new ApiError('conflict', `Website ${site.id} is a ${site.kind} site; files are shared from a storage website`, {
          reason: 'wrong_kind',
        })
      return receivePart(ctx.registry.files, site.id, params.objectId, Number(params.partNumber), stream!)
    },
  }),
]
