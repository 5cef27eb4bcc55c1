// helpers.mjs: what the browser tests share: starting and stopping the
// service binary, launching Debian's Chromium through playwright-core (no
// browser download), and collecting what a page reports as broken.
// Must not assert anything itself; each *.test.mjs does.

import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const CHROMIUM = process.env.CHROMIUM_BIN || '/usr/bin/chromium';
export const ARTIFACTS = path.resolve(REPO, process.env.FPGAGDR_ARTIFACTS || 'target/artifacts');
export const CHROMIUM_ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
];
/** How long the service may take to print its dashboard line (it may load a model). */
export const STARTUP_MS = 60_000;
/** How long the page may take to show something the service already has. */
export const UI_MS = 15_000;

/**
 * Starts the service and resolves with its dashboard URL, read from the
 * stdout line `fpgagdrd: dashboard at http://127.0.0.1:PORT/`.
 * @param {string} bin
 * @param {string[]} args
 * @param {Record<string, string>} [env] added to this process's environment
 */
export function startService(bin, args, env = {}) {
  const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'], cwd: REPO, env: { ...process.env, ...env } });
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
export async function stopService(child) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
  await exited;
  clearTimeout(timer);
}

/** Digits of a displayed counter ("1 234" → 1234), NaN when it shows none. */
export function parseCount(/** @type {string | null} */ text) {
  const digits = (text ?? '').replace(/\D/g, '');
  return digits === '' ? NaN : Number(digits);
}

/** The token the test services are started with (FPGAGDR_TOKEN). */
export const TOKEN = 'webui-test-token-0123456789';

/** The service binary: FPGAGDRD_BIN, a path taken from the repository root, a bare name from PATH. */
export const BIN = process.env.FPGAGDRD_BIN;

/** @param {string} bin */
export function binPath(bin) {
  return bin.includes('/') ? path.resolve(REPO, bin) : bin;
}

/** Extra service arguments from FPGAGDRD_ARGS. */
export function extraArgs() {
  return (process.env.FPGAGDRD_ARGS ?? '').split(/\s+/).filter(Boolean);
}

/** Launches headless Chromium. */
export function launch() {
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
}

/**
 * Collects what a person would call broken: console errors, uncaught
 * exceptions, failed requests and HTTP errors. A 401 is counted apart: it is
 * how the page learns it needs the token.
 * @param {import('playwright-core').Page} page
 * @param {import('playwright-core').Browser} browser
 */
export function watchProblems(page, browser) {
  const problems = /** @type {string[]} */ ([]);
  const unauthorized = /** @type {string[]} */ ([]);
  page.on('console', (m) => {
    // Chromium logs every 4xx fetch as a console error; the 401 is expected
    if (m.type() === 'error' && !/status of 401/.test(m.text())) problems.push(`console error: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`uncaught: ${e.message}`));
  page.on('requestfailed', (r) => {
    // The EventSource is cut when the page closes or reloads, and a reload cancels any
    // fetch still in flight (net::ERR_ABORTED): neither is a failure. A refused or
    // broken request fails with another error, and HTTP errors are caught below.
    if (!browser.isConnected() || page.isClosed() || /\/api\/v1\/(results\/)?stream/.test(r.url())) return;
    if (r.failure()?.errorText === 'net::ERR_ABORTED') return;
    problems.push(`request failed: ${r.method()} ${r.url()}: ${r.failure()?.errorText}`);
  });
  page.on('response', (r) => {
    if (r.status() === 401) unauthorized.push(`${r.request().method()} ${r.url()}`);
    else if (r.status() >= 400) problems.push(`HTTP ${r.status()}: ${r.request().method()} ${r.url()}`);
  });
  return { problems, unauthorized };
}

/**
 * The service's config for the fixture-board suites: the replayed photograph at 20
 * frames/s on the simulated card, link model off, one ONNX Runtime thread.
 */
export function replayConfig() {
  return JSON.stringify({
    source: { kind: 'replay', path: 'frames/chelsea.png', fps: 20 },
    card: { sim_link: 'off' },
    inference: { threads: 1 },
  });
}

/**
 * The trimmed text of the first element `sel` matches.
 * @param {import('playwright-core').Page} page @param {string} sel
 */
export async function text(page, sel) {
  return (await page.locator(sel).first().textContent())?.trim() ?? '';
}

/**
 * A real fpgagdrd with the dashboard open in headless Chromium, for one `describe`:
 * a temporary folder `tmp` (made here; `prepare(tmp)` writes the config file
 * `tmp/config.json` and any fixture sysfs tree), the service started on it with
 * `--sysfs-root tmp/sysfs`, the page loaded at desktop width and its problems watched.
 * `close(name)` takes a full-page screenshot into ARTIFACTS/`name`-end.png, closes
 * the browser and the service, and removes `tmp`.
 * @param {{ prefix: string, prepare: (tmp: string) => void }} how
 */
export async function openDashboard({ prefix, prepare }) {
  const tmp = mkdtempSync(path.join(tmpdir(), prefix));
  /** @type {ReturnType<typeof startService> | undefined} */
  let service;
  /** @type {import('playwright-core').Browser | undefined} */
  let browser;
  /** @type {import('playwright-core').Page | undefined} */
  let page;
  const close = async (/** @type {string} */ name) => {
    try {
      if (page && !page.isClosed()) {
        mkdirSync(ARTIFACTS, { recursive: true });
        await page.screenshot({ path: path.join(ARTIFACTS, `${name}-end.png`), fullPage: true });
      }
    } finally {
      await browser?.close();
      if (service) await stopService(service.child);
      rmSync(tmp, { recursive: true, force: true });
    }
  };
  try {
    prepare(tmp);
    service = startService(binPath(/** @type {string} */ (BIN)), [
      '--listen', '127.0.0.1:0', '--config', path.join(tmp, 'config.json'),
      '--sysfs-root', path.join(tmp, 'sysfs'), ...extraArgs(),
    ], { FPGAGDR_TOKEN: TOKEN });
    const url = await service.url;
    browser = await launch();
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    page = await context.newPage();
    const watch = watchProblems(page, browser);
    await page.goto(url, { waitUntil: 'load' });
    return { tmp, url, page, watch, close };
  } catch (e) {
    await close(prefix.replace(/-$/, ''));
    throw e;
  }
}
