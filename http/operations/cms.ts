// The CMS operations (deprecated): on the schema (collections and fields), then on items.
import { cmsSchemaOperations } from './cms-schema.js'
import { cmsItemOperations } from './cms-items.js'

export const cmsOperations = [...cmsSchemaOperations, ...cmsItemOperations]
