// @ts-check
// stream.js: the one EventSource of this tab, to /api/v1/stream: the page's single
// live source. Owns the connection state (connecting / live / reconnecting), a
// watchdog for a silent stream, and parsing `snapshot` events into arrays of
// snapshots in time order. Must not touch the DOM or the charts.
// Next hop of a frame: pages/live.js (onBatch), via main.js's wiring.
//
// On open the service first replays up to the last 60 s of snapshots (bounded in
// bytes, see docs/api.md), then sends live events, so a page draws its minute at
// once. EventSource reconnects by itself after a network error and then sends
// `Last-Event-ID`: the service replays what was missed meanwhile (within the same
// minute), so the charts have no hole. It gives up (readyState CLOSED) on an HTTP
// error or a wrong content type, and it never notices a stream that stays open but
// silent; for those two cases this module closes and opens a new one after a
// backoff, asking for the same replay with `?last_event_id=` (a fresh EventSource
// cannot send the header). Snapshots already seen are dropped by their time stamp
// either way.

import { apiUrl } from './api.js';

/**
 * @typedef {{p50: number, p99: number, max: number, count?: number}} Percentiles
 * @typedef {'pickup' | 'dma' | 'queue' | 'd2h' | 'preprocess' | 'inference' | 'end_to_end'} Stage
 *   end_to_end runs from the frame-done interrupt (the frame's arrival) to the
 *   result; pickup is arrival → DMA submit.
 *   d2h (device-to-host copy before CPU inference) appears only where frames take
 *   that hop. A stage without samples in the window is absent.
 *
 * @typedef {object} TelemetryPoint the energy-relevant telemetry of one snapshot
 * @property {number} t Unix seconds of the telemetry sample
 * @property {number | null} power_w
 * @property {Record<string, number>} rails_mw power per power-monitor rail (INA3221, INA238), by name
 * @property {number | null} cpu_pct
 * @property {number | null} gpu_pct
 * @property {number | null} temp_max_c
 * @property {number | null} energy_per_frame_mj
 * @property {number | null} frames_per_joule
 *
 * @typedef {object} Snapshot one element of an event's `batch`
 * @property {number} t Unix seconds
 * @property {number} generation grows on every start, stop, failure and config change
 * @property {import('./api.js').PipelineState} state
 * @property {number | null} running_s how long the pipeline has run; null unless running
 * @property {number} fps frames/s over the service's last second
 * @property {number} gbps
 * @property {number} frames_captured
 * @property {number} frames_inferred
 * @property {number} frames_dropped
 * @property {number} checksum_errors
 * @property {number} [transfer_errors]
 * @property {number} [frames_overrun] frames the card overwrote before the host took them
 * @property {number} [batches_run] model runs (each on a batch of frames); not in every service version
 * @property {Partial<Record<Stage, Percentiles>>} latency_us
 * @property {TelemetryPoint | null} telemetry
 * @property {import('./api.js').Result | null} [latest] the latest result, complete;
 *   only in the newest snapshot of an event
 * @property {any} [telemetry_sample] the full telemetry sample (GET /telemetry without
 *   the frame figures); only in the newest snapshot of an event
 *
 * @typedef {'connecting' | 'live' | 'reconnecting'} ConnState
 */

/** The service sends ~4 events/s; this long without one means the stream is dead. */
const SILENCE_MS = 5_000;
/** A snapshot this much older than the last one means the service's clock was
 * stepped back (an appliance setting its clock after boot): start over. */
const CLOCK_STEP_S = 30;
/** Backoff for reopening after EventSource gave up: doubles up to the maximum. */
const RETRY_MIN_MS = 1_000;
const RETRY_MAX_MS = 15_000;

/**
 * Opens the stream and keeps it open until close() is called.
 * @param {object} handlers
 * @param {(batch: Snapshot[]) => void} handlers.onBatch new snapshots, oldest first, never repeated
 * @param {(state: ConnState) => void} handlers.onState connection state changes
 * @param {() => void} handlers.onClockStep the service's clock went back: drop history
 * @param {(ota: any) => void} [handlers.onOta] an `ota` event: the OTA state (GET /ota) after a change
 * @returns {{close: () => void}}
 */
export function openStream({ onBatch, onState, onClockStep, onOta }) {
  /** @type {EventSource | null} */
  let es = null;
  /** @type {ConnState | null} */
  let state = null;
  let lastT = -Infinity;
  /** id of the last event received, for resuming after a reopen */
  let lastId = '';
  let lastEventAt = 0;
  let retryMs = RETRY_MIN_MS;
  /** @type {number | undefined} */
  let retryTimer;
  const watchdog = window.setInterval(checkSilence, 1_000);

  /** @param {ConnState} s */
  function setState(s) {
    if (s === state) return;
    state = s;
    onState(s);
  }

  function connect() {
    retryTimer = undefined;
    const resume = /^\d+$/.test(lastId) ? `?last_event_id=${lastId}` : '';
    es = new EventSource(apiUrl('stream') + resume);
    lastEventAt = performance.now();
    es.addEventListener('open', () => {
      retryMs = RETRY_MIN_MS;
      setState('live');
    });
    es.addEventListener('snapshot', onSnapshot);
    es.addEventListener('ota', (ev) => {
      lastEventAt = performance.now();
      try {
        onOta?.(JSON.parse(/** @type {MessageEvent} */ (ev).data));
      } catch {
        console.warn('fpgagdr: ota event is not JSON, ignored');
      }
    });
    es.addEventListener('error', () => {
      setState('reconnecting');
      if (es && es.readyState === EventSource.CLOSED) reopenLater();
    });
  }

  function reopenLater() {
    es?.close();
    es = null;
    if (retryTimer !== undefined) return;
    retryTimer = window.setTimeout(connect, retryMs);
    retryMs = Math.min(retryMs * 2, RETRY_MAX_MS);
  }

  function checkSilence() {
    if (es && performance.now() - lastEventAt > SILENCE_MS) {
      setState('reconnecting');
      reopenLater();
    }
  }

  /** @param {MessageEvent} ev */
  function onSnapshot(ev) {
    lastEventAt = performance.now();
    if (ev.lastEventId) lastId = ev.lastEventId;
    setState('live');
    /** @type {unknown} */
    let batch;
    try {
      batch = JSON.parse(ev.data).batch;
    } catch {
      console.warn('fpgagdr: snapshot event is not JSON, ignored');
      return;
    }
    if (!Array.isArray(batch)) {
      console.warn('fpgagdr: snapshot event has no batch array, ignored');
      return;
    }
    /** @type {Snapshot[]} */
    const fresh = [];
    for (const s of batch) {
      if (!s || typeof s.t !== 'number') continue;
      if (s.t < lastT - CLOCK_STEP_S) {
        onClockStep();
        lastT = -Infinity;
        fresh.length = 0;
      }
      if (s.t > lastT) {
        lastT = s.t;
        fresh.push(s);
      }
    }
    if (fresh.length > 0) onBatch(fresh);
  }

  setState('connecting');
  connect();
  return {
    close() {
      window.clearInterval(watchdog);
      window.clearTimeout(retryTimer);
      es?.close();
      es = null;
    },
  };
}
