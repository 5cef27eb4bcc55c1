// @ts-check
// api.js: the REST calls of /api/v1 and their error shape. Owns URL building,
// timeouts, turning an RFC 9457 `application/problem+json` reply into an
// ApiError carrying the problem (title, detail, errors[] with JSON pointers),
// and the API token: mutating calls carry `Authorization: Bearer <token>` from
// localStorage; on a 401 the page's token prompt (set with setTokenPrompt, see
// views/token.js) is asked once and the call is retried. Must not touch the
// DOM; the pages decide what to show. The live stream is stream.js: everything
// the Live page shows comes from there; these calls are for the pages' actions and
// for what does not change by the second (status after a generation change,
// config, system, OTA).

/** How long one REST call may take before it is abandoned. */
const TIMEOUT_MS = 10_000;
/** localStorage key of the API token. */
export const TOKEN_KEY = 'fpgagdr.token';

/**
 * @typedef {object} Problem RFC 9457 problem details, as the service sends them.
 * @property {string} [type]
 * @property {string} [title]
 * @property {number} [status]
 * @property {string} [detail]
 * @property {{field: string, rule: string, message: string}[]} [errors] config field errors, JSON pointers
 */

/** A failed API call: a problem reply, another HTTP error, or no reply at all (status 0). */
export class ApiError extends Error {
  /**
   * @param {string} message shown to the user: "title: detail"
   * @param {number} status HTTP status, 0 when no response arrived
   * @param {Problem | null} problem the parsed problem+json body, if any
   */
  constructor(message, status, problem) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.problem = problem;
  }
}

/**
 * Resolves an API path against the page, so the dashboard also works when it
 * is served below a prefix by a reverse proxy.
 * @param {string} path e.g. "status", "pipeline/start"
 */
export function apiUrl(path) {
  return new URL('api/v1/' + path, document.baseURI).href;
}

/**
 * @param {Response} res a response that is not ok
 * @returns {Promise<ApiError>}
 */
async function errorFrom(res) {
  const type = res.headers.get('content-type') ?? '';
  if (type.startsWith('application/problem+json')) {
    try {
      /** @type {Problem} */
      const p = await res.json();
      const title = p.title || res.statusText || `HTTP ${res.status}`;
      const message = p.detail ? `${title}: ${p.detail}` : title;
      return new ApiError(message, res.status, p);
    } catch {
      // fall through: a malformed problem body reads like any other error
    }
  }
  return new ApiError(`HTTP ${res.status} ${res.statusText}`.trim(), res.status, null);
}

/** @returns {string | null} the stored API token */
function storedToken() {
  try {
    return localStorage.getItem(TOKEN_KEY);
  } catch {
    return null; // storage disabled: the prompt asks each time
  }
}

/** @type {((why: string) => Promise<string | null>) | null} */
let tokenPrompt = null;

/**
 * Sets what is asked for a token when a mutating call gets 401: it resolves
 * with the token typed, or null when the user cancels.
 * @param {(why: string) => Promise<string | null>} prompt
 */
export function setTokenPrompt(prompt) {
  tokenPrompt = prompt;
}

/**
 * @typedef {'GET' | 'POST' | 'PUT' | 'PATCH'} Method
 * @typedef {{body?: unknown, contentType?: string, headers?: Record<string, string>}} CallOptions
 */

/**
 * One request; a mutating one carries the token.
 * @param {Method} method
 * @param {string} path below /api/v1/
 * @param {CallOptions} opts
 * @param {string | null} token
 * @returns {Promise<Response>}
 */
