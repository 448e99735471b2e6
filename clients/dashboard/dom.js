// clients/dashboard/dom.js: building the page from text only.
//
// Every name shown comes from a trace or a request, so it is untrusted: el()
// puts strings in as text nodes, never as markup, and sets attributes one by
// one (no innerHTML anywhere in the dashboard).

// el('a', {href: '#/jobs', class: 'x', on: {click: f}, data: {rank: 0}}, 'text', child...)
export function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'on') for (const [ev, f] of Object.entries(v)) e.addEventListener(ev, f);
    else if (k === 'data') for (const [dk, dv] of Object.entries(v)) e.dataset[dk] = String(dv);
    else if (k === 'value') e.value = v;
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  append(e, children);
  return e;
}

function append(e, children) {
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

// A table: columns [{title, cell: row => text|Node, num: bool, field: name}].
export function table(columns, rows, attrs = {}) {
  const head = el('tr', {}, columns.map(c => el('th', { class: c.num ? 'num' : null }, c.title)));
  const body = rows.map(r => el('tr', {}, columns.map(c =>
    el('td', { class: c.num ? 'num' : null, data: c.field ? { field: c.field } : null }, c.cell(r)))));
  return el('table', attrs, el('thead', {}, head), el('tbody', {}, body));
}

export function ms(x) {
  return typeof x === 'number' ? x.toFixed(3) : '—';
}

export function pct(x) {
  return typeof x === 'number' ? x.toFixed(2) : '—';
}

const formats = new Map(); // by digits: making one costs more than using it

// A figure with `digits` decimals, thousands grouped; a dash when absent.
export function num(x, digits = 2) {
  if (typeof x !== 'number' || !Number.isFinite(x)) return '—';
  if (!formats.has(digits))
    formats.set(digits, new Intl.NumberFormat('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits }));
  return formats.get(digits).format(x);
}

export function bytes(n) {
  if (typeof n !== 'number') return '—';
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return `${i ? n.toFixed(1) : n} ${u[i]}`;
}

// An error box: the API's code and message, as text.
export function errorBox(err) {
  const code = err && err.code ? `${err.code}: ` : '';
  return el('p', { class: 'error', role: 'alert' }, code + (err && err.message ? err.message : String(err)));
}
