// @ts-check
// views/status.js: the numbers of the Live page. Owns writing text into the
// elements of index.html marked data-metric / data-field / data-testid: the
// card and its SIMULATED CARD badge, frame memory, pipeline state, uptime and
// buttons, rates and counters, the latency table (p50, p99, max and jitter =
// p99 − p50), the latest result (heading, top-5 and frame line, all of one frame;
// marked as the last run's while the pipeline is not running) and the connection
// state. End of a frame's path on the page (with charts.js).
// Must not fetch, keep history or draw charts: pages/live.js calls show*() with
// what stream.js (and GET /status) delivered.

import * as fmt from '../format.js';

/** @typedef {import('../api.js').Status} Status */
/** @typedef {import('../api.js').Result} Result */
/** @typedef {import('../api.js').Class} Class */
/** @typedef {import('../stream.js').Snapshot} Snapshot */
/** @typedef {import('../stream.js').ConnState} ConnState */

/**
 * Latency table rows: API stage key → prefix of its data-metric names. Rows
 * marked data-optional in index.html (queue, d2h) stay hidden until their
 * stage first appears in a snapshot.
 * @type {[import('../stream.js').Stage, string][]}
 */
const STAGE_METRICS = [
  ['pickup', 'pickup'],
  ['dma', 'dma'],
  ['queue', 'queue'],
  ['d2h', 'd2h'],
  ['preprocess', 'preprocess'],
  ['inference', 'inference'],
  ['end_to_end', 'e2e'],
];

const COUNTERS = /** @type {const} */ ([
  'frames_captured', 'frames_inferred', 'frames_dropped', 'checksum_errors',
]);

/** @type {Record<string, string>} */
const MEMORY_KINDS = {
  host: 'host memory',
  cuda_device: 'CUDA device memory',
  cuda_host: 'CUDA pinned host memory',
};

/**
 * @param {string | null | undefined} v
 * @returns {string} v, or NONE when empty
 */
function text(v) {
  return v ? String(v) : fmt.NONE;
}

/** The latency target's verdict, by `pipeline.batch.reason`. */
const TARGET = /** @type {Record<string, string>} */ ({
  within_target: 'within', within_target_thin_margin: 'within (thin margin)',
  target_unmet: 'not met', no_batch_keeps_up: 'not met',
});

/**
 * How batches run and wait, and the latency target's verdict: "one batch at a time;
 * wait chosen: up to 1.05 ms for batches of 8; 5 ms target: within".
 * @param {import('../api.js').Batch | null | undefined} b
 */
function batching(b) {
  if (!b || !fmt.isNum(b.wait_us)) return fmt.NONE;
  const how = b.ahead ? 'two batches in flight' : 'one batch at a time';
  const wait = fmt.isNum(b.aim)
    ? `wait chosen: up to ${b.wait_us > 0 ? fmt.latency(b.wait_us) : '0 µs'} for batches of ${b.aim}`
    : `wait fixed: ${b.wait_us > 0 ? fmt.latency(b.wait_us) : '0 µs'}`;
  const verdict = b.reason ? TARGET[b.reason] : undefined;
  const target = verdict && fmt.isNum(b.latency_target_us)
    ? `; ${fmt.latencyTick(b.latency_target_us)} target: ${verdict}` : '';
  return `${how}; ${wait}${target}`;
}

/**
 * The frame ring in use, and why it may hold more entries than the Config page asks
 * for: the service builds whole rounds over the card's frame slots (at least two).
 * @param {any} m status's `memory`
 */
function ringSize(m) {
  if (!fmt.isNum(m.ring_entries) || m.ring_entries === 0) return fmt.NONE;
  const size = `${m.ring_entries} entries of ${fmt.bytes(m.entry_bytes)}`;
  if (!fmt.isNum(m.card_slots) || m.card_slots === 0) return size;
  return `${size}: ${m.ring_entries / m.card_slots} for each of the card's ${m.card_slots} frame slots `
    + '(the Config page\'s entries are a minimum, rounded up to whole rounds over the slots)';
}

/**
 * The GPU memory the ring and the model take, or why there is none.
 * @param {import('../api.js').GpuMemory | null | undefined} g
 */
