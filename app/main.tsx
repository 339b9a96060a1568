import { StrictMode } from 'react'
import { createRoot } from 'react-dom/client'
import { App } from './shell.js'

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <App />
  </StrictMode>,
)
