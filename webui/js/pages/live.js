// @ts-check
// pages/live.js: the Live page. Follow one frame: stream.js hands over each event's
// batch of snapshots (the bounded replay first, then live ones); every snapshot
// becomes a chart row (charts.js for rates and latencies, power.js for telemetry),
// and the newest of a batch, which carries the latest result and the full telemetry
// sample, is written into the page (views/status.js, views/power.js).
// Next hop: views/status.js (numbers, the result) and charts.js (the charts).
//
// Owns: the page's chart history (series.js windows), the stage picker's choice
// (kept in localStorage), and when to re-read GET /status: when a snapshot names a
// pipeline generation the status on screen is not of (a start, a stop, a failure, a
// config change), and when the stream comes back after an outage. It holds no
// second copy of anything the snapshots carry and fetches nothing else.

import { getStatus, pipeline } from '../api.js';
import { ChartSet, LatencyColumns, STAGES, fpsChart, latencyChart } from '../charts.js';
import { TelemetryHistory, energyChart, loadChart, powerChart, tempChart } from '../power.js';
import { SeriesWindow } from '../series.js';
import { FrameView } from '../views/frameview.js';
import { OutputsView } from '../views/outputs.js';
import { PowerView } from '../views/power.js';
import { ResultsView } from '../views/results.js';
import { StatusView } from '../views/status.js';

/** Rows of chart history: 60 s at 10 snapshots/s, with room to spare. */
const HISTORY_ROWS = 1024;
/** Snapshots further apart than this are not joined by a line (an outage). */
const GAP_S = 2.5;
/** localStorage key of the stages the latency chart draws. */
const STAGES_KEY = 'fpgagdr.stages';
/** Drawn until the user picks: end-to-end is what a frame costs. */
const DEFAULT_STAGES = ['end_to_end'];

/** @param {unknown} e */
function message(e) {
  return e instanceof Error ? e.message : String(e);
}

/** @returns {string[]} the stages picked before, or the default */
function storedStages() {
  try {
    const v = JSON.parse(localStorage.getItem(STAGES_KEY) ?? 'null');
    if (Array.isArray(v) && v.every((s) => STAGES.some((x) => x.key === s))) return v;
  } catch {
    // unreadable: the default
  }
  return DEFAULT_STAGES;
}

/**
 * Builds the Live page inside the document.
 * @param {StatusView} view the page's numbers (also the app's alert bar)
 */
