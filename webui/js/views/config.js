// @ts-check
// views/config.js: the config page. Owns building a form from the config's
// JSON Schema (GET /config/schema: every property becomes a field, nested
// objects become fieldsets; nothing is listed by hand), filling it from the
// config in force, turning the edits into an RFC 7396 merge patch, and showing
// the API's field errors (problem+json errors[], JSON pointers) beside their
// fields. Must not fetch: pages/config.js passes the schema, the config and the
// files on offer in, and sends the patch (api.js, PATCH with If-Match).
//
// The schema says how the form reads: a property's `title` is its label (the key,
// in words, when it has none), properties come in `x-order` (the document's order;
// a JSON object's keys are alphabetical), `x-applies-when: {"/source/kind": ["test_pattern"]}` hides a field
// while the named field holds another value, and `x-offer: "frames"` lists the
// data directory's frames (`models`: its models) under a text field.
//
// Field kinds: boolean → checkbox; a `oneOf` of `const` strings (or `enum`) →
// select; integer / number → number input (min/max from the schema, the API
// still decides: the form has novalidate); string → text; string-or-null →
// text whose empty value means null (the default). An emptied number is sent
// as null too, which resets the field to its default. An object keyed by name
// (`additionalProperties`, no fixed properties: outputs.alerts.rules) → a JSON
// text box; its edit is sent as the new object with null for each key removed
// (a merge patch), and an error naming a field inside it is shown beside it.

/**
 * @typedef {object} Field
 * @property {string} pointer JSON pointer, e.g. "/ring/entries"
 * @property {string[]} path keys from the root
 * @property {'boolean' | 'enum' | 'integer' | 'number' | 'string' | 'nullable' | 'json'} kind
 * @property {HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement} input
 * @property {HTMLElement} error the element beside the field that shows its error
 * @property {HTMLElement} row the field's block
 * @property {Record<string, string[]> | null} appliesWhen shown only while each named field holds one of its values
 * @property {string | null} offer which list of files goes under it (`frames`, `models`)
 */

/** A key in words, for a property without a title: "when_full" → "When full". */
function words(/** @type {string} */ key) {
  const t = key.replace(/_/g, ' ');
  return t.charAt(0).toUpperCase() + t.slice(1);
}

/** @param {string} pointer @returns {string} an id-safe form of a pointer */
function idOf(pointer) {
  return 'cfg' + pointer.replace(/[^A-Za-z0-9]+/g, '-');
}

/**
 * @param {any} schema the root schema (holds $defs)
 * @param {any} node a property schema, maybe a $ref
 * @returns {any} the schema the $ref points at, merged under the node's own keys
 */