function gpuMemory(g) {
  if (!g) return fmt.NONE;
  if (g.ring_bytes === 0 && !fmt.isNum(g.model_bytes)) return g.detail || fmt.NONE;
  const model = fmt.isNum(g.model_bytes) ? fmt.bytes(g.model_bytes) : 'measured after warm-up';
  const device = fmt.isNum(g.device_used_bytes) && fmt.isNum(g.device_total_bytes)
    ? ` (device: ${fmt.bytes(g.device_used_bytes)} of ${fmt.bytes(g.device_total_bytes)} in use)`
    : '';
  return `frame ring ${fmt.bytes(g.ring_bytes)}, model ${model}${device}`;
}

export class StatusView {
  /** @param {ParentNode} root the document, or a part of it holding the markup */
  constructor(root) {
    this.root = root;
    /** @type {Map<string, HTMLElement>} */
    this.cache = new Map();
    /** @type {import('../api.js').PipelineState | null} */
    this.state = null;
    this.busy = false;
    /** @type {number | null} seq of the result on screen */
    this.shownSeq = null;
    /** whether a snapshot was shown: then counters come from snapshots only */
    this.haveSnapshot = false;
    /** frames inferred and model runs of the previous snapshot (the batch size in use) */
    this.lastRuns = { frames: NaN, batches: NaN };
  }

  /**
   * The one element matching `selector`; a missing one is a markup bug.
   * @param {string} selector
   * @returns {HTMLElement}
   */
  el(selector) {
    let e = this.cache.get(selector);
    if (!e) {
      const found = this.root.querySelector(selector);
      if (!(found instanceof HTMLElement)) throw new Error(`dashboard markup lacks ${selector}`);
      e = found;
      this.cache.set(selector, e);
    }
    return e;
  }

  /** @param {string} name @param {string} text */
  setMetric(name, text) {
    this.el(`[data-metric="${name}"]`).textContent = text;
  }

  /** @param {string} name @param {string} text */
  setField(name, text) {
    this.el(`[data-field="${name}"]`).textContent = text;
  }

  /**
   * Calls back with "start" or "stop" when a pipeline button is clicked.
   * @param {(action: 'start' | 'stop') => void} cb
   */
  onAction(cb) {
    this.el('[data-action="start"]').addEventListener('click', () => cb('start'));
    this.el('[data-action="stop"]').addEventListener('click', () => cb('stop'));
    this.el('[data-action="dismiss"]').addEventListener('click', () => this.showError(null));
  }

  /** @param {ConnState} state */
  showConnection(state) {
    const e = this.el('[data-testid="conn-state"]');
    e.textContent = state;
    e.dataset.state = state;
  }

  /** @param {string | null} message shown in the alert bar; null hides it */
  showError(message) {
    this.el('[data-testid="error"]').hidden = message === null;
    this.setField('error_text', message ?? '');
  }

  /** @param {boolean} busy true while a pipeline request is in flight */
  setBusy(busy) {
    this.busy = busy;
    this.updateButtons();
  }

  updateButtons() {
    /** @type {HTMLButtonElement} */ (this.el('[data-action="start"]')).disabled =
      this.busy || this.state === null || this.state === 'running';
    /** @type {HTMLButtonElement} */ (this.el('[data-action="stop"]')).disabled =
      this.busy || this.state !== 'running';
  }

  /** @param {import('../api.js').PipelineState} state */
  showPipelineState(state) {
    if (state === this.state) return;
    this.state = state;
    const e = this.el('[data-testid="pipeline-state"]');
    e.textContent = state;
    e.dataset.state = state;
    this.updateButtons();
    document.title = `fpgagdr · ${state}`;
  }

