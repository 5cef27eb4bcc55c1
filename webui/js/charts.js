// @ts-check
// charts.js: the uPlot charts. Owns the column layout of the history (which
// snapshot field goes in which column), the one options factory every chart is
// built from, cursor sync between charts, resizing (ResizeObserver → setSize)
// and redrawing at most once per animation frame (requestAnimationFrame →
// setData), never per message. Must not fetch or parse: main.js appends rows
// to series.js and calls requestRedraw(). uPlot is the global of
// vendor/uplot/uPlot.iife.min.js, loaded by index.html before this module.

import * as fmt from './format.js';

/** Seconds of history shown. */
export const WINDOW_S = 60;
/** Cursor sync key shared by all charts of the page. */
const SYNC_KEY = 'fpgagdr';

/** @typedef {import('./stream.js').Snapshot} Snapshot */
/** @typedef {import('./stream.js').Stage} Stage */

/** @type {{key: Stage, label: string}[]} */
export const STAGES = [
  { key: 'dma', label: 'DMA' },
  { key: 'preprocess', label: 'Preprocess' },
  { key: 'inference', label: 'Inference' },
  { key: 'end_to_end', label: 'End-to-end' },
];

/**
 * A colour defined in css/app.css (`--stage-dma`, `--fps`…), so the chart lines
 * and the table swatches cannot disagree.
 * @param {string} name custom property name without the leading dashes
 */
function cssColor(name) {
  return getComputedStyle(document.documentElement).getPropertyValue(`--${name}`).trim() || '#1f2328';
}

// Column layout of the SeriesWindow: 0 = t, 1 = fps, then p50 and p99 per stage.
const COL_FPS = 1;
const COL_LAT = 2;
export const COLUMN_COUNT = COL_LAT + 2 * STAGES.length;

/**
 * One history row from a snapshot, in the column layout above. Latencies that
 * are not positive become NaN, which the log scale leaves out.
 * @param {Snapshot} s
 * @returns {number[]}
 */
export function snapshotRow(s) {
  const row = [s.t, fmt.isNum(s.fps) ? s.fps : NaN];
  for (const { key } of STAGES) {
    const p = s.latency_us?.[key];
    row.push(positive(p?.p50), positive(p?.p99));
  }
  return row;
}

/** @param {number | undefined} v */
function positive(v) {
  return fmt.isNum(v) && v > 0 ? v : NaN;
}

/**
 * @typedef {object} LineSpec
 * @property {string} label
 * @property {string} color
 * @property {boolean} [dashed]
 *
 * @typedef {object} ChartSpec
 * @property {string} scale unit key of the y scale: 'µs', 'fps'
 * @property {boolean} log logarithmic y axis
 * @property {number} height plot height in CSS pixels, axes included
 * @property {(v: number) => string} format value with unit, for axis and legend
 * @property {LineSpec[]} lines
 */

/**
 * The options factory: every chart of the page is a time window of WINDOW_S
 * seconds ending at the newest row, cursor-synced with the others.
 * @param {ChartSpec} spec
 * @param {number} width
 * @returns {uPlot.Options}
 */
export function chartOptions(spec, width) {
  const fmtOrNone = (/** @type {number | null} */ v) => (v == null || !Number.isFinite(v) ? fmt.NONE : spec.format(v));
  return {
    width,
    height: spec.height,
    cursor: { sync: { key: SYNC_KEY }, drag: { x: false, y: false } },
    legend: { live: true },
    scales: {
      x: {
        time: true,
        range: (_u, _min, max) => {
          const end = max ?? Date.now() / 1000;
          return [end - WINDOW_S, end];
        },
      },
      [spec.scale]: spec.log
        ? { distr: 3, log: 10 }
        : { range: (_u, _min, max) => [0, niceCeil(Math.max(max ?? 0, 1) * 1.1)] },
    },
    axes: [
      { stroke: '#57606a', grid: { stroke: '#eaeef2', width: 1 }, ticks: { stroke: '#d0d7de', width: 1 } },
      {
        scale: spec.scale,
        size: 64,
        stroke: '#57606a',
        grid: { stroke: '#eaeef2', width: 1 },
        ticks: { stroke: '#d0d7de', width: 1 },
        values: (_u, splits) => splits.map((v) => (!spec.log || isOneTwoFive(v) ? spec.format(v) : '')),
      },
    ],
    series: [
      { label: 'time', value: (_u, v) => (v == null ? fmt.NONE : new Date(v * 1000).toLocaleTimeString()) },
      ...spec.lines.map((l) => ({
        label: l.label,
        scale: spec.scale,
        stroke: l.color,
        width: l.dashed ? 1.25 : 2,
        dash: l.dashed ? [5, 4] : undefined,
        points: { show: false },
        value: (/** @type {uPlot} */ _u, /** @type {number | null} */ v) => fmtOrNone(v),
      })),
    ],
  };
}

