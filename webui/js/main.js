// @ts-check
// main.js: boots the dashboard and wires its parts; owns no data format and
// no DOM writes of its own. Order: view (views/status.js) → history
// (series.js) → charts (charts.js) → GET /status (api.js) → live stream
// (stream.js). Each stream batch is appended to the history, its newest
// snapshot goes to the view, and the charts are asked for one redraw.
// GET /status is asked again when the pipeline state changes or the stream
// comes back; GET /results/latest when a new result appeared, at most every
// RESULT_EVERY_MS, for the frame details the stream does not carry.

import { ApiError, getLatestResult, getStatus, pipeline } from './api.js';
import { ChartSet, COLUMN_COUNT, WINDOW_S, appendSnapshot, currentRates, fpsChart, latencyChart } from './charts.js';
import { SeriesWindow } from './series.js';
import { openStream } from './stream.js';
import { StatusView } from './views/status.js';

/** Rows of history: 60 s at up to ~34 snapshots/s; beyond that the window shortens. */
const HISTORY_ROWS = 2048;
/** Frame details (size, checksum) are refreshed at most this often. */
const RESULT_EVERY_MS = 2_000;
/** After a Start/Stop reply, snapshots that disagree with it are taken as older for this long. */
const HOLD_STATE_MS = 750;

/** @param {unknown} e */
function message(e) {
  return e instanceof Error ? e.message : String(e);
}

function boot() {
  const view = new StatusView(document);
  const series = new SeriesWindow(HISTORY_ROWS, COLUMN_COUNT);
  const charts = new ChartSet(series);
  charts.add(view.el('[data-chart="latency"]'), latencyChart());
  charts.add(view.el('[data-chart="fps"]'), fpsChart());

  /** pipeline state last seen, from a status reply or a snapshot */
  let lastState = /** @type {string | null} */ (null);
  let statusInFlight = false;

  async function refreshStatus() {
    if (statusInFlight) return;
    statusInFlight = true;
    try {
      const st = await getStatus();
      lastState = st.pipeline.state;
      view.showStatus(st);
    } catch (e) {
      view.showError(`Could not read the service status: ${message(e)}`);
    } finally {
      statusInFlight = false;
    }
  }

  let resultSeq = /** @type {number | null} */ (null);
  let resultAt = -Infinity;
  let resultInFlight = false;

  /** @param {number} seq newest result seq announced by the stream */
  async function refreshResult(seq) {
    if (resultInFlight || seq === resultSeq || performance.now() - resultAt < RESULT_EVERY_MS) return;
    resultInFlight = true;
    resultAt = performance.now();
    try {
      const r = await getLatestResult();
      resultSeq = r.seq;
      view.showResult(r);
    } catch (e) {
      // 404 means the result went away (pipeline restarted); the next one will do.
      if (!(e instanceof ApiError && e.status === 404)) console.warn('fpgagdr: results/latest:', message(e));
    } finally {
      resultInFlight = false;
    }
  }

  let holdStateUntil = 0;
  view.onAction(async (action) => {
    view.setBusy(true);
    try {
      const st = await pipeline(action);
      lastState = st.pipeline.state;
      holdStateUntil = performance.now() + HOLD_STATE_MS;
      view.showStatus(st);
      view.showError(null);
    } catch (e) {
      view.showError(`${action === 'start' ? 'Start' : 'Stop'} failed: ${message(e)}`);
    } finally {
      view.setBusy(false);
    }
  });

  let hadOutage = false;
  /** set by an outage: the next row is preceded by an all-NaN row, so lines break there */
  let gapNext = false;
  const gapRow = new Array(COLUMN_COUNT).fill(NaN);
  openStream({
    onBatch(batch) {
      if (gapNext && series.length > 0) {
        gapRow[0] = (series.lastX() + batch[0].t) / 2;
        series.push(gapRow);
      }
      gapNext = false;
      for (const s of batch) appendSnapshot(series, s);
      series.trimBefore(series.lastX() - WINDOW_S - 1);
      charts.requestRedraw();
      const last = batch[batch.length - 1];
      // a batch may have been sampled before the reply to Start/Stop: keep
      // the reply's state for a moment rather than flicker back
      const stateFresh = performance.now() >= holdStateUntil || last.state === lastState;
      view.showSnapshot(last, stateFresh);
      view.showRates(currentRates(series));
      if (stateFresh && last.state !== lastState) {
        lastState = last.state;
        refreshStatus();
      }
      if (last.latest) refreshResult(last.latest.seq);
    },
    onState(state) {
      view.showConnection(state);
      if (state === 'reconnecting') {
        hadOutage = true;
        gapNext = true;
      } else if (state === 'live' && hadOutage) {
        hadOutage = false;
        refreshStatus(); // the service may have restarted, with another card or model
      }
    },
    onClockStep() {
      series.clear();
    },
  });
  refreshStatus();
}

boot();
