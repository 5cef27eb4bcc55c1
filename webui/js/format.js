// @ts-check
// format.js: turns raw API numbers into display strings, each with its unit.
// Owns unit choice and rounding only; no DOM, no state. Used by views/status.js
// (numbers on the page) and charts.js (axis ticks and legend values).
// Units in the API: latencies are microseconds, throughput is GB/s with
// GB = 10^9 bytes, sizes are bytes, times are seconds.

/** Shown for a value that is missing, NaN or infinite. */
export const NONE = '—';

const NNBSP = '\u202f'; // narrow no-break space: digit grouping and number–unit gap

/**
 * @param {unknown} v
 * @returns {v is number}
 */
export function isNum(v) {
  return typeof v === 'number' && Number.isFinite(v);
}

/**
 * @param {number} v
 * @returns {string} v with 3 significant digits, never in exponent form.
 */
function sig3(v) {
  const a = Math.abs(v);
  if (a >= 100) return v.toFixed(0);
  if (a >= 10) return v.toFixed(1);
  if (a >= 1 || a === 0) return v.toFixed(2);
  return v.toPrecision(3);
}

/**
 * A latency given in microseconds, scaled to µs, ms or s: "118 µs", "9.10 ms".
 * Zero or less means "no sample in the window", shown as NONE.
 * @param {number | null | undefined} us
 */
export function latency(us) {
  if (!isNum(us) || us <= 0) return NONE;
  if (Math.abs(us) < 1000) return sig3(us) + NNBSP + 'µs';
  if (Math.abs(us) < 1e6) return sig3(us / 1e3) + NNBSP + 'ms';
  return sig3(us / 1e6) + NNBSP + 's';
}

/**
 * A latency axis tick, as short as exact: "200 µs", "1 ms", "20 ms".
 * @param {number} us
 */
export function latencyTick(us) {
  if (!isNum(us) || us <= 0) return '';
  if (us < 1000) return `${+us.toPrecision(3)}${NNBSP}µs`;
  if (us < 1e6) return `${+(us / 1e3).toPrecision(3)}${NNBSP}ms`;
  return `${+(us / 1e6).toPrecision(3)}${NNBSP}s`;
}

/**
 * Frames per second, the number alone ("29.8"); the unit is beside it in the markup.
 * @param {number | null | undefined} v
 */
export function fps(v) {
  if (!isNum(v)) return NONE;
  return v >= 100 ? v.toFixed(0) : v.toFixed(1);
}

/**
 * Throughput given in GB/s (10^9 bytes/s), as [number, unit]: [ "12.1", "MB/s" ].
 * Below 1 GB/s it is shown in MB/s, below 1 MB/s in kB/s, so a slow sim card
 * does not read "0.00".
 * @param {number | null | undefined} gbps
 * @returns {[string, string]}
 */
export function throughputParts(gbps) {
  if (!isNum(gbps)) return [NONE, 'GB/s'];
  if (gbps <= 0) return ['0', 'GB/s'];
  if (gbps >= 1) return [sig3(gbps), 'GB/s'];
  if (gbps >= 1e-3) return [sig3(gbps * 1e3), 'MB/s'];
  return [sig3(gbps * 1e6), 'kB/s'];
}

/**
 * A counter with grouped digits: "1 234 567" (narrow no-break spaces, the same
 * in every locale).
 * @param {number | null | undefined} n
 */
export function count(n) {
  if (!isNum(n)) return NONE;
  return Math.round(n).toString().replace(/\B(?=(\d{3})+(?!\d))/g, NNBSP);
}

/**
 * A size in bytes with binary prefixes: "396 KiB", "2.00 GiB", "512 B".
 * @param {number | null | undefined} n
 */
export function bytes(n) {
  if (!isNum(n)) return NONE;
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let i = 0;
  while (Math.abs(v) >= 1024 && i < units.length - 1) {
    v /= 1024;
    i += 1;
  }
  return (i === 0 ? v.toFixed(0) : sig3(v)) + NNBSP + units[i];
}

/**
 * A score in [0, 1] as a percentage: "61.0 %".
 * @param {number | null | undefined} score
 */
export function percent(score) {
  if (!isNum(score)) return NONE;
  return (score * 100).toFixed(1) + NNBSP + '%';
}

/**
 * A duration in seconds, coarse: "42 s", "12 min 5 s", "3 h 20 min".
 * @param {number | null | undefined} s
 */
export function duration(s) {
  if (!isNum(s) || s < 0) return NONE;
  const t = Math.floor(s);
  if (t < 60) return `${t}${NNBSP}s`;
  if (t < 3600) return `${Math.floor(t / 60)}${NNBSP}min ${t % 60}${NNBSP}s`;
  const h = Math.floor(t / 3600);
  if (h < 48) return `${h}${NNBSP}h ${Math.floor((t % 3600) / 60)}${NNBSP}min`;
  return `${Math.floor(h / 24)}${NNBSP}d ${h % 24}${NNBSP}h`;
}

/**
 * A power given in watts: "7.39 W", "850 mW".
 * @param {number | null | undefined} w
 */
export function watts(w) {
  if (!isNum(w)) return NONE;
  if (Math.abs(w) < 1 && w !== 0) return sig3(w * 1000) + NNBSP + 'mW';
  return sig3(w) + NNBSP + 'W';
}

/**
 * A number with 3 significant digits and no unit ("7.39", "118"), NONE when missing.
 * @param {number | null | undefined} v
 */
export function num3(v) {
  return isNum(v) ? sig3(v) : NONE;
}

/**
 * A share in percent, given in percent: "42 %", "7.5 %".
 * @param {number | null | undefined} pct
 */
export function pct(pct) {
  if (!isNum(pct)) return NONE;
  return (pct >= 10 ? pct.toFixed(0) : pct.toFixed(1)) + NNBSP + '%';
}

/**
 * A temperature in °C: "51.3 °C".
 * @param {number | null | undefined} c
 */
export function celsius(c) {
  if (!isNum(c)) return NONE;
  return c.toFixed(1) + NNBSP + '°C';
}
