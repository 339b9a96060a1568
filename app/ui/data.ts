import { useCallback, useEffect, useRef, useState } from 'react'
import { ApiError } from '../api.js'

export interface Resource<T> {
  data: T | undefined
  error: ApiError | null
  loading: boolean
  /** Loads again (after a change), keeping what is shown until the answer arrives. */
  reload(): Promise<void>
  setData(next: T): void
}

/** Loads what `load` answers when `key` changes; the data loading of a screen, at its edge. */
export function useResource<T>(key: string, load: (signal: AbortSignal) => Promise<T>): Resource<T> {
  const [data, setData] = useState<T>()
  const [error, setError] = useState<ApiError | null>(null)
  const [loading, setLoading] = useState(true)
  const loadRef = useRef(load)
  loadRef.current = load
  const controller = useRef<AbortController | null>(null)
  const run = useCallback(async () => {
    controller.current?.abort()
    const current = new AbortController()
    controller.current = current
    setLoading(true)
    try {
      const value = await loadRef.current(current.signal)
      if (current.signal.aborted) return
      setData(value)
      setError(null)
    } catch (caught) {
      if (current.signal.aborted) return
      setError(caught instanceof ApiError ? caught : new ApiError(0, 'internal', (caught as Error).message, undefined))
    } finally {
      if (!current.signal.aborted) setLoading(false)
    }
  }, [])
  useEffect(() => {
    setData(undefined)
    void run()
    return () => controller.current?.abort()
  }, [key, run])
  return { data, error, loading, reload: run, setData }
}

/** The state of one action (a form's submit, a button): busy, and the API's error when it failed. */
export function useAction<A extends unknown[]>(
  action: (...args: A) => Promise<unknown>,
): { run(...args: A): Promise<boolean>; busy: boolean; error: ApiError | null; clear(): void } {
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<ApiError | null>(null)
  const run = async (...args: A): Promise<boolean> => {
    setBusy(true)
    setError(null)
    try {
      await action(...args)
      return true
    } catch (caught) {
      setError(caught instanceof ApiError ? caught : new ApiError(0, 'internal', (caught as Error).message, undefined))
      return false
    } finally {
      setBusy(false)
    }
  }
  return { run, busy, error, clear: () => setError(null) }
}
