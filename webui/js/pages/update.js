// @ts-check
// pages/update.js: the Update page. Upload with progress, install, and the OTA state:
// GET /ota on each visit, then the stream's `ota` events (main.js passes them on).
// views/update.js writes the page; api.js does the calls.

import { getOta, installBundle, uploadBundle } from '../api.js';
import { UpdateView, plainError } from '../views/update.js';

/** @param {HTMLElement} root the update page (`[data-page="update"]`) */
export function updatePage(root) {
  const uv = new UpdateView(root);
  const form = /** @type {HTMLFormElement} */ (root.querySelector('[data-testid="ota-form"]'));
  const file = /** @type {HTMLInputElement} */ (root.querySelector('[data-testid="ota-file"]'));
  async function refresh() {
    try {
      uv.show(await getOta());
    } catch (e) {
      uv.say(`Could not read the update state: ${plainError(e)}`, 'bad');
    }
  }
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const f = file.files?.[0];
    if (!f) return;
    uv.setUploading(true);
    uv.showUpload(0, f.size);
    uv.say(`Uploading ${f.name}…`);
    try {
      const b = await uploadBundle(f, (sent, total) => uv.showUpload(sent, total));
      uv.showUpload(f.size, f.size);
      uv.say(`Uploaded and checked: version ${b.version} for ${b.compatible}. Press Install to install it.`, 'ok');
    } catch (e) {
      uv.say(plainError(e), 'bad');
    } finally {
      uv.setUploading(false);
      refresh();
    }
  });
  root.querySelector('[data-action="ota-install"]')?.addEventListener('click', async () => {
    const sha = uv.last?.bundle?.sha256;
    if (!sha) return;
    uv.say('Installing… the device keeps running; do not switch it off.');
    try {
      uv.show(await installBundle(sha));
    } catch (e) {
      uv.say(plainError(e), 'bad');
    }
  });
  return {
    shown: refresh,
    /** @param {any} s the data of an `ota` event */
    onOta: (s) => uv.show(s),
  };
}
