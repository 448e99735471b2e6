// clients/dashboard/estimate.js: the Estimate view: a spec from a form
// (the model from a pasted config.json, the parallel layout, the GPU, the
// options), POST /v1/estimate, and its figures as charts with tables: the
// step's breakdown, each pipeline stage's time with its bubble, each
// stage's memory per GPU stacked against the GPU's usable memory, and
// tokens/s, MFU, cost and energy with the ledger's error band.

import { api } from './api.js';
import { partsOf } from './breakdown.js';
import { bars, draw, figure, PALETTE } from './charts.js';
import { el, errorBox, num, table } from './dom.js';
import { jsonToggle, makeForm, whole } from './form.js';
import { clusterAndOptions, clusterFields, modelFields, modelFromHf, optionsFields } from './specform.js';
import { viewOf } from './routes.js';

const MEMORY = [['weights_gb', 'weights'], ['gradients_gb', 'gradients'], ['optimizer_gb', 'optimizer state'],
  ['activations_gb', 'activations']];

function layoutFields() {
  const layout = { min: 1, step: 1, check: whole(1, 1 << 20) };
  return {
    legend: 'Parallel layout',
    fields: [
      { name: 'tp', label: 'Tensor parallel (tp)', value: 2, ...layout },
      { name: 'pp', label: 'Pipeline parallel (pp)', value: 2, ...layout },
      { name: 'cp', label: 'Context parallel (cp)', value: 1, ...layout },
      { name: 'dp', label: 'Data parallel (dp)', value: 16, ...layout },
      { name: 'ep', label: 'Expert parallel (ep, MoE only)', value: 1, ...layout },
      { name: 'vpp', label: 'Virtual stages per pipeline rank', value: 1, ...layout,
        help: 'Above 1: the interleaved schedule.' },
      { name: 'micro_batch', label: 'Micro-batch', unit: 'sequences', value: 1, ...layout },
      { name: 'global_batch', label: 'Global batch', unit: 'sequences', value: 256, ...layout,
        check: (v, all) => whole(1, 1 << 24)(v) ||
          (all.micro_batch && all.dp && v % (all.micro_batch * all.dp)
            ? `A multiple of micro-batch x dp (${all.micro_batch * all.dp}).` : null) },
    ],
  };
}

function trainingFields() {
  const base = optionsFields();
  base.fields.push(
    { name: 'recompute', label: 'Recomputation', type: 'select', value: 'none',
      options: [['none', 'none'], ['selective', 'selective'], ['full', 'full'], ['auto', 'auto: the least that fits']] },
    { name: 'zero_stage', label: 'ZeRO stage', type: 'select', value: '1',
      options: [['0', '0'], ['1', '1 (distributed optimizer)'], ['2', '2'], ['3', '3 (FSDP)']] },
    { name: 'sequence_parallel', label: 'Sequence parallelism', type: 'checkbox', value: true });
  return base;
}

// The spec the form describes, its model read by the server.
async function specOf(v, json) {
  const hf = await modelFromHf(v);
  json.show('POST /v1/specs/from-hf', hf);
  const parallel = { tp: v.tp, pp: v.pp, cp: v.cp, dp: v.dp, micro_batch: v.micro_batch, global_batch: v.global_batch,
    vpp: v.vpp, schedule: v.vpp > 1 ? 'interleaved' : '1f1b' };
  if (hf.model.moe && hf.model.moe.experts > 0) parallel.ep = v.ep;
  const { cluster, options } = clusterAndOptions(v, {
    recompute: v.recompute, zero_stage: Number(v.zero_stage), sequence_parallel: v.sequence_parallel && v.tp > 1,
  });
  return { model: hf.model, parallel, cluster, options };
}

// [low, high] of a figure proportional (dir 1) or inverse (dir -1) to the
// step time, from the band's measured / predicted ratios; null without one.
export function banded(value, band, dir) {
  if (!band || typeof band.ratio_lo !== 'number' || typeof value !== 'number') return null;
  const a = dir > 0 ? value * band.ratio_lo : value / band.ratio_hi;
  const b = dir > 0 ? value * band.ratio_hi : value / band.ratio_lo;
  return [Math.min(a, b), Math.max(a, b)];
}

