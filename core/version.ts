/** Plinth's own version: `GET /` and the MCP server report it, and a backup's manifest records it. */
export const PLINTH_VERSION = '0.1.0'
