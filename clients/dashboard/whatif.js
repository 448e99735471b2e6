// clients/dashboard/whatif.js: the What-if view of a model: its job's
// description as a form (the configuration the traces ran, saved on the job
// with PUT /v1/jobs/{job}: what-ifs start from it), then what to change,
// POST /v1/models/{id}/whatif, and the step before and after by breakdown
// part, each part's time split into what came from measurement and what
// from models, and how much of the new step came from each (and which
// models).

import { api, apiList, path } from './api.js';
import { BREAKDOWN, meanBreakdown } from './breakdown.js';
import { PALETTE, bars, figure } from './charts.js';
import { el, errorBox, num, table } from './dom.js';
import { jsonToggle, makeForm, whole } from './form.js';
import { lacksRoute } from './routes.js';

// The job description's fields the form shows (docs/commands/whatif.md):
// whole numbers [name, label, required, least], then choices [name, label,
// options]; other keys of a saved description are kept as they are.
// moe_* and mla_* are the nested moe and mla objects' (OBJECTS).
const CONFIG = [
  ['tp', 'Tensor parallel (tp)', true], ['pp', 'Pipeline parallel (pp)', true], ['dp', 'Data parallel (dp)', true],
  ['cp', 'Context parallel (cp)'], ['ep', 'Expert parallel (ep)'], ['etp', 'Expert tensor parallel (etp)'],
  ['micro_batch', 'Micro-batch'], ['global_batch', 'Global batch'], ['layers', 'Layers'], ['hidden', 'Hidden size'],
  ['heads', 'Attention heads'], ['kv_heads', 'Key/value heads'], ['head_dim', 'Head width'], ['ffn', 'FFN size'], ['seq', 'Sequence length'],
  ['vocab', 'Vocabulary'], ['vpp', 'Virtual stages per pipeline rank'],
  ['gpus_per_node', 'GPUs per node (NVLink domain)'], ['moe_experts', 'MoE experts'],
  ['moe_top_k', 'MoE experts per token (top-k)'], ['moe_ffn', 'MoE expert FFN size'],
  ['moe_shared_experts', 'MoE shared experts', false, 0], ['moe_every', 'MoE in every k-th layer'],
  ['moe_dense_layers', 'Dense layers before the MoE ones', false, 0],
  ['mla_kv_lora_rank', 'Latent attention: key/value latent width'],
  ['mla_q_lora_rank', 'Latent attention: query latent width'],
  ['mla_qk_head_dim', 'Latent attention: query/key head width'],
  ['mla_qk_pos_emb_head_dim', 'Latent attention: rotary head width'],
  ['mla_v_head_dim', 'Latent attention: value head width'],
];
// The description's nested objects, by the prefix of their fields.
const OBJECTS = ['moe', 'mla'];

// The object a CONFIG field `name` belongs to and its key there: [object
// name or null, key].
function fieldKey(name) {
  const obj = OBJECTS.find(o => name.startsWith(`${o}_`));
  return obj ? [obj, name.slice(obj.length + 1)] : [null, name];
}
const NOT_GIVEN = ['', 'not given (the spec\'s default)'];
const CHOICES = [
  ['zero_stage', 'ZeRO stage', [['', 'not given (0)'], ['0', '0'], ['1', '1'], ['2', '2'], ['3', '3']]],
  ['mlp', 'MLP', [NOT_GIVEN, ['gelu', 'GELU'], ['swiglu', 'SwiGLU']]],
  ['sequence_parallel', 'Sequence parallel', [NOT_GIVEN, ['true', 'yes'], ['false', 'no']]],
  ['recompute', 'Recomputation', [NOT_GIVEN, ['none', 'none'], ['selective', 'selective'], ['full', 'full']]],
];
// What a what-if may change (WhatIfRequest), numbers first, then choices.
const SET = ['tp', 'pp', 'dp', 'cp', 'ep', 'micro_batch', 'global_batch', 'layers', 'hidden', 'heads', 'kv_heads', 'ffn',
  'seq', 'vocab', 'vpp', 'gpus_per_node'];
const SET_CHOICES = ['zero_stage', 'mlp', 'sequence_parallel'];

// A choice's value as the description holds it ('' for not given).
function choiceValue(name, v) {
  if (v === '') return undefined;
  if (name === 'zero_stage') return Number(v);
  if (name === 'sequence_parallel') return v === 'true';
  return v;
}

// A description's value of CONFIG's field `name` (moe_* inside moe, mla_*
// inside mla).
function configValue(config, name) {
  const [obj, key] = fieldKey(name);
  if (obj) return (config[obj] || {})[key];
  return config[name === 'seq' && config.seq_len ? 'seq_len' : name];
}

