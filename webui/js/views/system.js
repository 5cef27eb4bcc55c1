// @ts-check
// views/system.js: the system page. Owns writing GET /system into the
// elements of the page's data-field="sys_*" slots: versions (image, service,
// kernel, kernel module, model file and its SHA-256), card and platform,
// pipeline, telemetry sources, uptimes. Must not fetch (main.js does) or keep
// state between calls.

import * as fmt from '../format.js';

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
 * @param {ParentNode} root the system page
 * @param {any} s reply of GET /api/v1/system
 */
export function showSystem(root, s) {
  const img = s.image ?? {};
  set(root, 'sys_image', img.build
    ? [img.version ?? 'unknown version', img.name].filter(Boolean).join(' · ')
    : `not an image build${img.os ? ` (${img.os})` : ''}`);
  set(root, 'sys_service', `${s.service?.name ?? 'fpgagdrd'} ${s.service?.version ?? fmt.NONE}`);
  set(root, 'sys_kernel', [s.kernel?.release ?? 'unknown', s.kernel?.arch].filter(Boolean).join(' · '));
  const mod = s.module ?? {};
  set(root, 'sys_module', mod.loaded ? (mod.version ?? mod.detail ?? 'loaded') : (mod.detail ?? 'not loaded'));
  const m = s.model ?? {};
  set(root, 'sys_model', m.path ? `${m.path}${fmt.isNum(m.bytes) ? ` (${fmt.bytes(m.bytes)})` : ''}` : fmt.NONE);
  set(root, 'sys_model_sha', m.sha256 ?? (m.error ? `cannot read: ${m.error}` : fmt.NONE));
  const card = s.card ?? {};
  set(root, 'sys_card', `${card.name ?? fmt.NONE}${card.simulated ? ' (simulated)' : ''}`);
  set(root, 'sys_platform', [card.platform, s.memory?.kind, s.memory?.data_path].filter(Boolean).join(' · ') || fmt.NONE);
  const p = s.pipeline ?? {};
  set(root, 'sys_pipeline', p.state ? `${p.state}${p.error ? `: ${p.error}` : ''}` : fmt.NONE);
  set(root, 'sys_uptime', fmt.duration(s.uptime_s));
  set(root, 'sys_host_uptime', fmt.duration(s.host_uptime_s));
  const sources = Array.isArray(s.telemetry_sources) ? s.telemetry_sources : [];
  set(root, 'sys_sources', sources.length
    ? sources.map((/** @type {any} */ x) => `${x.name}: ${x.state}`).join(' · ')
    : 'no sample yet');
}
