// The anonymous endpoints (spec: Anonymous site and credential), gathered from one file per sub-resource.
import { anonymousClaimOperations } from './anonymous-claims.js'
import { anonymousObjectOperations } from './anonymous-objects.js'
import { anonymousSiteOperations } from './anonymous-sites.js'

/** Credentials and sites, then the storage site's shared files, then claims. */
export const anonymousOperations = [...anonymousSiteOperations, ...anonymousObjectOperations, ...anonymousClaimOperations]
