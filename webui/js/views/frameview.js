// @ts-check
// views/frameview.js: the frame view, a recent frame beside its own result.
// Follow one frame: GET /api/v1/frames/latest answers a downscaled PNG of the newest
// frame copy whose result has been made, its key in X-Frame-Run / X-Frame-Seq; this
// reads that frame's result (GET /api/v1/results/{run}/{seq}) and shows the picture
// and its caption (sequence number, best class, geometry) together, never one
// without the other. The latest result above it moves on with every frame; the
// frame view is its own frame's.
//
// Owns: the view's image (a data: URL, which the page's CSP allows) and caption, and
// when they change (both at once, after both were read). Must not: pair the picture
// with any result but the one its key names.

import * as fmt from '../format.js';

/** Reads a blob into a data: URL. */
function dataUrl(/** @type {Blob} */ blob) {
  return new Promise((resolve, reject) => {
    const r = new FileReader();
    r.onload = () => resolve(String(r.result));
    r.onerror = () => reject(r.error);
    r.readAsDataURL(blob);
  });
}

export class FrameView {
  /**
   * @param {HTMLImageElement} img the picture
   * @param {HTMLElement} caption the line under it
   */
  constructor(img, caption) {
    this.img = img;
    this.caption = caption;
    /** key shown, `RUN:SEQ` */
    this.shown = '';
    this.busy = false;
  }

  /** Reads the frame view once; shows it when its key is new (picture and result together). */
  async refresh() {
    if (this.busy) return;
    this.busy = true;
    try {
      const resp = await fetch(`/api/v1/frames/latest?t=${Date.now()}`, { cache: 'no-store' });
      if (!resp.ok) return;
      const run = resp.headers.get('X-Frame-Run');
      const seq = resp.headers.get('X-Frame-Seq');
      if (run === null || seq === null || `${run}:${seq}` === this.shown) return;
      const png = await resp.blob();
      const rr = await fetch(`/api/v1/results/${run}/${seq}`, { cache: 'no-store' });
      if (!rr.ok) return;
      /** @type {import('../api.js').Result} */
      const r = await rr.json();
      if (String(r.run) !== run || String(r.seq) !== seq) return;
      const url = await dataUrl(png);
      this.show(r, url);
    } catch {
      // A failed read leaves the view as it was; the next tick tries again.
    } finally {
      this.busy = false;
    }
  }

  /**
   * Shows `url` (the picture of `r`'s frame) with its caption.
   * @param {import('../api.js').Result} r
   * @param {string} url
   */
  show(r, url) {
    this.shown = `${r.run}:${r.seq}`;
    this.img.dataset.run = String(r.run);
    this.img.dataset.seq = String(r.seq);
    this.img.src = url;
    this.img.hidden = false;
    const best = r.top[0];
    const f = r.frame;
    this.caption.textContent = [
      `This frame: #${r.seq}`,
      best ? `${best.label} ${fmt.percent(best.score)}` : 'no class',
      `${f.width}×${f.height} ${f.format}`,
    ].join(' · ');
    this.caption.dataset.seq = String(r.seq);
    this.caption.hidden = false;
  }
}
