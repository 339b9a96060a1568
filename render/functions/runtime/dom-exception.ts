// DOMException as WebIDL defines it: no library for it runs outside a browser or Node without pulling
// in webidl-conversions, and the class is a few lines.

const CODES: Record<string, number> = {
  IndexSizeError: 1,
  HierarchyRequestError: 3,
  WrongDocumentError: 4,
  InvalidCharacterError: 5,
  NoModificationAllowedError: 7,
  NotFoundError: 8,
  NotSupportedError: 9,
  InvalidStateError: 11,
  SyntaxError: 12,
  InvalidModificationError: 13,
  NamespaceError: 14,
  InvalidAccessError: 15,
  TypeMismatchError: 17,
  SecurityError: 18,
  NetworkError: 19,
  AbortError: 20,
  URLMismatchError: 21,
  QuotaExceededError: 22,
  TimeoutError: 23,
  InvalidNodeTypeError: 24,
  DataCloneError: 25,
}

export class DOMException extends Error {
  readonly #name: string

  constructor(message: unknown = '', name: unknown = 'Error') {
    super(String(message))
    this.#name = String(name)
    // The stack's first line was written by Error's constructor before the name was known: take it again.
    Error.captureStackTrace?.(this, DOMException)
  }

  override get name(): string {
    return this.#name
  }

  get code(): number {
    return Object.prototype.hasOwnProperty.call(CODES, this.#name) ? CODES[this.#name] : 0
  }

  get [Symbol.toStringTag](): string {
    return 'DOMException'
  }
}