async function send(method, path, opts, token) {
  /** @type {Record<string, string>} */
  const headers = { accept: 'application/json, application/problem+json', ...opts.headers };
  if (method !== 'GET' && token) headers.authorization = `Bearer ${token}`;
  if (opts.body !== undefined) headers['content-type'] = opts.contentType ?? 'application/json';
  try {
    return await fetch(apiUrl(path), {
      method,
      headers,
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
      cache: 'no-store',
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
  } catch (e) {
    const why = e instanceof Error && e.name === 'TimeoutError' ? 'timed out' : 'service unreachable';
    throw new ApiError(`${method} ${path}: ${why}`, 0, null);
  }
}

/**
 * A call whose reply (headers included) the caller reads. A mutating call
 * refused with 401 asks the token prompt once, stores the token and retries.
 * @param {Method} method
 * @param {string} path below /api/v1/
 * @param {CallOptions} [opts]
 * @returns {Promise<Response>} an ok response
 * @throws {ApiError}
 */
export async function request(method, path, opts = {}) {
  let res = await send(method, path, opts, storedToken());
  if (res.status === 401 && method !== 'GET' && tokenPrompt) {
    const problem = await errorFrom(res);
    const token = await tokenPrompt(problem.message);
    if (token) {
      try {
        localStorage.setItem(TOKEN_KEY, token);
      } catch {
        // not stored: asked again next time
      }
      res = await send(method, path, opts, token);
    } else {
      throw problem;
    }
  }
  if (!res.ok) throw await errorFrom(res);
  return res;
}

/**
 * @param {Method} method
 * @param {string} path below /api/v1/
 * @returns {Promise<any>} the parsed JSON body
 * @throws {ApiError}
 */
async function call(method, path) {
  return (await request(method, path)).json();
}

/**
 * @typedef {object} CardInfo what the card reports; a simulated card may leave out the geometry
 * @property {string} kind
 * @property {string} name
 * @property {boolean} simulated
 * @property {string} [platform]
 * @property {number} [page_size_bytes]
 * @property {number} [alignment_bytes]
 * @property {number} [c2h_channels]
 * @property {number} [h2c_channels]
 * @property {number} [card_memory_bytes]
 *
 * @typedef {object} Counters
 * @property {number} frames_captured
 * @property {number} frames_inferred
 * @property {number} frames_dropped
 * @property {number} checksum_errors
 * @property {number} transfer_errors
 * @property {number} [frames_overrun] frames the card overwrote before the host took them
 *
 * @typedef {'running' | 'stopped' | 'failed'} PipelineState
 *
 * @typedef {object} Batch the batch size and wait in use (status `pipeline.batch`)
 * @property {number} max
 * @property {number} mean
 * @property {number} [wait_us] the longest wait for a batch to fill in use now
 * @property {number | null} [aim] the batch the chosen wait aims at; null for a fixed wait
 * @property {number | null} [latency_target_us] the latency the chosen wait aims within, µs
 * @property {string | null} [reason] why this choice: `within_target`, `target_unmet`, ...
 * @property {string | null} [reason_detail] the reason in words, with its figures
 * @property {boolean} [ahead] two batches in flight (GPU), else one at a time
 * @property {number} [c2h_channels]
 *
 * @typedef {object} GpuMemory GPU memory the pipeline takes (status `memory.gpu`)
 * @property {number} ring_bytes
 * @property {number | null} model_bytes null until the model has warmed up, and on the CPU path
 * @property {number | null} device_used_bytes
 * @property {number | null} device_total_bytes
 * @property {string} detail
 *
 * @typedef {object} Status reply of GET /status and of the pipeline POSTs
 * @property {CardInfo} card
 * @property {{kind: 'host' | 'cuda_device' | 'cuda_host' | null, detail?: string, gpu?: GpuMemory | null}} memory kind is null before the frame ring exists
 * @property {{state: PipelineState, error: string | null, model: string | null, source: string | null, preprocess?: string | null, inference?: string | null, batch?: Batch | null, generation?: number, running_s?: number | null}} pipeline
 * @property {Counters} counters
 * @property {number} uptime_s
 *
 * @typedef {object} Class one entry of a top-5 list
 * @property {number} index
 * @property {string} label
 * @property {number} score
 *
 * @typedef {object} Result one frame's result, schema version 2 (a snapshot's `latest`,
 *   GET /results/latest, GET /results/{run}/{seq}, the results stream, the log, MQTT)
 * @property {number} v schema version
 * @property {number} run
 * @property {number} seq
 * @property {{width: number, height: number, format: string, bytes: number}} frame
 *   bytes: the frame's size, its 64-byte header and its pixels
 * @property {string} checksum `ok` or `not_checked`
 * @property {Class[]} top
 * @property {Record<string, number>} latency_us per stage, this frame
 */

/** @returns {Promise<Status>} */
export function getStatus() {
  return call('GET', 'status');
}

/**
 * @param {'start' | 'stop'} action
 * @returns {Promise<Status>}
 */
export function pipeline(action) {
  return call('POST', `pipeline/${action}`);
}

/** @returns {Promise<any>} versions, card, pipeline, uptime (GET /system) */
export function getSystem() {
  return call('GET', 'system');
}

/** @returns {Promise<any>} the JSON Schema of the config document */
export function getConfigSchema() {
  return call('GET', 'config/schema');
}

/** @returns {Promise<{frames: string[], models: string[]}>} what the data directory offers (GET /config/files) */
export function getConfigFiles() {
  return call('GET', 'config/files');
}

/** @returns {Promise<{config: any, etag: string}>} the config in force and its ETag */
export async function getConfig() {
  const res = await request('GET', 'config');
  return { config: await res.json(), etag: res.headers.get('etag') ?? '' };
}

/**
 * RFC 7396 merge patch of the config, refused (412) when it changed since `etag`.
 * @param {object} patch
 * @param {string} etag
 * @returns {Promise<{config: any, etag: string}>}
 */
export async function patchConfig(patch, etag) {
  const res = await request('PATCH', 'config', {
    body: patch,
    contentType: 'application/merge-patch+json',
    headers: etag ? { 'if-match': etag } : {},
  });
  return { config: await res.json(), etag: res.headers.get('etag') ?? '' };
}

/** @returns {Promise<any>} OTA state: availability, operation, progress, slots (GET /ota) */
export function getOta() {
  return call('GET', 'ota');
}

/**
 * @param {string} sha256 of the uploaded bundle
 * @returns {Promise<any>} the OTA state once RAUC started installing (202)
 */
export async function installBundle(sha256) {
  return (await request('POST', 'ota/install', { body: { bundle: sha256 } })).json();
}

/**
 * Uploads an update bundle with progress (XMLHttpRequest: fetch reports no
 * upload progress). A 401 asks the token prompt once and uploads again.
 * @param {Blob} file
 * @param {(sent: number, total: number) => void} onProgress
 * @returns {Promise<any>} {sha256, bytes, compatible, version}
 * @throws {ApiError}
 */
export async function uploadBundle(file, onProgress) {
  /** @param {string | null} token @returns {Promise<{status: number, type: string, text: string}>} */
  const once = (token) => new Promise((resolve) => {
    const xhr = new XMLHttpRequest();
    xhr.open('POST', apiUrl('ota/bundles'));
    xhr.setRequestHeader('content-type', 'application/octet-stream');
    xhr.setRequestHeader('accept', 'application/json, application/problem+json');
    if (token) xhr.setRequestHeader('authorization', `Bearer ${token}`);
    xhr.upload.addEventListener('progress', (ev) => onProgress(ev.loaded, ev.lengthComputable ? ev.total : file.size));
    const done = () => resolve({ status: xhr.status, type: xhr.getResponseHeader('content-type') ?? '', text: xhr.responseText });
    xhr.addEventListener('load', done);
    xhr.addEventListener('error', done);
    xhr.addEventListener('abort', done);
    xhr.send(file);
  });
  /** @param {{status: number, type: string, text: string}} r */
  const toError = (r) => {
    if (r.status === 0) return new ApiError('POST ota/bundles: service unreachable', 0, null);
    /** @type {Problem | null} */
    let p = null;
    try {
      if (r.type.startsWith('application/problem+json')) p = JSON.parse(r.text);
    } catch {
      p = null;
    }
    const title = p?.title || `HTTP ${r.status}`;
    return new ApiError(p?.detail ? `${title}: ${p.detail}` : title, r.status, p);
  };
  let r = await once(storedToken());
  if (r.status === 401 && tokenPrompt) {
    const token = await tokenPrompt(toError(r).message);
    if (!token) throw toError(r);
    try {
      localStorage.setItem(TOKEN_KEY, token);
    } catch {
      // not stored: asked again next time
    }
    r = await once(token);
  }
  if (r.status < 200 || r.status >= 300) throw toError(r);
  return JSON.parse(r.text);
}
