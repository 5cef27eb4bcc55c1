// @ts-check
// views/outputs.js: the Outputs panel of the Live page: where results go and what
// became of them, from GET /api/v1/status `outputs` (read every two seconds).
// Owns: the panel's lines: MQTT (state, last error, delivered, queue depth, drops by
// reason), the results log, and the condition alerts firing now (also those that
// fired before the page opened: status keeps them, the event stream does not).
// Must not: fetch (live.js reads the status and hands it over).

import * as fmt from '../format.js';

/**
 * @typedef {object} Outputs GET /status `outputs` (the part shown)
 * @property {number} results
 * @property {Record<string, number>} dropped by reason, since the service started
 * @property {{written: number, errors: number, bytes: number, files: number, max_bytes: number, last_error?: string}} log
 * @property {{enabled: boolean, state: string, broker?: string, topic?: string, qos: number, last_error?: string,
 *   delivered: number, queue_depth: number, queue_max: number, queued_total: number,
 *   dropped_offline: number, dropped_queue_full: number, dropped_disabled: number}} mqtt
 * @property {{firing: string[], fired: Record<string, number>}} alerts
 */

/** Words for a drop reason. */
const REASONS = /** @type {Record<string, string>} */ ({
  room_full: 'results room fell behind',
  mqtt_offline: 'broker away (QoS 0)',
  mqtt_queue_full: 'MQTT queue full',
  mqtt_disabled: 'waiting when MQTT was turned off',
  stream_slow_client: 'a stream client fell behind',
});

export class OutputsView {
  /** @param {HTMLElement} root the panel */
  constructor(root) {
    this.root = root;
  }

  /**
   * @param {string} field
   * @param {string} text
   */
  set(field, text) {
    const el = this.root.querySelector(`[data-field="${field}"]`);
    if (el) el.textContent = text;
  }

  /** @param {Outputs} o */
  show(o) {
    const m = o.mqtt;
    const state = this.root.querySelector('[data-field="mqtt_state"]');
    if (state) {
      state.textContent = m.state === 'disabled' ? 'off' : m.state;
      state.className = `out-state ${m.state}`;
    }
    this.set('mqtt_where', m.enabled ? `${m.broker ?? ''} · topic ${m.topic ?? ''} · QoS ${m.qos}` : 'not configured (Config page, Outputs)');
    this.set('mqtt_error', m.last_error ? `Last error: ${m.last_error}` : '');
    this.set('mqtt_counts', m.enabled || m.queued_total > 0
      ? `${fmt.count(m.delivered)} delivered · ${fmt.count(m.queue_depth)} waiting of ${fmt.count(m.queue_max)}`
      : '');
    const drops = Object.entries(o.dropped).filter(([, n]) => n > 0);
    this.set('drops', drops.length === 0
      ? 'No result dropped since the service started.'
      : `Dropped since the service started: ${drops.map(([k, n]) => `${fmt.count(n)} ${REASONS[k] ?? k}`).join(' · ')}`);
    this.set('log', `${fmt.count(o.log.written)} written · ${fmt.bytes(o.log.bytes)} of ${fmt.bytes(o.log.max_bytes)} in ${o.log.files} file${o.log.files === 1 ? '' : 's'}${o.log.errors > 0 ? ` · ${o.log.errors} errors${o.log.last_error ? `: ${o.log.last_error}` : ''}` : ''}`);
    const firing = o.alerts.firing ?? [];
    const f = this.root.querySelector('[data-field="firing"]');
    if (f) {
      f.textContent = firing.length === 0 ? 'No condition alert firing.' : `Firing now: ${firing.join(', ')}`;
      f.classList.toggle('bad', firing.length > 0);
    }
  }
}
