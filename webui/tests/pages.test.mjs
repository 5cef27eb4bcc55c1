// pages.test.mjs: the power panel, the config page and the system page in a
// real browser against a real fpgagdrd whose telemetry reads a fixture sysfs
// tree (`--sysfs-root`): an Orin NX / Orin Nano INA3221 on the hwmon driver
// (VDD_IN is the total; values on the chip's 8 mV / 8 mA steps), one thermal
// zone and a loaded kernel module reporting its version. Also a host with no
// power source, and the dashboard's transferred size (recorded in
// $FPGAGDR_ARTIFACTS/dashboard-size.json and docs/benchmarks.md).
//
// Run:  FPGAGDRD_BIN=target/debug/fpgagdrd node --test webui/tests/
// (env as in dashboard.test.mjs).

import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import http from 'node:http';
import { gunzipSync } from 'node:zlib';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  ARTIFACTS, BIN, REPO, TOKEN, UI_MS, binPath, extraArgs, launch, openDashboard, replayConfig, startService,
  stopService, text, watchProblems,
} from './helpers.mjs';

const HWMON = 'sys/bus/i2c/drivers/ina3221/1-0040/hwmon/hwmon3';

/** Writes `value` + newline at root/rel, creating folders. */
function put(/** @type {string} */ root, /** @type {string} */ rel, /** @type {string | number} */ value) {
  const p = path.join(root, rel);
  mkdirSync(path.dirname(p), { recursive: true });
  writeFileSync(p, `${value}\n`);
}

/** Orin NX / Orin Nano: VDD_IN on channel 1 is the module's total. */
function orinNx(/** @type {string} */ root) {
  const rails = [['VDD_IN', 4992, 1480], ['VDD_CPU_GPU_CV', 4992, 384], ['VDD_SOC', 4992, 400]];
  rails.forEach(([label, mv, ma], i) => {
    put(root, `${HWMON}/in${i + 1}_label`, label);
    put(root, `${HWMON}/in${i + 1}_input`, mv);
    put(root, `${HWMON}/curr${i + 1}_input`, ma);
  });
  put(root, 'sys/class/thermal/thermal_zone0/type', 'cpu-thermal');
  put(root, 'sys/class/thermal/thermal_zone0/temp', 51250);
  put(root, 'sys/module/fpgagdr/version', '0.3.1');
  // What jetson-stats shows on an Orin Nano in its 7 W mode: cores 4-5 off, the GPU's
  // devfreq clock and load, a fan split across a pwmfan and a tachometer node, and the
  // GPU's nvmap memory (no debugfs: the EMC clock needs root).
  for (let n = 0; n < 6; n++) {
    const d = `sys/devices/system/cpu/cpu${n}`;
    if (n > 0) put(root, `${d}/online`, n < 4 ? 1 : 0);
    put(root, `${d}/cpufreq/scaling_min_freq`, 115200);
    put(root, `${d}/cpufreq/scaling_max_freq`, 960000);
    if (n < 4) put(root, `${d}/cpufreq/scaling_cur_freq`, 960000);
  }
  put(root, 'proc/stat', ['cpu  1 0 0 1 0 0 0 0 0 0', ...[0, 1, 2, 3, 4, 5].map((n) => `cpu${n} 100 0 0 900 0 0 0 0 0 0`)].join('\n'));
  put(root, 'sys/class/devfreq/17000000.gpu/cur_freq', 306000000);
  put(root, 'sys/class/devfreq/17000000.gpu/min_freq', 306000000);
  put(root, 'sys/class/devfreq/17000000.gpu/max_freq', 408000000);
  put(root, 'sys/class/devfreq/17000000.gpu/device/load', 125);
  put(root, 'etc/nvpmodel.conf', ['< POWER_MODEL ID=0 NAME=15W >', '< POWER_MODEL ID=1 NAME=25W >',
    '< POWER_MODEL ID=2 NAME=MAXN_SUPER >', '< POWER_MODEL ID=3 NAME=7W >', '< PM_CONFIG DEFAULT=1 >'].join('\n'));
  put(root, 'var/lib/nvpmodel/status', 'pmode:0003');
  put(root, 'sys/class/hwmon/hwmon1/name', 'pwmfan');
  put(root, 'sys/class/hwmon/hwmon1/pwm1', 102);
  put(root, 'sys/class/hwmon/hwmon2/name', 'pwm_tach');
  put(root, 'sys/class/hwmon/hwmon2/rpm', 1534);
  put(root, 'proc/meminfo', 'MemTotal:        7802332 kB\nNvMapMemUsed:     186368 kB');
}

