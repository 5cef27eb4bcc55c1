// @ts-check
// views/update.js: the Update page. Owns writing the OTA state (GET /ota and
// the stream's `ota` events) into the page: availability, the slot table,
// which slot runs and which boots next, upload and install progress, and the
// result in plain words (the service's technical reason follows, smaller). Must
// not fetch (pages/update.js does the calls) or decide anything the service
// decides; it only explains the service's answers.

/** Plain words for the service's OTA problem types (urn:fpgagdr:problem:<rule>). */
const PLAIN = {
  'ota-unavailable': 'Updates are not available on this device right now (the update service RAUC is not running).',
  'ota-busy': 'An update is already being installed. Wait until it has finished.',
  'ota-bundle': 'This file was refused: it is not a valid update for this device (wrong device type, unknown signature, or damaged).',
  'ota-bundle-size': 'This file is larger than the device accepts.',
  'ota-spool-space': 'The device does not have enough free space to receive this file.',
  'ota-upload': 'The upload was interrupted. Try again.',
  'ota-no-bundle': 'The uploaded file is gone: upload it again.',
  'auth-token': 'The API token was not accepted.',
};

/**
 * An error as a sentence for the user, with the service's detail after it.
 * @param {any} e an ApiError (problem in e.problem) or another error
 */
export function plainError(e) {
  const rule = String(e?.problem?.type ?? '').replace('urn:fpgagdr:problem:', '');
  const plain = /** @type {Record<string, string>} */ (PLAIN)[rule];
  const detail = e?.problem?.detail ?? (e instanceof Error ? e.message : String(e));
  return plain ? `${plain} (${detail})` : detail;
}

/**
 * @param {ParentNode} root
 * @param {string} name
 * @param {string} text
 */
function set(root, name, text) {
  const e = root.querySelector(`[data-field="${name}"]`);
  if (e) e.textContent = text;
}

/**
 * How the health gate judged this boot, and what became of a bootloader capsule.
 * @param {any} c the status's boot_check
 */
function bootCheck(c) {
  if (!c) return 'not judged yet';
  const verdict = c.confirmed ? `${c.verdict} (confirmed)` : `${c.verdict} (not confirmed)`;
  const capsule = c.capsule
    ? `; bootloader capsule ${c.capsule.version} ${c.capsule.ok ? 'applied' : 'NOT applied'}`
    : '';
  return `${verdict}${capsule}`;
}

/** @param {any} slot a GetSlotStatus entry */
function slotRow(slot) {
  const tr = document.createElement('tr');
  tr.dataset.slot = String(slot.name ?? '');
  const cells = [
    slot.name, slot.bootname, slot.state, slot['boot-status'],
    slot['bundle.version'], slot['installed.timestamp'], slot.device,
  ];
  for (const c of cells) {
    const td = document.createElement('td');
    td.textContent = c === undefined || c === null || c === '' ? '—' : String(c);
    tr.append(td);
  }
  return tr;
}

