// clients/dashboard/jobs.js: the jobs, one job with its traces and models,
// and building a model.

import { api, apiList, path } from './api.js';
import { bytes, el, errorBox, table } from './dom.js';

function modelLink(m) {
  return el('a', { href: `#/models/${encodeURIComponent(m.id)}`, class: `status-${m.status}` }, `${m.id} (${m.status})`);
}

export async function jobsView(view) {
  view.append(el('h1', {}, 'Jobs'));
  const [{ jobs }, { models }] = await Promise.all([apiList('/v1/jobs', 'jobs'), apiList('/v1/models', 'models')]);
  if (!jobs.length) {
    view.append(el('p', { class: 'muted' }, 'No jobs yet: upload traces with `stepcast upload` or the Python client.'));
    return;
  }
  const byJob = new Map();
  for (const m of models) byJob.set(m.job, [...(byJob.get(m.job) || []), m]);
  view.append(table([
    { title: 'job', cell: j => el('a', { href: `#/jobs/${encodeURIComponent(j.id)}` }, j.id) },
    { title: 'description', cell: j => j.description || '' },
    { title: 'ranks', num: true, cell: j => j.n_ranks },
    { title: 'traces', num: true, cell: j => bytes(j.trace_bytes) },
    { title: 'models', cell: j => el('span', { class: 'links' }, (byJob.get(j.id) || []).map(modelLink)) },
    { title: 'updated', cell: j => j.updated },
  ], jobs, { id: 'jobs' }));
}

export async function jobView(view, job) {
  const j = await api(path`/v1/jobs/${job}`);
  view.append(el('h1', {}, 'Job ', el('span', { class: 'name' }, j.id)));
  view.append(el('dl', {},
    el('dt', {}, 'description'), el('dd', {}, j.description || '—'),
    el('dt', {}, 'hardware'), el('dd', {}, j.hardware || '—'),
    el('dt', {}, 'configuration'), el('dd', {}, j.config ? JSON.stringify(j.config) : '—'),
    el('dt', {}, 'traces'), el('dd', {}, `${j.n_ranks} ranks, ${bytes(j.trace_bytes)}`)));
  view.append(el('h2', {}, 'Models'));
  view.append(j.models.length
    ? table([
      { title: 'model', cell: m => modelLink(m) },
      { title: 'created', cell: m => m.created },
    ], j.models, { id: 'models' })
    : el('p', { class: 'muted' }, 'No model yet.'));
  const status = el('p', { class: 'muted' });
  const button = el('button', {
    type: 'button',
    on: {
      click: async () => {
        button.disabled = true;
        try {
          const m = await api(path`/v1/jobs/${job}/models`, { method: 'POST', body: {} });
          status.replaceChildren(`building ${m.model}…`);
          location.hash = `#/models/${encodeURIComponent(m.model)}`;
        } catch (e) {
          status.replaceChildren(errorBox(e));
          button.disabled = false;
        }
      },
    },
  }, 'Build a model from the current traces');
  view.append(el('p', {}, button), status);
  view.append(el('h2', {}, 'Traces'));
  view.append(table([
    { title: 'rank', num: true, cell: t => t.rank },
    { title: 'events', num: true, cell: t => t.events },
    { title: 'steps', num: true, cell: t => t.steps },
    { title: 'size', num: true, cell: t => bytes(t.bytes) },
    { title: 'sha256', cell: t => el('code', {}, t.sha256.slice(0, 16)) },
    { title: 'uploaded', cell: t => t.uploaded },
  ], j.traces, { id: 'traces' }));
}