describe('power, config and system pages', { timeout: 240_000, skip: !BIN && 'FPGAGDRD_BIN is not set' }, () => {
  /** @type {import('playwright-core').Page} */
  let page;
  /** @type {string} */
  let tmp;
  /** @type {string} */
  let url;
  let watch = { problems: /** @type {string[]} */ ([]), unauthorized: /** @type {string[]} */ ([]) };
  /** @type {((name: string) => Promise<void>) | undefined} */
  let close;

  before(async () => {
    ({ tmp, url, page, watch, close } = await openDashboard({
      prefix: 'fpgagdr-pages-',
      prepare: (dir) => {
        orinNx(path.join(dir, 'sysfs'));
        writeFileSync(path.join(dir, 'config.json'), replayConfig());
      },
    }));
  });

  after(async () => {
    await close?.('pages');
  });

  /** GET below the service, parsed JSON, with the ETag. */
  async function api(/** @type {string} */ p) {
    const r = await fetch(new URL(p, url));
    return { status: r.status, etag: r.headers.get('etag'), body: await r.json() };
  }

  it('shows the fixture board\'s total, rails, energy per frame and temperature', async () => {
    // VDD_IN = 4.992 V × 1.480 A = 7.388 W is the total (not the sum of the rails)
    await page.waitForFunction(
      () => document.querySelector('[data-metric="power_total"]')?.textContent === '7.39\u202fW',
      null, { timeout: UI_MS },
    );
    assert.match(await text(page, '[data-field="power_covers"]'), /ina3221.*VDD_IN/);
    assert.ok(await page.getByTestId('no-power').isHidden());
    await page.waitForFunction(
      () => document.querySelectorAll('[data-testid="rails"] tbody tr').length === 3, null, { timeout: UI_MS },
    );
    const rails = await page.locator('[data-testid="rails"] tbody tr th').allTextContents();
    assert.deepEqual(rails, ['VDD_IN', 'VDD_CPU_GPU_CV', 'VDD_SOC']);
    const first = await page.locator('[data-testid="rails"] tbody tr').first().locator('td').allTextContents();
    assert.deepEqual(first, ['1-0040 ch1', '4.992', '1480', '7.39\u202fW']);
    // The hottest zone comes with the stream's telemetry point, which may trail the REST
    // reads above: wait for it rather than read it once.
    await page.waitForFunction(
      () => document.querySelector('[data-metric="temp_max"]')?.textContent === '51.3\u202f°C',
      null, { timeout: UI_MS },
    );
    // energy per frame: a number once frames flow, and frames per joule its inverse
    await page.waitForFunction(
      () => /\d/.test(document.querySelector('[data-metric="energy_per_frame"]')?.textContent ?? ''),
      null, { timeout: UI_MS },
    );
    // both read in one turn of the page: the stream may redraw them between two reads
    const [mj, fpj] = (await page.evaluate(() => ['energy_per_frame', 'frames_per_joule']
      .map((m) => document.querySelector(`[data-metric="${m}"]`)?.textContent ?? '')))
      .map(Number);
    assert.ok(mj > 0 && fpj > 0, `${mj} mJ/frame, ${fpj} frames/J`);
    assert.ok(Math.abs(mj * fpj - 1000) < 20, `${mj} mJ/frame × ${fpj} frames/J should be ~1000`);
    assert.match(await text(page, '[data-metric="cpu_load"]'), /%/);
    assert.match(await text(page, '[data-metric="memory"]'), /iB \/ /);
    // jitter beside the percentiles
    await page.waitForFunction(
      () => /\d/.test(document.querySelector('[data-metric="e2e_jitter"]')?.textContent ?? ''), null, { timeout: UI_MS },
    );
  });

  it('says "1 frame", not "1 frames", for a one-image replay', async () => {
    await page.waitForFunction(() => /replay/.test(document.querySelector('[data-field="source"]')?.textContent ?? ''), null, { timeout: UI_MS });
    const source = await text(page, '[data-field="source"]');
    assert.doesNotMatch(source, /\b1 frames\b/, source);
    assert.match(source, /\b1 frame\b/, source);
  });

  it('shows what jetson-stats shows: power mode, clocks, fan, cores, GPU clock and memory', async () => {
    const panel = page.getByTestId('jetson');
    await page.waitForFunction(
      () => /7W/.test(document.querySelector('[data-testid="jetson"]')?.textContent ?? ''), null, { timeout: UI_MS },
    ).catch(() => assert.fail('no Jetson panel naming the power mode'));
    assert.ok(await panel.isVisible());
    assert.equal(await text(page, '[data-metric="power_mode"]'), '7W (id 3)');
    assert.match(await text(page, '[data-metric="jetson_clocks"]'), /^off/);
    assert.equal(await text(page, '[data-metric="fan"]'), '40\u202f% · 1534 rpm');
    assert.equal(await text(page, '[data-metric="gpu_freq"]'), '306 of 408\u202fMHz');
    assert.equal(await text(page, '[data-metric="gpu_mem"]'), '182\u202fMiB');
    assert.match(await text(page, '[data-metric="emc_freq"]'), /root/);
    const cores = await page.locator('[data-testid="cpu-cores"] li').allTextContents();
    assert.equal(cores.length, 6, cores.join(' | '));
    assert.match(cores[0], /960\u202fMHz/);
    assert.match(cores[5], /off/);
  });

  it('updates the panel and the power chart when the rail readings change', async () => {
    const before = Number(await page.locator('[data-chart="power"]').getAttribute('data-points'));
    put(path.join(tmp, 'sysfs'), `${HWMON}/curr1_input`, 2000); // 4.992 V × 2 A = 9.984 W
    await page.waitForFunction(
      () => document.querySelector('[data-metric="power_total"]')?.textContent === '9.98\u202fW',
      null, { timeout: UI_MS },
    );
    await page.waitForFunction(
      (n) => Number(document.querySelector('[data-chart="power"]')?.getAttribute('data-points')) > n,
      before, { timeout: UI_MS },
    );
    const legend = await page.locator('[data-chart="power"] .u-legend').textContent();
    assert.match(legend ?? '', /VDD_CPU_GPU_CV/, 'a line per rail');
    assert.equal(await page.locator('[data-chart="power"] canvas').count(), 1);
  });

  it('keeps the chart history across a reload', async () => {
    // ≥ 5 s of telemetry at 10 Hz in the service's history
    await page.waitForFunction(
      () => Number(document.querySelector('[data-chart="power"]')?.getAttribute('data-points')) >= 50,
      null, { timeout: 30_000 },
    );
    await page.reload({ waitUntil: 'load' });
    await page.waitForFunction(
      () => Number(document.querySelector('[data-chart="power"]')?.getAttribute('data-points')) > 0,
      null, { timeout: UI_MS },
    );
    const { points, ms } = await page.evaluate(() => ({
      points: Number(document.querySelector('[data-chart="power"]')?.getAttribute('data-points')),
      ms: performance.now(),
    }));
    // the stream alone brings ~10 points a second: this many this soon came from the history
    assert.ok(points >= 45, `${points} points ${Math.round(ms)} ms after the reload`);
    assert.ok(points > (ms / 1000) * 10 + 15, `${points} points ${Math.round(ms)} ms after the reload: not the history`);
  });

  it('builds the config form from the schema, shows the API\'s error beside the field, changes nothing', async () => {
    const schema = (await api('/api/v1/config/schema')).body;
    /** @type {string[]} */
    const leaves = [];
    const walk = (/** @type {any} */ node, /** @type {string} */ at) => {
      // in the document's order, which the schema gives as x-order
      const order = /** @type {string[]} */ (node['x-order'] ?? []);
      const props = Object.entries(node.properties ?? {}).sort((a, b) => order.indexOf(a[0]) - order.indexOf(b[0]));
      for (const [k, raw] of props) {
        const s = /** @type {any} */ (raw).$ref ? schema.$defs[/** @type {any} */ (raw).$ref.split('/').pop()] : raw;
        if (s.properties) walk(s, `${at}/${k}`);
        else leaves.push(`${at}/${k}`);
      }
    };
    walk(schema, '');
    const before = await api('/api/v1/config');

    await page.getByRole('link', { name: 'Config' }).focus();
    await page.keyboard.press('Enter'); // keyboard: the nav is plain links
    const form = page.getByTestId('config-form');
    await form.waitFor({ state: 'visible', timeout: UI_MS });
    await page.waitForFunction((n) => document.querySelectorAll('.cfg-field').length === n, leaves.length, { timeout: UI_MS });
    const fields = await page.locator('.cfg-field').evaluateAll((els) => els.map((e) => /** @type {HTMLElement} */ (e).dataset.field));
    assert.deepEqual(fields, leaves, 'one field per schema leaf, in the schema\'s x-order');
    const entries = page.locator('[name="/ring/entries"]');
    assert.equal(await entries.inputValue(), String(before.body.ring.entries));
    assert.equal(await page.locator('[name="/ring/when_full"] option').count(), 2);

    await entries.fill('1');
    await page.getByRole('button', { name: 'Save' }).click();
    // the first change asks for the token
    await page.getByTestId('token-dialog').waitFor({ state: 'visible', timeout: UI_MS });
    await page.getByTestId('token-input').fill(TOKEN);
    await page.getByTestId('token-input').press('Enter');
    const error = page.locator('[data-error-for="/ring/entries"]');
    await error.waitFor({ state: 'visible', timeout: UI_MS });
    assert.match((await error.textContent()) ?? '', /out of range/);
    assert.equal(await entries.getAttribute('aria-invalid'), 'true');
    assert.match(await text(page, '[data-testid="config-status"]'), /Nothing was changed/);
    const after = await api('/api/v1/config');
    assert.deepEqual(after.body, before.body, 'a bad value changed the config');
    assert.equal(after.etag, before.etag);

    // a good value is saved, without asking for the token again
    await entries.fill('6');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.waitForFunction(
      () => /Saved/.test(document.querySelector('[data-testid="config-status"]')?.textContent ?? ''), null, { timeout: 30_000 },
    );
    assert.ok(await error.isHidden());
    assert.equal((await api('/api/v1/config')).body.ring.entries, 6);
    assert.equal(watch.unauthorized.length, 1, watch.unauthorized.join(', '));
  });

  it('says when a saved MQTT setting cannot connect', async () => {
    // Port 1 on loopback: nothing listens, the connection is refused at once.
    await page.locator('[name="/outputs/mqtt/host"]').fill('127.0.0.1');
    await page.locator('[name="/outputs/mqtt/port"]').fill('1');
    await page.locator('[name="/outputs/mqtt/enabled"]').check();
    await page.getByRole('button', { name: 'Save' }).click();
    try {
      await page.waitForFunction(
        () => /MQTT cannot connect: .+/.test(document.querySelector('[data-testid="config-status"]')?.textContent ?? ''), null, { timeout: 30_000 },
      );
      assert.equal(await page.getByTestId('config-status').getAttribute('data-kind'), 'bad');
    } finally {
      await page.locator('[name="/outputs/mqtt/enabled"]').uncheck();
      await page.getByRole('button', { name: 'Save' }).click();
      await page.waitForFunction(
        () => /^Saved and applied\.$/.test(document.querySelector('[data-testid="config-status"]')?.textContent ?? ''), null, { timeout: 30_000 },
      );
    }
    assert.equal((await api('/api/v1/status')).body.outputs.mqtt.state, 'disabled');
  });

  it('labels the config form in words', async () => {
    await page.goto(new URL('#config', url).href);
    await page.getByTestId('config-form').waitFor({ state: 'visible', timeout: UI_MS });
    await page.waitForFunction(() => document.querySelectorAll('.cfg-field').length > 10, null, { timeout: UI_MS });
    const labels = (await page.locator('.cfg-field label').allTextContents()).map((l) => l.trim());
    const snake = labels.filter((l) => /^[a-z0-9]+(_[a-z0-9]+)*$/.test(l));
    assert.deepEqual(snake, [], `raw keys as labels: ${labels.join(', ')}`);
  });

  it('states each range as the schema gives it, in the words the service refuses a value with', async () => {
    const schema = (await api('/api/v1/config/schema')).body;
    /** The property schema at a JSON pointer, through the sections' $refs. */
    const at = (/** @type {string} */ pointer) => pointer.split('/').slice(1).reduce((/** @type {any} */ n, k) => {
      const s = n.properties[k];
      return s.$ref ? schema.$defs[s.$ref.split('/').pop()] : s;
    }, schema);
    await page.goto(new URL('#config', url).href);
    await page.getByTestId('config-form').waitFor({ state: 'visible', timeout: UI_MS });
    // just past the top of each range (65536 does not even fit the port's 16 bits)
    for (const [pointer, over] of /** @type {[string, number][]} */ ([
      ['/ring/entries', 1025], ['/source/fps', 10001], ['/outputs/mqtt/port', 65536], ['/outputs/mqtt/keep_alive_s', 3601],
    ])) {
      const s = at(pointer);
      const stated = await text(page, `.cfg-field[data-field="${pointer}"] .cfg-range`);
      assert.equal(stated, `Must be ${s['x-allowed']}.`, pointer);
      const numbers = (stated.match(/\d+(\.\d+)?/g) ?? []).map(Number);
      assert.deepEqual([numbers[0], numbers[numbers.length - 1]], [s.minimum, s.maximum],
        `${pointer}: the page says "${stated}", the schema ${s.minimum} to ${s.maximum}`);
      const help = await text(page, `.cfg-field[data-field="${pointer}"] .cfg-help`);
      assert.doesNotMatch(help, /\.\.=|`|expected (f64|u\d+)|rule [a-z-]+/, `${pointer}: "${help}"`);
      // the service's refusal over the API ...
      const path = pointer.split('/').slice(1);
      /** @type {any} */
      const patch = {};
      path.reduce((/** @type {any} */ o, k, i) => (o[k] = i === path.length - 1 ? over : {}), patch);
      const r = await fetch(new URL('/api/v1/config', url), {
        method: 'PATCH',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/merge-patch+json' },
        body: JSON.stringify(patch),
      });
      assert.equal(r.status, 422, pointer);
      const refusal = (await r.json()).errors.find((/** @type {any} */ e) => e.field === pointer);
      assert.equal(refusal?.message, `${over} is out of range: must be ${s['x-allowed']}`, pointer);
      // ... and on the page, beside the field, in the same words as the range stated
      const input = page.locator(`[name="${pointer}"]`);
      const was = await input.inputValue();
      await input.fill(String(over));
      await page.getByRole('button', { name: 'Save' }).click();
      await page.waitForFunction(
        ([p, m]) => document.querySelector(`[data-error-for="${p}"]`)?.textContent === m,
        [pointer, refusal.message], { timeout: UI_MS },
      ).catch(async () => assert.fail(`${pointer}: the page says "${await text(page, `[data-error-for="${pointer}"]`)}"`));
      await input.fill(was);
    }
    // no field's help, group heading or choice says a range in code (`..=`), quotes code,
    // names a rule or a Rust type
    const words = await page.evaluate(() => [
      ...[...document.querySelectorAll('.cfg-help, .cfg-group > legend')].map((e) => e.textContent ?? ''),
      ...[...document.querySelectorAll('.cfg-field option')].map((o) => /** @type {HTMLElement} */ (o).title),
    ]);
    const jargon = words.filter((w) => /\.\.=|`|expected (f64|u\d+|i\d+)|\brule [a-z]+-[a-z-]+/.test(w));
    assert.deepEqual(jargon, [], 'jargon in the config form');
    // at phone width the stated range wraps inside the screen
    await page.setViewportSize({ width: 390, height: 844 });
    try {
      const range = page.locator('.cfg-field[data-field="/ring/entries"] .cfg-range');
      await range.scrollIntoViewIfNeeded();
      const box = await range.boundingBox();
      assert.ok(box && box.x >= 0 && box.x + box.width <= 390, `the range at ${JSON.stringify(box)}`);
    } finally {
      await page.setViewportSize({ width: 1280, height: 900 });
    }
  });

  it('says on the Live page why the ring holds more entries than the config asks for', async () => {
    const asked = (await api('/api/v1/config')).body.ring.entries;
    const m = (await api('/api/v1/status')).body.memory;
    assert.notEqual(m.ring_entries, asked, 'the fixture should show a ring larger than asked for');
    await page.goto(new URL('#live', url).href);
    for (const width of [1280, 390]) {
      await page.setViewportSize({ width, height: width > 400 ? 900 : 844 });
      await page.waitForFunction(() => /\d entries/.test(document.querySelector('[data-field="ring"]')?.textContent ?? ''), null, { timeout: UI_MS });
      const ring = await text(page, '[data-field="ring"]');
      assert.ok(ring.startsWith(`${m.ring_entries} entries of `), ring);
      assert.ok(ring.includes(`: ${m.ring_entries / m.card_slots} for each of the card's ${m.card_slots} frame slots`), ring);
      assert.match(ring, /Config page's entries are a minimum, rounded up to whole rounds/, ring);
      const box = await page.locator('[data-field="ring"]').boundingBox();
      assert.ok(box && box.x + box.width <= width, `at ${width} px the ring line is at ${JSON.stringify(box)}`);
    }
    await page.setViewportSize({ width: 1280, height: 900 });
    // back where the next tests expect the page: the config form
    await page.goto(new URL('#config', url).href);
    await page.getByTestId('config-form').waitFor({ state: 'visible', timeout: UI_MS });
  });

  it('orders the config form as the document is: the frame source first, its kind first', async () => {
    const groups = (await page.locator('.cfg-group > legend').allTextContents()).map((l) => l.trim());
    assert.match(groups[0] ?? '', /^Frame source/, `groups in this order: ${groups.join(' | ')}`);
    const fields = await page.locator('.cfg-group').first().locator('.cfg-field')
      .evaluateAll((els) => els.map((e) => /** @type {HTMLElement} */ (e).dataset.field));
    assert.deepEqual(fields.slice(0, 3), ['/source/kind', '/source/path', '/source/fps'], 'the kind decides the rest: it comes first');
  });

  it('hides the fields the chosen source does not use', async () => {
    // the fixture replays an image: the test pattern's size and format do not apply
    const shown = async (/** @type {string} */ f) => page.locator(`.cfg-field[data-field="${f}"]`).isVisible();
    assert.equal(await shown('/source/path'), true);
    assert.deepEqual([await shown('/source/width'), await shown('/source/height'), await shown('/source/format')],
      [false, false, false], 'the test pattern\'s width, height and format are offered for a replay');
    await page.locator('[name="/source/kind"]').selectOption('test_pattern');
    assert.deepEqual([await shown('/source/width'), await shown('/source/path')], [true, false]);
    await page.locator('[name="/source/kind"]').selectOption('replay');
    assert.equal(await shown('/source/path'), true);
  });

  it('offers the frames and models the device has', async () => {
    const options = (/** @type {string} */ name) => page.locator(`[name="${name}"]`).evaluate((e) =>
      [.../** @type {HTMLInputElement} */ (e).list?.options ?? []].map((o) => o.value));
    const frames = await options('/source/path');
    assert.ok(frames.includes('frames/chelsea.png'), `frames offered: ${frames.join(', ')}`);
    const models = await options('/model/path');
    assert.ok(models.includes('models/efficientnet-lite0.onnx'), `models offered: ${models.join(', ')}`);
  });

  it('shows the versions on the system page', async () => {
    const sys = (await api('/api/v1/system')).body;
    await page.goto(new URL('#system', url).href);
    await page.waitForFunction(
      () => /[0-9a-f]{64}/.test(document.querySelector('[data-field="sys_model_sha"]')?.textContent ?? ''),
      null, { timeout: UI_MS },
    );
    assert.equal(await text(page, '[data-field="sys_service"]'), `fpgagdrd ${sys.service.version}`);
    assert.equal(await text(page, '[data-field="sys_module"]'), '0.3.1');
    assert.match(await text(page, '[data-field="sys_image"]'), /^not an image build/);
    assert.equal(await text(page, '[data-field="sys_model_sha"]'), sys.model.sha256);
    assert.match(await text(page, '[data-field="sys_card"]'), /SimCard.*\(simulated\)/);
    assert.match(await text(page, '[data-field="sys_sources"]'), /ina3221: ok/);
    assert.notEqual(await text(page, '[data-field="sys_uptime"]'), '—');
  });

  it('fits a 390 px phone on every page', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    for (const p of ['live', 'config', 'system']) {
      await page.goto(new URL(`#${p}`, url).href);
      await page.waitForTimeout(300);
      const over = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      assert.ok(over <= 0, `#${p} is ${over} px wider than 390 px`);
    }
    await page.setViewportSize({ width: 1280, height: 900 });
  });

  it('breaks rail names only between their parts on a 390 px phone', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(new URL('#live', url).href);
    await page.waitForFunction(
      () => document.querySelectorAll('[data-testid="rails"] tbody tr').length === 3, null, { timeout: UI_MS },
    );
    await page.waitForTimeout(300);
    const broken = await page.evaluate(() => {
      /** @type {string[]} */
      const out = [];
      const cells = [...document.querySelectorAll('[data-testid="rails"] tbody th'),
        ...document.querySelectorAll('[data-chart="power"] .u-legend .u-label')];
      for (const cell of cells) {
        // every character of the cell, across its text nodes, with the line it is on
        /** @type {{ch: string, top: number}[]} */
        const chars = [];
        const walk = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
        for (let n = walk.nextNode(); n; n = walk.nextNode()) {
          const t = n.textContent ?? '';
          for (let i = 0; i < t.length; i++) {
            const r = document.createRange();
            r.setStart(n, i);
            r.setEnd(n, i + 1);
            chars.push({ ch: t[i], top: r.getBoundingClientRect().top });
          }
        }
        const text = chars.map((c) => c.ch).join('');
        for (let i = 1; i < chars.length; i++) {
          if (chars[i].top > chars[i - 1].top + 2 && !/[_\s]/.test(chars[i - 1].ch)) out.push(`${text.slice(0, i)}|${text.slice(i)}`);
        }
      }
      return out;
    });
    await page.setViewportSize({ width: 1280, height: 900 });
    assert.deepEqual(broken, [], `rail names broken mid-word: ${broken.join(', ')}`);
  });

  it('writes every chart\'s axis labels in full, large energy per frame included', async () => {
    // 19 V x 8 A on VDD_IN and 2 frames/s: about 76 000 mJ per frame
    put(path.join(tmp, 'sysfs'), `${HWMON}/in1_input`, 19000);
    put(path.join(tmp, 'sysfs'), `${HWMON}/curr1_input`, 8000);
    const r = await fetch(new URL('/api/v1/config', url), {
      method: 'PATCH',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/merge-patch+json' },
      body: JSON.stringify({ source: { fps: 2 } }),
    });
    assert.equal(r.status, 200, await r.text());
    await page.goto(new URL('#live', url).href);
    await page.waitForFunction(
      () => Number((document.querySelector('[data-metric="energy_per_frame"]')?.textContent ?? '').replace(/\D/g, '')) > 10000,
      null, { timeout: 30_000 },
    );
    await page.waitForTimeout(1_500); // a redraw with the new values
    const clipped = await page.evaluate(() => {
      /** @type {string[]} */
      const out = [];
      for (const host of document.querySelectorAll('[data-chart]')) {
        if (!(host instanceof HTMLElement) || host.offsetParent === null) continue;
        const canvas = host.querySelector('canvas');
        if (!canvas) continue;
        const ctx = canvas.getContext('2d');
        if (!ctx) continue;
        // the y axis' labels are right-aligned against the plot: one cut off on the
        // left leaves ink in the canvas' first column
        const col = ctx.getImageData(0, 0, 1, canvas.height).data;
        let ink = 0;
        for (let i = 3; i < col.length; i += 4) if (col[i] > 0) ink++;
        if (ink > 0) out.push(`${host.dataset.chart} (${ink} px of ink at x = 0)`);
      }
      return out;
    });
    assert.deepEqual(clipped, [], `axis labels cut off in: ${clipped.join(', ')}`);
  });

  it('measures the dashboard\'s transferred size, gzipped by the service', async () => {
    /**
     * GET as a browser asks (accept-encoding: gzip), counting the bytes on the wire.
     * @param {string} rel
     * @returns {Promise<{status: number, encoding: string, wire: number, body: Buffer}>}
     */
    const wire = (rel) => new Promise((resolve, reject) => {
      http.get(new URL(rel, url), { headers: { 'accept-encoding': 'gzip' } }, (res) => {
        /** @type {Buffer[]} */
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => {
          const raw = Buffer.concat(chunks);
          const encoding = String(res.headers['content-encoding'] ?? '');
          resolve({ status: res.statusCode ?? 0, encoding, wire: raw.length, body: encoding === 'gzip' ? gunzipSync(raw) : raw });
        });
      }).on('error', reject);
    });
    const list = readFileSync(path.join(REPO, 'webui/assets.txt'), 'utf8')
      .split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#') && !l.endsWith('LICENSE'));
    let raw = 0;
    let sent = 0;
    for (const f of list) {
      const r = await wire(f);
      assert.equal(r.status, 200, f);
      if (!f.endsWith('.png')) assert.equal(r.encoding, 'gzip', `${f} sent uncompressed`);
      raw += r.body.length;
      sent += r.wire;
    }
    // What the page reads on open besides its files: the stream's bounded replay (every
    // event whose snapshots were taken before the connection), then it runs live. The
    // replay holds what the board took since the service started (10 snapshots a
    // second, up to a minute): wait until that is at least 11 s, so the count below
    // does not depend on how long the tests before this one took (9.8 s once: 99).
    for (;;) {
      const up = (await wire('api/v1/status'));
      if (JSON.parse(up.body.toString('utf8')).uptime_s >= 11) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    const replay = await new Promise((resolve, reject) => {
      const since = Date.now() / 1000;
      const out = { bytes: 0, events: 0, snapshots: 0, span_s: 0 };
      let first = Infinity;
      const req = http.get(new URL('api/v1/stream', url), (res) => {
        let buf = '';
        res.setEncoding('utf8');
        res.on('data', (/** @type {string} */ chunk) => {
          buf += chunk;
          for (let i = buf.indexOf('\n\n'); i >= 0; i = buf.indexOf('\n\n')) {
            const block = buf.slice(0, i + 2);
            buf = buf.slice(i + 2);
            if (!/^event: snapshot$/m.test(block)) continue;
            const data = block.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trimStart()).join('\n');
            const batch = JSON.parse(data).batch;
            const newest = batch[batch.length - 1].t;
            if (newest > since) {
              req.destroy();
              resolve(out);
              return;
            }
            first = Math.min(first, batch[0].t);
            out.bytes += Buffer.byteLength(block);
            out.events += 1;
            out.snapshots += batch.length;
            out.span_s = Math.round((newest - first) * 10) / 10;
          }
        });
      });
      req.on('error', (e) => (out.events ? resolve(out) : reject(e)));
    });
    const size = { files: list.length, raw_bytes: raw, transferred_bytes: sent, stream_replay_on_open: replay };
    mkdirSync(ARTIFACTS, { recursive: true });
    writeFileSync(path.join(ARTIFACTS, 'dashboard-size.json'), JSON.stringify(size, null, 2) + '\n');
    console.log(`dashboard size: ${JSON.stringify(size)}`);
    // the replay: at most a minute, at most 192 KiB of event data (plus SSE framing)
    assert.ok(replay.span_s <= 60, `replay spans ${replay.span_s} s`);
    assert.ok(replay.bytes <= 192 * 1024 + 64 * replay.events, `replay is ${replay.bytes} bytes`);
    assert.ok(replay.snapshots >= 100, `replay holds ${replay.snapshots} snapshots`);
    // budget: a Jetson on a slow link; uPlot is about half of it
    // (200 000 and 73 KB before the Outputs panel, the frame view's own caption and the
    // Config page's MQTT connection check: about 10 KB raw, 4 KB gzipped; 210 000 before
    // the batching tile and facts and GPU memory: about 3 KB raw, 1 KB gzipped)
    assert.ok(raw < 216_000, `dashboard is ${raw} bytes`);
    // 70 KB before the results list, alert banner and rules box, 72 KB before its
    // condition alerts' banner text (docs/decisions.md)
    assert.ok(sent < 78_000, `dashboard is ${sent} bytes on the wire`);
  });

  it('reported no console error and no failed request but the bad values\' 422s', () => {
    const expected = /^(HTTP 422: PATCH \S+\/api\/v1\/config|console error: .*status of 422 .*)$/;
    // the bad entries value, then one just past each of the four ranges stated
    assert.equal(watch.problems.filter((p) => /^HTTP 422/.test(p)).length, 5, watch.problems.join('\n'));
    assert.deepEqual(watch.problems.filter((p) => !expected.test(p)), []);
  });
});