  /**
   * Fields the service does not know (yet) may be missing or null: no frame
   * ring allocated, no model loaded, a card that does not report its geometry.
   * They read as NONE.
   * @param {Status} st reply of GET /status or of a pipeline POST
   */
  showStatus(st) {
    const card = st.card ?? {};
    const memory = st.memory ?? {};
    const pipeline = st.pipeline ?? {};
    const counters = st.counters ?? {};
    this.setField('card_name', card.name ?? fmt.NONE);
    this.el('[data-testid="sim-badge"]').hidden = card.simulated !== true;
    this.setField('card_name_full', card.name ?? fmt.NONE);
    this.setField('card_kind', text(card.kind) + (card.simulated ? ' (simulated)' : ''));
    this.setField('card_platform', text(card.platform));
    this.setField('card_channels', fmt.isNum(card.c2h_channels) && fmt.isNum(card.h2c_channels)
      ? `${card.c2h_channels} card→host, ${card.h2c_channels} host→card`
      : fmt.NONE);
    this.setField('card_page', fmt.bytes(card.page_size_bytes));
    this.setField('card_align', fmt.bytes(card.alignment_bytes));
    this.setField('card_memory', fmt.bytes(card.card_memory_bytes));

    const kind = this.el('[data-field="memory_kind"]');
    kind.textContent = memory.kind ? MEMORY_KINDS[memory.kind] ?? memory.kind : 'none yet';
    kind.dataset.kind = memory.kind ?? '';
    this.setField('memory_detail', memory.detail ? `· ${memory.detail}` : '');
    this.setField('ring', ringSize(memory));

    this.setField('model', text(pipeline.model));
    this.setField('source', text(pipeline.source));
    this.setField('preprocess', text(pipeline.preprocess));
    this.setField('inference', text(pipeline.inference));
    this.setField('batch_max', pipeline.batch ? `of ${pipeline.batch.max}` : '');
    this.setField('batching', batching(pipeline.batch));
    this.el('[data-field="batching"]').title = pipeline.batch?.reason_detail ?? '';
    this.setField('gpu_memory', memory.kind ? gpuMemory(memory.gpu) : fmt.NONE);
    if (!this.haveSnapshot) this.setMetric('batch', pipeline.batch ? fmt.num3(pipeline.batch.mean) : fmt.NONE);
    const err = this.el('[data-field="pipeline_error"]');
    err.hidden = !(pipeline.state === 'failed' && pipeline.error);
    err.textContent = pipeline.error ? `Pipeline failed: ${pipeline.error}` : '';
    if (pipeline.state) this.showPipelineState(pipeline.state);

    // snapshots carry newer counts; these fill the page until the first arrives
    if (!this.haveSnapshot) {
      for (const name of COUNTERS) this.showCounter(name, counters[name]);
      this.showCounter('transfer_errors', counters.transfer_errors);
      if (fmt.isNum(counters.frames_overrun)) this.showCounter('frames_overrun', counters.frames_overrun);
      if (pipeline.state) this.showUptime(pipeline.state, pipeline.running_s);
    }
  }

  /**
   * A counter; its tile, if marked data-warn-when="name", gets the class named
   * by its data-warn-level ("warn" or "bad") while the counter is not zero.
   * @param {string} name
   * @param {number} value
   */
  showCounter(name, value) {
    this.setMetric(name, fmt.count(value));
    const tile = this.root.querySelector(`[data-warn-when="${name}"]`);
    if (tile instanceof HTMLElement) {
      tile.classList.toggle(tile.dataset.warnLevel ?? 'warn', fmt.isNum(value) && value > 0);
    }
  }

  /**
   * The pipeline's own uptime: how long this run has lasted; the state's word while
   * it does not run.
   * @param {import('../api.js').PipelineState} state
   * @param {number | null | undefined} runningS
   */
  showUptime(state, runningS) {
    this.setField('uptime', state === 'running' && fmt.isNum(runningS) ? fmt.duration(runningS) : state);
  }

