// @ts-check
// pages/config.js: the Config page. The form is built from the schema on the first
// visit (views/config.js), with the frames and models the device has offered beside
// their fields (GET /config/files); it is refilled from the config in force on every
// visit; Save sends the edits as a merge patch with If-Match (api.js).

import { ApiError, getConfig, getConfigFiles, getConfigSchema, getStatus, patchConfig } from '../api.js';
import { ConfigView } from '../views/config.js';

/** @param {unknown} e */
function message(e) {
  return e instanceof Error ? e.message : String(e);
}

/** @param {HTMLElement} root the config page (`[data-page="config"]`) */
export function configPage(root) {
  const form = /** @type {HTMLFormElement} */ (root.querySelector('[data-testid="config-form"]'));
  const status = /** @type {HTMLElement} */ (root.querySelector('[data-testid="config-status"]'));
  const cv = new ConfigView(form);
  let etag = '';
  let built = false;

  /** @param {string} text @param {'ok' | 'bad' | ''} [kind] */
  function say(text, kind = '') {
    status.textContent = text;
    status.dataset.kind = kind;
  }

  async function reload() {
    try {
      if (!built) {
        const [schema, files] = await Promise.all([getConfigSchema(), getConfigFiles().catch(() => null)]);
        cv.build(schema);
        if (files) cv.offer(files);
        built = true;
      }
      const c = await getConfig();
      etag = c.etag;
      cv.fill(c.config);
      say('');
    } catch (e) {
      say(`Could not read the config: ${message(e)}`, 'bad');
    }
  }

  /**
   * After an MQTT setting was saved: waits up to 10 s for the new client to connect
   * or fail (GET /status `outputs.mqtt`) and says which, so a broker that cannot be
   * reached is not taken for a working one.
   */
  async function sayMqtt() {
    say('Saved and applied. Connecting to the MQTT broker…', 'ok');
    for (let i = 0; i < 20; i++) {
      await new Promise((r) => setTimeout(r, 500));
      try {
        const m = /** @type {{outputs?: {mqtt?: {state: string, broker?: string, last_error?: string}}}} */ (await getStatus()).outputs?.mqtt;
        if (m?.state === 'connected') {
          say(`Saved and applied. MQTT connected to ${m.broker ?? 'the broker'}.`, 'ok');
          return;
        }
        if (m?.state === 'error') {
          say(`Saved and applied, but MQTT cannot connect: ${m.last_error ?? 'no reason given'}. Results wait in the queue (QoS 1) or are dropped and counted (QoS 0); the Live page's Outputs panel shows them.`, 'bad');
          return;
        }
      } catch {
        // the next try
      }
    }
    say('Saved and applied. MQTT has not connected yet; the Live page\'s Outputs panel shows its state.', 'bad');
  }

  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const { patch, local } = cv.patch();
    if (local.length) {
      say('Some values are not valid; see the marked fields.', 'bad');
      cv.showErrors(local);
      return;
    }
    if (Object.keys(patch).length === 0) {
      cv.showErrors([]);
      say('Nothing changed.');
      return;
    }
    say('Saving…');
    try {
      const c = await patchConfig(patch, etag);
      etag = c.etag;
      cv.fill(c.config);
      say('Saved and applied.', 'ok');
      const mqttChanged = /** @type {{outputs?: {mqtt?: object}}} */ (patch).outputs?.mqtt !== undefined;
      if (mqttChanged && /** @type {{outputs?: {mqtt?: {enabled?: boolean}}}} */ (c.config).outputs?.mqtt?.enabled) {
        await sayMqtt();
      }
    } catch (e) {
      if (e instanceof ApiError && e.status === 412) {
        await reload();
        say('The config changed since this page read it: it has been reloaded, make your change again.', 'bad');
        return;
      }
      const errors = e instanceof ApiError ? e.problem?.errors ?? [] : [];
      const loose = cv.showErrors(errors);
      const head = errors.length > loose.length ? 'Not saved: see the marked fields. Nothing was changed.' : `Not saved: ${message(e)}`;
      say([head, ...loose].join(' '), 'bad');
    }
  });
  root.querySelector('[data-action="reload"]')?.addEventListener('click', reload);
  return { shown: reload };
}
