// @ts-check
// pages/system.js: the System page. Reads GET /system on every visit and on Refresh,
// and hands it to views/system.js. Must not keep state between visits.

import { getSystem } from '../api.js';
import { showSystem } from '../views/system.js';

/** @param {unknown} e */
function message(e) {
  return e instanceof Error ? e.message : String(e);
}

/**
 * @param {HTMLElement} root the system page (`[data-page="system"]`)
 * @param {(text: string | null) => void} showError the app's alert bar
 */
export function systemPage(root, showError) {
  async function refresh() {
    try {
      showSystem(root, await getSystem());
    } catch (e) {
      showError(`Could not read the system information: ${message(e)}`);
    }
  }
  root.querySelector('[data-action="system-refresh"]')?.addEventListener('click', refresh);
  return { shown: refresh };
}
