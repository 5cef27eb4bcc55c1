// @ts-check
// views/power.js: the numbers of the power and system panel. Owns writing
// into the panel's data-metric / data-field / data-testid elements: total
// power and what it covers, "no power source on this machine", energy per
// frame and frames per joule, CPU/GPU load, memory, the hottest zone, and the
// rails, thermal zones and telemetry sources tables. Must not fetch or chart:
// main.js calls showPoint() with each SSE snapshot's telemetry point and
// showSample() with GET /telemetry (polled while the live page is shown).

import * as fmt from '../format.js';

/** @typedef {import('../api.js').TelemetryPoint} TelemetryPoint */

/**
 * @param {string[]} cells
 * @returns {HTMLTableRowElement}
 */
function row(cells) {
  const tr = document.createElement('tr');
  cells.forEach((c, i) => {
    const td = document.createElement(i === 0 ? 'th' : 'td');
    if (i === 0) td.setAttribute('scope', 'row');
    td.textContent = c;
    tr.append(td);
  });
  return tr;
}

export class PowerView {
  /** @param {ParentNode} root the power panel */
  constructor(root) {
    this.root = root;
  }

  /** @param {string} sel @returns {HTMLElement} */
  el(sel) {
    const e = this.root.querySelector(sel);
    if (!(e instanceof HTMLElement)) throw new Error(`power panel lacks ${sel}`);
    return e;
  }

  /** @param {string} name @param {string} text */
  metric(name, text) {
    this.el(`[data-metric="${name}"]`).textContent = text;
  }

  /**
   * Shows or hides everything that needs a power figure.
   * @param {boolean} has
   */
  showHasPower(has) {
    this.el('[data-testid="no-power"]').hidden = has;
    for (const e of this.root.querySelectorAll('[data-needs-power]')) {
      if (e instanceof HTMLElement) e.hidden = !has;
    }
  }

  /**
   * The chart figures, from the newest snapshot (several a second).
   * @param {TelemetryPoint} p
   */
  showPoint(p) {
    this.showHasPower(p.power_w != null);
    this.metric('power_total', fmt.watts(p.power_w));
    this.metric('energy_per_frame', fmt.num3(p.energy_per_frame_mj));
    this.metric('frames_per_joule', fmt.isNum(p.energy_per_frame_mj) && p.energy_per_frame_mj > 0
      ? fmt.num3(1000 / p.energy_per_frame_mj) : fmt.NONE);
    this.metric('cpu_load', fmt.pct(p.cpu_pct));
    this.metric('gpu_load', fmt.pct(p.gpu_pct));
    this.metric('temp_max', fmt.celsius(p.temp_max_c));
  }

  /**
   * The full sample: what the total covers, rails, zones, memory, sources.
   * @param {any} s reply of GET /telemetry, null before the first sample
   */
  showSample(s) {
    if (!s) return;
    const power = s.power;
    this.showHasPower(power != null);
    this.el('[data-field="power_covers"]').textContent = power
      ? `Total from ${power.source}: ${power.covers}`
      : '';
    this.metric('power_total', fmt.watts(power?.watts));
    this.metric('energy_per_frame', fmt.num3(s.energy_per_frame_mj));
    this.metric('frames_per_joule', fmt.num3(s.frames_per_joule));
    this.metric('memory', fmt.isNum(s.mem_used_bytes)
      ? `${fmt.bytes(s.mem_used_bytes)} / ${fmt.bytes(s.mem_total_bytes)}` : fmt.NONE);

    const rails = Array.isArray(s.rails) ? s.rails : [];
    this.el('[data-testid="rails"] tbody').replaceChildren(...rails.map((/** @type {any} */ r) => row([
      r.name,
      `${r.chip} ch${r.channel}`,
      `${(r.voltage_mv / 1000).toFixed(3)}`,
      `${Math.round(r.current_ma)}`,
      fmt.watts(r.power_mw / 1000),
    ])));
    this.el('[data-testid="rails"]').hidden = rails.length === 0;
    this.el('[data-field="rails_empty"]').hidden = rails.length > 0;

    const zones = [
      ...(Array.isArray(s.zones) ? s.zones : []).map((/** @type {any} */ z) => [z.name, fmt.celsius(z.celsius)]),
      ...(Array.isArray(s.gpus) ? s.gpus : [])
        .filter((/** @type {any} */ g) => fmt.isNum(g.celsius))
        .map((/** @type {any} */ g) => [`GPU ${g.index} ${g.name}`, fmt.celsius(g.celsius)]),
    ];
    this.el('[data-testid="zones"] tbody').replaceChildren(...zones.map(row));
    this.el('[data-testid="zones"]').hidden = zones.length === 0;
    this.el('[data-field="zones_empty"]').hidden = zones.length > 0;

    const sources = Array.isArray(s.sources) ? s.sources : [];
    this.el('[data-testid="sources"]').replaceChildren(...sources.map((/** @type {any} */ x) => {
      const li = document.createElement('li');
      li.dataset.state = x.state;
      li.textContent = `${x.name}: ${x.state}`;
      if (x.detail) li.title = x.detail;
      return li;
    }));
  }
}