/** @param {number} v */
function niceCeil(v) {
  const p = 10 ** Math.floor(Math.log10(v));
  const m = v / p;
  return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}

/** True for 1, 2 and 5 times a power of ten: the labelled ticks of a log axis. */
function isOneTwoFive(/** @type {number} */ v) {
  const m = Math.round(v / 10 ** Math.floor(Math.log10(v) + 1e-9));
  return m === 1 || m === 2 || m === 5;
}

/**
 * The latency chart: p50 (solid) and p99 (dashed) of each stage, log scale.
 * @returns {ChartSpec}
 */
export function latencyChart() {
  return {
    scale: 'µs',
    log: true,
    height: 260,
    format: fmt.latency,
    lines: STAGES.flatMap((s) => [
      { label: `${s.label} p50`, color: cssColor(`stage-${s.key}`) },
      { label: `${s.label} p99`, color: cssColor(`stage-${s.key}`), dashed: true },
    ]),
  };
}

/**
 * The small frame-rate chart.
 * @returns {ChartSpec}
 */
export function fpsChart() {
  return {
    scale: 'fps',
    log: false,
    height: 130,
    format: (v) => `${fmt.fps(v)}\u202ffps`,
    lines: [{ label: 'frames/s', color: cssColor('fps') }],
  };
}

/** The charts of the page, fed from one SeriesWindow. */
export class ChartSet {
  /** @param {import('./series.js').SeriesWindow} series */
  constructor(series) {
    this.series = series;
    /** @type {{plot: uPlot, cols: number[]}[]} */
    this.charts = [];
    this.frameRequested = false;
    this.resizer = new ResizeObserver((entries) => {
      for (const e of entries) {
        const c = this.charts.find((c) => c.plot.root.parentElement === e.target);
        const w = Math.floor(e.contentRect.width);
        if (c && w > 0 && w !== c.plot.width) c.plot.setSize({ width: w, height: c.plot.height });
      }
    });
  }

  /**
   * Builds a chart inside `host`, which decides its width.
   * @param {HTMLElement} host
   * @param {ChartSpec} spec
   * @param {'latency' | 'fps'} which columns to plot
   */
  add(host, spec, which) {
    const cols = which === 'fps'
      ? [0, COL_FPS]
      : [0, ...STAGES.flatMap((_s, i) => [COL_LAT + 2 * i, COL_LAT + 2 * i + 1])];
    const empty = /** @type {uPlot.AlignedData} */ (cols.map(() => []));
    const plot = new uPlot(chartOptions(spec, Math.max(host.clientWidth, 200)), empty, host);
    this.charts.push({ plot, cols });
    this.resizer.observe(host);
  }

  /** Schedules one redraw on the next animation frame; cheap to call per message. */
  requestRedraw() {
    if (this.frameRequested) return;
    this.frameRequested = true;
    requestAnimationFrame(() => {
      this.frameRequested = false;
      const all = this.series.columns();
      for (const { plot, cols } of this.charts) {
        plot.setData(/** @type {uPlot.AlignedData} */ (cols.map((c) => all[c])));
      }
    });
  }
}