export function livePage(view) {
  const columns = new LatencyColumns();
  const series = new SeriesWindow(HISTORY_ROWS, columns.count);
  const charts = new ChartSet(series);
  const latencyHost = view.el('[data-chart="latency"]');
  let picked = storedStages();
  charts.add(latencyHost, latencyChart(columns, picked));
  charts.add(view.el('[data-chart="fps"]'), fpsChart(columns));
  const picker = view.el('[data-testid="stage-picker"]');
  picker.replaceChildren(...STAGES.map(({ key, label }) => {
    const l = document.createElement('label');
    const box = document.createElement('input');
    box.type = 'checkbox';
    box.value = key;
    box.checked = picked.includes(key);
    box.addEventListener('change', () => {
      picked = STAGES.map((s) => s.key).filter((k) => picker.querySelector(`input[value="${k}"]`)?.matches(':checked'));
      try {
        localStorage.setItem(STAGES_KEY, JSON.stringify(picked));
      } catch {
        // not kept: the default next time
      }
      charts.remove(latencyHost);
      charts.add(latencyHost, latencyChart(columns, picked));
      charts.requestRedraw();
    });
    const swatch = document.createElement('span');
    swatch.className = 'swatch';
    swatch.dataset.stage = key;
    l.append(box, swatch, label);
    return l;
  }));

  // The frame view: a recent frame (a copy the inference thread takes about once a
  // second) beside its own result, read once a second while shown (views/frameview.js).
  const frameView = new FrameView(
    /** @type {HTMLImageElement} */ (view.el('[data-testid="frame-view"]')),
    view.el('[data-testid="frame-view-caption"]'),
  );
  // Asked for only once a result is on screen (before that there is no frame: a 404),
  // and only while frames flow (a stopped pipeline's view does not change).
  setInterval(() => {
    if (document.visibilityState !== 'visible' || !lastResult) return;
    if (lastState !== 'running' && frameView.shown !== '') return;
    void frameView.refresh();
  }, 1000);

  // The Outputs panel: status `outputs` every two seconds while shown (MQTT state and
  // drops change without a new pipeline generation, so the status above is not enough).
  const outputs = new OutputsView(view.el('[data-testid="outputs"]'));
  const readOutputs = async () => {
    if (document.visibilityState !== 'visible') return;
    try {
      const st = /** @type {{outputs?: import('../views/outputs.js').Outputs}} */ (await getStatus());
      if (st.outputs) outputs.show(st.outputs);
    } catch {
      // the status line above says when the service cannot be read
    }
  };
  void readOutputs();
  setInterval(readOutputs, 2000);

  // The live results list: every frame's result and alert from
  // GET /api/v1/results/stream (its own EventSource: the snapshot stream carries one
  // result per 100 ms); EventSource reconnects by itself after an outage.
  const results = new ResultsView(view.el('[data-testid="results-list"]'), view.el('[data-testid="alert-banner"]'));
  const resultStream = new EventSource('/api/v1/results/stream');
  resultStream.addEventListener('result', (e) => {
    results.pushResult(JSON.parse(/** @type {MessageEvent} */ (e).data));
  });
  resultStream.addEventListener('alert', (e) => {
    results.pushAlert(JSON.parse(/** @type {MessageEvent} */ (e).data));
  });

  const power = new PowerView(view.el('[data-testid="power-panel"]'));
  const telemetry = new TelemetryHistory();
  const tcharts = new ChartSet(telemetry.series);
  const powerHost = view.el('[data-chart="power"]');
  tcharts.add(powerHost, powerChart([]));
  tcharts.add(view.el('[data-chart="energy"]'), energyChart());
  tcharts.add(view.el('[data-chart="load"]'), loadChart());
  tcharts.add(view.el('[data-chart="temp"]'), tempChart());
  let chartedRails = '';

  /** generation of the status on screen; a snapshot of another one re-reads it */
  let statusGeneration = /** @type {number | null} */ (null);
  let statusInFlight = false;
  let statusAgain = false;

  async function refreshStatus() {
    if (statusInFlight) {
      statusAgain = true;
      return;
    }
    statusInFlight = true;
    try {
      const st = await getStatus();
      statusGeneration = st.pipeline.generation ?? null;
      view.showStatus(st);
    } catch (e) {
      view.showError(`Could not read the service status: ${message(e)}`);
    } finally {
      statusInFlight = false;
      if (statusAgain) {
        statusAgain = false;
        refreshStatus();
      }
    }
  }

  /** generation of the last Start/Stop reply: a snapshot of an older one was sampled
   * before the action, and its state is not shown (generations only grow) */
  let actionGeneration = -Infinity;
  /** the pipeline state shown (a Start/Stop reply's, then the snapshots') */
  let lastState = /** @type {import('../api.js').PipelineState | null} */ (null);
  /** the result on screen (the newest snapshot's), re-marked when the state changes */
  let lastResult = /** @type {import('../api.js').Result | null} */ (null);
  view.onAction(async (action) => {
    view.setBusy(true);
    try {
      const st = await pipeline(action);
      lastState = st.pipeline.state;
      statusGeneration = st.pipeline.generation ?? null;
      actionGeneration = st.pipeline.generation ?? -Infinity;
      view.showStatus(st);
      // the result's "not live" mark follows the state the reply shows, at once
      view.showResult(lastResult, st.pipeline.state);
      view.showError(null);
    } catch (e) {
      view.showError(`${action === 'start' ? 'Start' : 'Stop'} failed: ${message(e)}`);
    } finally {
      view.setBusy(false);
    }
  });

  /** set by an outage, cleared by the next batch: then the status is read again */
  let outage = false;

  /** @param {import('../stream.js').Snapshot[]} batch oldest first, never repeated */
  function onBatch(batch) {
    outage = false;
    for (const s of batch) {
      // a resumed stream fills what it missed (up to a minute); a longer outage is a gap
      if (series.length > 0 && s.t - series.lastX() > GAP_S) series.push(columns.gap((series.lastX() + s.t) / 2));
      series.push(columns.row(s));
      if (s.telemetry) telemetry.push(s.telemetry);
    }
    series.trimBefore(series.lastX() - 61);
    const newest = batch[batch.length - 1];
    // a batch may have been sampled before the reply to Start/Stop (however late it
    // arrives): its older generation says so, and the reply's state stays
    const stateFresh = newest.generation >= actionGeneration;
    if (stateFresh) lastState = newest.state;
    view.showSnapshot(newest, stateFresh);
    if ('latest' in newest) lastResult = newest.latest ?? null;
    view.showResult(lastResult, lastState ?? newest.state);
    if (newest.telemetry) power.showPoint(newest.telemetry);
    if (newest.telemetry_sample) power.showSample(newest.telemetry_sample);
    const rails = telemetry.rails.join('\n');
    if (rails !== chartedRails) {
      chartedRails = rails;
      tcharts.remove(powerHost);
      tcharts.add(powerHost, powerChart(telemetry.rails));
    }
    if (stateFresh && newest.generation !== statusGeneration) {
      statusGeneration = newest.generation;
      refreshStatus();
    }
    charts.requestRedraw();
    tcharts.requestRedraw();
  }

  refreshStatus();
  return {
    onBatch,
    /** @param {import('../stream.js').ConnState} state */
    onState(state) {
      view.showConnection(state);
      if (state === 'reconnecting') outage = true;
      // the service may have restarted, with another card or model (and generations
      // of a run whose clock was set back)
      else if (state === 'live' && outage) {
        actionGeneration = -Infinity;
        refreshStatus();
      }
    },
    onClockStep() {
      actionGeneration = -Infinity;
      series.clear();
      telemetry.clear();
    },
    shown() {
      charts.requestRedraw();
      tcharts.requestRedraw();
    },
  };
}
