// @ts-check
// main.js: boots the dashboard and wires its parts; owns no data format and
// no DOM writes of its own. Order: view (views/status.js) → history
// (series.js) → charts (charts.js) → GET /status (api.js) → live stream
// (stream.js). Each stream batch is appended to the history, its newest
// snapshot goes to the view, and the charts are asked for one redraw.
// GET /status is asked again when the pipeline state changes or the stream
// comes back; GET /results/latest when a new result appeared, at most every
// RESULT_EVERY_MS, for the frame details the stream does not carry.
//
// fps and latency charts: GET /pipeline/history on load (drawn at once); stream
// batches that come first wait in backfill.js and follow the history.
// Power panel: GET /telemetry/history on load (charts drawn at once), then
// each snapshot's telemetry point extends it; GET /telemetry every
// TELEMETRY_EVERY_MS while the live page is shown, for the tables.
// Pages: #live, #config, #system, #update (hash routing, one index.html); the
// stream stays open on every page (one EventSource per tab). The config page is
// built from the schema on its first visit; the system page is read on each;
// the update page reads GET /ota on each visit and follows the stream's `ota`
// events (upload with progress, install, slot table).

import {
  ApiError, getConfig, getConfigSchema, getLatestResult, getOta, getPipelineHistory, getStatus, getSystem,
  getTelemetry, getTelemetryHistory, installBundle, patchConfig, pipeline, setTokenPrompt, uploadBundle,
} from './api.js';
import { Backfill } from './backfill.js';
import { ChartSet, COLUMN_COUNT, WINDOW_S, appendSnapshot, currentRates, fpsChart, latencyChart } from './charts.js';
import { TelemetryHistory, energyChart, loadChart, powerChart, tempChart } from './power.js';
import { SeriesWindow } from './series.js';
import { openStream } from './stream.js';
import { ConfigView } from './views/config.js';
import { PowerView } from './views/power.js';
import { StatusView } from './views/status.js';
import { showSystem } from './views/system.js';
import { tokenPrompt } from './views/token.js';
import { UpdateView, plainError } from './views/update.js';

