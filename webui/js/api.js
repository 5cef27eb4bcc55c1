// @ts-check
// api.js: the REST calls of /api/v1 and their error shape. Owns URL building,
// timeouts, and turning an RFC 9457 `application/problem+json` reply into an
// ApiError carrying the problem's title and detail. Must not touch the DOM or
// keep state; main.js decides what to show. The live stream is stream.js.

/** How long one REST call may take before it is abandoned. */
const TIMEOUT_MS = 10_000;

/**
 * @typedef {object} Problem RFC 9457 problem details, as the service sends them.
 * @property {string} [type]
 * @property {string} [title]
 * @property {number} [status]
 * @property {string} [detail]
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

/**
 * @param {'GET' | 'POST'} method
 * @param {string} path below /api/v1/
 * @returns {Promise<any>} the parsed JSON body
 * @throws {ApiError}
 */
async function call(method, path) {
  let res;
  try {
    res = await fetch(apiUrl(path), {
      method,
      headers: { accept: 'application/json, application/problem+json' },
      cache: 'no-store',
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
  } catch (e) {
    const why = e instanceof Error && e.name === 'TimeoutError' ? 'timed out' : 'service unreachable';
    throw new ApiError(`${method} ${path}: ${why}`, 0, null);
  }
  if (!res.ok) throw await errorFrom(res);
  return res.json();
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
 *
 * @typedef {'running' | 'stopped' | 'failed'} PipelineState
 *
 * @typedef {object} Status reply of GET /status and of the pipeline POSTs
 * @property {CardInfo} card
 * @property {{kind: 'host' | 'cuda_device' | 'cuda_host' | null, detail?: string}} memory kind is null before the frame ring exists
 * @property {{state: PipelineState, error: string | null, model: string | null, source: string | null}} pipeline
 * @property {Counters} counters
 * @property {number} uptime_s
 *
 * @typedef {object} Class one entry of a top-5 list
 * @property {number} index
 * @property {string} label
 * @property {number} score
 *
 * @typedef {object} Result reply of GET /results/latest
 * @property {number} seq
 * @property {{width: number, height: number, format: string, bytes: number, checksum_ok: boolean}} frame
 * @property {Class[]} top5
 * @property {{dma: number, preprocess: number, inference: number, end_to_end: number}} latency_us
 */

/** @returns {Promise<Status>} */
export function getStatus() {
  return call('GET', 'status');
}

/** @returns {Promise<Result>} rejects with status 404 while there is no result yet */
export function getLatestResult() {
  return call('GET', 'results/latest');
}

/**
 * @param {'start' | 'stop'} action
 * @returns {Promise<Status>}
 */
export function pipeline(action) {
  return call('POST', `pipeline/${action}`);
}