function bandNote(band) {
  if (band && typeof band.ratio_lo === 'number')
    return `The band is where 80 % of measured steps fell around their estimate in this server's ledger ` +
      `(${band.entries} entries): step time x ${num(band.ratio_lo, 3)} to x ${num(band.ratio_hi, 3)}.`;
  return `No band yet: the ledger holds ${band ? band.entries : 0} out-of-sample estimate entries of the ` +
    `${band && band.needed ? band.needed : 10} a band needs.`;
}

function metricsOf(e) {
  return [
    { key: 'step_ms', title: 'Step time', unit: 'ms', value: e.step_ms, dir: 1 },
    { key: 'tokens_per_s', title: 'Throughput', unit: 'tokens/s', value: e.tokens_per_s, dir: -1 },
    { key: 'mfu', title: 'MFU', unit: '%', value: 100 * e.mfu, dir: -1 },
    { key: 'cost_usd_per_m_tokens', title: 'Cost', unit: 'USD per million tokens', value: e.cost_usd_per_m_tokens,
      dir: 1 },
    { key: 'energy_kwh_per_m_tokens', title: 'Energy', unit: 'kWh per million tokens', value: e.energy_kwh_per_m_tokens,
      dir: 1 },
  ].filter(m => typeof m.value === 'number').map(m => ({ ...m, band: banded(m.value, e.band, m.dir) }));
}

// One figure's chart: the estimate and its band as horizontal bars.
function drawMetric(canvas, m) {
  const datasets = [{ label: 'estimate', data: [m.value], backgroundColor: PALETTE[0] }];
  if (m.band) datasets.push({ label: '80 % band', data: [m.band], backgroundColor: PALETTE[1] });
  draw(canvas, {
    type: 'bar',
    data: { labels: [m.title], datasets },
    options: { indexAxis: 'y', scales: { x: { beginAtZero: true, title: { display: true, text: m.unit } } } },
  });
}

