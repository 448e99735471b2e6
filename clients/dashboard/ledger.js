// clients/dashboard/ledger.js: the Ledger view (GET /v1/validations):
// every measured step against stepcast's prediction for it, log-log, with
// the y = x line and each kind's 80 % band, coloured by GPU and shaped by
// kind; then the mean absolute percentage error by kind and by month.
// Every entry is shown: the list's pages are followed to its end.

import { apiList } from './api.js';
import { PALETTE, bars, figure, scatter, shape } from './charts.js';
import { el, errorBox, num, table } from './dom.js';
import { jsonToggle, makeForm } from './form.js';
import { viewOf } from './routes.js';

const KINDS = ['replay', 'whatif', 'estimate'];

// The GPU an entry ran on: its spec's, the what-if's target, or the
// traced one (which the entry does not name).
export function gpuOf(e) {
  return (e.spec && e.spec.cluster && e.spec.cluster.gpu) || (e.set && e.set.gpu) || 'the traced GPU';
}

function scored(entries) {
  return entries.filter(e => typeof e.predicted_step_ms === 'number' && e.predicted_step_ms > 0 && e.measured_step_ms > 0);
}

// The scatter's series: one per GPU and kind (colour: GPU, shape: kind),
// then y = x and each kind's band as lines over the range shown.
export function ledgerSeries(doc) {
  const entries = scored(doc.entries);
  const gpus = [...new Set(entries.map(gpuOf))].sort();
  const series = [];
  for (const [gi, gpu] of gpus.entries())
    for (const [ki, kind] of KINDS.entries()) {
      const points = entries.filter(e => gpuOf(e) === gpu && e.kind === kind)
        .map(e => ({ x: e.predicted_step_ms, y: e.measured_step_ms, id: e.id }));
      if (points.length) series.push({ label: `${gpu}, ${kind}`, points, color: PALETTE[gi % 6], shape: shape(ki) });
    }
  if (!entries.length) return series;
  const xs = entries.flatMap(e => [e.predicted_step_ms, e.measured_step_ms]);
  const lo = Math.min(...xs) / 1.5, hi = Math.max(...xs) * 1.5;
  series.push({ label: 'y = x', points: [{ x: lo, y: lo }, { x: hi, y: hi }], color: PALETTE[7], line: true });
  for (const kind of KINDS) {
    const b = doc.bands && doc.bands[kind];
    if (!b || typeof b.ratio_lo !== 'number') continue;
    for (const [r, end] of [[b.ratio_lo, 'low'], [b.ratio_hi, 'high']])
      series.push({ label: `${kind} band, ${end} (x ${num(r, 3)})`, points: [{ x: lo, y: lo * r }, { x: hi, y: hi * r }],
        color: PALETTE[6], line: true, dash: [6, 4] });
  }
  return series;
}

function mapeRows(groups) {
  return Object.entries(groups || {}).map(([key, g]) => ({ key, mape: g.mape_pct, n: g.n }))
    .sort((a, b) => (a.key < b.key ? -1 : 1));
}

function bandText(doc) {
  const parts = KINDS.map(k => {
    const b = doc.bands && doc.bands[k];
    if (!b) return null;
    return typeof b.ratio_lo === 'number'
      ? `${k}: measured / predicted from ${num(b.ratio_lo, 3)} to ${num(b.ratio_hi, 3)} (${b.entries} entries)`
      : `${k}: no band yet (${b.entries} of ${b.needed} entries)`;
  }).filter(Boolean);
  return `80 % bands, ${parts.join('; ')}.`;
}

