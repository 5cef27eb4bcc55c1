// units.test.mjs: the page's DOM-free modules, in Node: the history ring
// (js/series.js), history-then-stream ordering (js/backfill.js), the telemetry
// history (js/power.js) and the unit formatting (js/format.js). The page as a whole is dashboard.test.mjs and pages.test.mjs.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Backfill } from '../js/backfill.js';
import * as fmt from '../js/format.js';
import { MAX_RAILS, TelemetryHistory } from '../js/power.js';
import { SeriesWindow } from '../js/series.js';

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

  it('trims by x and averages the newest rows, leaving NaN out', () => {
    const s = new SeriesWindow(8, 2);
    [[1, 1], [2, NaN], [3, 3], [4, 5]].forEach((r) => s.push(r));
    assert.equal(s.meanSince(1, 2), 4);
    assert.ok(Number.isNaN(s.meanSince(1, 10)));
    s.trimBefore(3);
    assert.deepEqual([...s.columns()[0]], [3, 4]);
    s.setLast(1, 9);
    assert.deepEqual([...s.columns()[1]], [3, 9]);
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

describe('Backfill', () => {
  const rows = (/** @type {number[]} */ ...ts) => ts.map((t) => ({ t }));

  it('holds stream rows until the history came, then gives the history first', () => {
    const b = new Backfill(10);
    assert.deepEqual(b.hold(rows(5.1, 5.2)), []);
    assert.deepEqual(b.fill(rows(4.9, 5.0, 5.1)).map((r) => r.t), [4.9, 5.0, 5.1, 5.1, 5.2],
      'the overlap is left to the consumer, which drops rows not newer than its newest');
    assert.deepEqual(b.hold(rows(5.3)).map((r) => r.t), [5.3], 'after the history, rows pass through');
  });

  it('keeps the newest rows while waiting, and passes them on when the history failed', () => {
    const b = new Backfill(2);
    b.hold(rows(1, 2));
    b.hold(rows(3));
    assert.deepEqual(b.fill([]).map((r) => r.t), [2, 3]);
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
  /** @param {number} t @param {number} w */
  const point = (t, w) => ({
    t, power_w: w, rails_mw: [w * 1000, 500], cpu_pct: 10, gpu_pct: null, temp_max_c: 50, fps: 30, energy_per_frame_mj: null,
  });

  it('holds stream points until the history came, then appends the newer ones once', () => {
    const h = new TelemetryHistory();
    assert.equal(h.push(point(10.2, 2)), false);
    assert.equal(h.push(point(10.3, 3)), false);
    h.load({ period_s: 0.1, rails: ['VDD_IN', 'VDD_SOC'], points: [point(10.0, 1), point(10.1, 1.5), point(10.2, 2)] });
    const [ts, power, , , gpu, , rail0, rail1] = h.series.columns();
    assert.deepEqual([...ts], [10.0, 10.1, 10.2, 10.3]);
    assert.deepEqual([...power], [1, 1.5, 2, 3]);
    assert.deepEqual([...rail0], [1, 1.5, 2, 3], 'rails in W');
    assert.equal(rail1[0], 0.5);
    assert.ok(Number.isNaN(gpu[0]), 'a missing figure is a gap, not 0');
    assert.equal(h.push(point(10.3, 9)), false, 'a point already held is skipped');
    assert.equal(h.push(point(10.4, 4)), true);
    assert.equal(h.series.length, 5);
  });

  it('notices a rail it has no name for', () => {
    const h = new TelemetryHistory();
    h.load({ period_s: 0.1, rails: ['VDD_IN'], points: [] });
    assert.equal(h.railsUnknown(point(1, 1)), true);
    h.load({ period_s: 0.1, rails: ['VDD_IN', 'VDD_SOC'], points: [] });
    assert.equal(h.railsUnknown(point(1, 1)), false);
    assert.ok(MAX_RAILS >= 6, 'AGX Orin has 6 rails');
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