async function configSection(job, json, onSaved) {
  let doc = await api(path`/v1/jobs/${job}`);
  const config = doc.config || {};
  const status = el('p', { role: 'status' });
  const fields = CONFIG.map(([name, label, required, least = 1]) => ({
    name, label, required, min: least, step: 1, value: configValue(config, name), check: whole(least, 1 << 24),
  }));
  for (const [name, label, options] of CHOICES) {
    const v = config[name];
    fields.push({ name, label, type: 'select', value: v === undefined ? '' : String(v), options });
  }
  const form = makeForm('config', [{ legend: 'The configuration the traces ran', fields }], 'Save on the job',
    async v => {
      status.replaceChildren();
      const saved = doc.config || {}, next = { ...saved };
      const nested = Object.fromEntries(OBJECTS.map(o => [o, { ...(saved[o] || {}) }]));
      for (const [k] of CONFIG) {
        const [o, key] = fieldKey(k), obj = o ? nested[o] : next;
        if (v[k] === null) delete obj[key]; else obj[key] = v[k];
      }
      for (const o of OBJECTS) if (Object.keys(nested[o]).length) next[o] = nested[o]; else delete next[o];
      if (next.seq !== undefined) delete next.seq_len;
      for (const [k] of CHOICES) {
        const c = choiceValue(k, v[k]);
        if (c === undefined) delete next[k]; else next[k] = c;
      }
      const body = { config: next };
      for (const k of ['hardware', 'description']) if (typeof doc[k] === 'string') body[k] = doc[k];
      try {
        doc = await api(path`/v1/jobs/${job}`, { method: 'PUT', body });
        json.show(`PUT /v1/jobs/${job}`, doc);
        status.append(el('span', { class: 'saved' }, 'Saved: what-ifs start from it.'));
        onSaved(doc.config);
      } catch (e) {
        status.append(errorBox(e));
      }
    });
  return {
    node: el('section', { id: 'job-config' }, el('h2', {}, 'The job\'s configuration'),
      el('p', { class: 'muted' }, 'What the traces ran: tp, pp and dp are needed; the model\'s shape lets a ' +
        'what-if change it. Saved on the job (its description), every what-if of its models starts from it.'),
      form, status),
    config: () => doc.config,
  };
}

// Each part of the new step split by where it came from (the answer's
// breakdown_sources): its modelled share re-priced by a cost model, the
// rest carried from traced durations; a part of no work (idle) neither.
export function partSources(after, sources) {
  return BREAKDOWN.map(([k, t]) => {
    const src = (sources || {})[k] || {}, share = src.modelled_share;
    const work = typeof share === 'number';
    return { key: k, title: t, after: after[k], source: src.source || 'not said by this server',
      modelled: work ? after[k] * share : 0, measured: work ? after[k] * (1 - share) : 0, none: work ? 0 : after[k] };
  });
}

function results(out, before, w) {
  const after = meanBreakdown(w.steps);
  const canvas = el('canvas', { id: 'chart-whatif', 'aria-label': 'the step before and after, by part (ms)' });
  const source = el('canvas', { id: 'chart-whatif-source', 'aria-label': 'the new step: measured and modelled (ms)' });
  const rows = partSources(after, w.breakdown_sources).map(r => ({ ...r, before: before[r.key] }));
  out.replaceChildren(
    el('section', { id: 'whatif-summary' }, el('h2', {}, 'Before and after'),
      el('p', {}, `${num(w.base_step_ms, 3)} ms before, ${num(w.step_ms, 3)} ms after ` +
        `(${num(100 * (w.step_ms / w.base_step_ms - 1), 1)} %). ` +
        (w.band && typeof w.band.lo_ms === 'number'
          ? `80 % band: ${num(w.band.lo_ms, 3)} to ${num(w.band.hi_ms, 3)} ms.`
          : `No band yet (${w.band ? w.band.entries : 0} what-if entries in the ledger).`)),
      el('p', { class: 'muted' }, 'Each part of the new step is split by where its time came from: measured ' +
        '(carried from the traced durations) or modelled (re-priced by a cost model), in the share of the work ' +
        'that fills it; idle time is no work\'s.'),
      figure(canvas, table([
        { title: 'part', cell: r => r.title },
        { title: 'before ms', num: true, field: 'before', cell: r => num(r.before, 3) },
        { title: 'after ms', num: true, field: 'after', cell: r => num(r.after, 3) },
        { title: 'of it measured ms', num: true, field: 'measured', cell: r => num(r.measured, 3) },
        { title: 'of it modelled ms', num: true, field: 'modelled', cell: r => num(r.modelled, 3) },
        { title: 'source', field: 'source', cell: r => r.source },
      ], rows, { id: 'whatif-parts' }))),
    el('section', {}, el('h2', {}, 'Where the new step\'s time comes from'),
      el('p', { class: 'muted' }, 'Measured: work kept at its traced duration. Modelled: work a model re-timed ' +
        'for the new configuration (the table says which model and why).'),
      figure(source, table([
        { title: 'model', cell: m => m.model, field: 'model' },
        { title: 'tasks', num: true, cell: m => m.tasks },
        { title: 'ms', num: true, field: 'ms', cell: m => num(m.ms, 3) },
        { title: 'why', cell: m => m.why },
      ], w.models_used || [], { id: 'whatif-models' }))));
  bars(canvas, rows.map(r => r.title), [
    { label: 'before (replayed as traced)', values: rows.map(r => r.before), color: PALETTE[0], stack: 'before' },
    { label: 'after: measured', values: rows.map(r => r.measured), color: PALETTE[2], stack: 'after' },
    { label: 'after: modelled', values: rows.map(r => r.modelled), color: PALETTE[3], stack: 'after' },
    { label: 'after: idle (no work)', values: rows.map(r => r.none), color: PALETTE[7], stack: 'after' },
  ], { stacked: true, yTitle: 'ms per step (mean over steps)' });
  bars(source, ['after'], [
    { label: 'from measurement', values: [w.from_measured_ms], color: PALETTE[2] },
    { label: 'from models', values: [w.from_models_ms], color: PALETTE[3] },
  ], { stacked: true, horizontal: true, yTitle: 'ms per step' });
}

