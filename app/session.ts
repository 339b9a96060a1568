// Who is signed in and where they act: the context every screen reads, apart from the shell that provides it.
import { createContext, useContext } from 'react'

export interface Me {
  organization: { id: string; name: string }
  access: { kind: string; role: string }
  capabilities: string[]
  person?: {
    id: string
    email: string | null
    name: string
    personalWorkspaceId: string
    /** An address asked for, waiting for its link to be opened. */
    pendingEmail: string | null
    /** The workspace a sign-in lands in; null: the personal one. */
    lastWorkspaceId: string | null
  }
  workspaces?: { id: string; name: string; role: string; personal: boolean }[]
}

/** Who is signed in and where they act: every screen reads it. */
export interface Session {
  me: Me
  billingEnabled: boolean
  can(capability: string): boolean
  /** Loads /v1/me again (after a change of name, a new workspace). */
  refresh(): Promise<void>
}

export const SessionContext = createContext<Session | null>(null)

export function useSession(): Session {
  return useContext(SessionContext)!
}
