// sharp, loaded at the first image it is asked about: libvips and its bindings cost every start a sixth of a second otherwise.
import type sharpType from 'sharp'

let loading: Promise<typeof sharpType> | null = null

export function loadSharp(): Promise<typeof sharpType> {
  return (loading ??= import('sharp').then((module) => module.default))
}
