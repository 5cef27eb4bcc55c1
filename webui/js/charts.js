// @ts-check
// charts.js: the uPlot charts. Owns the column layout of the pipeline history (which
// snapshot field goes in which column: LatencyColumns), the one options factory
// every chart is built from (its y axis as wide as its longest label), cursor sync
// between charts, resizing (ResizeObserver → setSize) and redrawing at most once per
// animation frame (requestAnimationFrame → setData), never per message. Must not
// fetch or parse: pages/live.js appends rows to series.js and calls requestRedraw().
// uPlot is the global of vendor/uplot/uPlot.iife.min.js, loaded by index.html
// before this module. End of a frame's path on the page (with views/status.js).

import * as fmt from './format.js';

/** Seconds of history shown. */
export const WINDOW_S = 60;
/** Cursor sync key shared by all charts of the page. */
const SYNC_KEY = 'fpgagdr';

/** @typedef {import('./stream.js').Snapshot} Snapshot */
/** @typedef {import('./stream.js').Stage} Stage */

/**
 * Every stage, in path order; the latency chart draws the ones the user picks.
 * @type {{key: Stage, label: string}[]}
 */
export const STAGES = [
  { key: 'dma', label: 'DMA' },
  { key: 'queue', label: 'Queue' },
  { key: 'd2h', label: 'D→H copy' },
  { key: 'preprocess', label: 'Preprocess' },
  { key: 'inference', label: 'Inference' },
  { key: 'end_to_end', label: 'End-to-end' },
];

/**
 * A colour defined in css/app.css (`--stage-dma`, `--fps`…), so the chart lines
 * and the table swatches cannot disagree.
 * @param {string} name custom property name without the leading dashes
 */
export function cssColor(name) {
  return getComputedStyle(document.documentElement).getPropertyValue(`--${name}`).trim() || '#1f2328';
}

/**
 * The column layout of the pipeline history: 0 = t, 1 = frames/s, 2 = GB/s (as the
 * service computed them over its last second), then p50 and p99 of every stage.
 */
export class LatencyColumns {
  constructor() {
    this.count = 3 + 2 * STAGES.length;
  }

  /** @param {string} stage @returns {number} the p50 column; p99 is the next */
  of(stage) {
    return 3 + 2 * STAGES.findIndex((s) => s.key === stage);
  }

  /**
   * A snapshot as a row; a latency that is missing or not positive is NaN (a gap).
   * @param {Snapshot} s
   * @returns {number[]}
   */
  row(s) {
    const row = [s.t, num(s.fps), num(s.gbps)];
    for (const { key } of STAGES) {
      const p = s.latency_us?.[key];
      row.push(positive(p?.p50), positive(p?.p99));
    }
    return row;
  }

  /** @param {number} t @returns {number[]} a row of no value at t, where lines break */
  gap(t) {
    const row = new Array(this.count).fill(NaN);
    row[0] = t;
    return row;
  }
}

/** @param {number | undefined} v */
function num(v) {
  return fmt.isNum(v) ? v : NaN;
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
 * @property {(v: number) => string} format value with unit, for the legend
 * @property {(v: number) => string} tick value with unit, short, for the y axis
 * @property {number} [max] a fixed top of the y axis (100 for a share in %); else it follows the data
 * @property {number[]} columns the SeriesWindow columns plotted, one per line
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
  // a log axis has a split at every 1…9 × 10^n; labels, ticks and grid keep 1, 2 and 5
  /** @type {uPlot.Axis.Filter | undefined} */
  const yFilter = spec.log ? (_u, splits) => splits.map((v) => (isOneTwoFive(v) ? v : null)) : undefined;
  const fmtOrNone = (/** @type {number | null} */ v) => (v == null || !Number.isFinite(v) ? fmt.NONE : spec.format(v));
  return {
    width,
    height: spec.height,
    cursor: { sync: { key: SYNC_KEY }, drag: { x: false, y: false } },
    legend: { live: true },
    // with no cursor on the plot, the legend shows the newest values, not dashes
    hooks: { draw: [showNewestInLegend] },
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
        : { range: (_u, _min, max) => [0, spec.max ?? niceCeil(Math.max(max ?? 0, 1) * 1.1)] },
    },
    axes: [
      {
        stroke: '#57606a',
        space: 70,
        grid: { stroke: '#eaeef2', width: 1 },
        ticks: { stroke: '#d0d7de', width: 1 },
        values: (_u, splits) => splits.map(clockTime),
      },
      {
        scale: spec.scale,
        size: labelsWidth,
        stroke: '#57606a',
        // uPlot merges these over its defaults: a key set to undefined would erase one
        grid: { stroke: '#eaeef2', width: 1, ...(yFilter && { filter: yFilter }) },
        ticks: { stroke: '#d0d7de', width: 1, ...(yFilter && { filter: yFilter }) },
        ...(yFilter && { filter: yFilter }),
        values: (_u, splits) => splits.map((v) => (v == null ? '' : spec.tick(v))),
      },
    ],
    series: [
      { label: 'time', value: (_u, v) => (v == null ? fmt.NONE : clockTime(v)) },
      ...spec.lines.map((l) => ({
        label: l.label,
        scale: spec.scale,
        stroke: l.color,
        width: l.dashed ? 1.25 : 2,
        ...(l.dashed && { dash: [5, 4] }),
        points: { show: false },
        value: (/** @type {uPlot} */ _u, /** @type {number | null} */ v) => fmtOrNone(v),
      })),
    ],
  };
}

