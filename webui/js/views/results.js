// @ts-check
// views/results.js: the live results list and the alert banner on the Live page.
// Owns: the last LIST_LENGTH results of GET /api/v1/results/stream
// (its `result` events; every frame's result, not the 100 ms snapshot's), newest
// first, each with its sequence number, best class and score, end-to-end latency
// and the alert rules it matched; and the banner that an `alert` event raises
// (a class rule: the rule, the class, the frame; a condition rule — drop rate,
// end-to-end p99, temperature, power — its measured value against its threshold,
// and its clearing; the count of firings since the page opened).
// Must not: fetch or open streams (pages/live.js opens the results stream and
// hands events in). Renders at most once per animation frame: the stream may
// carry thousands of results a second.

import { latency, percent } from '../format.js';

/** Results the list shows. */
export const LIST_LENGTH = 10;

/**
 * @typedef {object} TopClass
 * @property {number} index
 * @property {string} label
 * @property {number} score 0..1
 */

/**
 * @typedef {object} ResultRecord a result of the per-frame stream (docs/api.md, "Results out")
 * @property {number} run
 * @property {number} seq
 * @property {number} result_unix_ns
 * @property {TopClass[]} top
 * @property {Record<string, number>} latency_us
 * @property {string[]} [alerts] the rules it matched
 */

/**
 * @typedef {object} AlertRecord an alert (docs/api.md, "Alerts"): a class rule's
 * (with run, seq, classes) or a condition rule's (with state, value, threshold)
 * @property {string} rule
 * @property {string} kind class, drop_rate, e2e_p99, temperature or power
 * @property {number} [run]
 * @property {number} [seq]
 * @property {TopClass[]} [classes] the classes that matched
 * @property {'firing' | 'cleared'} [state] a condition rule's
 * @property {number} [value] measured, in `unit`
 * @property {number} [threshold] fires above it, in `unit`
 * @property {number} [clear_at] clears at or below it, in `unit`
 * @property {string} [unit] ratio, ms, C or W
 * @property {number} [window_s] the window of drop_rate and e2e_p99
 * @property {string} [source] the zone or rail measured
 */

/**
 * A condition alert's measure in words: what, the value, and its bound.
 * @param {AlertRecord} a
 * @returns {string}
 */
export function conditionText(a) {
  /** @param {number | undefined} v */
  const num = (v) => {
    if (v === undefined || v === null) return '—';
    if (a.unit === 'ratio') return percent(v);
    const unit = a.unit === 'C' ? ' °C' : ` ${a.unit}`;
    return `${Number(v.toPrecision(3))}${unit}`;
  };
  const what = {
    drop_rate: 'drop rate',
    e2e_p99: 'end-to-end p99',
    temperature: `${a.source ?? ''} temperature`.trim(),
    power: `${a.source === 'total' ? 'total' : a.source ?? ''} power`.trim(),
  }[a.kind] ?? a.kind;
  const window = a.window_s ? ` over ${a.window_s} s` : '';
  return a.state === 'cleared'
    ? `${what} ${num(a.value)} ≤ ${num(a.clear_at)}${window}`
    : `${what} ${num(a.value)} > ${num(a.threshold)}${window}`;
}

export class ResultsView {
  /**
   * @param {HTMLElement} list the `<ol>` the results go in
   * @param {HTMLElement} banner the alert banner (hidden until the first alert)
   */
  constructor(list, banner) {
    this.list = list;
    this.banner = banner;
    /** @type {ResultRecord[]} newest first */
    this.results = [];
    /** @type {AlertRecord | null} */
    this.lastAlert = null;
    this.alerts = 0;
    this.pending = false;
  }

  /** @param {ResultRecord} r */
  pushResult(r) {
    this.results.unshift(r);
    if (this.results.length > LIST_LENGTH) this.results.length = LIST_LENGTH;
    this.schedule();
  }

  /** @param {AlertRecord} a */
  pushAlert(a) {
    this.lastAlert = a;
    if (a.state !== 'cleared') this.alerts += 1;
    this.schedule();
  }

  schedule() {
    if (this.pending) return;
    this.pending = true;
    requestAnimationFrame(() => {
      this.pending = false;
      this.render();
    });
  }

  render() {
    this.list.replaceChildren(...this.results.map((r) => {
      const li = document.createElement('li');
      li.dataset.run = String(r.run);
      li.dataset.seq = String(r.seq);
      const best = r.top[0];
      const seq = document.createElement('span');
      seq.className = 'res-seq';
      seq.textContent = `#${r.seq}`;
      const label = document.createElement('span');
      label.className = 'cls-label';
      label.textContent = best ? best.label : '—';
      const score = document.createElement('span');
      score.className = 'res-score';
      score.textContent = best ? percent(best.score) : '';
      const e2e = document.createElement('span');
      e2e.className = 'res-e2e muted';
      e2e.textContent = latency(r.latency_us?.end_to_end);
      li.append(seq, label, score, e2e);
      if (r.alerts && r.alerts.length > 0) {
        li.classList.add('alerted');
        const mark = document.createElement('span');
        mark.className = 'res-alerts';
        mark.textContent = r.alerts.join(', ');
        li.append(mark);
      }
      return li;
    }));
    const a = this.lastAlert;
    if (a) {
      this.banner.hidden = false;
      const since = `${this.alerts} since this page opened`;
      if (a.kind === 'class') {
        const cls = a.classes?.[0];
        const what = cls ? `${cls.label} ${percent(cls.score)}` : a.kind;
        this.banner.textContent = `Alert ${a.rule}: ${what} · frame #${a.seq} · ${since}`;
      } else {
        const head = a.state === 'cleared' ? 'Cleared' : 'Alert';
        this.banner.textContent = `${head} ${a.rule}: ${conditionText(a)} · ${since}`;
      }
      this.banner.classList.toggle('cleared', a.state === 'cleared');
    }
  }
}
