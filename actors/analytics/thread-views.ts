// A serving thread's half of the edge beacon: the same counters as the main thread's, sent to its beacon once a second.
import { BOT, reportOf, Tally, type CountedPages, type TallyReport } from './beacon-tally.js'
import { Hits, judgeAgent, rememberAgent } from './beacon.js'

/** New user agents a thread judges itself per report period (isbot costs microseconds); the rest go raw to the beacon. */
const JUDGED_PER_PERIOD = 200

/** What a thread sends: its tallies of the last period and the views its counters could not hold. */
export interface ViewsReport {
  tallies: TallyReport[]
  raw: Hits
}

/**
 * Counts a serving thread's published page views as the beacon's serving path does (Beacon.count):
 * counters in each snapshot's tally for the minute, nothing allocated per view. A user agent seen
 * for the first time is judged here (isbot, device; up to JUDGED_PER_PERIOD a period, the rest go
 * raw to the beacon, which judges them when it folds) and remembered, so every view after it is a
 * counter bump; a page numbered after its tally opened, or a fifth host, goes raw. `take` hands the
 * period's tallies and raw views over and starts new ones. Nothing here reads a clock: the beacon
 * dates what arrives by its own (the server's one clock, which tests move by hand).
 */
export class ThreadViews {
  #tallies: Tally[] = []
  #raw = new Hits()
  readonly #agents = new Map<string, number>()
  #lastAgent = ''
  #lastDevice = BOT
  #judgedThisPeriod = 0

  constructor(
    readonly enabled: boolean,
    readonly countryHeader: string,
  ) {}

  count(pages: CountedPages, page: number, host: string, referer: string, userAgent: string, country: string): void {
    let device = this.#lastDevice
    if (userAgent !== this.#lastAgent) {
      const judged = this.#agents.get(userAgent) ?? this.#judge(userAgent)
      // Past this period's judging budget (a flood of made-up user agents), the beacon judges it when it folds.
      if (judged === undefined) return this.#pushRaw(pages, page, host, referer, userAgent, country)
      device = judged
      this.#lastAgent = userAgent
      this.#lastDevice = device
    }
    if (device === BOT) return
    let tally = pages.beaconTally
    if (tally === null) {
      // The minute is the main thread's to say, by its clock, when the tally arrives (within a report period).
      tally = pages.beaconTally = new Tally(pages, 0)
      this.#tallies.push(tally)
    }
    const slot = page < tally.pages.length ? tally.hostSlot(host) : -1
    if (slot >= 0) return tally.add(page, slot, referer, device, country)
    this.#pushRaw(pages, page, host, referer, userAgent, country)
  }

  #pushRaw(pages: CountedPages, page: number, host: string, referer: string, userAgent: string, country: string): void {
    this.#raw.push(pages.websiteId, host, pages.pagePath(page), referer, userAgent, country, 0)
  }

  /** The views counted since the last call; the snapshots open new tallies from now on. */
  take(): ViewsReport {
    const tallies = this.#tallies
    const raw = this.#raw
    this.#tallies = []
    this.#raw = new Hits()
    this.#judgedThisPeriod = 0
    for (const tally of tallies) if (tally.counted.beaconTally === tally) tally.counted.beaconTally = null
    return { tallies: tallies.filter((t) => t.views > 0).map(reportOf), raw }
  }

  /** The device code of a user agent seen for the first time, or undefined when this period judged enough already. */
  #judge(userAgent: string): number | undefined {
    if (this.#judgedThisPeriod >= JUDGED_PER_PERIOD) return undefined
    this.#judgedThisPeriod++
    const device = judgeAgent(userAgent)
    rememberAgent(this.#agents, userAgent, device)
    return device
  }
}
