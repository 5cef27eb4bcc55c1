// @ts-check
// backfill.js: joins a chart's REST history with the live stream opened at the
// same time. Until the history has come, stream rows wait here; then the
// history goes first and the waiting rows follow, so a chart receives its rows
// in time order (the consumer drops a row not newer than its newest, which
// removes the overlap of the two). Owns that ordering only: no fetch, no DOM,
// no chart. Used by main.js for the fps and latency charts and by power.js for
// the telemetry charts.

/** @template {{t: number}} T */
export class Backfill {
  /** @param {number} limit most stream rows kept while waiting (the oldest go first) */
  constructor(limit) {
    this.limit = limit;
    /** whether the history has come (or failed): from then on rows pass through */
    this.loaded = false;
    /** @type {T[]} stream rows that came before the history */
    this.pending = [];
  }

  /**
   * Rows from the stream.
   * @param {T[]} rows oldest first
   * @returns {T[]} the rows to append now: all of them once loaded, none before
   */
  hold(rows) {
    if (this.loaded) return rows;
    this.pending.push(...rows);
    if (this.pending.length > this.limit) this.pending.splice(0, this.pending.length - this.limit);
    return [];
  }

  /**
   * The history came; pass [] when it could not be read.
   * @param {T[]} history oldest first
   * @returns {T[]} the rows to append now: the history, then the rows that waited
   */
  fill(history) {
    this.loaded = true;
    const out = history.concat(this.pending);
    this.pending = [];
    return out;
  }
}
