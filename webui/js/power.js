// @ts-check
// power.js: the telemetry history behind the power panel's charts. Owns its column
// layout (t, total power, energy per frame, CPU, GPU, hottest zone, then one column
// per power-monitor rail in watts, by name in first-seen order), appending each snapshot's
// telemetry point (a point already held, by its time stamp, is skipped: snapshots
// repeat a sample the telemetry thread has not renewed yet), and the chart specs of
// those columns. Must not fetch or touch the DOM: pages/live.js feeds it, charts.js
// draws it, views/power.js writes the numbers.

import { WINDOW_S, cssColor } from './charts.js';
import * as fmt from './format.js';
import { SeriesWindow } from './series.js';

/** Rails charted at most (Jetson AGX Orin has 6 across two chips). */
export const MAX_RAILS = 8;
/** Rows kept: 60 s at the highest sampling rate the board sends (10 Hz), with room. */
const ROWS = 1024;
/** Points further apart than this are not joined by a line (an outage). */
const GAP_S = 2.5;

const COL_POWER = 1;
const COL_ENERGY = 2;
const COL_CPU = 3;
const COL_GPU = 4;
const COL_TEMP = 5;
const COL_RAIL0 = 6;
export const TELEMETRY_COLUMNS = COL_RAIL0 + MAX_RAILS;

/** @typedef {import('./stream.js').TelemetryPoint} TelemetryPoint */

/** @param {number | null | undefined} v */
function n(v) {
  return fmt.isNum(v) ? v : NaN;
}

export class TelemetryHistory {
  constructor() {
    this.series = new SeriesWindow(ROWS, TELEMETRY_COLUMNS);
    /** @type {string[]} rail names, by column, first seen first */
    this.rails = [];
    this.lastT = -Infinity;
  }

  /**
   * Appends one point if it is newer than the newest held.
   * @param {TelemetryPoint} p
   * @returns {boolean} whether it was appended
   */
  push(p) {
    if (!p || !(p.t > this.lastT)) return false;
    if (this.series.length > 0 && p.t - this.lastT > GAP_S) this.series.push(this.gapRow((this.lastT + p.t) / 2));
    this.lastT = p.t;
    const row = [p.t, n(p.power_w), n(p.energy_per_frame_mj), n(p.cpu_pct), n(p.gpu_pct), n(p.temp_max_c)];
    for (let i = 0; i < MAX_RAILS; i++) row.push(NaN);
    for (const [name, mw] of Object.entries(p.rails_mw ?? {})) {
      let i = this.rails.indexOf(name);
      if (i < 0 && this.rails.length < MAX_RAILS) i = this.rails.push(name) - 1;
      if (i >= 0) row[COL_RAIL0 + i] = n(mw) / 1000;
    }
    this.series.push(row);
    this.series.trimBefore(p.t - WINDOW_S - 1);
    return true;
  }

  /** @param {number} t @returns {number[]} */
  gapRow(t) {
    const row = new Array(TELEMETRY_COLUMNS).fill(NaN);
    row[0] = t;
    return row;
  }

  /** Forgets everything (the service's clock went back). */
  clear() {
    this.series.clear();
    this.rails = [];
    this.lastT = -Infinity;
  }
}

/** Line colours of the rails, after the total's. */
const RAIL_COLORS = ['#1d5fa8', '#c2570c', '#7434c4', '#0b7a83', '#b8326b', '#6b7a00', '#8a5a00', '#57606a'];

/**
 * Total power (solid, thick) and each rail (thin), W.
 * @param {string[]} rails
 * @returns {import('./charts.js').ChartSpec}
 */
export function powerChart(rails) {
  return {
    scale: 'W',
    log: false,
    height: 170,
    format: fmt.watts,
    tick: (v) => `${+v.toPrecision(3)}\u202fW`,
    columns: [COL_POWER, ...rails.map((_r, i) => COL_RAIL0 + i)],
    lines: [
      { label: 'total', color: cssColor('power') },
      ...rails.map((r, i) => ({ label: r, color: RAIL_COLORS[i % RAIL_COLORS.length], dashed: true })),
    ],
  };
}

/** @returns {import('./charts.js').ChartSpec} energy per inferred frame, mJ */
export function energyChart() {
  return {
    scale: 'mJ',
    log: false,
    height: 130,
    format: (v) => `${fmt.num3(v)}\u202fmJ/frame`,
    tick: (v) => `${v >= 1000 ? fmt.count(v) : +v.toPrecision(3)}\u202fmJ`,
    columns: [COL_ENERGY],
    lines: [{ label: 'energy per frame', color: cssColor('energy') }],
  };
}

/** @returns {import('./charts.js').ChartSpec} CPU and GPU load, % */
export function loadChart() {
  return {
    scale: '%',
    log: false,
    max: 100,
    height: 130,
    format: fmt.pct,
    tick: (v) => `${+v.toPrecision(3)}\u202f%`,
    columns: [COL_CPU, COL_GPU],
    lines: [
      { label: 'CPU', color: cssColor('cpu') },
      { label: 'GPU', color: cssColor('gpu') },
    ],
  };
}

/** @returns {import('./charts.js').ChartSpec} hottest thermal zone, °C */
export function tempChart() {
  return {
    scale: '°C',
    log: false,
    height: 130,
    format: fmt.celsius,
    tick: (v) => `${+v.toPrecision(3)}\u202f°C`,
    columns: [COL_TEMP],
    lines: [{ label: 'hottest zone', color: cssColor('temp') }],
  };
}
