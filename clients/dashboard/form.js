// clients/dashboard/form.js: the views' forms: labelled fields with
// defaults, checked before anything is sent (each message beside its field,
// tied to it for screen readers), and the "JSON" toggle that shows the
// request and the answer as text for those who want them (hidden unless on).

import { el } from './dom.js';

// One field: {name, label, type ('number', 'text', 'select', 'checkbox',
// 'textarea'), value, min, max, step, required, options [[value, text]],
// help, check(value, values) -> message or null}.
function field(prefix, f) {
  const id = `${prefix}-${f.name}`;
  const msg = el('span', { class: 'invalid', id: `${id}-msg`, role: 'alert' });
  const help = f.help ? el('span', { class: 'help', id: `${id}-help` }, f.help) : null;
  const described = [help ? `${id}-help` : null, `${id}-msg`].filter(Boolean).join(' ');
  let input;
  if (f.type === 'select') {
    input = el('select', { id, name: f.name, 'aria-describedby': described },
      f.options.map(([v, text]) => el('option', { value: String(v) }, text)));
    if (f.value !== undefined) input.value = String(f.value);
  } else if (f.type === 'textarea') {
    input = el('textarea', { id, name: f.name, rows: f.rows || 6, cols: 60, spellcheck: 'false',
      required: f.required, placeholder: f.placeholder, 'aria-describedby': described });
    if (f.value !== undefined) input.value = f.value;
  } else {
    input = el('input', {
      id, name: f.name, type: f.type || 'number', min: f.min, max: f.max, step: f.step, required: f.required,
      placeholder: f.placeholder, size: f.size, 'aria-describedby': described, inputmode: f.type ? null : 'numeric',
    });
    if (f.type === 'checkbox') input.checked = Boolean(f.value);
    else if (f.value !== undefined && f.value !== null) input.value = String(f.value);
  }
  const label = el('label', { for: id }, f.label, f.unit ? el('span', { class: 'unit' }, ` (${f.unit})`) : null);
  const node = el('div', { class: `field field-${f.type || 'number'}` },
    f.type === 'checkbox' ? [input, ' ', label] : [label, input], help, msg);
  return { f, input, msg, node };
}

function valueOf({ f, input }) {
  if (f.type === 'checkbox') return input.checked;
  if (['select', 'text', 'textarea', 'date'].includes(f.type)) return input.value;
  return input.value.trim() === '' ? null : Number(input.value);
}

// A form of fieldsets [{legend, fields: [...]}] and a submit button; on a
// submit whose fields all pass, onSubmit(values) (values by name). Returns
// the form node with .values() and .set(name, value).
export function makeForm(prefix, fieldsets, submitLabel, onSubmit) {
  const fields = [];
  const sets = fieldsets.map(fs => el('fieldset', {}, el('legend', {}, fs.legend),
    fs.fields.map(f => {
      const x = field(prefix, f);
      fields.push(x);
      return x.node;
    })));
  const values = () => Object.fromEntries(fields.map(x => [x.f.name, valueOf(x)]));
  const button = el('button', { type: 'submit', id: `${prefix}-submit` }, submitLabel);
  const form = el('form', {
    id: `${prefix}-form`, class: 'spec-form', novalidate: true,
    on: {
      submit: async e => {
        e.preventDefault();
        const v = values();
        let first = null;
        for (const x of fields) {
          const native = x.input.checkValidity() ? '' : x.input.validationMessage;
          const message = native || (x.f.check && v[x.f.name] !== null ? x.f.check(v[x.f.name], v) : null) ||
            (x.f.required && (v[x.f.name] === null || v[x.f.name] === '') ? 'Required.' : null);
          x.msg.textContent = message || '';
          x.input.toggleAttribute('aria-invalid', Boolean(message));
          if (message && !first) first = x.input;
        }
        if (first) {
          first.focus();
          return;
        }
        button.disabled = true;
        try {
          await onSubmit(v);
        } finally {
          button.disabled = false;
        }
      },
    },
  }, sets, el('p', {}, button));
  form.values = values;
  form.field = name => fields.find(x => x.f.name === name);
  return form;
}

// A whole number >= lo (and <= hi): for min/max fields that also must be
// whole.
export function whole(lo, hi) {
  return v => (Number.isInteger(v) && v >= lo && (hi === undefined || v <= hi)) ? null
    : `A whole number${hi === undefined ? ` of at least ${lo}` : ` from ${lo} to ${hi}`}.`;
}

// The "JSON" toggle: a checkbox and, while it is on, each request and
// answer shown (show(title, doc) replaces what is shown under that title).
export function jsonToggle(prefix) {
  const out = el('div', { class: 'json-out', id: `${prefix}-json`, hidden: true });
  const docs = new Map();
  const render = () => out.replaceChildren(...[...docs].map(([title, doc]) =>
    el('div', {}, el('h3', {}, title), el('pre', { class: 'json' }, JSON.stringify(doc, null, 2)))));
  const box = el('input', {
    type: 'checkbox', id: `${prefix}-json-toggle`,
    on: { change: () => { out.hidden = !box.checked; if (box.checked) render(); } },
  });
  return {
    node: el('div', { class: 'json-toggle' }, box, ' ', el('label', { for: box.id }, 'JSON: show the requests and answers'), out),
    show(title, doc) {
      docs.set(title, doc);
      if (box.checked) render();
    },
  };
}
