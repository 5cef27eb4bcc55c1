// @ts-check
// power.js: the telemetry history behind the power panel's charts. Owns its
// column layout (t, total power, energy per frame, CPU, GPU, hottest zone,
// then one column per INA3221 rail in watts), loading it from GET
// /telemetry/history and extending it with the `telemetry` point of each SSE
// snapshot (a point already held, by time stamp, is skipped), and the chart
// specs of those columns. Must not fetch or touch the DOM: main.js feeds it,
// charts.js draws it, views/power.js writes the numbers.

import { Backfill } from './backfill.js';
import { WINDOW_S, cssColor } from './charts.js';
import * as fmt from './format.js';
import { SeriesWindow } from './series.js';

/** Rails charted at most (Jetson AGX Orin has 6 across two chips). */
export const MAX_RAILS = 8;
/** Rows kept: 60 s at the highest sampling rate the service allows (50 Hz). */
const ROWS = 4096;

const COL_POWER = 1;
const COL_ENERGY = 2;
const COL_CPU = 3;
const COL_GPU = 4;
const COL_TEMP = 5;
const COL_RAIL0 = 6;
export const TELEMETRY_COLUMNS = COL_RAIL0 + MAX_RAILS;

/** @typedef {import('./api.js').TelemetryPoint} TelemetryPoint */

/** @param {number | null | undefined} v */
function n(v) {
  return fmt.isNum(v) ? v : NaN;
}

export class TelemetryHistory {
  constructor() {
    this.series = new SeriesWindow(ROWS, TELEMETRY_COLUMNS);
    /** @type {string[]} rail names, the order of every point's rails_mw */
    this.rails = [];
    this.lastT = -Infinity;
    /** @type {Backfill<TelemetryPoint>} stream points wait here until the history came */
    this.backfill = new Backfill(ROWS);
  }

  /** whether the REST history has been loaded; until then points wait */
  get loaded() {
    return this.backfill.loaded;
  }

  /**
   * Replaces the history with GET /telemetry/history's, then appends the
   * stream's points that arrived meanwhile.
   * @param {import('./api.js').History} h
   */
  load(h) {
    this.series.clear();
    this.lastT = -Infinity;
    this.rails = (h.rails ?? []).slice(0, MAX_RAILS);
    for (const p of this.backfill.fill(h.points ?? [])) this.append(p);
  }

  /**
   * Appends one point if it is newer than the newest held.
   * @param {TelemetryPoint} p
   * @returns {boolean} whether it was appended
   */
  push(p) {
    let added = false;
    for (const q of this.backfill.hold([p])) added = this.append(q) || added;
    return added;
  }

  /** @param {TelemetryPoint} p */
  append(p) {
    if (!p || !(p.t > this.lastT)) return false;
    this.lastT = p.t;
    const row = [p.t, n(p.power_w), n(p.energy_per_frame_mj), n(p.cpu_pct), n(p.gpu_pct), n(p.temp_max_c)];
    for (let i = 0; i < MAX_RAILS; i++) row.push(n(p.rails_mw?.[i]) / 1000);
    this.series.push(row);
    this.series.trimBefore(p.t - WINDOW_S - 1);
    return true;
  }

  /** @returns {boolean} whether points carry more rails than names are known (reload the history) */
  railsUnknown(/** @type {TelemetryPoint} */ p) {
    return Math.min(p.rails_mw?.length ?? 0, MAX_RAILS) > this.rails.length;
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
    tick: (v) => `${+v.toPrecision(3)}\u202fmJ`,
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
