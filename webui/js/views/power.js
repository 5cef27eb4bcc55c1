// @ts-check
// views/power.js: the numbers of the power and system panel. Owns writing into
// the panel's data-metric / data-field / data-testid elements: total power and
// what it covers, "no power source on this machine", energy per frame and
// frames per joule, CPU/GPU load, memory, the hottest zone, the rails, thermal
// zones and telemetry sources tables, and the Jetson figures (power mode,
// jetson_clocks, fan, GPU and EMC clocks, GPU memory, per-core CPU). Must not
// fetch or chart: pages/live.js calls showPoint() with the newest snapshot's
// telemetry point and showSample() with its full telemetry sample.

import * as fmt from '../format.js';

/** @typedef {import('../stream.js').TelemetryPoint} TelemetryPoint */

/**
 * A name that may break only after its underscores (`VDD_CPU_GPU_CV`), never
 * inside a part: text with <wbr> after each `_`.
 * @param {string} name
 * @returns {Node[]}
 */
function breakable(name) {
  /** @type {Node[]} */
  const out = [];
  name.split(/(?<=_)/).forEach((part, i) => {
    if (i > 0) out.push(document.createElement('wbr'));
    out.push(document.createTextNode(part));
  });
  return out;
}

/**
 * @param {(string | Node[])[]} cells the first is the row's header
 * @returns {HTMLTableRowElement}
 */
function row(cells) {
  const tr = document.createElement('tr');
  cells.forEach((c, i) => {
    const td = document.createElement(i === 0 ? 'th' : 'td');
    if (i === 0) td.setAttribute('scope', 'row');
    if (typeof c === 'string') td.textContent = c;
    else td.append(...c);
    tr.append(td);
  });
  return tr;
}

