// update.test.mjs: the Update page in a real browser. Without RAUC: the page says
// updates are unavailable and offers nothing to press, and the rest of the
// dashboard works. With RAUC (root, Debian's rauc; images/rauc/test/rauc-env.sh
// starts it on a private bus with file-backed slots): a signed bundle is chosen,
// uploaded with a progress bar, installed with progress from the live stream,
// and the slot table shows the new slot as the next boot.
//
// Run:  FPGAGDRD_BIN=target/debug/fpgagdrd node --test webui/tests/
// FPGAGDR_REQUIRE_RAUC=1 turns the RAUC part's skip into a failure.

import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { BIN, REPO, TOKEN, UI_MS, binPath, launch, startService, stopService, watchProblems } from './helpers.mjs';

const ENV = path.join(REPO, 'images/rauc/test/rauc-env.sh');

/** Why the RAUC part cannot run here, or null. */
function raucMissing() {
  if (process.getuid?.() !== 0) return 'not root (RAUC mounts bundles)';
  for (const c of ['rauc', 'dbus-daemon', 'mksquashfs', 'openssl']) {
    try {
      execFileSync('sh', ['-c', `command -v ${c}`], { stdio: 'ignore' });
    } catch {
      return `${c} is not installed`;
    }
  }
  return null;
}
const missing = raucMissing();
if (missing && process.env.FPGAGDR_REQUIRE_RAUC) throw new Error(`FPGAGDR_REQUIRE_RAUC is set but ${missing}`);

/**
 * Starts the service (pipeline off) on `bus` and a page on #update.
 * @param {string} tmp @param {string} bus
 */
async function open(tmp, bus) {
  writeFileSync(path.join(tmp, 'config.json'), '{"autostart": false}');
  const service = startService(binPath(/** @type {string} */ (BIN)), [
    '--listen', '127.0.0.1:0', '--config', path.join(tmp, 'config.json'),
    '--rauc-bus', bus, '--ota-spool', path.join(tmp, 'spool'),
  ], { FPGAGDR_TOKEN: TOKEN });
  const url = await service.url;
  const browser = await launch();
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  const watch = watchProblems(page, browser);
  await page.addInitScript((t) => localStorage.setItem('fpgagdr.token', t), TOKEN);
  await page.goto(`${url}#update`, { waitUntil: 'load' });
  return { service, browser, page, watch };
}

describe('update page without RAUC', { timeout: 120_000, skip: !BIN && 'FPGAGDRD_BIN is not set' }, () => {
  /** @type {Awaited<ReturnType<typeof open>>} */
  let s;
  let tmp = '';
  before(async () => {
    tmp = mkdtempSync(path.join(tmpdir(), 'fpgagdr-update-'));
    s = await open(tmp, `unix:path=${tmp}/no-bus`);
  });
  after(async () => {
    await s?.browser.close();
    if (s) await stopService(s.service.child);
    rmSync(tmp, { recursive: true, force: true });
  });

  it('says updates are unavailable and offers nothing to press', async () => {
    const state = s.page.getByTestId('ota-state');
    // The service's reason (first "not connected yet", then why) is the detail.
    await s.page.waitForFunction(
      () => /cannot connect/.test(document.querySelector('[data-testid="ota-state"]')?.textContent ?? ''),
      null, { timeout: UI_MS },
    );
    assert.equal(await state.getAttribute('data-state'), 'unavailable');
    // In plain words first; the D-Bus detail is there for whoever needs it, not the headline.
    const headline = (await s.page.locator('[data-testid="ota-state"] [data-field="ota_headline"]').textContent({ timeout: 2_000 }).catch(() => null))
      ?? (await state.innerText());
    assert.doesNotMatch(headline, /unix:path|D-Bus|org\.freedesktop|cannot connect/, `headline: ${headline}`);
    assert.match(headline, /update service \(RAUC\)/, `headline: ${headline}`);
    // No slot table without slots: a sentence says why.
    assert.ok(await s.page.getByTestId('ota-slots').isHidden(), 'an empty slot table is shown');
    assert.match(await s.page.locator('[data-field="ota_slots_empty"]').innerText({ timeout: 2_000 }).catch(() => ''), /RAUC/);
    assert.ok(await s.page.locator('[data-action="ota-upload"]').isDisabled());
    assert.ok(await s.page.locator('[data-action="ota-install"]').isDisabled());
    // the rest of the dashboard is there
    await s.page.click('[data-nav="system"]');
    await s.page.waitForFunction(() => document.querySelector('[data-field="sys_service"]')?.textContent?.includes('fpgagdrd'), null, { timeout: UI_MS });
    assert.deepEqual(s.watch.problems, []);
  });
});

