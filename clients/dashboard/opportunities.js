// clients/dashboard/opportunities.js: the opportunities of a model and of
// the fleet (GET /v1/models/{id}/opportunities, GET /v1/opportunities) as
// tables: what would shorten the step, each saving measured by a replay.

import { el, ms, pct, table } from './dom.js';

export function opportunitiesTable(doc) {
  return el('div', {},
    el('p', { class: 'muted' },
      `Step ${ms(doc.step_ms)} ms (replayed with the unexplained waits kept), GPU idle ${ms(doc.gpu_idle_ms)} ms per step, ${doc.ranks} rank(s). ` +
      'Each saving is measured by a replay with the change; the bound is the time the change takes out of the work it acts on.'),
    table([
      { title: 'opportunity', cell: o => o.name, field: 'name' },
      { title: 'change', cell: o => o.change, field: 'change' },
      { title: 'resource', cell: o => o.resource },
      { title: 'saving ms', cell: o => ms(o.saving_ms), num: true, field: 'saving' },
      { title: 'saving %', cell: o => pct(o.saving_pct), num: true },
      { title: 'bound ms', cell: o => ms(o.amdahl_bound_ms), num: true },
    ], doc.opportunities, { id: 'opportunities' }));
}

export function fleetTable(doc) {
  return table([
    { title: 'GPU ms per step won', cell: j => ms(j.gpu_ms_per_step), num: true, field: 'gpu' },
    { title: 'job', cell: j => el('a', { href: `#/jobs/${encodeURIComponent(j.job)}` }, j.job), field: 'job' },
    { title: 'model', cell: j => el('a', { href: `#/models/${encodeURIComponent(j.model)}` }, j.model) },
    { title: 'ranks', cell: j => String(j.ranks), num: true },
    { title: 'step ms', cell: j => ms(j.step_ms), num: true },
    { title: 'GPU idle ms', cell: j => ms(j.gpu_idle_ms), num: true },
    { title: 'best opportunity', cell: j => `${j.opportunity.name} (${j.opportunity.change})`, field: 'opportunity' },
  ], doc.jobs, { id: 'fleet' });
}
