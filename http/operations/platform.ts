import { Type } from '@sinclair/typebox'
import { defineOperation } from '../operation.js'

export const platformOperations = [
  defineOperation({
    method: 'GET',
    path: '/v1/packages',
    operationId: 'platform.packages',
    capability: 'websites.read',
    rateClass: 'standard',
    tool: 'list_packages',
    tag: 'Account',
    summary: 'Packages framework sites may import',
    description:
      'Lists the packages framework source may import (the same list as the public GET /api) and their exact versions, React included. Import pinned packages with the version in the specifier, e.g. clsx@2.1.1; this list is authoritative.',
    response: Type.Object({ packages: Type.Record(Type.String(), Type.String()) }),
    handle: (ctx) => ({ packages: { ...ctx.packages } }),
  }),
]
