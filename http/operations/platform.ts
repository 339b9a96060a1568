import { Type } from '@sinclair/typebox'
import { defineOperation, definePublicOperation } from '../operation.js'

const Packages = Type.Object({ packages: Type.Record(Type.String(), Type.String()) })

export const platformOperations = [
  definePublicOperation({
    public: true,
    method: 'GET',
    path: '/',
    operationId: 'platform.describe',
    rateClass: 'standard',
    tool: null,
    tag: 'Account',
    summary: 'What this server is',
    description: 'Names the service and its version, and where its OpenAPI document and MCP endpoint are. No credentials needed.',
    response: Type.Object({ name: Type.String(), version: Type.String(), openapi: Type.String(), mcp: Type.String() }),
    handle: (ctx) => ({ name: 'Plinth', version: ctx.version, openapi: ctx.urls.api('/openapi.json'), mcp: ctx.urls.api('/v1/mcp') }),
  }),
  definePublicOperation({
    public: true,
    method: 'GET',
    path: '/openapi.json',
    operationId: 'platform.openapi',
    rateClass: 'standard',
    tool: null,
    tag: 'Account',
    summary: 'This OpenAPI document',
    description:
      'The OpenAPI 3.1 description of every operation, with its capability (x-capability), rate-limit class and MCP tool. No credentials needed.',
    response: Type.Object({}, { additionalProperties: true, description: 'An OpenAPI 3.1 document' }),
    headers: { 'cache-control': 'no-cache' },
    handle: (ctx) => ctx.openApi(),
  }),
  definePublicOperation({
    public: true,
    method: 'GET',
    path: '/api',
    operationId: 'platform.publicPackages',
    rateClass: 'standard',
    tool: null,
    tag: 'Account',
    summary: 'Packages framework sites may import (public)',
    description:
      'The packages framework source may import and their exact versions, React included, for anyone to read; the same list as GET /v1/packages. No credentials needed.',
    response: Packages,
    handle: (ctx) => ({ packages: { ...ctx.packages } }),
  }),
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
    response: Packages,
    handle: (ctx) => ({ packages: { ...ctx.packages } }),
  }),
]