describe('update page with RAUC', { timeout: 180_000, skip: (!BIN && 'FPGAGDRD_BIN is not set') || (missing ?? false) }, () => {
  /** @type {Awaited<ReturnType<typeof open>>} */
  let s;
  let tmp = '';
  let env = '';
  before(async () => {
    tmp = mkdtempSync(path.join(tmpdir(), 'fpgagdr-update-'));
    env = path.join(tmp, 'rauc');
    const bus = execFileSync(ENV, ['start', env], { encoding: 'utf8' }).trim().split('\n').pop() ?? '';
    s = await open(tmp, bus);
  });
  after(async () => {
    await s?.browser.close();
    if (s) await stopService(s.service.child);
    if (env) execFileSync(ENV, ['stop', env]);
    rmSync(tmp, { recursive: true, force: true });
  });

  it('uploads with progress, installs with progress and shows the slots', async () => {
    const { page } = s;
    await page.waitForFunction(
      () => document.querySelectorAll('[data-testid="ota-slots"] tbody tr').length === 2, null, { timeout: UI_MS },
    );
    assert.equal(await page.locator('[data-field="ota_booted"]').textContent(), 'A');
    assert.match((await page.locator('[data-field="ota_primary"]').textContent()) ?? '', /rootfs\.0 \(A\)/);
    // No health-gate verdict on this boot yet (mark-good has not run here).
    assert.equal(await page.locator('[data-field="ota_boot_check"]').textContent(), 'not judged yet');
    await page.getByTestId('ota-file').setInputFiles(path.join(env, 'good.raucb'));
    await page.click('[data-action="ota-upload"]');
    await page.waitForFunction(
      () => /Uploaded and checked: version 2\.0-browser/.test(document.querySelector('[data-testid="ota-result"]')?.textContent ?? ''),
      null, { timeout: UI_MS },
    );
    assert.equal(await page.getByTestId('ota-upload-progress').evaluate((e) => /** @type {HTMLProgressElement} */ (e).value), 100);
    assert.equal(await page.locator('[data-field="ota_upload_pct"]').textContent(), '100%');
    await page.waitForFunction(
      () => !(/** @type {HTMLButtonElement} */ (document.querySelector('[data-action="ota-install"]'))).disabled,
      null, { timeout: UI_MS },
    );
    await page.click('[data-action="ota-install"]');
    await page.waitForFunction(
      () => /Update installed/.test(document.querySelector('[data-testid="ota-result"]')?.textContent ?? ''),
      null, { timeout: UI_MS },
    );
    assert.equal(await page.getByTestId('ota-install-progress').evaluate((e) => /** @type {HTMLProgressElement} */ (e).value), 100);
    await page.waitForFunction(
      () => /rootfs\.1 \(B\)/.test(document.querySelector('[data-field="ota_primary"]')?.textContent ?? ''),
      null, { timeout: UI_MS },
    );
    const b = await page.locator('[data-testid="ota-slots"] tbody tr[data-slot="rootfs.1"] td').allTextContents();
    assert.equal(b[1], 'B');
    assert.equal(b[3], 'good');
    assert.equal(b[4], '2.0-browser');
    assert.deepEqual(s.watch.problems, []);
  });
});
