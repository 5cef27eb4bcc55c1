// thor.test.mjs: the power panel of a Jetson AGX Thor developer kit, in a real browser
// against a real fpgagdrd whose telemetry reads the Thor fixture tree
// (appliance/fpgagdr-telemetry/tests/fixtures/jetson-agx-thor; written, not run on a
// Thor: its README says what is known and what is assumed). The carrier board's INA238
// measures the kit's input, VIN; it is the total, the module's INA3221 rails its parts.
// Checked at desktop and at phone width, and in /api/v1/telemetry and /metrics.
//
// Run:  FPGAGDRD_BIN=target/debug/fpgagdrd node --test webui/tests/
// (env as in dashboard.test.mjs).

import { cpSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { BIN, REPO, UI_MS, openDashboard, replayConfig, text } from './helpers.mjs';

const THOR = path.join(REPO, 'appliance/fpgagdr-telemetry/tests/fixtures/jetson-agx-thor');
const INA238 = 'sys/class/hwmon/hwmon5';

describe('Jetson AGX Thor: VIN from the INA238', { timeout: 180_000, skip: !BIN && 'FPGAGDRD_BIN is not set' }, () => {
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
      prefix: 'fpgagdr-thor-',
      prepare: (dir) => {
        // a copy: the test changes a reading; the links stay links, as in sysfs
        cpSync(THOR, path.join(dir, 'sysfs'), { recursive: true, verbatimSymlinks: true });
        writeFileSync(path.join(dir, 'config.json'), replayConfig());
      },
    }));
  });

  after(async () => {
    await close?.('thor');
  });

  /** The power panel at the page's width: VIN is the total, first among the rails. */
  async function vinOnThePage(/** @type {string} */ total) {
    await page.waitForFunction(
      (w) => document.querySelector('[data-metric="power_total"]')?.textContent === w, total, { timeout: UI_MS },
    ).catch(async () => assert.fail(`total ${await text(page, '[data-metric="power_total"]')}, expected ${total}`));
    const covers = await text(page, '[data-field="power_covers"]');
    assert.match(covers, /ina238.*VIN.*carrier board included/, covers);
    await page.waitForFunction(
      () => document.querySelectorAll('[data-testid="rails"] tbody tr').length === 4, null, { timeout: UI_MS },
    );
    const rails = await page.locator('[data-testid="rails"] tbody tr th').allTextContents();
    assert.deepEqual(rails, ['VIN', 'VDD_GPU', 'VDD_CPU_SOC_MSS', 'VIN_SYS_5V0']);
    const vin = page.locator('[data-testid="rails"] tbody tr').first();
    assert.ok(await vin.isVisible(), 'the VIN row is on the page');
    assert.equal(await text(page, '[data-field="rail_chips"]'), 'INA238 (board input) · INA3221');
    return vin.locator('td').allTextContents();
  }

  it('shows Thor\'s VIN as the total, not VIN plus its parts', async () => {
    // 20.000 V × 1.150 A = 23.0 W; the INA3221 rails (15.4 W) are parts of it
    const vin = await vinOnThePage('23.0\u202fW');
    assert.deepEqual(vin, ['2-0044 INA238', '20.000', '1150', '23.0\u202fW']);
    const sources = await page.locator('[data-testid="sources"] li').allTextContents();
    assert.ok(sources.includes('ina238: ok') && sources.includes('ina3221: ok'), sources.join(' | '));
  });

  it('reports VIN in /api/v1/telemetry and in /metrics in base units', async () => {
    const t = await (await fetch(new URL('/api/v1/telemetry', url))).json();
    assert.equal(t.power.source, 'ina238');
    assert.equal(t.power.watts, 23);
    assert.equal(t.board_total.rule, 'board_input');
    assert.deepEqual(t.board_total.rails, ['VIN']);
    const vin = t.rails.find((/** @type {any} */ r) => r.name === 'VIN');
    assert.deepEqual([vin.driver, vin.chip, vin.voltage_mv, vin.current_ma, vin.power_mw], ['ina238', '2-0044', 20000, 1150, 23000]);
    const metrics = await (await fetch(new URL('/metrics', url))).text();
    assert.match(metrics, /^fpgagdr_rail_power_watts\{rail="VIN",chip="2-0044"\} 23$/m);
    assert.match(metrics, /^fpgagdr_rail_voltage_volts\{rail="VIN",chip="2-0044"\} 20$/m);
    assert.match(metrics, /^fpgagdr_rail_current_amperes\{rail="VIN",chip="2-0044"\} 1\.15$/m);
    assert.match(metrics, /^fpgagdr_power_watts\{source="ina238"\} 23$/m);
  });

  it('shows VIN at phone width without sideways scrolling, and follows a new reading', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    try {
      // 20.000 V × 2.500 A = 50.0 W, as the chip's power register would say
      writeFileSync(path.join(tmp, 'sysfs', INA238, 'curr1_input'), '2500\n');
      writeFileSync(path.join(tmp, 'sysfs', INA238, 'power1_input'), '50000000\n');
      const vin = await vinOnThePage('50.0\u202fW');
      assert.deepEqual(vin, ['2-0044 INA238', '20.000', '2500', '50.0\u202fW']);
      await page.locator('[data-testid="rails"]').scrollIntoViewIfNeeded();
      const box = await page.locator('[data-testid="rails"]').boundingBox();
      assert.ok(box && box.x >= 0 && box.x + box.width <= 390, `rails table at ${JSON.stringify(box)}`);
      const over = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      assert.ok(over <= 0, `the page is ${over} px wider than 390 px`);
    } finally {
      await page.setViewportSize({ width: 1280, height: 900 });
    }
  });

  it('reported no console error and no failed request', () => {
    assert.deepEqual(watch.problems, []);
  });
});