function setForm(model, config, hardware, json, out, view) {
  const fields = SET.map(name => ({ name, label: name.replace(/_/g, '-'), min: 1, step: 1,
    value: name === 'dp' && config.dp ? 2 * config.dp : null, check: whole(1, 1 << 24) }));
  for (const [name, label, options] of CHOICES.filter(([n]) => SET_CHOICES.includes(n)))
    fields.push({ name, label, type: 'select', value: '', options: [['', 'as described'], ...options.slice(1)] });
  fields.push({ name: 'gpu', label: 'GPU', type: 'select', value: '',
    options: [['', 'as traced'], ...hardware.map(h => [h.id, `${h.name} (${h.id})`])] });
  return makeForm('whatif', [{ legend: 'What to change (empty: as it is)', fields }], 'Run the what-if', async v => {
    const set = {};
    for (const k of SET) if (v[k] !== null) set[k] = v[k];
    for (const k of SET_CHOICES) if (choiceValue(k, v[k]) !== undefined) set[k] = choiceValue(k, v[k]);
    if (v.gpu) set.gpu = v.gpu;
    view.dataset.state = 'loading';
    try {
      const [replay, w] = await Promise.all([
        api(path`/v1/models/${model}/replay`),
        api(path`/v1/models/${model}/whatif`, { method: 'POST', body: { set } }),
      ]);
      json.show('POST whatif (request)', { set });
      json.show('POST whatif (answer)', w);
      results(out, meanBreakdown(replay.steps), w);
      view.dataset.state = 'ready';
    } catch (e) {
      out.replaceChildren(errorBox(e));
      view.dataset.state = 'error';
    }
  });
}

async function chooseModel(view) {
  const { models } = await apiList('/v1/models', 'models');
  const ready = models.filter(m => m.status === 'ready');
  if (!ready.length) {
    view.append(el('p', { class: 'muted' }, 'No model is ready: build one from a job\'s traces first.'));
    return;
  }
  view.append(el('p', {}, 'Choose a model:'), el('ul', { id: 'whatif-models-list' }, ready.map(m => el('li', {},
    el('a', { href: `#/whatif/${encodeURIComponent(m.id)}` }, m.id), ` of job `, el('span', { class: 'name' }, m.job)))));
}

export async function whatifView(view, model) {
  view.append(el('h1', {}, 'What-if'));
  if (await lacksRoute(view, 'POST', '/v1/models/{id}/whatif')) return;
  if (!model) return chooseModel(view);
  const m = await api(path`/v1/models/${model}`);
  view.append(el('p', { class: 'muted' }, 'Model ', el('a', { href: `#/models/${encodeURIComponent(m.id)}` }, m.id),
    ' of job ', el('a', { href: `#/jobs/${encodeURIComponent(m.job)}` }, m.job),
    ': its traced step transformed to another configuration and replayed.'));
  const { hardware } = await api('/v1/hardware');
  const json = jsonToggle('whatif');
  const out = el('div', { id: 'whatif-out' });
  const holder = el('section', { id: 'whatif-set' }, el('h2', {}, 'The change'));
  const show = config => {
    holder.replaceChildren(el('h2', {}, 'The change'), config && config.tp && config.pp && config.dp
      ? setForm(model, config, hardware, json, out, view)
      : el('p', { class: 'muted' }, 'Save the job\'s configuration first (tp, pp and dp at least).'));
  };
  const cfg = await configSection(m.job, json, show);
  view.append(cfg.node, holder, json.node, out);
  show(cfg.config());
}
