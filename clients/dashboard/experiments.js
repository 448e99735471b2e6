// clients/dashboard/experiments.js: the Experiments view (GET
// /v1/experiments): each experiment, a baseline job against a variant
// job, with its state, verdict and the saving it banked when closed; a
// form that creates one (POST /v1/experiments), a button that closes each
// open one (POST /v1/experiments/{id}/close).

import { api, hasRoute, path } from './api.js';
import { pairFields } from './ab.js';
import { el, errorBox, num, table } from './dom.js';
import { jsonToggle, makeForm } from './form.js';
import { viewOf } from './routes.js';

const signed = x => (typeof x === 'number' && x > 0 ? '+' : '') + num(x, 3);

function stateText(e) {
  if (e.state === 'pending') return `pending: waiting for ${e.waiting_for || 'its verdict'}`;
  return e.state;
}

function verdictText(e) {
  const v = e.verdict;
  if (!v || typeof v !== 'object') return e.error ? `no verdict: ${e.error}` : '—';
  return `${v.verdict.replace('_', ' ')} (${signed(v.difference_ms)} ms, ${signed(v.ci95_ms[0])} to ` +
    `${signed(v.ci95_ms[1])}), ${v.survives ? 'survives' : 'does not survive'}`;
}

function bankText(e) {
  if (e.state !== 'closed') return '—';
  if (!e.bank) return 'nothing banked: the variant did not win';
  const b = e.bank;
  return typeof b.gpu_hours_per_day === 'number'
    ? `${num(b.gpu_hours_per_day, 3)} GPU-hours a day (summed over ranks)` +
      (typeof b.usd_per_day === 'number' ? `, $${num(b.usd_per_day, 2)} a day` : '') +
      `; ${num(b.saving_ms_per_step, 3)} ms a step`
    : `${num(b.saving_ms_per_step, 3)} ms a step (per rank): ${b.note || 'no cadence'}`;
}

function listTable(list, canClose, close) {
  return table([
    { title: 'id', field: 'id', cell: e => el('code', {}, e.id) },
    { title: 'baseline', field: 'baseline', cell: e => el('a', { href: `#/jobs/${encodeURIComponent(e.baseline)}` }, e.baseline) },
    { title: 'variant', field: 'variant', cell: e => el('a', { href: `#/jobs/${encodeURIComponent(e.variant)}` }, e.variant) },
    { title: 'hypothesis', field: 'hypothesis', cell: e => e.hypothesis || '' },
    { title: 'external id', field: 'external', cell: e => e.external_id || '' },
    { title: 'state', field: 'state', cell: stateText },
    { title: 'verdict, B against A', field: 'verdict', cell: verdictText },
    { title: 'banked', field: 'bank', cell: bankText },
    ...(canClose ? [{ title: 'close', cell: e => (e.state === 'closed' ? '' : el('button', {
      type: 'button', class: 'close-experiment', data: { id: e.id }, 'aria-label': `Close experiment ${e.id}`,
      on: { click: () => close(e.id) },
    }, 'Close')) }] : []),
  ], list, { id: 'experiments' });
}

function bankTotal(list) {
  const banked = list.filter(e => e.bank && typeof e.bank.gpu_hours_per_day === 'number');
  if (!banked.length) return 'Nothing banked yet: a closed experiment whose variant reads faster and survives banks its saving.';
  const hours = banked.reduce((a, e) => a + e.bank.gpu_hours_per_day, 0);
  const priced = banked.filter(e => typeof e.bank.usd_per_day === 'number');
  return `Banked by ${banked.length} closed experiment(s): ${num(hours, 3)} GPU-hours a day, summed over ranks` +
    (priced.length ? `; $${num(priced.reduce((a, e) => a + e.bank.usd_per_day, 0), 2)} a day from the ` +
      `${priced.length} with a GPU-hour price.` : '.');
}

export async function experimentsView(view) {
  if (!(await viewOf(view, 'Experiments',
    'A baseline job against a variant job: the A/B verdict is computed once both have a built model and kept ' +
      'with its inputs; closing a winning experiment banks its saving (as stepcast experiment).',
    'GET', '/v1/experiments'))) return;
  const [canCreate, canClose, { jobs }] = await Promise.all([hasRoute('POST', '/v1/experiments'),
    hasRoute('POST', '/v1/experiments/{id}/close'), api('/v1/jobs')]);
  const json = jsonToggle('experiments');
  const status = el('p', { role: 'status' });
  const total = el('p', { id: 'experiments-bank' });
  const out = el('div', { id: 'experiments-out' });
  async function load() {
    view.dataset.state = 'loading';
    try {
      const { experiments } = await api('/v1/experiments');
      json.show('GET /v1/experiments', { experiments });
      total.replaceChildren(bankTotal(experiments));
      out.replaceChildren(experiments.length ? listTable(experiments, canClose, close)
        : el('p', { class: 'muted' }, 'No experiment yet.'));
      view.dataset.state = 'ready';
    } catch (e) {
      out.replaceChildren(errorBox(e));
      view.dataset.state = 'error';
    }
  }
  async function close(id) {
    status.replaceChildren();
    try {
      const e = await api(path`/v1/experiments/${id}/close`, { method: 'POST', body: {} });
      json.show(`POST /v1/experiments/${id}/close`, e);
      status.append(`Closed ${id}: ${bankText(e)}.`);
    } catch (err) {
      status.append(errorBox(err));
    }
    await load();
  }
  const parts = [];
  if (canCreate && jobs.length < 2)
    parts.push(el('p', { class: 'muted' }, 'An experiment needs two jobs, a baseline and a variant: create them first.'));
  else if (canCreate) {
    const names = jobs.map(j => ({ job: j.id })).sort((a, b) => (a.job < b.job ? -1 : 1));
    parts.push(el('section', { id: 'experiment-new' }, el('h2', {}, 'A new experiment'), makeForm('experiment', [
      pairFields(names, 'The jobs (the verdict comes once each has a ready model)'),
      { legend: 'About it', fields: [
        { name: 'hypothesis', label: 'Hypothesis', type: 'text', value: '', size: 40,
          check: v => (new TextEncoder().encode(v).length <= 1024 ? null : 'At most 1,024 bytes.') },
        { name: 'external_id', label: 'External id (a scheduler\'s job id)', type: 'text', value: '',
          check: v => (new TextEncoder().encode(v).length <= 128 ? null : 'At most 128 bytes.') },
      ] },
    ], 'Create', async v => {
      status.replaceChildren();
      const body = { baseline: v.baseline, variant: v.variant };
      if (v.hypothesis) body.hypothesis = v.hypothesis;
      if (v.external_id) body.external_id = v.external_id;
      json.show('POST /v1/experiments (request)', body);
      try {
        const e = await api('/v1/experiments', { method: 'POST', body });
        json.show('POST /v1/experiments (answer)', e);
        status.append(`Created ${e.id}: ${stateText(e)}.`);
      } catch (err) {
        status.append(errorBox(err));
      }
      await load();
    })));
  }
  view.append(...parts, status, json.node, el('section', {}, el('h2', {}, 'The experiments'), total, out));
  await load();
}
