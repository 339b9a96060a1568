// Types for the runtime's libraries that ship none (their shapes as the runtime uses them).
declare module 'core-js-pure/stable/url/index.js' {
  const URL: typeof globalThis.URL
  export default URL
}

declare module 'core-js-pure/stable/url-search-params/index.js' {
  const URLSearchParams: typeof globalThis.URLSearchParams
  export default URLSearchParams
}

declare module '@ungap/structured-clone' {
  const structuredClone: (value: unknown, options?: { transfer?: unknown[]; json?: boolean; lossy?: boolean }) => unknown
  export default structuredClone
}