/** Rows of history: 60 s at up to ~34 snapshots/s; beyond that the window shortens. */
const HISTORY_ROWS = 2048;
/** Frame details (size, checksum) are refreshed at most this often. */
const RESULT_EVERY_MS = 2_000;
/** After a Start/Stop reply, snapshots that disagree with it are taken as older for this long. */
const HOLD_STATE_MS = 750;
/** The full telemetry sample (rails, zones, memory) is read this often on the live page. */
const TELEMETRY_EVERY_MS = 1_000;
/** Pages, by hash. */
const PAGES = ['live', 'config', 'system', 'update'];

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
  setTokenPrompt(tokenPrompt(/** @type {HTMLDialogElement} */ (view.el('[data-testid="token-dialog"]'))));

  const power = new PowerView(view.el('[data-testid="power-panel"]'));
  const telemetry = new TelemetryHistory();
  const tcharts = new ChartSet(telemetry.series);
  const powerHost = view.el('[data-chart="power"]');
  tcharts.add(powerHost, powerChart([]));
  tcharts.add(view.el('[data-chart="energy"]'), energyChart());
  tcharts.add(view.el('[data-chart="load"]'), loadChart());
  tcharts.add(view.el('[data-chart="temp"]'), tempChart());
  let chartedRails = '';
  let historyInFlight = false;

  async function loadHistory() {
    if (historyInFlight) return;
    historyInFlight = true;
    try {
      telemetry.load(await getTelemetryHistory());
      const names = telemetry.rails.join('\n');
      if (names !== chartedRails) {
        chartedRails = names;
        tcharts.remove(powerHost);
        tcharts.add(powerHost, powerChart(telemetry.rails));
      }
      tcharts.requestRedraw();
    } catch (e) {
      console.warn('fpgagdr: telemetry history:', message(e));
    } finally {
      historyInFlight = false;
    }
  }

  /** @param {import('./stream.js').Snapshot[]} batch */
  function onTelemetry(batch) {
    let added = false;
    for (const s of batch) {
      const p = s.telemetry;
      if (!p) continue;
      if (telemetry.loaded && telemetry.railsUnknown(p)) {
        loadHistory(); // a rail appeared: its name comes with the history
        return;
      }
      added = telemetry.push(p) || added;
    }
    const last = batch[batch.length - 1].telemetry;
    if (last) power.showPoint(last);
    if (added) tcharts.requestRedraw();
  }

  let page = 'live';
  async function pollTelemetry() {
    if (page === 'live' && document.visibilityState === 'visible') {
      try {
        power.showSample(await getTelemetry());
      } catch (e) {
        console.warn('fpgagdr: telemetry:', message(e));
      }
    }
    window.setTimeout(pollTelemetry, TELEMETRY_EVERY_MS);
  }

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

  const update = setupUpdate(view);
  let hadOutage = false;
  /** set by an outage: the next row is preceded by an all-NaN row, so lines break there */
  let gapNext = false;
  const gapRow = new Array(COLUMN_COUNT).fill(NaN);
  /** @type {Backfill<import('./stream.js').Snapshot>} */
  const backfill = new Backfill(HISTORY_ROWS);

  /** @param {import('./stream.js').Snapshot[]} rows oldest first; those not newer than the chart's newest are dropped */
  function chartRows(rows) {
    const fresh = rows.filter((s) => series.length === 0 || s.t > series.lastX());
    if (fresh.length === 0) return;
    if (gapNext && series.length > 0) {
      gapRow[0] = (series.lastX() + fresh[0].t) / 2;
      series.push(gapRow);
    }
    gapNext = false;
    for (const s of fresh) appendSnapshot(series, s);
    series.trimBefore(series.lastX() - WINDOW_S - 1);
    charts.requestRedraw();
  }

  async function loadPipelineHistory() {
    /** @type {import('./stream.js').Snapshot[]} */
    let rows = [];
    try {
      rows = await getPipelineHistory();
    } catch (e) {
      console.warn('fpgagdr: pipeline history:', message(e));
    }
    chartRows(backfill.fill(rows));
  }

  openStream({
    onBatch(batch) {
      chartRows(backfill.hold(batch));
      onTelemetry(batch);
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
    onOta(s) {
      update.show(s);
    },
  });
  refreshStatus();
  loadPipelineHistory();
  loadHistory();
  pollTelemetry();

  const configPage = setupConfig(view);
  const systemRoot = view.el('[data-page="system"]');
  async function refreshSystem() {
    try {
      showSystem(systemRoot, await getSystem());
    } catch (e) {
      view.showError(`Could not read the system information: ${message(e)}`);
    }
  }
  view.el('[data-action="system-refresh"]').addEventListener('click', refreshSystem);

  function route() {
    const want = location.hash.replace(/^#/, '');
    page = PAGES.includes(want) ? want : 'live';
    for (const p of PAGES) {
      view.el(`[data-page="${p}"]`).hidden = p !== page;
      const link = view.el(`[data-nav="${p}"]`);
      if (p === page) link.setAttribute('aria-current', 'page');
      else link.removeAttribute('aria-current');
    }
    if (page === 'config') configPage.open();
    if (page === 'system') refreshSystem();
    if (page === 'update') update.refresh();
    if (page === 'live') {
      charts.requestRedraw();
      tcharts.requestRedraw();
    }
  }
  window.addEventListener('hashchange', route);
  route();
}

/**
 * The config page: the form is built from the schema on the first visit and
 * refilled from the config in force on every visit; Save sends the edits as a
 * merge patch with If-Match.
 * @param {StatusView} view
 */
function setupConfig(view) {
  const form = /** @type {HTMLFormElement} */ (view.el('[data-testid="config-form"]'));
  const status = view.el('[data-testid="config-status"]');
  const cv = new ConfigView(form);
  let etag = '';
  let built = false;

  /** @param {string} text @param {'ok' | 'bad' | ''} [kind] */
  function say(text, kind = '') {
    status.textContent = text;
    status.dataset.kind = kind;
  }

  async function reload() {
    try {
      if (!built) {
        cv.build(await getConfigSchema());
        built = true;
      }
      const c = await getConfig();
      etag = c.etag;
      cv.fill(c.config);
      say('');
    } catch (e) {
      say(`Could not read the config: ${message(e)}`, 'bad');
    }
  }

  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const { patch, local } = cv.patch();
    if (local.length) {
      say('Some values are not valid; see the marked fields.', 'bad');
      cv.showErrors(local);
      return;
    }
    if (Object.keys(patch).length === 0) {
      cv.showErrors([]);
      say('Nothing changed.');
      return;
    }
    say('Saving…');
    try {
      const c = await patchConfig(patch, etag);
      etag = c.etag;
      cv.fill(c.config);
      say('Saved and applied.', 'ok');
    } catch (e) {
      if (e instanceof ApiError && e.status === 412) {
        await reload();
        say('The config changed since this page read it: it has been reloaded, make your change again.', 'bad');
        return;
      }
      const errors = e instanceof ApiError ? e.problem?.errors ?? [] : [];
      const loose = cv.showErrors(errors);
      const head = errors.length > loose.length ? 'Not saved: see the marked fields. Nothing was changed.' : `Not saved: ${message(e)}`;
      say([head, ...loose].join(' '), 'bad');
    }
  });
  view.el('[data-action="reload"]').addEventListener('click', reload);
  return { open: reload };
}

/**
 * The update page: upload with progress, install, and the OTA state (from
 * GET /ota on each visit and from the stream's `ota` events).
 * @param {StatusView} view
 */
function setupUpdate(view) {
  const uv = new UpdateView(view.el('[data-page="update"]'));
  const form = view.el('[data-testid="ota-form"]');
  const file = /** @type {HTMLInputElement} */ (view.el('[data-testid="ota-file"]'));
  async function refresh() {
    try {
      uv.show(await getOta());
    } catch (e) {
      uv.say(`Could not read the update state: ${plainError(e)}`, 'bad');
    }
  }
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const f = file.files?.[0];
    if (!f) return;
    uv.setUploading(true);
    uv.showUpload(0, f.size);
    uv.say(`Uploading ${f.name}…`);
    try {
      const b = await uploadBundle(f, (sent, total) => uv.showUpload(sent, total));
      uv.showUpload(f.size, f.size);
      uv.say(`Uploaded and checked: version ${b.version} for ${b.compatible}. Press Install to install it.`, 'ok');
    } catch (e) {
      uv.say(plainError(e), 'bad');
    } finally {
      uv.setUploading(false);
      refresh();
    }
  });
  view.el('[data-action="ota-install"]').addEventListener('click', async () => {
    const sha = uv.last?.bundle?.sha256;
    if (!sha) return;
    uv.say('Installing… the device keeps running; do not switch it off.');
    try {
      uv.show(await installBundle(sha));
    } catch (e) {
      uv.say(plainError(e), 'bad');
    }
  });
  return { refresh, show: (/** @type {any} */ s) => uv.show(s) };
}

boot();
