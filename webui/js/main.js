// @ts-check
// main.js: routing, and the one live stream of the tab. Each page is a module of
// pages/ that builds itself once and is told when it is shown: #live
// (pages/live.js), #config (pages/config.js), #system (pages/system.js), #update
// (pages/update.js); hash routing over the one index.html. The stream (stream.js)
// stays open on every page: its snapshots go to the Live page, its `ota` events to
// the Update page.
// Next hop of a frame: pages/live.js (stream.js calls it with each batch).

import { setTokenPrompt } from './api.js';
import { configPage } from './pages/config.js';
import { livePage } from './pages/live.js';
import { systemPage } from './pages/system.js';
import { updatePage } from './pages/update.js';
import { openStream } from './stream.js';
import { StatusView } from './views/status.js';
import { tokenPrompt } from './views/token.js';

/** @typedef {{shown: () => void}} Page */

function boot() {
  const view = new StatusView(document);
  setTokenPrompt(tokenPrompt(/** @type {HTMLDialogElement} */ (view.el('[data-testid="token-dialog"]'))));
  const live = livePage(view);
  const update = updatePage(view.el('[data-page="update"]'));
  /** @type {Record<string, Page>} */
  const pages = {
    live,
    config: configPage(view.el('[data-page="config"]')),
    system: systemPage(view.el('[data-page="system"]'), (t) => view.showError(t)),
    update,
  };
  openStream({
    onBatch: live.onBatch,
    onState: live.onState,
    onClockStep: live.onClockStep,
    onOta: update.onOta,
  });

  function route() {
    const want = location.hash.replace(/^#/, '');
    const page = want in pages ? want : 'live';
    for (const p of Object.keys(pages)) {
      view.el(`[data-page="${p}"]`).hidden = p !== page;
      const link = view.el(`[data-nav="${p}"]`);
      if (p === page) link.setAttribute('aria-current', 'page');
      else link.removeAttribute('aria-current');
    }
    pages[page].shown();
  }
  window.addEventListener('hashchange', route);
  route();
}

boot();
