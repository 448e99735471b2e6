// clients/dashboard/plan.js: the Plan view: a model, a GPU and a GPU count
// from a form, POST /v1/plans (polled while it runs), then the ranked
// configurations as a sortable table with each row's error band and its
// `extrapolated` mark, a scatter of step time (or cost per million tokens)
// against GPUs with the Pareto front, and the top row's Megatron-LM
// arguments with a copy button.

import { api, path } from './api.js';
import { PALETTE, figure, scatter } from './charts.js';
import { el, errorBox, num, table } from './dom.js';
import { jsonToggle, makeForm, whole } from './form.js';
import { clusterAndOptions, clusterFields, modelFields, modelFromHf, optionsFields } from './specform.js';
import { viewOf } from './routes.js';

const sleep = t => new Promise(r => setTimeout(r, t));

function planFields() {
  return {
    legend: 'Plan',
    fields: [
      { name: 'gpus', label: 'GPUs', value: 64, min: 1, step: 1, check: whole(1, 1 << 20) },
      { name: 'global_batch', label: 'Global batch', unit: 'sequences', value: 256, min: 1, step: 1,
        check: whole(1, 1 << 24), help: 'A plan keeps the batch.' },
      { name: 'up_to', label: 'Also every smaller GPU count (powers of two and multiples of a node)',
        type: 'checkbox', value: true },
      { name: 'top', label: 'Rows', value: 50, min: 1, max: 1000, step: 1, check: whole(1, 1000) },
      { name: 'objective', label: 'Rank by', type: 'select', value: 'cost',
        options: [['time', 'step time'], ['cost', 'cost per million tokens']] },
      { name: 'risk', label: 'Risk', value: 0.5, min: 0.5, max: 1, step: 0.05,
        check: v => (v >= 0.5 && v <= 1 ? null : 'From 0.5 to 1.'),
        help: 'Rank by the step time at this quantile of each row\'s error band (0.5: the median).' },
    ],
  };
}

// What each row shows: [key, title, value of a row, text, numeric]
const pct = x => `${x >= 0 ? '+' : '−'}${Math.abs(100 * x).toFixed(0)} %`;
export const COLUMNS = [
  { key: 'rank', title: '#', value: r => r.rank, num: true },
  { key: 'gpus', title: 'GPUs', value: r => r.estimate.gpus, num: true },
  { key: 'tp', title: 'tp', value: r => r.parallel.tp, num: true },
  { key: 'cp', title: 'cp', value: r => r.parallel.cp, num: true },
  { key: 'pp', title: 'pp', value: r => r.parallel.pp, num: true },
  { key: 'dp', title: 'dp', value: r => r.parallel.dp, num: true },
  { key: 'ep', title: 'ep', value: r => r.parallel.ep, num: true },
  { key: 'micro_batch', title: 'micro-batch', value: r => r.parallel.micro_batch, num: true },
  { key: 'schedule', title: 'schedule', value: r => (r.parallel.vpp > 1 ? `interleaved/${r.parallel.vpp}` : r.parallel.schedule) },
  { key: 'recompute', title: 'recompute', value: r => r.options.recompute },
  { key: 'sp', title: 'SP', value: r => (r.options.sequence_parallel ? 'yes' : 'no') },
  { key: 'zero', title: 'ZeRO', value: r => r.options.zero_stage, num: true },
  { key: 'step_ms', title: 'step ms', value: r => r.estimate.step_ms, num: true, digits: 2 },
  { key: 'at_risk_ms', title: 'at risk ms', value: r => (r.at_risk ? r.at_risk.step_ms : null), num: true, digits: 2 },
  { key: 'band', title: 'error band p05 … p95', value: r => (r.band ? r.band.error.p05 : null),
    text: r => (r.band ? `${pct(r.band.error.p05)} … ${pct(r.band.error.p95)}` : 'none') },
  { key: 'tokens_per_s', title: 'tokens/s', value: r => r.estimate.tokens_per_s, num: true, digits: 0 },
  { key: 'mfu', title: 'MFU %', value: r => 100 * r.estimate.mfu, num: true, digits: 1 },
  { key: 'memory', title: 'GB per GPU', value: r => r.estimate.memory_gb_per_gpu, num: true, digits: 1 },
  { key: 'gpu_hours', title: 'GPU-h per M tokens', value: r => r.estimate.gpu_hours_per_m_tokens, num: true, digits: 4 },
  { key: 'cost', title: 'USD per M tokens', value: r => r.estimate.cost_usd_per_m_tokens, num: true, digits: 4 },
  { key: 'extrapolated', title: 'validated?', value: r => (r.extrapolated ? 1 : 0),
    text: r => (r.extrapolated ? el('span', { class: 'extrapolated', title: r.extrapolated_because },
      `extrapolated: ${r.extrapolated_because}`) : 'within the band') },
];