function resolve(schema, node) {
  if (node && typeof node.$ref === 'string') {
    const name = node.$ref.replace(/^#\/\$defs\//, '');
    const target = schema.$defs?.[name] ?? {};
    return { ...target, ...node, $ref: undefined, description: node.description ?? target.description };
  }
  return node ?? {};
}

/**
 * @param {any} s a resolved schema
 * @returns {{value: string, help: string}[] | null} the choices, when it is an enum
 */
function choices(s) {
  if (Array.isArray(s.oneOf) && s.oneOf.every((/** @type {any} */ o) => 'const' in o)) {
    return s.oneOf.map((/** @type {any} */ o) => ({ value: String(o.const), help: o.description ?? '' }));
  }
  if (Array.isArray(s.enum)) return s.enum.map((/** @type {any} */ v) => ({ value: String(v), help: '' }));
  return null;
}

/** @param {any} s @returns {Field['kind'] | 'object'} */
function kindOf(s) {
  if (choices(s)) return 'enum';
  const t = s.type;
  if (t === 'object' && !s.properties && s.additionalProperties) return 'json';
  if (t === 'object' || s.properties) return 'object';
  if (Array.isArray(t)) {
    if (t.includes('null') && t.includes('string')) return 'nullable';
    // A nullable number (e.g. inference.tensorrt.dla_core): an empty box is null.
    if (t.includes('integer')) return 'integer';
    if (t.includes('number')) return 'number';
    return 'string';
  }
  if (t === 'boolean' || t === 'integer' || t === 'number') return t;
  return 'string';
}

/** First sentence-ish line of a schema description, for a hint. */
function hint(/** @type {string | undefined} */ d) {
  return (d ?? '').replace(/\s*\n\s*/g, ' ').replace(/`/g, '');
}

/**
 * @param {any} obj
 * @param {string[]} path
 */
function getAt(obj, path) {
  return path.reduce((o, k) => (o == null ? undefined : o[k]), obj);
}

export class ConfigView {
  /** @param {HTMLFormElement} form an empty form; its fields are built by build() */
  constructor(form) {
    this.form = form;
    /** @type {Field[]} */
    this.fields = [];
    /** @type {any} the config the fields were filled from */
    this.shown = null;
  }

  /**
   * Builds one field per leaf of the schema, in the schema's property order.
   * @param {any} schema
   */
  build(schema) {
    this.fields = [];
    const body = this.form.querySelector('[data-fields]') ?? this.form;
    body.replaceChildren(...this.group(schema, schema, []));
  }

  /**
   * @param {any} root
   * @param {any} node an object schema
   * @param {string[]} path
   * @returns {HTMLElement[]}
   */
  group(root, node, path) {
    const out = [];
    const props = Object.entries(node.properties ?? {});
    // the document's order (`x-order`), not the JSON object's (alphabetical)
    const order = Array.isArray(node['x-order']) ? node['x-order'] : [];
    const rank = (/** @type {string} */ k) => (order.includes(k) ? order.indexOf(k) : order.length);
    props.sort((a, b) => rank(a[0]) - rank(b[0]));
    for (const [key, raw] of props) {
      const s = resolve(root, raw);
      const p = [...path, key];
      if (kindOf(s) === 'object') {
        const fs = document.createElement('fieldset');
        fs.className = 'cfg-group';
        const legend = document.createElement('legend');
        legend.textContent = s.title ?? words(key);
        const desc = document.createElement('span');
        desc.className = 'muted';
        desc.textContent = ` ${hint(s.description)}`;
        legend.append(desc);
        fs.append(legend, ...this.group(root, s, p));
        out.push(fs);
      } else {
        out.push(this.leaf(s, p));
      }
    }
    return out;
  }

  /**
   * @param {any} s resolved schema of the field
   * @param {string[]} path
   * @returns {HTMLElement}
   */
  leaf(s, path) {
    const pointer = '/' + path.join('/');
    const id = idOf(pointer);
    const kind = /** @type {Field['kind']} */ (kindOf(s));
    const row = document.createElement('div');
    row.className = 'cfg-field';
    row.dataset.field = pointer;
    const label = document.createElement('label');
    label.htmlFor = id;
    label.textContent = s.title ?? words(path[path.length - 1]);
    /** @type {HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement} */
    let input;
    const opts = choices(s);
    if (kind === 'json') {
      const area = document.createElement('textarea');
      area.rows = 4;
      area.spellcheck = false;
      area.placeholder = '{}';
      area.className = 'cfg-json';
      input = area;
    } else if (opts) {
      const sel = document.createElement('select');
      for (const o of opts) {
        const op = document.createElement('option');
        op.value = o.value;
        op.textContent = o.value;
        op.title = hint(o.help);
        sel.append(op);
      }
      sel.addEventListener('change', () => this.applies());
      input = sel;
    } else {
      const inp = document.createElement('input');
      if (kind === 'boolean') inp.type = 'checkbox';
      else if (kind === 'integer' || kind === 'number') {
        inp.type = 'number';
        inp.inputMode = kind === 'integer' ? 'numeric' : 'decimal';
        inp.step = kind === 'integer' ? '1' : 'any';
        if (typeof s.minimum === 'number') inp.min = String(s.minimum);
        if (typeof s.maximum === 'number') inp.max = String(s.maximum);
      } else {
        inp.type = 'text';
        inp.spellcheck = false;
        if (kind === 'nullable') inp.placeholder = 'default';
        // A write-only secret (outputs.mqtt.password): never shown, sent only when typed.
        if (s.writeOnly === true) {
          inp.type = 'password';
          inp.autocomplete = 'new-password';
          inp.placeholder = 'unchanged';
        }
      }
      input = inp;
    }
    input.id = id;
    input.name = pointer;
    const help = document.createElement('small');
    help.id = `${id}-help`;
    help.className = 'cfg-help';
    help.textContent = hint(s.description);
    // the range in the words the service refuses a value with (the schema's x-allowed)
    if (typeof s['x-allowed'] === 'string') {
      const range = document.createElement('span');
      range.className = 'cfg-range';
      range.textContent = ` Must be ${s['x-allowed']}.`;
      help.append(range);
    }
    const error = document.createElement('p');
    error.id = `${id}-error`;
    error.className = 'cfg-error';
    error.dataset.errorFor = pointer;
    error.hidden = true;
    input.setAttribute('aria-describedby', `${id}-help ${id}-error`);
    row.append(label, input, help, error);
    const when = s['x-applies-when'];
    this.fields.push({
      pointer, path, kind, input, error, row,
      appliesWhen: when && typeof when === 'object' ? when : null,
      offer: typeof s['x-offer'] === 'string' ? s['x-offer'] : null,
    });
    return row;
  }

  /**
   * Lists what the device has under the fields that take it (a datalist: the field
   * still takes any path).
   * @param {Record<string, string[]>} files e.g. {frames: [...], models: [...]}
   */
  offer(files) {
    for (const f of this.fields) {
      const list = f.offer ? files[f.offer] : null;
      if (!Array.isArray(list) || !(f.input instanceof HTMLInputElement)) continue;
      const dl = document.createElement('datalist');
      dl.id = `${f.input.id}-offer`;
      dl.append(...list.map((v) => {
        const o = document.createElement('option');
        o.value = v;
        return o;
      }));
      f.row.append(dl);
      f.input.setAttribute('list', dl.id);
    }
  }

  /** Hides the fields that do not apply to what the form holds now. */
  applies() {
    for (const f of this.fields) {
      if (!f.appliesWhen) continue;
      f.row.hidden = !Object.entries(f.appliesWhen).every(([pointer, values]) => {
        const other = this.fields.find((x) => x.pointer === pointer);
        return !other || values.map(String).includes(other.input.value);
      });
    }
  }

  /**
   * Puts a config's values in the fields and clears every error.
   * @param {any} config
   */
  fill(config) {
    this.shown = structuredClone(config);
    for (const f of this.fields) {
      const v = getAt(config, f.path);
      if (f.input instanceof HTMLInputElement && f.kind === 'boolean') f.input.checked = v === true;
      else if (f.kind === 'json') f.input.value = v == null || Object.keys(v).length === 0 ? '' : JSON.stringify(v, null, 1);
      else f.input.value = v == null ? '' : String(v);
    }
    this.applies();
    this.showErrors([]);
  }

  /**
   * The edits as a merge patch: only the fields whose value differs from the
   * config shown. Throws a list of local errors for inputs that hold no value
   * at all (a number box with letters in it).
   * @returns {{patch: any, local: {field: string, message: string}[]}}
   */
  patch() {
    /** @type {any} */
    const patch = {};
    /** @type {{field: string, message: string}[]} */
    const local = [];
    for (const f of this.fields) {
      const before = getAt(this.shown, f.path);
      /** @type {unknown} */
      let v;
      const input = f.input;
      if (input instanceof HTMLInputElement && f.kind === 'boolean') v = input.checked;
      else if (f.kind === 'json') {
        /** @type {unknown} */
        let obj;
        try {
          obj = input.value.trim() === '' ? {} : JSON.parse(input.value);
        } catch {
          obj = null;
        }
        if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) {
          local.push({ field: f.pointer, message: 'not a JSON object' });
          continue;
        }
        const old = /** @type {Record<string, unknown>} */ (before ?? {});
        if (JSON.stringify(obj) === JSON.stringify(old)) continue;
        /** @type {Record<string, unknown>} */
        const sent = { ...obj };
        for (const k of Object.keys(old)) if (!(k in sent)) sent[k] = null;
        v = sent;
      } else if (f.kind === 'integer' || f.kind === 'number') {
        if (input instanceof HTMLInputElement && input.validity.badInput) {
          local.push({ field: f.pointer, message: 'not a number' });
          continue;
        }
        v = input.value.trim() === '' ? null : Number(input.value);
      } else if (f.kind === 'nullable') v = input.value === '' ? null : input.value;
      else v = input.value;
      if (v === before || (v === null && before === undefined)) continue;
      let o = patch;
      for (const k of f.path.slice(0, -1)) o = o[k] ??= {};
      o[f.path[f.path.length - 1]] = v;
    }
    return { patch, local };
  }

  /**
   * Shows each error beside its field (by JSON pointer); errors naming no
   * field of the form are returned for the page to show above it.
   * @param {{field: string, rule?: string, message: string}[]} errors
   * @returns {string[]} messages that belong to no field
   */
  showErrors(errors) {
    /** @type {string[]} */
    const loose = [];
    for (const f of this.fields) {
      f.error.hidden = true;
      f.error.textContent = '';
      f.input.removeAttribute('aria-invalid');
    }
    let first = /** @type {HTMLElement | null} */ (null);
    for (const e of errors) {
      const f = this.fields.find((x) => x.pointer === e.field) ??
        this.fields.find((x) => x.kind === 'json' && e.field.startsWith(`${x.pointer}/`));
      if (!f) {
        loose.push(e.field ? `${e.field}: ${e.message}` : e.message);
        continue;
      }
      f.error.hidden = false;
      const msg = f.pointer === e.field ? e.message : `${e.field.slice(f.pointer.length + 1)}: ${e.message}`;
      f.error.textContent = f.error.textContent ? `${f.error.textContent}; ${msg}` : msg;
      f.input.setAttribute('aria-invalid', 'true');
      first ??= f.input;
    }
    first?.focus();
    return loose;
  }
}