/**
 * The y axis as wide as its longest label (ticks and gap included), so a label such
 * as "80 000 mJ" is never cut on the left. uPlot calls it again after the labels
 * change; from the third call it keeps what it has, so it settles.
 * @param {uPlot} u
 * @param {string[] | null} values the axis' labels (null before the first pass)
 * @param {number} axisIdx
 * @param {number} cycleNum
 * @returns {number} CSS pixels
 */
function labelsWidth(u, values, axisIdx, cycleNum) {
  const axis = /** @type {any} */ (u.axes[axisIdx]);
  if (cycleNum > 1 && typeof axis._size === 'number') return axis._size;
  const fixed = (axis.ticks?.size ?? 10) + (axis.gap ?? 5) + 4;
  const longest = (values ?? []).reduce((/** @type {string} */ a, /** @type {string | null} */ v) => (String(v ?? '').length > a.length ? String(v) : a), '');
  if (!longest) return 48;
  const font = Array.isArray(axis.font) ? axis.font[0] : axis.font;
  u.ctx.save();
  u.ctx.font = String(font ?? '12px system-ui');
  const w = u.ctx.measureText(longest).width / (window.devicePixelRatio || 1);
  u.ctx.restore();
  return Math.max(48, Math.ceil(w + fixed));
}

/** @param {uPlot} u */
function showNewestInLegend(u) {
  const n = u.data[0].length;
  if (n > 0 && !((u.cursor.left ?? -1) >= 0)) u.setLegend({ idx: n - 1 }, false);
}

/**
 * Unix seconds as local wall-clock time, "15:38:40".
 * @param {number} t
 */
function clockTime(t) {
  return new Date(t * 1000).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit', hour12: false });
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
 * The latency chart: p50 (solid) and p99 (dashed) of the picked stages, log scale.
 * @param {LatencyColumns} columns
 * @param {string[]} picked stage keys
 * @returns {ChartSpec}
 */
export function latencyChart(columns, picked) {
  const shown = STAGES.filter((s) => picked.includes(s.key));
  return {
    scale: 'µs',
    log: true,
    height: 260,
    format: fmt.latency,
    tick: fmt.latencyTick,
    columns: shown.flatMap((s) => [columns.of(s.key), columns.of(s.key) + 1]),
    lines: shown.flatMap((s) => [
      { label: `${s.label} p50`, color: cssColor(`stage-${s.key}`) },
      { label: `${s.label} p99`, color: cssColor(`stage-${s.key}`), dashed: true },
    ]),
  };
}

/**
 * The small frame-rate chart: the service's one-second rate.
 * @param {LatencyColumns} _columns
 * @returns {ChartSpec}
 */
export function fpsChart(_columns) {
  return {
    scale: 'fps',
    log: false,
    height: 130,
    format: (v) => `${fmt.fps(v)}\u202ffps`,
    tick: (v) => `${+v.toPrecision(3)}\u202ffps`,
    columns: [1],
    lines: [{ label: 'frames/s', color: cssColor('fps') }],
  };
}

/** The charts of the page, fed from one SeriesWindow. */
export class ChartSet {
  /** @param {import('./series.js').SeriesWindow} series */
  constructor(series) {
    this.series = series;
    /** @type {{host: Element, plot: uPlot, cols: number[]}[]} */
    this.charts = [];
    this.frameRequested = false;
    // the host's width follows the page layout; the chart's height is fixed
    this.resizer = new ResizeObserver((entries) => {
      for (const e of entries) {
        const c = this.charts.find((c) => c.host === e.target);
        const w = Math.floor(e.contentRect.width);
        if (c && w > 0 && w !== c.plot.width) c.plot.setSize({ width: w, height: c.plot.height });
      }
    });
  }

  /**
   * Builds a chart inside `host`, an otherwise empty element that decides its width.
   * @param {HTMLElement} host
   * @param {ChartSpec} spec
   */
  add(host, spec) {
    const cols = [0, ...spec.columns];
    const empty = /** @type {uPlot.AlignedData} */ (cols.map(() => new Float64Array(0)));
    const plot = new uPlot(chartOptions(spec, Math.max(host.clientWidth, 200)), empty, host);
    this.charts.push({ host, plot, cols });
    this.resizer.observe(host);
  }

  /**
   * Removes the chart built in `host` (to build it anew with other lines).
   * @param {HTMLElement} host
   */
  remove(host) {
    const i = this.charts.findIndex((c) => c.host === host);
    if (i < 0) return;
    this.resizer.unobserve(host);
    this.charts[i].plot.destroy();
    this.charts.splice(i, 1);
  }

  /** Schedules one redraw on the next animation frame; cheap to call per message. */
  requestRedraw() {
    if (this.frameRequested) return;
    this.frameRequested = true;
    requestAnimationFrame(() => {
      this.frameRequested = false;
      const all = this.series.columns();
      for (const { host, plot, cols } of this.charts) {
        const data = cols.map((c, i) => (i === 0 ? all[c] : withGaps(all[c])));
        plot.setData(/** @type {uPlot.AlignedData} */ (data));
        // rows drawn, for people reading the DOM and for the browser tests
        if (host instanceof HTMLElement) host.dataset.points = String(all[0].length);
      }
    });
  }
}

/**
 * uPlot leaves a gap for null, not for NaN; a column holding NaN is copied
 * with NaN turned into null. Columns without one are passed as they are.
 * @param {Float64Array} col
 * @returns {Float64Array | (number | null)[]}
 */
function withGaps(col) {
  if (!col.some(Number.isNaN)) return col;
  return Array.from(col, (v) => (Number.isNaN(v) ? null : v));
}
