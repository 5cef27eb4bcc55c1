// units.test.mjs: the page's DOM-free modules, in Node: the history ring
// (js/series.js), the telemetry history fed by snapshots (js/power.js) and the
// unit formatting (js/format.js). The page as a whole is dashboard.test.mjs and
// pages.test.mjs.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as fmt from '../js/format.js';
import { MAX_RAILS, TelemetryHistory } from '../js/power.js';
import { SeriesWindow } from '../js/series.js';
import { conditionText } from '../js/views/results.js';

describe('SeriesWindow', () => {
  it('keeps the newest rows, oldest first, across the wrap', () => {
    const s = new SeriesWindow(4, 2);
    for (let t = 1; t <= 7; t++) s.push([t, t * 10]);
    const [xs, ys] = s.columns();
    assert.deepEqual([...xs], [4, 5, 6, 7]);
    assert.deepEqual([...ys], [40, 50, 60, 70]);
    assert.equal(s.lastX(), 7);
    assert.equal(s.last(1), 70);
  });

  it('trims by x', () => {
    const s = new SeriesWindow(8, 2);
    [[1, 1], [2, NaN], [3, 3], [4, 5]].forEach((r) => s.push(r));
    s.trimBefore(3);
    assert.deepEqual([...s.columns()[0]], [3, 4]);
    assert.deepEqual([...s.columns()[1]], [3, 5]);
    s.clear();
    assert.equal(s.length, 0);
    assert.ok(Number.isNaN(s.lastX()));
  });

  it('hands out views, not copies', () => {
    const s = new SeriesWindow(3, 1);
    for (let t = 0; t < 5; t++) s.push([t]);
    const [xs] = s.columns();
    assert.equal(xs.buffer, s.cols[0].buffer);
  });
});

describe('format', () => {
  it('scales latencies from µs', () => {
    assert.equal(fmt.latency(118.4), '118\u202fµs');
    assert.equal(fmt.latency(9100), '9.10\u202fms');
    assert.equal(fmt.latency(2.5e6), '2.50\u202fs');
    assert.equal(fmt.latency(0), fmt.NONE);
    assert.equal(fmt.latency(undefined), fmt.NONE);
    assert.equal(fmt.latencyTick(1000), '1\u202fms');
    assert.equal(fmt.latencyTick(200), '200\u202fµs');
  });

  it('picks a throughput unit that shows digits', () => {
    assert.deepEqual(fmt.throughputParts(0.0121), ['12.1', 'MB/s']);
    assert.deepEqual(fmt.throughputParts(3.2), ['3.20', 'GB/s']);
    assert.deepEqual(fmt.throughputParts(0), ['0', 'GB/s']);
  });

  it('groups counts and sizes', () => {
    assert.equal(fmt.count(1234567), '1\u202f234\u202f567');
    assert.equal(fmt.count(12), '12');
    assert.equal(fmt.bytes(405900), '396\u202fKiB');
    assert.equal(fmt.bytes(2147483648), '2.00\u202fGiB');
    assert.equal(fmt.percent(0.614), '61.4\u202f%');
    assert.equal(fmt.duration(3725), '1\u202fh 2\u202fmin');
  });
});

describe('TelemetryHistory', () => {
  /** @param {number} t @param {number} w @param {Record<string, number>} [rails] */
  const point = (t, w, rails = { VDD_IN: w * 1000, VDD_SOC: 500 }) => ({
    t, power_w: w, rails_mw: rails, cpu_pct: 10, gpu_pct: null, temp_max_c: 50, energy_per_frame_mj: null, frames_per_joule: null,
  });

  it('appends each sample once, rails by name in W, a missing figure as a gap', () => {
    const h = new TelemetryHistory();
    assert.equal(h.push(point(10.0, 1)), true);
    assert.equal(h.push(point(10.0, 1)), false, 'a snapshot repeating the sample adds nothing');
    h.push(point(10.1, 1.5));
    h.push(point(10.2, 2, { VDD_SOC: 400, VDD_CPU_GPU_CV: 300 }));
    assert.deepEqual(h.rails, ['VDD_IN', 'VDD_SOC', 'VDD_CPU_GPU_CV'], 'first seen first');
    const [ts, power, , , gpu, , rail0, rail1, rail2] = h.series.columns();
    assert.deepEqual([...ts], [10.0, 10.1, 10.2]);
    assert.deepEqual([...power], [1, 1.5, 2]);
    assert.deepEqual([...rail0].slice(0, 2), [1, 1.5]);
    assert.ok(Number.isNaN(rail0[2]), 'a rail that vanished is a gap, not 0');
    assert.equal(rail1[2], 0.4);
    assert.equal(rail2[2], 0.3);
    assert.ok(Number.isNaN(gpu[0]));
  });

  it('breaks the line over an outage and keeps at most MAX_RAILS rails', () => {
    const h = new TelemetryHistory();
    h.push(point(10, 1));
    h.push(point(20, 1));
    const [ts, power] = h.series.columns();
    assert.equal(ts.length, 3);
    assert.ok(Number.isNaN(power[1]), 'a row of no value between');
    const many = Object.fromEntries(Array.from({ length: MAX_RAILS + 3 }, (_, i) => [`R${i}`, i]));
    h.push(point(21, 1, many));
    assert.equal(h.rails.length, MAX_RAILS);
  });
});

describe('format (power panel)', () => {
  it('scales power and shows shares and temperatures', () => {
    assert.equal(fmt.watts(7.38816), '7.39\u202fW');
    assert.equal(fmt.watts(0.85), '850\u202fmW');
    assert.equal(fmt.watts(null), fmt.NONE);
    assert.equal(fmt.pct(42.4), '42\u202f%');
    assert.equal(fmt.pct(7.46), '7.5\u202f%');
    assert.equal(fmt.celsius(51.25), '51.3\u202f°C');
  });

  it('keeps 3 significant digits below 1, so frames per joule stays the inverse of mJ per frame', () => {
    assert.equal(fmt.num3(7.388), '7.39');
    assert.equal(fmt.num3(118.4), '118');
    assert.equal(fmt.num3(1000 / 7355), '0.136');
    assert.equal(fmt.num3(0.0042), '0.00420');
    assert.equal(fmt.num3(0), '0.00');
  });
});

describe('conditionText', () => {
  it('says what a condition alert measured against its bound', () => {
    assert.equal(
      conditionText({ rule: 'd', kind: 'drop_rate', state: 'firing', value: 0.5, threshold: 0.2, clear_at: 0.19, unit: 'ratio', window_s: 10 }),
      `drop rate 50.0${'\u202f'}% > 20.0${'\u202f'}% over 10 s`,
    );
    assert.equal(
      conditionText({ rule: 'h', kind: 'temperature', state: 'cleared', value: 57.5, threshold: 60, clear_at: 58, unit: 'C', source: 'cpu-thermal' }),
      'cpu-thermal temperature 57.5 °C ≤ 58 °C',
    );
    assert.equal(
      conditionText({ rule: 'p', kind: 'power', state: 'firing', value: 9.98412, threshold: 8, clear_at: 7.6, unit: 'W', source: 'total' }),
      'total power 9.98 W > 8 W',
    );
  });
});
