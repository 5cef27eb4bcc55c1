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

import { mkdtempSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  ARTIFACTS, BIN, TOKEN, UI_MS, binPath, extraArgs, launch, parseCount, startService, stopService, watchProblems,
} from './helpers.mjs';

// Without a binary the suite would be cancelled quietly; one failing test says why.
test('FPGAGDRD_BIN names the service binary', () => {
  assert.ok(BIN, 'FPGAGDRD_BIN is not set: point it at the service binary, e.g. FPGAGDRD_BIN=target/debug/fpgagdrd node --test webui/tests/');
});

describe('dashboard', { timeout: 240_000, skip: !BIN && 'FPGAGDRD_BIN is not set' }, () => {
  /** @type {ReturnType<typeof startService> | undefined} */
  let service;
  /** @type {import('playwright-core').Browser | undefined} */
  let browser;
  /** @type {import('playwright-core').Page} */
  let page;
  /** @type {string} */
  let tmp;
  /** Everything the page reported that a person would call broken, and the 401s. */
  let watch = { problems: /** @type {string[]} */ ([]), unauthorized: /** @type {string[]} */ ([]) };

  before(async () => {
    tmp = mkdtempSync(path.join(tmpdir(), 'fpgagdr-webui-'));
    service = startService(binPath(BIN), ['--listen', '127.0.0.1:0', '--config', path.join(tmp, 'config.json'), ...extraArgs()], { FPGAGDR_TOKEN: TOKEN });
    const url = await service.url;

    browser = await launch();
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    page = await context.newPage();
    watch = watchProblems(page, browser);
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

  it('shows the batch size in use and the largest the pipeline runs', async () => {
    // The test service runs on the CPU: one frame per model run ("1 of 1").
    await page.waitForFunction(
      () => /^of \d+$/.test(document.querySelector('[data-field="batch_max"]')?.textContent ?? '') &&
        /\d/.test(document.querySelector('[data-metric="batch"]')?.textContent ?? ''),
      null,
      { timeout: UI_MS },
    );
  });

  it('says how batches run, that the latency target is not met on the CPU, and that the CPU path takes no GPU memory', async () => {
    // The test service runs on the CPU with the default config: one batch at a time,
    // the wait chosen from the model's measured times, no GPU memory. A frame takes the
    // CPU longer than the default 5 ms target, so no choice is within it; the reason in
    // words, with its figures, is the field's tooltip.
    await page.waitForFunction(
      () => /^one batch at a time; wait chosen: up to .+ for batches of \d+; 5\u202fms target: not met$/.test(
        document.querySelector('[data-field="batching"]')?.textContent ?? '') &&
        /^none: /.test(document.querySelector('[data-field="gpu_memory"]')?.textContent ?? ''),
      null,
      { timeout: UI_MS },
    ).catch(async () => assert.fail(`batching: ${await page.locator('[data-field="batching"]').textContent()}`));
    const why = await page.locator('[data-field="batching"]').getAttribute('title');
    assert.match(why ?? '', /\d/, `the reason in words, with figures: ${why}`);
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
    // Every class on screen (the top-5 and the results list's best classes) once the
    // list holds ten results of one run (the test above changed the source and back:
    // the test pattern's classes may still be on screen). The replayed frames come
    // round again, so most results match a rule on them.
    await page.waitForFunction(() => {
      const rows = [...document.querySelectorAll('[data-testid="results-list"] > li')];
      return rows.length === 10 && rows.every((r) => /** @type {HTMLElement} */ (r).dataset.run === /** @type {HTMLElement} */ (rows[0]).dataset.run) &&
        /replay/.test(document.querySelector('[data-field="source"]')?.textContent ?? '');
    }, null, { timeout: 60_000 });
    const shown = [
      ...await page.locator('[data-testid="top5"] > li .cls-label').allTextContents(),
      ...await page.locator('[data-testid="results-list"] > li .cls-label').allTextContents(),
    ];
    const labels = [...new Set(shown.map((l) => l.trim()))];
    assert.ok(labels.length >= 5, `classes on screen: ${labels.join(', ')}`);
    for (const l of labels) assert.ok(l.trim().length > 0, 'a top-5 entry has no label');
  });

  it('shows one frame in the latest result: its heading, top-5 and frame line', async () => {
    await page.waitForFunction(
      () => /#\d+/.test(document.querySelector('[data-field="frame_info"]')?.textContent ?? ''), null, { timeout: UI_MS },
    );
    for (let i = 0; i < 12; i++) {
      const { head, info } = await page.evaluate(() => ({
        head: document.querySelector('[data-field="result_seq"]')?.textContent ?? '',
        info: document.querySelector('[data-field="frame_info"]')?.textContent ?? '',
      }));
      const a = /#(\d+)/.exec(head)?.[1];
      const b = /#(\d+)/.exec(info)?.[1];
      assert.ok(a && a === b, `sample ${i}: the heading says "${head}", the line under it "${info}"`);
      await page.waitForTimeout(250);
    }
  });

  it('shows the outputs: MQTT off, the results log written, drops by reason', async () => {
    const panel = page.getByTestId('outputs');
    await page.waitForFunction(
      () => /\d+ written/.test(document.querySelector('[data-testid="outputs"] [data-field="log"]')?.textContent ?? ''),
      null, { timeout: UI_MS },
    );
    const text = (await panel.textContent()) ?? '';
    assert.match(text, /MQTT\s*off/, text);
    assert.match(text, /not configured/, text);
    assert.match(text, /No result dropped since the service started|Dropped since the service started: /, text);
    assert.match(text, /No condition alert firing|Firing now: /, text);
  });

  it('shows the frame view beside its own result, never another frame\'s', async () => {
    const img = '[data-testid="frame-view"]';
    await page.waitForFunction((sel) => {
      const i = /** @type {HTMLImageElement | null} */ (document.querySelector(sel));
      return !!i && !i.hidden && !!i.dataset.seq && i.complete && i.naturalWidth > 0;
    }, img, { timeout: UI_MS });
    const seen = new Set();
    // The inference thread copies a frame about once a second: sample until the view
    // has moved on twice (at most 12 samples).
    for (let i = 0; i < 12 && seen.size < 3; i++) {
      const v = await page.evaluate((sel) => {
        const el = /** @type {HTMLImageElement} */ (document.querySelector(sel));
        return {
          run: el.dataset.run ?? '', seq: el.dataset.seq ?? '', w: el.naturalWidth, h: el.naturalHeight,
          caption: document.querySelector('[data-testid="frame-view-caption"]')?.textContent ?? '',
        };
      }, img);
      // The result of the frame on display, by its key, from the API.
      const r = await (await fetch(new URL(`api/v1/results/${v.run}/${v.seq}`, page.url()))).json();
      assert.equal(`${r.run}:${r.seq}`, `${v.run}:${v.seq}`);
      assert.match(v.caption, new RegExp(`#${r.seq}\\b`), `caption ${v.caption} is not frame ${r.seq}'s`);
      assert.ok(v.caption.includes(r.top[0].label), `caption "${v.caption}" lacks the frame's best class ${r.top[0].label}`);
      assert.ok(v.caption.includes(`${r.frame.width}×${r.frame.height} ${r.frame.format}`), v.caption);
      // The picture has the frame's geometry (scaled to fit 480 px, aspect kept).
      const scale = Math.min(1, 480 / Math.max(r.frame.width, r.frame.height));
      assert.ok(Math.abs(v.w - Math.round(r.frame.width * scale)) <= 1 && Math.abs(v.h - Math.round(r.frame.height * scale)) <= 1,
        `picture ${v.w}×${v.h} is not frame ${r.seq}'s ${r.frame.width}×${r.frame.height}`);
      seen.add(v.seq);
      await page.waitForTimeout(1_200);
    }
    assert.ok(seen.size >= 2, `the frame view did not move in 14 s: ${[...seen].join(', ')}`);
  });

  it('shows the Outputs panel and the frame view with its own result inside a 390 px phone screen', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    try {
      await page.waitForTimeout(300); // ResizeObserver → layout
      /** The element's box lies within the 390 px screen (scrolled to it first). */
      const inside = async (/** @type {string} */ sel) => {
        const el = page.locator(sel).first();
        await el.scrollIntoViewIfNeeded();
        const box = await el.boundingBox();
        assert.ok(box && box.width > 0 && box.x >= 0 && box.x + box.width <= 390, `${sel} at ${JSON.stringify(box)}`);
      };
      const outputs = (await page.getByTestId('outputs').textContent()) ?? '';
      assert.match(outputs, /MQTT\s*off/, outputs);
      assert.match(outputs, /\d+ written/, outputs);
      await inside('[data-testid="outputs"]');
      await inside('[data-testid="outputs"] [data-field="log"]');
      const v = await page.evaluate(() => {
        const el = /** @type {HTMLImageElement} */ (document.querySelector('[data-testid="frame-view"]'));
        return { run: el.dataset.run ?? '', seq: el.dataset.seq ?? '', caption: document.querySelector('[data-testid="frame-view-caption"]')?.textContent ?? '' };
      });
      const r = await (await fetch(new URL(`api/v1/results/${v.run}/${v.seq}`, page.url()))).json();
      assert.match(v.caption, new RegExp(`#${r.seq}\\b`), `caption ${v.caption} is not frame ${r.seq}'s`);
      assert.ok(v.caption.includes(r.top[0].label), `caption "${v.caption}" lacks the frame's best class ${r.top[0].label}`);
      await inside('[data-testid="frame-view"]');
      await inside('[data-testid="frame-view-caption"]');
    } finally {
      await page.setViewportSize({ width: 1280, height: 800 });
    }
  });

  it('lists every frame\'s result live, newest first, beside the top-5', async () => {
    const list = '[data-testid="results-list"] > li';
    await page.waitForFunction((sel) => document.querySelectorAll(sel).length === 10, list, { timeout: UI_MS });
    const rows = () => page.evaluate((sel) => [...document.querySelectorAll(sel)].map((li) => ({
      run: Number(/** @type {HTMLElement} */ (li).dataset.run),
      seq: Number(/** @type {HTMLElement} */ (li).dataset.seq),
      label: li.querySelector('.cls-label')?.textContent ?? '',
      score: li.querySelector('.res-score')?.textContent ?? '',
      e2e: li.querySelector('.res-e2e')?.textContent ?? '',
    })), list);
    const first = await rows();
    for (const [i, r] of first.entries()) {
      assert.ok(r.label.trim().length > 0 && /%/.test(r.score) && /s$/.test(r.e2e), `row ${i}: ${JSON.stringify(r)}`);
      if (i > 0) assert.ok(r.seq < first[i - 1].seq, `not newest first: ${first.map((x) => x.seq).join(', ')}`);
    }
    // Every result, not the snapshots' one per 100 ms: the rows are consecutive
    // entries of the results log (sequence numbers skip where the pipeline dropped
    // frames; the log skips them too). The log is written out at least once a second.
    const oldest = first[first.length - 1];
    const url = new URL(`api/v1/results?after=${oldest.run}:${oldest.seq}&limit=9`, page.url());
    /** @type {number[]} */
    let logged = [];
    for (let i = 0; i < 40 && logged.length < 9; i++) {
      logged = (await (await fetch(url)).json()).results.map((/** @type {{seq: number}} */ r) => r.seq);
      if (logged.length < 9) await page.waitForTimeout(250);
    }
    assert.deepEqual(first.slice(0, -1).map((r) => r.seq).reverse(), logged, 'the list holds every logged result');
    await page.waitForTimeout(1_000);
    const later = await rows();
    assert.ok(later[0].seq > first[0].seq, `the list did not move in 1 s: #${first[0].seq} → #${later[0].seq}`);
    // Beside the latest result, in the same column.
    const side = await page.evaluate(() => {
      const a = document.querySelector('[data-testid="result"]')?.getBoundingClientRect();
      const b = document.querySelector('[data-testid="results"]')?.getBoundingClientRect();
      return a && b ? { ax: a.x, bx: b.x, below: b.y >= a.y + a.height - 1 } : null;
    });
    assert.ok(side && Math.abs(side.ax - side.bx) < 2 && side.below, `results panel not under the latest result: ${JSON.stringify(side)}`);
  });

  it('states the latency table\'s window', async () => {
    const t = (await page.getByTestId('latency-window').textContent()) ?? '';
    assert.match(t, /last second/, t);
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

  it('keeps the fps and latency charts\' history across a reload', async () => {
    // ≥ 5 s of snapshots (10 a second) in the service's history
    await page.waitForFunction(
      () => Number(document.querySelector('[data-chart="latency"]')?.getAttribute('data-points')) >= 50,
      null, { timeout: 30_000 },
    );
    await page.reload({ waitUntil: 'load' });
    await page.waitForFunction(
      () => Number(document.querySelector('[data-chart="latency"]')?.getAttribute('data-points')) > 0,
      null, { timeout: UI_MS },
    );
    const { latency, fps, ms } = await page.evaluate(() => ({
      latency: Number(document.querySelector('[data-chart="latency"]')?.getAttribute('data-points')),
      fps: Number(document.querySelector('[data-chart="fps"]')?.getAttribute('data-points')),
      ms: performance.now(),
    }));
    // the stream alone brings ~10 rows a second: this many this soon came from the history
    assert.ok(latency >= 45, `${latency} latency points ${Math.round(ms)} ms after the reload`);
    assert.ok(latency > (ms / 1000) * 10 + 15, `${latency} points ${Math.round(ms)} ms after the reload: not the history`);
    assert.equal(fps, latency, 'both charts draw the same rows');
  });

  it('stops and starts the pipeline, asking for the token once', async () => {
    const state = page.getByTestId('pipeline-state');
    await page.waitForFunction(
      () => document.querySelector('[data-testid="pipeline-state"]')?.textContent === 'running',
      null,
      { timeout: UI_MS },
    );
    await page.getByRole('button', { name: 'Stop' }).click();
    // the service answers 401: the page asks for the token, then retries
    const dialog = page.getByTestId('token-dialog');
    await dialog.waitFor({ state: 'visible', timeout: UI_MS });
    assert.match((await dialog.textContent()) ?? '', /auth-token/);
    await page.getByTestId('token-input').fill(TOKEN);
    await page.getByRole('button', { name: 'Use token' }).click();
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
    assert.ok(await dialog.isHidden(), 'the token dialog is still open');
    // asked once: Stop's first try was refused, nothing after it
    assert.deepEqual(watch.unauthorized.map((u) => u.replace(/^(\S+) .*\/api\/v1\//, '$1 ')), ['POST pipeline/stop']);
    assert.equal(await page.evaluate(() => localStorage.getItem('fpgagdr.token')), TOKEN);
  });

  /** Stops the pipeline (the token is stored by the test above), calls `seen`, starts it again. */
  async function whileStopped(/** @type {() => Promise<void>} */ seen) {
    await page.getByRole('button', { name: 'Stop' }).click();
    await page.waitForFunction(
      () => document.querySelector('[data-testid="pipeline-state"]')?.textContent === 'stopped', null, { timeout: UI_MS },
    );
    try {
      await seen();
    } finally {
      await page.getByRole('button', { name: 'Start' }).click();
      await page.waitForFunction(
        () => document.querySelector('[data-testid="pipeline-state"]')?.textContent === 'running', null, { timeout: UI_MS },
      );
    }
  }

  it('marks the top-5 as the last run\'s while the pipeline is stopped', async () => {
    const panel = () => page.evaluate(() => (document.querySelector('section.result')?.textContent ?? '').replace(/\s+/g, ' ').trim());
    await page.waitForFunction(
      () => document.querySelectorAll('[data-testid="top5"] > li').length === 5, null, { timeout: UI_MS },
    );
    assert.doesNotMatch(await panel(), /stopped/i, 'a running pipeline\'s result is marked');
    let stopped = '';
    await whileStopped(async () => {
      // the top-5 stays (it is the last thing the model said) but says it is not live
      await page.waitForFunction(
        () => /pipeline stopped/i.test(document.querySelector('section.result')?.textContent ?? ''), null, { timeout: 5_000 },
      ).catch(() => {});
      stopped = await panel();
      assert.equal(await page.locator('[data-testid="top5"] > li').count(), 5, 'the last top-5 is gone');
    });
    assert.match(stopped, /pipeline stopped/i, `the stopped pipeline's top-5 is shown without a marker: "${stopped}"`);
    await page.waitForFunction(
      () => !/pipeline stopped/i.test(document.querySelector('section.result')?.textContent ?? ''), null, { timeout: UI_MS },
    );
  });

  it('shows the pipeline\'s uptime, not the service\'s', async () => {
    let whenStopped = '';
    let started = 0;
    await whileStopped(async () => {
      await page.waitForTimeout(1_000);
      whenStopped = (await page.locator('[data-field="uptime"]').textContent())?.trim() ?? '';
      started = Date.now();
    });
    assert.doesNotMatch(whenStopped, /\d/, `a stopped pipeline shows an uptime of "${whenStopped}"`);
    await page.waitForFunction(() => /\d/.test(document.querySelector('[data-field="uptime"]')?.textContent ?? ''), null, { timeout: UI_MS });
    const up = (await page.locator('[data-field="uptime"]').textContent())?.trim() ?? '';
    const m = /^(\d+)\u202fs$/.exec(up);
    const since = (Date.now() - started) / 1000;
    assert.ok(m && Number(m[1]) <= since + 1, `uptime "${up}" ${since.toFixed(1)} s after Start (the service has run ${Math.round(performance.now() / 1000)} s longer)`);
  });

  it('charts the queue stage and lets the user pick which stages are drawn', async () => {
    const picker = page.getByTestId('stage-picker');
    assert.ok(await picker.count() === 1, 'the latency chart has no stage picker');
    const names = (await picker.locator('label').allTextContents()).map((t) => t.trim());
    assert.ok(names.includes('Queue'), `stages offered: ${names.join(', ')}`);
    const legend = () => page.locator('[data-chart="latency"] .u-legend .u-series .u-label').allTextContents();
    const before = await legend();
    assert.ok(before.length <= 4, `${before.length} lines drawn before any choice: ${before.join(', ')}`);
    await picker.getByLabel('Queue').check();
    await page.waitForFunction(
      () => [...document.querySelectorAll('[data-chart="latency"] .u-legend .u-label')].some((e) => /Queue p50/.test(e.textContent ?? '')),
      null, { timeout: UI_MS },
    );
    await picker.getByLabel('Queue').uncheck();
    await page.waitForFunction(
      () => ![...document.querySelectorAll('[data-chart="latency"] .u-legend .u-label')].some((e) => /Queue/.test(e.textContent ?? '')),
      null, { timeout: UI_MS },
    );
  });

  it('raises an alert banner and marks the results that match a rule', async () => {
    const labels = await page.locator('[data-testid="top5"] > li .cls-label').allTextContents();
    assert.equal(labels.length, 5);
    const patch = async (/** @type {object} */ body) => {
      const r = await fetch(new URL('api/v1/config', page.url()), {
        method: 'PATCH',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/merge-patch+json' },
        body: JSON.stringify(body),
      });
      assert.equal(r.status, 200, await r.text());
    };
    assert.ok(await page.getByTestId('alert-banner').isHidden(), 'a banner before any rule');
    await patch({ outputs: { alerts: { rules: { seen: { kind: 'class', classes: labels, min_score: 0 } } } } });
    try {
      // after the pipeline's restart (the change), and its first matching frame
      await page.waitForFunction(
        () => /^Alert seen: .+ frame #\d+/.test(document.querySelector('[data-testid="alert-banner"]')?.textContent ?? ''),
        null, { timeout: 60_000 },
      ).catch(async (e) => {
        const st = await (await fetch(new URL('api/v1/status', page.url()))).json();
        const cfg = await (await fetch(new URL('api/v1/config', page.url()))).json();
        assert.fail(`${e}: status ${JSON.stringify(st.outputs.alerts)}; rules ${JSON.stringify(cfg.outputs.alerts.rules)}; classes sent ${JSON.stringify(labels)}`);
      });
      await page.waitForFunction(
        () => [...document.querySelectorAll('[data-testid="results-list"] > li.alerted .res-alerts')].some((e) => e.textContent === 'seen'),
        null, { timeout: UI_MS },
      );
    } finally {
      await patch({ outputs: { alerts: { rules: { seen: null } } } });
    }
    await screenshot('dashboard-alert.png');
    // A condition rule: the banner shows what was measured against the
    // threshold. Every frame takes more than a microsecond end to end.
    await patch({ outputs: { alerts: { rules: { slow: { kind: 'e2e_p99', window_s: 1, max_ms: 0.001 } } } } });
    try {
      await page.waitForFunction(
        () => /^Alert slow: end-to-end p99 [\d.]+ ms > 0\.001 ms over 1 s · \d+ since this page opened$/
          .test(document.querySelector('[data-testid="alert-banner"]')?.textContent ?? ''),
        null, { timeout: 60_000 },
      ).catch(async (e) => {
        const st = await (await fetch(new URL('api/v1/status', page.url()))).json();
        const text = await page.getByTestId('alert-banner').textContent();
        assert.fail(`${e}: banner ${JSON.stringify(text)}; status ${JSON.stringify(st.outputs.alerts)}`);
      });
      await screenshot('dashboard-alert-condition.png');
      // A page opened after the rule fired still shows it firing (Outputs panel: from
      // the status, not from the events it never saw).
      const later = await page.context().newPage();
      try {
        await later.goto(page.url(), { waitUntil: 'load' });
        await later.waitForFunction(
          () => /Firing now: .*\bslow\b/.test(document.querySelector('[data-testid="alerts-firing"]')?.textContent ?? ''),
          null, { timeout: UI_MS },
        );
      } finally {
        await later.close();
      }
    } finally {
      await patch({ outputs: { alerts: { rules: { slow: null } } } });
    }
  });

  it('shows a config change in the pipeline panel without a reload', async () => {
    const patch = async (/** @type {object} */ body) => {
      const r = await fetch(new URL('api/v1/config', page.url()), {
        method: 'PATCH',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/merge-patch+json' },
        body: JSON.stringify(body),
      });
      assert.equal(r.status, 200, await r.text());
    };
    const source = () => page.evaluate(() => document.querySelector('[data-field="source"]')?.textContent ?? '');
    assert.match(await source(), /replay/);
    await patch({ source: { kind: 'test_pattern', width: 64, height: 64 } });
    try {
      await page.waitForFunction(
        () => /test pattern 64x64/.test(document.querySelector('[data-field="source"]')?.textContent ?? ''), null, { timeout: UI_MS },
      );
    } catch {
      assert.fail(`after the change the pipeline panel still says "${await source()}"`);
    } finally {
      await patch({ source: { kind: null, width: null, height: null } });
    }
    await page.waitForFunction(
      () => /replay/.test(document.querySelector('[data-field="source"]')?.textContent ?? ''), null, { timeout: UI_MS },
    );
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
    assert.deepEqual(watch.problems, []);
  });
});
