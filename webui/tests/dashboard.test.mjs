// dashboard.test.mjs: the dashboard in a real browser against a real fpgagdrd.
// Owns: starting the service binary named by FPGAGDRD_BIN on an ephemeral
// port, driving Debian's Chromium through playwright-core (no browser
// download), the assertions on what a person would see, and a screenshot for
// humans. Must not depend on a particular model or frame set: it checks
// shapes and motion (a count that grows, five classes), not values.
//
// Run:  FPGAGDRD_BIN=target/debug/fpgagdrd node --test webui/tests/
// Env:  FPGAGDRD_BIN       service binary (required; a relative path is taken
//                          from the repository root, a bare name from PATH)
//       FPGAGDRD_ARGS      extra service arguments, space separated
//       CHROMIUM_BIN       browser (default /usr/bin/chromium)
//       FPGAGDR_ARTIFACTS  screenshot folder (default target/artifacts,
//                          relative to the repository root)

import { spawn } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it, test } from 'node:test';
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const CHROMIUM = process.env.CHROMIUM_BIN || '/usr/bin/chromium';
const ARTIFACTS = path.resolve(REPO, process.env.FPGAGDR_ARTIFACTS || 'target/artifacts');
const CHROMIUM_ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
];
/** How long the service may take to print its dashboard line (it may load a model). */
const STARTUP_MS = 60_000;
/** How long the page may take to show something the service already has. */
const UI_MS = 15_000;

/**
 * Starts the service and resolves with its dashboard URL, read from the
 * stdout line `fpgagdrd: dashboard at http://127.0.0.1:PORT/`.
 * @param {string} bin
 * @param {string[]} args
 */
function startService(bin, args) {
  const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'], cwd: REPO });
  // if this test process dies without running `after`, the service dies with it
  const reap = () => child.kill('SIGKILL');
  process.once('exit', reap);
  child.once('exit', () => process.off('exit', reap));
  let out = '';
  let err = '';
  const url = new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${bin} printed no dashboard line within ${STARTUP_MS} ms\nstdout:\n${out}\nstderr:\n${err.slice(-4000)}`)),
      STARTUP_MS,
    );
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    // both pipes are read to the end: a full pipe would stall the service
    child.stdout.on('data', (chunk) => {
      out += chunk;
      if (out.length > 64_000) out = out.slice(-32_000);
      const m = /^fpgagdrd: dashboard at (http:\/\/\S+)$/m.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    child.stderr.on('data', (chunk) => {
      err += chunk;
      if (err.length > 64_000) err = err.slice(-32_000);
    });
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(new Error(`cannot start ${bin}: ${e.message}`));
    });
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${bin} exited (code ${code}, signal ${signal}) before printing its dashboard line\nstdout:\n${out}\nstderr:\n${err.slice(-4000)}`));
    });
  });
  return { child, url, stderr: () => err };
}

/**
 * Ends the service: SIGTERM, then SIGKILL after 5 s.
 * @param {import('node:child_process').ChildProcess} child
 */
async function stopService(child) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
  await exited;
  clearTimeout(timer);
}

/** Digits of a displayed counter ("1 234" → 1234), NaN when it shows none. */
function parseCount(/** @type {string | null} */ text) {
  const digits = (text ?? '').replace(/\D/g, '');
  return digits === '' ? NaN : Number(digits);
}

const BIN = process.env.FPGAGDRD_BIN;

// Without a binary the suite would be cancelled quietly; one failing test says why.
test('FPGAGDRD_BIN names the service binary', () => {
  assert.ok(BIN, 'FPGAGDRD_BIN is not set: point it at the service binary, e.g. FPGAGDRD_BIN=target/debug/fpgagdrd node --test webui/tests/');
});