/** @param {number | null | undefined} hz @returns {string} */
function mhz(hz) {
  return fmt.isNum(hz) ? `${Math.round(hz / 1e6)}` : fmt.NONE;
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
   * The tiles, from the newest snapshot's point: energy per frame and frames per
   * joule are the same measurement, so both come from here.
   * @param {TelemetryPoint} p
   */
  showPoint(p) {
    this.showHasPower(p.power_w != null);
    this.metric('power_total', fmt.watts(p.power_w));
    this.metric('energy_per_frame', fmt.num3(p.energy_per_frame_mj));
    this.metric('frames_per_joule', fmt.num3(p.frames_per_joule));
    this.metric('cpu_load', fmt.pct(p.cpu_pct));
    this.metric('gpu_load', fmt.pct(p.gpu_pct));
    this.metric('temp_max', fmt.celsius(p.temp_max_c));
  }

  /**
   * The full sample: what the total covers, rails, zones, memory, sources, and the
   * Jetson figures.
   * @param {any} s the newest snapshot's `telemetry_sample`
   */
  showSample(s) {
    const power = s.power;
    this.el('[data-field="power_covers"]').textContent = power
      ? `Total from ${power.source}: ${power.covers}`
      : '';
    this.metric('memory', fmt.isNum(s.mem_used_bytes)
      ? `${fmt.bytes(s.mem_used_bytes)} / ${fmt.bytes(s.mem_total_bytes)}` : fmt.NONE);

    const rails = Array.isArray(s.rails) ? s.rails : [];
    this.el('[data-testid="rails"] tbody').replaceChildren(...rails.map((/** @type {any} */ r) => row([
      breakable(String(r.name)),
      // an INA238 has one channel: name the chip instead (Thor's board input, VIN)
      r.driver === 'ina238' ? `${r.chip} INA238` : `${r.chip} ch${r.channel}`,
      `${(r.voltage_mv / 1000).toFixed(3)}`,
      `${Math.round(r.current_ma)}`,
      fmt.watts(r.power_mw / 1000),
    ])));
    this.el('[data-field="rail_chips"]').textContent = rails.some((/** @type {any} */ r) => r.driver === 'ina238')
      ? 'INA238 (board input) · INA3221' : 'INA3221';
    this.el('[data-testid="rails"]').hidden = rails.length === 0;
    this.el('[data-field="rails_empty"]').hidden = rails.length > 0;

    const zones = [
      ...(Array.isArray(s.zones) ? s.zones : []).map((/** @type {any} */ z) => [breakable(String(z.name)), fmt.celsius(z.celsius)]),
      ...(Array.isArray(s.gpus) ? s.gpus : [])
        .filter((/** @type {any} */ g) => fmt.isNum(g.celsius))
        .map((/** @type {any} */ g) => [`GPU ${g.index} ${g.name}`, fmt.celsius(g.celsius)]),
    ];
    this.el('[data-testid="zones"] tbody').replaceChildren(...zones.map(row));
    this.el('[data-testid="zones"]').hidden = zones.length === 0;
    this.el('[data-field="zones_empty"]').hidden = zones.length > 0;
    // no zone: no empty 0–2 °C chart, a sentence instead
    for (const e of this.root.querySelectorAll('[data-needs-zones]')) {
      if (e instanceof HTMLElement) e.hidden = zones.length === 0;
    }
    this.el('[data-field="temp_empty"]').hidden = zones.length > 0;

    const sources = Array.isArray(s.sources) ? s.sources : [];
    this.el('[data-testid="sources"]').replaceChildren(...sources.map((/** @type {any} */ x) => {
      const li = document.createElement('li');
      li.dataset.state = x.state;
      li.textContent = `${x.name}: ${x.state}`;
      if (x.detail) li.title = x.detail;
      return li;
    }));
    this.showJetson(s);
  }

  /**
   * The jetson-stats figures; the section shows on a Jetson only (a power mode, a
   * devfreq GPU or nvmap memory found).
   * @param {any} s
   */
  showJetson(s) {
    const section = this.el('[data-testid="jetson"]');
    const isJetson = s.power_mode != null || s.gpu_load != null || s.gpu_mem_used_bytes != null;
    section.hidden = !isJetson;
    if (!isJetson) return;
    const why = (/** @type {string} */ name) => {
      const src = (Array.isArray(s.sources) ? s.sources : []).find((/** @type {any} */ x) => x.name === name);
      return src?.detail ? `${fmt.NONE} (${src.detail})` : fmt.NONE;
    };
    const mode = s.power_mode;
    this.metric('power_mode', mode ? `${mode.name ?? 'mode'} (id ${mode.id})${mode.is_default ? ', the default' : ''}` : why('nvpmodel'));
    const clocks = s.clocks;
    this.metric('jetson_clocks', clocks ? `${clocks.jetson_clocks ? 'on' : 'off'}: ${clocks.detail}` : fmt.NONE);
    const fans = Array.isArray(s.fans) ? s.fans : [];
    this.metric('fan', fans.length
      ? fans.map((/** @type {any} */ f) => [fmt.isNum(f.pwm_pct) ? fmt.pct(f.pwm_pct) : null, fmt.isNum(f.rpm) ? `${f.rpm} rpm` : null]
        .filter(Boolean).join(' · ')).join(', ')
      : why('fan'));
    const g = s.gpu_load;
    this.metric('gpu_freq', g && fmt.isNum(g.freq_hz)
      ? `${mhz(g.freq_hz)}${fmt.isNum(g.max_freq_hz) ? ` of ${mhz(g.max_freq_hz)}` : ''}\u202fMHz` : why('devfreq'));
    const emc = s.emc;
    this.metric('emc_freq', emc
      ? `${mhz(emc.freq_hz)}${fmt.isNum(emc.max_freq_hz) ? ` of ${mhz(emc.max_freq_hz)}` : ''}\u202fMHz` : why('emc'));
    this.metric('gpu_mem', fmt.isNum(s.gpu_mem_used_bytes) ? fmt.bytes(s.gpu_mem_used_bytes) : why('nvmap'));
    const cores = Array.isArray(s.cpu_cores) ? s.cpu_cores : [];
    this.el('[data-testid="cpu-cores"]').replaceChildren(...cores.map((/** @type {any} */ c) => {
      const li = document.createElement('li');
      li.dataset.online = String(c.online);
      li.textContent = c.online
        ? `cpu${c.cpu} ${fmt.pct(c.load_pct)} · ${mhz(c.freq_hz)}\u202fMHz`
        : `cpu${c.cpu} off`;
      return li;
    }));
  }
}