function cellText(c, r) {
  if (c.text) return c.text(r);
  const v = c.value(r);
  return typeof v === 'number' && c.digits !== undefined ? num(v, c.digits) : (v === null ? '—' : String(v));
}

function rowNode(r) {
  return el('tr', { class: r.extrapolated ? 'extrapolated-row' : null },
    COLUMNS.map(c => el('td', { class: c.num ? 'num' : null, data: { field: c.key } }, cellText(c, r))));
}

// The table, sorted by a header's button (again: the other way).
function sortableTable(rows) {
  const body = el('tbody');
  let by = 'rank', dir = 1;
  const heads = COLUMNS.map(c => el('th', { class: c.num ? 'num' : null, scope: 'col', data: { key: c.key } },
    el('button', { type: 'button', class: 'sort', on: { click: () => sort(c.key) } }, c.title)));
  function sort(key) {
    dir = key === by ? -dir : 1;
    by = key;
    const c = COLUMNS.find(x => x.key === key);
    const v = r => c.value(r);
    const sorted = [...rows].sort((a, b) => {
      const x = v(a), y = v(b);
      if (x === y) return a.rank - b.rank;
      if (x === null || x === undefined) return 1;
      if (y === null || y === undefined) return -1;
      return (x < y ? -1 : 1) * dir;
    });
    for (const h of heads)
      if (h.dataset.key === key) h.setAttribute('aria-sort', dir > 0 ? 'ascending' : 'descending');
      else h.removeAttribute('aria-sort');
    body.replaceChildren(...sorted.map(rowNode));
  }
  body.append(...rows.map(rowNode));
  heads[0].setAttribute('aria-sort', 'ascending');
  return el('table', { id: 'plan-rows', class: 'sortable' }, el('thead', {}, el('tr', {}, heads)), body);
}

// The rows no other row beats on both GPUs (fewer or as many) and y (less).
export function paretoFront(points) {
  const front = [];
  let best = Infinity;
  for (const p of [...points].sort((a, b) => a.x - b.x || a.y - b.y))
    if (p.y < best) {
      front.push(p);
      best = p.y;
    }
  return front;
}

const Y = {
  step: { title: 'step time (ms)', value: r => r.estimate.step_ms },
  cost: { title: 'cost (USD per million tokens)', value: r => r.estimate.cost_usd_per_m_tokens },
  gpu_hours: { title: 'GPU-hours per million tokens', value: r => r.estimate.gpu_hours_per_m_tokens },
};

// The scatter, and beside it the front's rows.
function drawScatter(canvas, frontTable, rows, yKey) {
  const y = Y[yKey];
  const point = r => ({ x: r.estimate.gpus, y: y.value(r), rank: r.rank });
  const ok = rows.filter(r => typeof y.value(r) === 'number');
  const front = paretoFront(ok.map(point));
  scatter(canvas, [
    { label: 'configuration', points: ok.filter(r => !r.extrapolated).map(point), color: PALETTE[0] },
    { label: 'extrapolated', points: ok.filter(r => r.extrapolated).map(point), color: PALETTE[3], shape: 'triangle' },
    { label: 'Pareto front', points: front, color: PALETTE[7], line: true },
  ], { xTitle: 'GPUs', yTitle: y.title });
  frontTable.replaceChildren(el('h3', {}, 'The Pareto front'), table([
    { title: 'row #', num: true, field: 'rank', cell: p => p.rank },
    { title: 'GPUs', num: true, field: 'gpus', cell: p => p.x },
    { title: y.title, num: true, field: 'y', cell: p => num(p.y, yKey === 'step' ? 2 : 4) },
  ], front, { id: 'plan-front' }));
}