  /**
   * @param {Snapshot} s the newest snapshot of a batch
   * @param {boolean} [withState] false leaves the pipeline state (and uptime) as they are
   */
  showSnapshot(s, withState = true) {
    this.haveSnapshot = true;
    if (withState) {
      this.showPipelineState(s.state);
      this.showUptime(s.state, s.running_s);
    }
    this.setMetric('fps', fmt.fps(s.fps));
    const [value, unit] = fmt.throughputParts(s.gbps);
    this.setMetric('gbps', value);
    this.setField('gbps_unit', unit);
    for (const name of COUNTERS) this.showCounter(name, s[name]);
    if (fmt.isNum(s.transfer_errors)) this.showCounter('transfer_errors', s.transfer_errors);
    if (fmt.isNum(s.frames_overrun)) this.showCounter('frames_overrun', s.frames_overrun);
    this.showBatch(s);
    for (const [stage, prefix] of STAGE_METRICS) {
      const p = s.latency_us?.[stage];
      if (p) {
        const row = this.root.querySelector(`tr[data-optional="${stage}"]`);
        if (row instanceof HTMLElement) row.hidden = false;
      }
      this.setMetric(`${prefix}_p50`, fmt.latency(p?.p50));
      this.setMetric(`${prefix}_p99`, fmt.latency(p?.p99));
      this.setMetric(`${prefix}_max`, fmt.latency(p?.max));
      // jitter: the spread between the typical and the slow frame of the same window
      const jitter = p && fmt.isNum(p.p99) && fmt.isNum(p.p50) ? p.p99 - p.p50 : NaN;
      this.setMetric(`${prefix}_jitter`, jitter > 0 ? fmt.latency(jitter) : jitter === 0 ? '0\u202fµs' : fmt.NONE);
    }
  }

  /**
   * The batch size in use: frames per model run since the previous snapshot; the
   * last value stays while no model ran.
   * @param {Snapshot} s
   */
  showBatch(s) {
    const runs = { frames: s.frames_inferred, batches: s.batches_run ?? NaN };
    const frames = runs.frames - this.lastRuns.frames;
    const batches = runs.batches - this.lastRuns.batches;
    if (batches > 0 && frames >= 0) this.setMetric('batch', fmt.num3(frames / batches));
    this.lastRuns = runs;
  }

  /**
   * The latest result: heading, top-5 and the line about its frame, all from the
   * one result; while the pipeline does not run it stays, marked as the last run's.
   * @param {Result | null} r
   * @param {import('../api.js').PipelineState} state
   */
  showResult(r, state) {
    const panel = this.el('[data-testid="result"]');
    const stale = r !== null && state !== 'running';
    panel.classList.toggle('stale', stale);
    const note = this.el('[data-field="result_note"]');
    note.hidden = !stale;
    note.textContent = stale
      ? `Pipeline ${state}: this is the last result before it ${state === 'failed' ? 'failed' : 'stopped'}, not a live one.`
      : '';
    this.el('[data-field="result_empty"]').hidden = r !== null;
    if (r === null) {
      this.shownSeq = null;
      this.setField('result_seq', '');
      this.setField('frame_info', '');
      this.el('[data-testid="top5"]').replaceChildren();
      return;
    }
    if (r.seq === this.shownSeq) return;
    this.shownSeq = r.seq;
    this.setField('result_seq', `frame #${r.seq}`);
    const f = r.frame;
    const info = this.el('[data-field="frame_info"]');
    info.textContent = [
      `frame #${r.seq}: ${f.width}×${f.height} ${f.format}, ${fmt.bytes(f.bytes)}`,
      r.checksum === 'ok' ? 'checksum ok' : 'checksum not checked',
      `end-to-end ${fmt.latency(r.latency_us?.end_to_end)}`,
    ].join(' · ');
    // Labels come from the model's label file: they go in as text, never as markup.
    const items = r.top.map((c, rank) => {
      const li = document.createElement('li');
      li.className = rank === 0 ? 'top' : '';
      const label = document.createElement('span');
      label.className = 'cls-label';
      label.textContent = c.label;
      label.title = `class ${c.index}`;
      const bar = document.createElement('span');
      bar.className = 'bar';
      const fill = document.createElement('span');
      fill.className = 'bar-fill';
      // CSSOM, not a style attribute: allowed under CSP style-src 'self'.
      fill.style.width = `${Math.max(0, Math.min(1, c.score)) * 100}%`;
      bar.append(fill);
      const score = document.createElement('span');
      score.className = 'cls-score';
      score.textContent = fmt.percent(c.score);
      li.append(label, bar, score);
      return li;
    });
    this.el('[data-testid="top5"]').replaceChildren(...items);
  }
}
