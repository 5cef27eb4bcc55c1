// @ts-check
// series.js: the chart history, as fixed-capacity columns of Float64Array in
// uPlot's column layout [xs, ys…] (x in Unix seconds). Owns memory and trimming
// only: no DOM, no uPlot, no network. pages/live.js appends a row per snapshot
// (charts.js's LatencyColumns, power.js's TelemetryHistory lay them out);
// charts.js reads columns() on each redraw.
//
// Each column is a ring stored twice (index i and i + capacity), so the live
// window is always one contiguous subarray: reading it allocates views, never
// copies, and appending is O(1) with no allocation.

export class SeriesWindow {
  /**
   * @param {number} capacity most rows kept; the oldest is dropped beyond it
   * @param {number} columns number of columns, x included
   */
  constructor(capacity, columns) {
    this.capacity = capacity;
    /** @type {Float64Array[]} */
    this.cols = Array.from({ length: columns }, () => new Float64Array(2 * capacity));
    /** index of the oldest row */
    this.head = 0;
    /** number of rows held */
    this.length = 0;
  }

  /**
   * Appends one row; x must not be less than the last x.
   * @param {ArrayLike<number>} row one value per column, x first; NaN marks "no value"
   */
  push(row) {
    if (this.length === this.capacity) {
      this.head = (this.head + 1) % this.capacity;
      this.length -= 1;
    }
    const i = (this.head + this.length) % this.capacity;
    for (let c = 0; c < this.cols.length; c++) {
      const v = row[c];
      this.cols[c][i] = v;
      this.cols[c][i + this.capacity] = v;
    }
    this.length += 1;
  }

  /**
   * Drops the rows whose x is below minX.
   * @param {number} minX
   */
  trimBefore(minX) {
    const xs = this.cols[0];
    while (this.length > 0 && xs[this.head] < minX) {
      this.head = (this.head + 1) % this.capacity;
      this.length -= 1;
    }
  }

  clear() {
    this.head = 0;
    this.length = 0;
  }

  /** @returns {number} the newest x, or NaN when empty */
  lastX() {
    if (this.length === 0) return NaN;
    return this.cols[0][this.head + this.length - 1];
  }

  /**
   * @param {number} col
   * @returns {number} the newest value of a column, or NaN when empty
   */
  last(col) {
    if (this.length === 0) return NaN;
    return this.cols[col][this.head + this.length - 1];
  }

  /**
   * The window, oldest row first, as views valid until the next push.
   * @returns {Float64Array[]}
   */
  columns() {
    return this.cols.map((col) => col.subarray(this.head, this.head + this.length));
  }
}
