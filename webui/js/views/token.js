// @ts-check
// views/token.js: the dialog that asks for the API token. Owns showing the
// <dialog data-testid="token-dialog"> of index.html modally and resolving with
// what was typed, or null on Cancel / Escape. Must not store the token or
// retry anything: api.js does both (it calls this through setTokenPrompt).

/**
 * @param {HTMLDialogElement} dialog
 * @returns {(why: string) => Promise<string | null>}
 */
export function tokenPrompt(dialog) {
  const input = /** @type {HTMLInputElement} */ (dialog.querySelector('input[name="token"]'));
  const why = dialog.querySelector('[data-field="token_why"]');
  /** @type {Promise<string | null> | null} */
  let open = null;
  return (message) => {
    // several calls refused at once share one dialog
    if (open) return open;
    open = new Promise((resolve) => {
      if (why) why.textContent = message;
      input.value = '';
      dialog.returnValue = '';
      dialog.addEventListener('close', () => {
        open = null;
        const token = input.value.trim();
        resolve(dialog.returnValue === 'ok' && token ? token : null);
      }, { once: true });
      dialog.showModal();
      input.focus();
    });
    return open;
  };
}
