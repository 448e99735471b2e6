// clients/dashboard/fleet.js: the Fleet view (GET /v1/fleet): jobs
// ranked by the GPU time they waste a day, each bar split by the kind of
// opportunity that would win it back and linked to the job's model;
// filters by tag and by when the models were built. Every figure says
// whether it is per rank or summed over ranks; jobs whose description
// gives no steps a day are drawn apart, per step; the unexplained waits
// are listed apart, as needing more ranks traced.

import { api } from './api.js';
import { PALETTE, bars, figure } from './charts.js';
import { el, errorBox, num, table } from './dom.js';
import { jsonToggle, makeForm, whole } from './form.js';
import { viewOf } from './routes.js';

// The opportunities' resources, in words and colours.
const KINDS = {
  communication: ['network (communication)', PALETTE[0]], host: ['host overhead', PALETTE[1]],
  launch: ['kernel launches', PALETTE[2]], gpu: ['GPU work (kernels, stragglers)', PALETTE[3]],
};
const kindName = k => (KINDS[k] ? KINDS[k][0] : k);

// The ranked figure of each tier (ranked_by), its unit, its title.
const TIERS = [
  { key: 'wasted_gpu_hours_per_day_summed', title: 'Wasted GPU-hours a day',
    unit: 'GPU-hours a day, summed over ranks', digits: 4 },
  { key: 'wasted_gpu_ms_per_step_summed', title: 'No steps a day: ranked per step',
    unit: 'GPU-ms a step, summed over ranks', digits: 3,
    about: 'These jobs say neither steps_per_day nor runtime_hours (PUT /v1/jobs/{job}): their waste is per step.' },
  { key: 'waste_ms_per_step_per_rank', title: 'No world size and no steps a day: ranked per step on a rank',
    unit: 'ms a step, per rank', digits: 3,
    about: 'Neither the traces (distributedInfo) nor the job\'s config give a world size.' },
];
const DOLLARS = { key: 'wasted_usd_per_day', title: 'Wasted dollars a day', unit: 'USD a day, summed over ranks', digits: 2,
  about: '# is the job\'s rank by GPU-hours a day; the bars are by dollars, at each job\'s gpu_hour_usd.' };

// A job's figure split by kind: [kind, value], the waste apportioned by
// each kind's share of the actionable savings alone; what no kind
// explains (no saving alone) as 'other'.
export function splitByKind(job, value) {
  const parts = (job.waste_by_kind || []).map(k => [k.kind, value * k.share]);
  const rest = value - parts.reduce((a, p) => a + p[1], 0);
  if (Math.abs(rest) > 1e-12 * Math.max(1, Math.abs(value))) parts.push(['other', rest]);
  return parts;
}

function modelHref(j) {
  return `#/models/${encodeURIComponent(j.model)}`;
}

function tierSection(tier, jobs, id) {
  const canvas = el('canvas', { id: `chart-${id}`, 'aria-label': `${tier.title} (${tier.unit}), by job and kind` });
  const labels = jobs.map(j => `#${j.rank} ${j.job}`);
  const kinds = [...new Set(jobs.flatMap(j => splitByKind(j, j[tier.key]).map(p => p[0])))];
  const part = (j, k) => (splitByKind(j, j[tier.key]).find(p => p[0] === k) || [k, 0])[1];
  const datasets = kinds.map((k, i) => ({
    label: kindName(k), color: KINDS[k] ? KINDS[k][1] : PALETTE[4 + (i % 4)], values: jobs.map(j => part(j, k)),
  }));
  const job = j => el('a', { href: modelHref(j) }, j.job);
  const node = el('section', { id }, el('h2', {}, tier.title),
    tier.about ? el('p', { class: 'muted' }, tier.about) : null,
    el('p', { class: 'muted' }, 'A bar per job, its model a click away (or the job\'s link in the tables). Each bar is ' +
      'split by the kind of change that wins the time back, in proportion to what each kind\'s changes save alone ' +
      '(together they save less than the sum of their savings alone).'),
    figure(canvas, table([
      { title: '#', num: true, field: 'rank', cell: j => j.rank },
      { title: 'job (its model)', field: 'job', cell: job },
      ...kinds.map(k => ({ title: kindName(k), num: true, cell: j => num(part(j, k), tier.digits) })),
      { title: tier.unit, num: true, field: 'value', cell: j => num(j[tier.key], tier.digits) },
    ], jobs, { id: `${id}-table` }), { tall: jobs.length > 8 }),
    el('div', { class: 'scroll' }, table([
      { title: 'job (its model)', cell: job },
      { title: 'team', field: 'team', cell: j => j.team || '—' },
      { title: 'cluster', field: 'cluster', cell: j => j.cluster || '—' },
      { title: 'waste ms a step, per rank', num: true, cell: j => num(j.waste_ms_per_step_per_rank, 3) },
      { title: 'step ms, per rank', num: true, cell: j => num(j.step_ms_per_rank, 3) },
      { title: 'world size', num: true, cell: j => (j.world_size ? `${j.world_size} (${j.world_size_from})` : '—') },
      { title: 'steps a day', num: true, cell: j => (typeof j.steps_per_day === 'number'
        ? `${num(j.steps_per_day, 0)} (${j.steps_per_day_from})` : 'not given') },
      { title: 'GPU-ms a step, summed over ranks', num: true, cell: j => num(j.wasted_gpu_ms_per_step_summed, 3) },
      { title: 'USD a day, summed over ranks', num: true, cell: j => num(j.wasted_usd_per_day, 2) },
      { title: 'note', cell: j => j.note || '' },
    ], jobs, { id: `${id}-details`, class: 'details' })));
  return {
    node,
    draw: () => bars(canvas, labels, datasets, {
      stacked: true, horizontal: true, yTitle: tier.unit, xTitle: 'job',
      onClick: (_, hit) => { if (hit.length) location.hash = modelHref(jobs[hit[0].index]); },
    }),
  };
}