export class UpdateView {
  /** @param {HTMLElement} root the update page */
  constructor(root) {
    this.root = root;
    this.state = /** @type {HTMLElement} */ (root.querySelector('[data-testid="ota-state"]'));
    this.table = /** @type {HTMLElement} */ (root.querySelector('[data-testid="ota-slots"]'));
    this.result = /** @type {HTMLElement} */ (root.querySelector('[data-testid="ota-result"]'));
    this.upBar = /** @type {HTMLProgressElement} */ (root.querySelector('[data-testid="ota-upload-progress"]'));
    this.inBar = /** @type {HTMLProgressElement} */ (root.querySelector('[data-testid="ota-install-progress"]'));
    this.file = /** @type {HTMLInputElement} */ (root.querySelector('[data-testid="ota-file"]'));
    this.uploadBtn = /** @type {HTMLButtonElement} */ (root.querySelector('[data-action="ota-upload"]'));
    this.installBtn = /** @type {HTMLButtonElement} */ (root.querySelector('[data-action="ota-install"]'));
    this.tbody = /** @type {HTMLElement} */ (root.querySelector('[data-testid="ota-slots"] tbody'));
    /** @type {any} */
    this.last = null;
    this.uploading = false;
    this.file.addEventListener('change', () => this.#buttons());
  }

  /** @param {string} text @param {'ok' | 'bad' | ''} [kind] */
  say(text, kind = '') {
    this.result.textContent = text;
    this.result.dataset.kind = kind;
  }

  /** @param {boolean} on */
  setUploading(on) {
    this.uploading = on;
    this.#buttons();
  }

  /** @param {number} sent @param {number} total */
  showUpload(sent, total) {
    const pct = total > 0 ? Math.min(100, Math.round((100 * sent) / total)) : 0;
    this.upBar.value = pct;
    set(this.root, 'ota_upload_pct', `${pct}%`);
  }

  #buttons() {
    const s = this.last;
    const ready = !!s?.available && s.operation === 'idle' && !this.uploading;
    this.uploadBtn.disabled = !ready || !this.file.files?.length;
    this.installBtn.disabled = !ready || !s?.bundle;
  }

  /** @param {any} s reply of GET /ota, or the data of an `ota` event */
  show(s) {
    const prev = this.last;
    this.last = s;
    const op = s.available ? s.operation : 'unavailable';
    this.state.dataset.state = op;
    set(this.root, 'ota_headline', s.available
      ? (op === 'installing' ? 'Installing an update…' : 'Ready for an update.')
      : 'Updates are unavailable: the update service (RAUC) is not running on this device, or cannot be reached.');
    set(this.root, 'ota_detail', s.available ? '' : `(${s.reason ?? 'no reason given'})`);
    set(this.root, 'ota_compatible', s.compatible ?? '—');
    set(this.root, 'ota_booted', s.booted_slot ?? '—');
    const primary = (s.slots ?? []).find((/** @type {any} */ x) => x.name === s.primary_slot);
    set(this.root, 'ota_primary', s.primary_slot ? `${s.primary_slot}${primary?.bootname ? ` (${primary.bootname})` : ''}` : '—');
    set(this.root, 'ota_bundle', s.bundle ? `${s.bundle.sha256} (${s.bundle.bytes} bytes)` : 'none');
    set(this.root, 'ota_boot_check', bootCheck(s.boot_check));
    set(this.root, 'ota_bootloader', s.bootloader
      ? `${s.bootloader.version}${s.bootloader.last_attempt_status ? ` (last capsule ${s.bootloader.last_attempt_version} failed: status ${s.bootloader.last_attempt_status})` : ''}`
      : '—');
    if (op === 'installing' && s.progress) {
      this.inBar.value = Math.max(0, Math.min(100, s.progress.percent));
      set(this.root, 'ota_install_msg', `${s.progress.percent}% · ${s.progress.message}`);
    }
    const r = s.last_result;
    if (r && r.finished_unix_s !== prev?.last_result?.finished_unix_s) {
      if (r.ok) {
        this.inBar.value = 100;
        set(this.root, 'ota_install_msg', '100% · done');
        this.say('Update installed. It runs after the next reboot; if it does not come up healthy, the device returns to the current version.', 'ok');
      } else {
        this.say(`The update was not installed; the device keeps running the current version. RAUC said: ${r.error ?? 'unknown error'}`, 'bad');
      }
    }
    const slots = Array.isArray(s.slots) ? s.slots : [];
    this.tbody.replaceChildren(...slots.map(slotRow));
    this.table.hidden = slots.length === 0;
    set(this.root, 'ota_slots_empty', s.available
      ? 'RAUC reports no slots yet (it does not answer while it installs).'
      : 'No slots to show: RAUC, which knows them, is not reachable.');
    const empty = this.root.querySelector('[data-field="ota_slots_empty"]');
    if (empty instanceof HTMLElement) empty.hidden = slots.length > 0;
    this.#buttons();
  }
}