describe('dashboard', { timeout: 180_000, skip: !BIN && 'FPGAGDRD_BIN is not set' }, () => {
  /** @type {ReturnType<typeof startService> | undefined} */
  let service;
  /** @type {import('playwright-core').Browser | undefined} */
  let browser;
  /** @type {import('playwright-core').Page} */
  let page;
  /** @type {string} */
  let tmp;
  /** Everything the page reported that a person would call broken. */
  const problems = /** @type {string[]} */ ([]);

  before(async () => {
    tmp = mkdtempSync(path.join(tmpdir(), 'fpgagdr-webui-'));
    const extra = (process.env.FPGAGDRD_ARGS ?? '').split(/\s+/).filter(Boolean);
    // a path is taken relative to the repository root, a bare name is looked up on PATH
    service = startService(BIN.includes('/') ? path.resolve(REPO, BIN) : BIN, ['--listen', '127.0.0.1:0', '--config', path.join(tmp, 'config.json'), ...extra]);
    const url = await service.url;

    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    page = await context.newPage();
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(`console error: ${m.text()}`);
    });
    page.on('pageerror', (e) => problems.push(`uncaught: ${e.message}`));
    page.on('requestfailed', (r) => {
      // The EventSource is cut when the page closes at the end; that is not a failure.
      if (!browser?.isConnected() || page.isClosed()) return;
      problems.push(`request failed: ${r.method()} ${r.url()}: ${r.failure()?.errorText}`);
    });
    page.on('response', (r) => {
      if (r.status() >= 400) problems.push(`HTTP ${r.status()}: ${r.request().method()} ${r.url()}`);
    });
    await page.goto(url, { waitUntil: 'load' });
  });

  /** Saves a full-page screenshot as ARTIFACTS/name and says where. */
  async function screenshot(/** @type {string} */ name) {
    mkdirSync(ARTIFACTS, { recursive: true });
    const shot = path.join(ARTIFACTS, name);
    await page.screenshot({ path: shot, fullPage: true });
    console.log(`screenshot: ${shot}`);
  }

  after(async () => {
    try {
      // the page as the test left it, also (above all) when a step failed
      if (page && !page.isClosed()) await screenshot('dashboard-end.png');
    } finally {
      await browser?.close();
      if (service) await stopService(service.child);
      if (tmp) rmSync(tmp, { recursive: true, force: true });
    }
  });

  it('shows the SIMULATED CARD badge', async () => {
    const badge = page.getByTestId('sim-badge');
    await badge.waitFor({ state: 'visible', timeout: UI_MS });
    assert.match((await badge.textContent()) ?? '', /SIMULATED CARD/);
  });

  it('goes live', async () => {
    await page.waitForFunction(
      () => document.querySelector('[data-testid="conn-state"]')?.textContent === 'live',
      null,
      { timeout: UI_MS },
    );
  });

  it('says where frames are preprocessed and which provider runs the model', async () => {
    await page.waitForFunction(
      () => ['preprocess', 'inference'].every((f) =>
        /(CPU|GPU)/.test(document.querySelector(`[data-field="${f}"]`)?.textContent ?? '')),
      null,
      { timeout: UI_MS },
    );
  });

  it('counts inferred frames upwards', async () => {
    const inferred = page.locator('[data-metric="frames_inferred"]');
    await page.waitForFunction(
      () => /\d/.test(document.querySelector('[data-metric="frames_inferred"]')?.textContent ?? ''),
      null,
      { timeout: UI_MS },
    );
    const first = parseCount(await inferred.textContent());
    await page.waitForTimeout(2_000);
    const second = parseCount(await inferred.textContent());
    assert.ok(Number.isFinite(first), `frames_inferred shows no number`);
    assert.ok(second > first, `frames_inferred did not grow in 2 s: ${first} → ${second}`);
  });

  it('lists a top-5 result', async () => {
    await page.waitForFunction(
      () => document.querySelectorAll('[data-testid="top5"] > li').length === 5,
      null,
      { timeout: UI_MS },
    );
    const labels = await page.locator('[data-testid="top5"] > li .cls-label').allTextContents();
    assert.equal(labels.length, 5);
    for (const l of labels) assert.ok(l.trim().length > 0, 'a top-5 entry has no label');
  });

  it('shows end-to-end latency and draws the latency chart', async () => {
    await page.waitForFunction(
      () => /\d/.test(document.querySelector('[data-metric="e2e_p50"]')?.textContent ?? ''),
      null,
      { timeout: UI_MS },
    );
    const canvas = page.locator('[data-chart="latency"] canvas');
    assert.equal(await canvas.count(), 1, 'latency chart has no canvas');
    const box = await canvas.boundingBox();
    assert.ok(box && box.width > 200 && box.height > 100, `latency chart canvas too small: ${JSON.stringify(box)}`);
    assert.equal(await page.locator('[data-chart="fps"] canvas').count(), 1, 'fps chart has no canvas');
    await screenshot('dashboard.png'); // the running pipeline, for humans
  });

  it('stops and starts the pipeline', async () => {
    const state = page.getByTestId('pipeline-state');
    await page.waitForFunction(
      () => document.querySelector('[data-testid="pipeline-state"]')?.textContent === 'running',
      null,
      { timeout: UI_MS },
    );
    await page.getByRole('button', { name: 'Stop' }).click();
    await page.waitForFunction(
      () => document.querySelector('[data-testid="pipeline-state"]')?.textContent === 'stopped',
      null,
      { timeout: UI_MS },
    );
    await page.getByRole('button', { name: 'Start' }).click();
    await page.waitForFunction(
      () => document.querySelector('[data-testid="pipeline-state"]')?.textContent === 'running',
      null,
      { timeout: UI_MS },
    );
    assert.equal(await state.textContent(), 'running');
    assert.ok(await page.getByTestId('error').isHidden(), 'an error is shown after Stop/Start');
  });

  it('fits 1280 px and a 390 px phone without sideways scrolling', async () => {
    const overflow = () => page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok((await overflow()) <= 0, `page is ${await overflow()} px wider than 1280 px`);
    await page.setViewportSize({ width: 390, height: 844 });
    await page.waitForTimeout(300); // ResizeObserver → chart setSize
    assert.ok((await overflow()) <= 0, `page is ${await overflow()} px wider than 390 px`);
    await page.setViewportSize({ width: 1280, height: 800 });
  });

  it('reported no console error and no failed request', () => {
    assert.deepEqual(problems, []);
  });
});
