/** npm run bench:rules — the rules table of bench:serve alone (bench/serve-rules.ts says what it measures). */
import { runBenchmark } from './main.js'
import { measureRules } from './serve-rules.js'

runBenchmark(() => measureRules(Number(process.env.BENCH_DURATION_S ?? 10), Number(process.env.BENCH_REPS ?? 3)))