describe('a host with no power source', { timeout: 120_000, skip: !BIN && 'FPGAGDRD_BIN is not set' }, () => {
  it('says so plainly', async () => {
    const tmp = mkdtempSync(path.join(tmpdir(), 'fpgagdr-nopower-'));
    mkdirSync(path.join(tmp, 'sysfs'));
    writeFileSync(path.join(tmp, 'config.json'), '{"autostart": false}');
    const svc = startService(binPath(/** @type {string} */ (BIN)), [
      '--listen', '127.0.0.1:0', '--config', path.join(tmp, 'config.json'), '--sysfs-root', path.join(tmp, 'sysfs'),
    ], { FPGAGDR_TOKEN: TOKEN });
    const browser = await launch();
    try {
      const page = await browser.newPage();
      await page.goto(await svc.url, { waitUntil: 'load' });
      const msg = page.getByTestId('no-power');
      await msg.waitFor({ state: 'visible', timeout: UI_MS });
      assert.match((await msg.textContent()) ?? '', /No power source on this machine/);
      assert.ok(await page.locator('[data-chart="power"]').isHidden(), 'an empty power chart is drawn');
      assert.match(await text(page, '[data-field="rails_empty"]'), /No INA3221 or INA238 rails/);
      assert.match(await text(page, '[data-testid="sources"]'), /ina3221: absent/);
      assert.match(await text(page, '[data-testid="sources"]'), /ina238: absent/);
      // no thermal zone: no empty temperature chart, a sentence instead
      assert.ok(await page.locator('[data-chart="temp"]').isHidden(), 'an empty temperature chart is drawn');
      assert.match(await text(page, '[data-field="temp_empty"]'), /No (readable )?thermal zone/);
    } finally {
      await browser.close();
      await stopService(svc.child);
      rmSync(tmp, { recursive: true, force: true });
    }
  });
});
