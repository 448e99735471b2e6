// clients/dashboard/diff.js: a model against another (POST
// /v1/models/{id}/diff): the step-time difference attributed to what
// changed, as a chart with its table, and the kernels added, removed and
// re-timed.

import { api, apiList, path } from './api.js';
import { bars, figure } from './charts.js';
import { el, errorBox, num, table } from './dom.js';
import { jsonToggle, makeForm } from './form.js';
import { lacksRoute } from './routes.js';

function kernels(title, list, id) {
  return el('div', {}, el('h3', {}, `${title} (${list.length})`), list.length ? table([
    { title: 'kernel', field: 'name', cell: k => el('span', { class: 'name' }, k.name) },
    { title: 'count', num: true, cell: k => k.count },
    { title: 'A ms', num: true, cell: k => num(k.a_ms, 3) },
    { title: 'B ms', num: true, cell: k => num(k.b_ms, 3) },
  ], list.slice(0, 20), { id }) : el('p', { class: 'muted' }, 'none'));
}

function render(out, d) {
  const parts = Object.entries(d.attribution || {}).map(([part, ms]) => ({ part, ms }));
  const canvas = el('canvas', { id: 'chart-diff', 'aria-label': 'the difference attributed by part (ms)' });
  const k = d.kernels || {};
  out.replaceChildren(
    el('p', {}, `A ${num(d.a_ms, 3)} ms, B ${num(d.b_ms, 3)} ms a step: ${num(d.difference_ms, 3)} ms ` +
      `over ${d.steps} step(s) (${d.method}).`),
    figure(canvas, table([
      { title: 'part', field: 'part', cell: p => p.part },
      { title: 'ms', num: true, field: 'ms', cell: p => num(p.ms, 3) },
    ], parts, { id: 'diff-attribution' })),
    kernels('Kernels re-timed', k.retimed || [], 'diff-retimed'),
    kernels('Kernels added in B', k.added || [], 'diff-added'),
    kernels('Kernels removed in B', k.removed || [], 'diff-removed'));
  bars(canvas, parts.map(p => p.part), [{ label: 'B - A', values: parts.map(p => p.ms) }],
    { horizontal: true, yTitle: 'ms per step' });
}

export async function diffSection(id) {
  const section = el('section', { id: 'diff' }, el('h2', {}, 'Against another model'));
  if (await lacksRoute(section, 'POST', '/v1/models/{id}/diff')) return section;
  const { models } = await apiList('/v1/models', 'models');
  const others = models.filter(m => m.status === 'ready' && m.id !== id);
  if (!others.length) {
    section.append(el('p', { class: 'muted' }, 'No other ready model to compare with.'));
    return section;
  }
  const json = jsonToggle('diff');
  const out = el('div', { id: 'diff-out' });
  section.append(el('p', { class: 'muted' }, 'This model is A (before a change), the other B (after).'),
    makeForm('diff', [{
      legend: 'Compare', fields: [{ name: 'other', label: 'Model B', type: 'select', value: others[0].id,
        options: others.map(m => [m.id, `${m.id} (job ${m.job})`]) }],
    }], 'Compare', async v => {
      try {
        const d = await api(path`/v1/models/${id}/diff`, { method: 'POST', body: { other: v.other } });
        json.show('POST diff (answer)', d);
        render(out, d);
      } catch (e) {
        out.replaceChildren(errorBox(e));
      }
    }), json.node, out);
  return section;
}
