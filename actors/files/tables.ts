import type { StoreFor } from '../../core/store/reader.js'

/** The tables this concern owns: shared files, uploads in progress, assets and their variants, organizations' large deploy files, and the blob directory's files. */
export type FilesStoreOwn =
  | 'assetVariants'
  | 'assets'
  | 'assetsByWebsite'
  | 'fileRefs'
  | 'folderLabels'
  | 'objectsByPath'
  | 'objectsExpiring'
  | 'orgBlobs'
  | 'storageBytes'
  | 'storageObjects'
  | 'storageUploads'
  | 'uploadsByOrg'
  | 'variantCounts'
  | 'blobs'

/** The store as this concern holds it: its own tables writable, every other table read-only. */
export type FilesStore = StoreFor<FilesStoreOwn>