function apartSection(list) {
  return el('section', { id: 'fleet-apart' }, el('h2', {}, 'Needs tracing of more ranks'),
    el('p', { class: 'muted' }, 'Waits the traces do not explain: a rank waits for ranks no trace shows. They are ' +
      'not savings anyone can act on until more ranks are traced, so they are not counted above.'),
    list.length ? table([
      { title: 'job (its model)', field: 'job', cell: a => el('a', { href: modelHref(a) }, a.job) },
      { title: 'unexplained ms a step, per rank', num: true, field: 'unexplained',
        cell: a => num(a.unexplained_ms_per_step_per_rank, 3) },
    ], list, { id: 'fleet-apart-table' }) : el('p', { class: 'muted' }, 'None.'));
}

function render(out, doc, unit) {
  const sections = [];
  TIERS.forEach((tier, i) => {
    let jobs = doc.jobs.filter(j => j.ranked_by === tier.key), shown = tier;
    if (!i && unit === 'usd') { // by dollars: the jobs with a price, most first
      const unpriced = jobs.filter(j => typeof j.wasted_usd_per_day !== 'number');
      jobs = jobs.filter(j => typeof j.wasted_usd_per_day === 'number')
        .sort((a, b) => b.wasted_usd_per_day - a.wasted_usd_per_day);
      if (unpriced.length) sections.push({ node: el('p', { class: 'muted', id: 'fleet-unpriced' },
        `Without a GPU-hour price (gpu_hour_usd), not in dollars: ${unpriced.map(j => j.job).join(', ')}.`) });
      shown = DOLLARS;
    }
    if (jobs.length) sections.push(tierSection(shown, jobs, ['fleet-day', 'fleet-step', 'fleet-rank'][i]));
  });
  out.replaceChildren(el('p', { class: 'muted' }, doc.method),
    ...(doc.jobs.length ? sections.map(s => s.node) : [el('p', { class: 'muted' }, 'No job has a ready model built in the window.')]),
    apartSection(doc.needs_tracing_of_more_ranks || []));
  for (const s of sections) if (s.draw) s.draw();
}

// The tags of the jobs, as KEY:VALUE choices.
function tagOptions(jobs) {
  const tags = new Set();
  for (const j of jobs) for (const [k, v] of Object.entries(j.tags || {})) tags.add(`${k}:${v}`);
  return [['', 'every job'], ...[...tags].sort().map(t => [t, t.replace(':', ': ')])];
}

export async function fleetView(view) {
  if (!(await viewOf(view, 'Fleet: wasted GPU time by job',
    'Every job\'s newest ready model: its measured step less the step with every actionable opportunity ' +
      'applied together, at its world size and steps a day (as stepcast fleet).', 'GET', '/v1/fleet'))) return;
  const { jobs } = await api('/v1/jobs');
  const json = jsonToggle('fleet');
  const out = el('div', { id: 'fleet-out' });
  const day = /^\d{4}-\d{2}-\d{2}$/;
  const load = async v => {
    view.dataset.state = 'loading';
    const query = [['top', v.top]];
    if (v.tag) query.push(['tag', v.tag]);
    if (v.since) query.push(['since', v.since]);
    if (v.until) query.push(['until', v.until]);
    try {
      const doc = await api('/v1/fleet', { query });
      json.show('GET /v1/fleet', doc);
      render(out, doc, v.unit);
      view.dataset.state = 'ready';
    } catch (e) {
      out.replaceChildren(errorBox(e));
      view.dataset.state = 'error';
    }
  };
  const form = makeForm('fleet', [{
    legend: 'Which jobs', fields: [
      { name: 'tag', label: 'Tag (team, cluster)', type: 'select', value: '', options: tagOptions(jobs) },
      { name: 'since', label: 'Models built from', type: 'date', value: '',
        check: v => (!v || day.test(v) ? null : 'A day, YYYY-MM-DD.') },
      { name: 'until', label: 'Models built before', type: 'date', value: '',
        check: (v, all) => (!v || day.test(v) ? (v && all.since && v <= all.since ? 'After the first day.' : null)
          : 'A day, YYYY-MM-DD.') },
      { name: 'top', label: 'Jobs', value: 10, min: 1, max: 1000, step: 1, check: whole(1, 1000) },
    ],
  }, {
    legend: 'Rank by', fields: [
      { name: 'unit', label: 'Waste in', type: 'select', value: 'gpu_hours',
        options: [['gpu_hours', 'GPU-hours a day'], ['usd', 'dollars a day (jobs with a GPU-hour price)']] },
    ],
  }], 'Show', load);
  view.append(form, json.node, out);
  await load(form.values());
}