function results(out, e) {
  const stages = e.per_stage || [];
  const parts = {
    breakdown: el('canvas', { id: 'chart-estimate-breakdown', 'aria-label': 'the step\'s breakdown (ms)' }),
    stages: el('canvas', { id: 'chart-estimate-stages', 'aria-label': 'time per pipeline stage with its bubble (ms)' }),
    memory: el('canvas', { id: 'chart-estimate-memory', 'aria-label': 'memory per GPU by stage (GB)' }),
  };
  const metrics = metricsOf(e);
  const metricCanvas = metrics.map(m => el('canvas', { id: `chart-metric-${m.key}`,
    'aria-label': `${m.title} (${m.unit}) with its band` }));
  out.replaceChildren(
    el('section', { id: 'estimate-summary' }, el('h2', {}, 'The estimate'),
      el('p', {}, `${num(e.step_ms, 1)} ms a step on ${e.gpus} GPUs; ${num(e.tokens_per_s, 0)} tokens/s; MFU ` +
        `${num(100 * e.mfu, 1)} %; ${num(e.memory_gb_per_gpu, 1)} GB per GPU of ${num(e.memory_usable_gb, 1)} GB usable ` +
        `(${e.fits ? 'fits' : 'does not fit'}); recomputation ${e.recompute_chosen}.`),
      e.fits ? null : el('p', { class: 'error' }, e.fits_reason)),
    el('section', {}, el('h2', {}, 'Where the step goes'),
      el('p', { class: 'muted' }, 'The slowest pipeline stage\'s step, by what the GPU does.'),
      figure(parts.breakdown, table([
        { title: 'part', cell: b => b[1] },
        { title: 'ms', num: true, field: 'ms', cell: b => num(e.breakdown[b[0]], 3) },
        { title: 'share %', num: true, cell: b => num(100 * e.breakdown[b[0]] / e.step_ms, 1) },
      ], partsOf(e.breakdown), { id: 'estimate-breakdown' }))),
    el('section', {}, el('h2', {}, 'Time per pipeline stage, with the bubble'),
      el('p', { class: 'muted' }, 'Each pipeline rank\'s step: busy, and its compute stream idle inside the step ' +
        '(the pipeline bubble).'),
      figure(parts.stages, table([
        { title: 'stage', num: true, cell: s => s.stage },
        { title: 'step ms', num: true, field: 'step', cell: s => num(s.step_ms, 3) },
        { title: 'busy ms', num: true, cell: s => num(s.step_ms - s.bubble_ms, 3) },
        { title: 'bubble ms', num: true, field: 'bubble', cell: s => num(s.bubble_ms, 3) },
      ], stages, { id: 'estimate-stages' }))),
    el('section', {}, el('h2', {}, 'Memory per GPU, against the usable memory'),
      el('p', { class: 'muted' }, `What each stage's GPU holds at its peak; usable: the GPU's memory less the ` +
        `reserve (${num(e.memory_usable_gb, 1)} GB).`),
      figure(parts.memory, table([
        { title: 'stage', num: true, cell: s => s.stage },
        ...MEMORY.map(([k, t]) => ({ title: `${t} GB`, num: true, field: k, cell: s => num((s.memory || {})[k], 2) })),
        { title: 'peak GB', num: true, field: 'total', cell: s => num(s.memory_gb, 2) },
      ], stages, { id: 'estimate-memory' }))),
    el('section', {}, el('h2', {}, 'Throughput, MFU, cost and energy, with their bands'),
      el('p', { class: 'muted' }, bandNote(e.band)),
      el('div', { class: 'figure' },
        el('div', { class: 'metric-charts' }, metricCanvas.map(c => el('div', { class: 'chart small' }, c))),
        el('div', { class: 'figure-table' }, table([
          { title: 'figure', cell: m => m.title },
          { title: 'unit', cell: m => m.unit },
          { title: 'estimate', num: true, field: 'value', cell: m => num(m.value, 4) },
          { title: 'band low', num: true, field: 'lo', cell: m => (m.band ? num(m.band[0], 4) : '—') },
          { title: 'band high', num: true, field: 'hi', cell: m => (m.band ? num(m.band[1], 4) : '—') },
        ], metrics, { id: 'estimate-metrics' })))));
  metrics.forEach((m, i) => drawMetric(metricCanvas[i], m));
  const labels = stages.map(s => `stage ${s.stage}`);
  bars(parts.breakdown, ['step'], partsOf(e.breakdown).map(([k, t]) => ({ label: t, values: [e.breakdown[k]] })),
    { stacked: true, horizontal: true, yTitle: 'ms' });
  bars(parts.stages, labels, [
    { label: 'busy', values: stages.map(s => s.step_ms - s.bubble_ms) },
    { label: 'bubble', values: stages.map(s => s.bubble_ms) },
  ], { stacked: true, yTitle: 'ms', xTitle: 'pipeline stage' });
  const memory = bars(parts.memory, labels, MEMORY.map(([k, t]) => ({
    label: t, values: stages.map(s => (s.memory || {})[k] || 0), stack: 'memory',
  })), { stacked: true, yTitle: 'GB per GPU', xTitle: 'pipeline stage' });
  memory.data.datasets.push({
    type: 'line', label: 'usable memory', data: stages.map(() => e.memory_usable_gb), borderColor: PALETTE[7],
    backgroundColor: PALETTE[7], borderDash: [6, 4], pointRadius: 0, stack: 'usable',
  });
  memory.update();
}

export async function estimateView(view) {
  if (!(await viewOf(view, 'Estimate a configuration',
    'A model, a parallel layout and a GPU: the step time and what follows from it, ' +
      'from the server\'s estimator (as stepcast estimate).', 'POST', '/v1/estimate'))) return;
  const { hardware } = await api('/v1/hardware');
  const json = jsonToggle('estimate');
  const out = el('div', { id: 'estimate-out' });
  const form = makeForm('estimate', [modelFields(), layoutFields(), clusterFields(hardware), trainingFields()],
    'Estimate', async v => {
      view.dataset.state = 'loading';
      out.replaceChildren();
      try {
        const spec = await specOf(v, json);
        json.show('POST /v1/estimate (request)', spec);
        const e = await api('/v1/estimate', { method: 'POST', body: spec });
        json.show('POST /v1/estimate (answer)', e);
        results(out, e);
        view.dataset.state = 'ready';
      } catch (err) {
        out.replaceChildren(errorBox(err));
        view.dataset.state = 'error';
      }
    });
  view.append(form, json.node, out);
}