function megatronSection(row) {
  const status = el('span', { class: 'muted', role: 'status' });
  const code = el('code', { id: 'megatron-args' }, row.megatron_args);
  const copy = el('button', {
    type: 'button', id: 'megatron-copy',
    on: {
      click: async () => {
        try {
          await navigator.clipboard.writeText(row.megatron_args);
          status.textContent = 'Copied.';
        } catch (e) {
          const range = document.createRange();
          range.selectNodeContents(code);
          getSelection().removeAllRanges();
          getSelection().addRange(range);
          status.textContent = 'Selected: copy it with Ctrl+C.';
        }
      },
    },
  }, 'Copy the arguments');
  return el('section', { id: 'plan-megatron' }, el('h2', {}, 'The top row as Megatron-LM arguments'),
    el('pre', { class: 'args' }, code), el('p', {}, copy, ' ', status));
}

// The plan document drawn into `out` (exported for the render benchmark).
export function renderPlan(out, doc) {
  const rows = doc.top.map((r, i) => ({ ...r, rank: i + 1 }));
  const canvas = el('canvas', { id: 'chart-plan', 'aria-label': 'configurations: GPUs against step time or cost' });
  const hasCost = rows.some(r => typeof r.estimate.cost_usd_per_m_tokens === 'number');
  const frontTable = el('div');
  const ySelect = el('select', { id: 'plan-y', on: { change: () => drawScatter(canvas, frontTable, rows, ySelect.value) } },
    el('option', { value: 'step' }, 'step time'),
    el('option', { value: hasCost ? 'cost' : 'gpu_hours' }, hasCost ? 'cost per million tokens' : 'GPU-hours per million tokens'));
  const extrapolated = rows.filter(r => r.extrapolated).length;
  out.replaceChildren(
    el('section', { id: 'plan-summary' }, el('h2', {}, 'Configurations'),
      el('p', {}, `${rows.length} shown of ${doc.evaluated} evaluated; ${doc.pruned} pruned (provably outside the top); ` +
        `infeasible: ${doc.infeasible.memory} by memory, ${doc.infeasible.divisibility} by divisibility. ` +
        `${extrapolated} row(s) extrapolated: beyond what was validated.`),
      el('p', {}, el('label', { for: 'plan-y' }, 'Chart '), ySelect, ' against GPUs, one mark per configuration; ' +
        'the line is the Pareto front (no configuration is better on both).'),
      figure(canvas, frontTable, { tall: true }),
      el('p', { class: 'muted' }, 'The ranked table below holds every mark\'s figures.')),
    rows.length && rows[0].megatron_args ? megatronSection(rows[0]) : null,
    el('section', {}, el('h2', {}, 'Ranked'), el('p', { class: 'muted' }, 'Sort by a column with its header.'),
      el('div', { class: 'scroll' }, sortableTable(rows))));
  drawScatter(canvas, frontTable, rows, ySelect.value);
}

async function plan(body, json, progress) {
  let doc = await api('/v1/plans', { method: 'POST', body });
  while (doc.state === 'running') {
    progress.textContent = doc.progress ? `planning: ${doc.progress.done} of ${doc.progress.total}` : 'planning…';
    await sleep(250);
    doc = await api(path`/v1/plans/${doc.id}`);
  }
  progress.textContent = '';
  json.show('POST /v1/plans (answer)', doc);
  if (doc.state && doc.state !== 'done') throw new Error(`the plan ${doc.state}: ${doc.error || ''}`);
  return doc;
}

export async function planView(view) {
  if (!(await viewOf(view, 'Plan: configurations ranked',
    'Every parallel layout, micro-batch, recomputation and ZeRO stage of a model on ' +
      'a GPU count, each estimated; the best first (as stepcast plan).', 'POST', '/v1/plans'))) return;
  const { hardware } = await api('/v1/hardware');
  const json = jsonToggle('plan');
  const progress = el('p', { class: 'muted', role: 'status' });
  const out = el('div', { id: 'plan-out' });
  const form = makeForm('plan', [modelFields(), planFields(), clusterFields(hardware), optionsFields()], 'Plan',
    async v => {
      view.dataset.state = 'loading';
      out.replaceChildren();
      try {
        const hf = await modelFromHf(v);
        json.show('POST /v1/specs/from-hf', hf);
        const { cluster, options } = clusterAndOptions(v);
        const body = { spec: { model: hf.model, parallel: { global_batch: v.global_batch }, cluster, options },
          gpus: v.gpus, up_to: v.up_to, top: v.top, objective: v.objective, risk: v.risk };
        json.show('POST /v1/plans (request)', body);
        renderPlan(out, await plan(body, json, progress));
        view.dataset.state = 'ready';
      } catch (err) {
        out.replaceChildren(errorBox(err));
        view.dataset.state = 'error';
      }
    });
  view.append(form, json.node, progress, out);
}