function render(out, doc) {
  const entries = scored(doc.entries);
  const canvas = el('canvas', { id: 'chart-ledger', 'aria-label': 'measured against predicted step time (ms, log-log)' });
  const kindChart = el('canvas', { id: 'chart-mape-kind', 'aria-label': 'MAPE by kind (%)' });
  const monthChart = el('canvas', { id: 'chart-mape-month', 'aria-label': 'MAPE by month (%)' });
  const byKind = mapeRows(doc.by_kind), byMonth = mapeRows(doc.by_month);
  const mapeTable = (rows, id, title) => table([
    { title, cell: r => r.key, field: 'key' },
    { title: 'MAPE %', num: true, field: 'mape', cell: r => num(r.mape, 2) },
    { title: 'entries', num: true, cell: r => r.n },
  ], rows, { id });
  out.replaceChildren(
    el('section', {}, el('h2', {}, 'Predicted against measured'),
      el('p', {}, `${entries.length} entries scored; MAPE ${num(doc.mape && doc.mape.mape_pct, 2)} % ` +
        `(${doc.in_sample_included ? 'in-sample entries included' : 'out-of-sample entries'}). ` +
        'On the line y = x the prediction was exact; above it the step took longer than predicted.'),
      el('p', { class: 'muted' }, bandText(doc)),
      figure(canvas, el('div', { class: 'scroll' }, table([
        { title: 'id', num: true, cell: e => e.id, field: 'id' },
        { title: 'kind', cell: e => e.kind },
        { title: 'GPU', cell: e => gpuOf(e) },
        { title: 'source', cell: e => el('span', { class: 'name' }, e.source || e.model || '—'), field: 'source' },
        { title: 'predicted ms', num: true, field: 'predicted', cell: e => num(e.predicted_step_ms, 3) },
        { title: 'measured ms', num: true, field: 'measured', cell: e => num(e.measured_step_ms, 3) },
        { title: 'error %', num: true, cell: e => num(e.error_pct, 2) },
      ], entries, { id: 'ledger-entries' })), { tall: true })),
    el('section', {}, el('h2', {}, 'MAPE by kind'), figure(kindChart, mapeTable(byKind, 'mape-kind', 'kind'))),
    el('section', {}, el('h2', {}, 'MAPE by month'),
      el('p', { class: 'muted' }, 'The month of the run (run_at), else of when it was recorded.'),
      figure(monthChart, mapeTable(byMonth, 'mape-month', 'month'))));
  scatter(canvas, ledgerSeries(doc), { xTitle: 'predicted step time (ms)', yTitle: 'measured step time (ms)', log: true });
  bars(kindChart, byKind.map(r => r.key), [{ label: 'MAPE', values: byKind.map(r => r.mape) }],
    { yTitle: 'MAPE (%)', xTitle: 'kind' });
  bars(monthChart, byMonth.map(r => r.key), [{ label: 'MAPE', values: byMonth.map(r => r.mape) }],
    { yTitle: 'MAPE (%)', xTitle: 'month' });
}

export async function ledgerView(view) {
  if (!(await viewOf(view, 'Ledger: predicted against measured',
    'Measured step times recorded next to what stepcast predicted for them when they ' +
      'were recorded (stepcast ledger add, POST /v1/validations).', 'GET', '/v1/validations'))) return;
  const json = jsonToggle('ledger');
  const out = el('div', { id: 'ledger-out' });
  const load = async v => {
    view.dataset.state = 'loading';
    const query = [];
    if (v.kind) query.push(['kind', v.kind]);
    if (v.in_sample) query.push(['in_sample', 'true']);
    try {
      // every page (next_cursor), so the chart and table show every entry
      // the MAPEs cover
      const doc = await apiList('/v1/validations', 'entries', query);
      json.show('GET /v1/validations', doc);
      if (!doc.entries.length) out.replaceChildren(el('p', { class: 'muted' }, 'No entries yet: record measured ' +
        'steps with stepcast ledger add or import.'));
      else render(out, doc);
      view.dataset.state = 'ready';
    } catch (e) {
      out.replaceChildren(errorBox(e));
      view.dataset.state = 'error';
    }
  };
  const form = makeForm('ledger', [{
    legend: 'Entries', fields: [
      { name: 'kind', label: 'Kind', type: 'select', value: '',
        options: [['', 'every kind'], ...KINDS.map(k => [k, k])] },
      { name: 'in_sample', label: 'Count in-sample entries (runs the estimator was fitted on) in the MAPE',
        type: 'checkbox', value: false },
    ],
  }], 'Show', load);
  view.append(form, json.node, out);
  await load(form.values());
}
