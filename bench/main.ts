/** Runs a benchmark's main function and exits: 0 when it printed its numbers, 1 with the error otherwise. */
export function runBenchmark(main: () => Promise<void>): void {
  main().then(
    () => process.exit(0),
    (error: unknown) => {
      console.error(error)
      process.exit(1)
    },
  )
}
