// clients/dashboard/ab.js: the A/B view (POST /v1/ab): a baseline job
// and a variant job, each by its newest ready model; both runs' step-time
// distributions as box plots, the difference with its 95 % interval
// against the smallest effect that matters, the verdict, the refutations
// and the difference attributed by part, each part with its interval.

import { api } from './api.js';
import { boxStats, boxes, figure, intervals } from './charts.js';
import { el, errorBox, num, table } from './dom.js';
import { jsonToggle, makeForm, whole } from './form.js';
import { viewOf } from './routes.js';

const VERDICT = {
  faster: 'faster', slower: 'slower', no_change: 'no change', inconclusive: 'inconclusive',
  not_applicable: 'not applicable',
};
const signed = (x, d = 3) => (typeof x === 'number' && x > 0 ? '+' : '') + num(x, d);

// Each job's newest ready model: [{job, model}], by job name.
export async function readyJobs() {
  const [{ jobs }, { models }] = await Promise.all([api('/v1/jobs'), api('/v1/models')]);
  const newest = new Map();
  for (const m of models)
    if (m.status === 'ready' && (!newest.has(m.job) || newest.get(m.job).created < m.created)) newest.set(m.job, m);
  return jobs.filter(j => newest.has(j.id)).map(j => ({ job: j.id, model: newest.get(j.id).id }))
    .sort((a, b) => (a.job < b.job ? -1 : 1));
}

// The pair of selects every A/B-like form has: baseline and variant jobs.
export function pairFields(jobs, legend) {
  const options = jobs.map(j => [j.job, j.job]);
  return {
    legend, fields: [
      { name: 'baseline', label: 'Baseline job (A)', type: 'select', options, value: options[0] && options[0][0] },
      { name: 'variant', label: 'Variant job (B)', type: 'select', options,
        value: options[1] ? options[1][0] : options[0] && options[0][0],
        check: (v, all) => (v === all.baseline ? 'Pick a variant other than the baseline.' : null) },
    ],
  };
}

function verdictSection(d, names) {
  const apply = d.refutations.filter(r => r.agrees !== null);
  const agree = apply.filter(r => r.agrees).length;
  const [lo, hi] = d.ci95_ms;
  return el('section', { id: 'ab-verdict', data: { verdict: d.verdict } },
    el('h2', {}, 'Verdict: B against A reads ', el('strong', {}, VERDICT[d.verdict] || d.verdict)),
    el('p', {}, `B (${names.b}) against A (${names.a}): ${signed(d.difference_ms)} ms a step ` +
      `(${signed(d.difference_pct, 2)} %), 95 % interval ${signed(lo)} to ${signed(hi)} ms; ` +
      `the smallest effect that matters ±${num(d.min_effect_ms, 3)} ms. Rank-sum p = ${num(d.p_value, 4)}, ` +
      `Cliff's delta ${signed(d.effect_size, 2)}. ${d.steps.a} and ${d.steps.b} steps compared, each the ` +
      'slowest rank\'s measured step.'),
    el('p', { class: d.survives ? 'saved' : 'error' }, d.survives
      ? `It survives: ${agree} of ${apply.length} applicable refutations agree.`
      : `It does not survive: ${agree} of ${apply.length} applicable refutations agree.`),
    d.dropped_steps.length ? el('p', { class: 'muted' }, `Left out: ${d.dropped_steps.map(s =>
      `${s.run}'s step ${s.step} (${s.why})`).join(', ')}.`) : null);
}

function distributions(d, names) {
  const stats = [boxStats(d.samples_ms.a), boxStats(d.samples_ms.b)];
  const labels = [`A: ${names.a}`, `B: ${names.b}`];
  const canvas = el('canvas', { id: 'chart-ab-steps', 'aria-label': 'step time of each run: box plots (ms)' });
  const rows = stats.map((s, i) => ({ ...s, run: labels[i], center: i ? d.center_ms.b : d.center_ms.a }));
  const node = el('section', {}, el('h2', {}, 'Step times of both runs'),
    el('p', { class: 'muted' }, 'One sample a step: its slowest rank\'s measured time. The box spans the first to ' +
      'the third quartile, the whiskers reach the farthest steps within 1.5 box lengths, the points beyond ' +
      'are outliers; the center is the mean of the steps within 5 scaled MADs of the median (what the ' +
      'difference is of).'),
    figure(canvas, table([
      { title: 'run', field: 'run', cell: r => r.run },
      { title: 'steps', num: true, field: 'n', cell: r => r.n },
      { title: 'whisker low ms', num: true, field: 'lo', cell: r => num(r.lo, 3) },
      { title: 'Q1 ms', num: true, field: 'q1', cell: r => num(r.q1, 3) },
      { title: 'median ms', num: true, field: 'median', cell: r => num(r.median, 3) },
      { title: 'Q3 ms', num: true, field: 'q3', cell: r => num(r.q3, 3) },
      { title: 'whisker high ms', num: true, field: 'hi', cell: r => num(r.hi, 3) },
      { title: 'center ms', num: true, field: 'center', cell: r => num(r.center, 3) },
      { title: 'outliers', num: true, field: 'outliers', cell: r => r.outliers.length },
    ], rows, { id: 'ab-steps' })));
  return { node, draw: () => boxes(canvas, labels, stats, { yTitle: 'step time (ms)',
    marks: [{ label: 'center', values: [d.center_ms.a, d.center_ms.b] }] }) };
}

function differenceSection(d) {
  const canvas = el('canvas', { id: 'chart-ab-difference', 'aria-label': 'B - A with its 95 % interval (ms)' });
  const row = { part: 'B - A', value: d.difference_ms, lo: d.ci95_ms[0], hi: d.ci95_ms[1] };
  const node = el('section', {}, el('h2', {}, 'The difference and its interval'),
    el('p', { class: 'muted' }, 'Positive: B is slower. Faster or slower needs the interval clear of zero and ' +
      'the difference at least the smallest effect that matters (the band).'),
    figure(canvas, table([
      { title: 'figure', cell: r => r.part },
      { title: 'ms', num: true, field: 'value', cell: r => signed(r.value) },
      { title: '95 % low ms', num: true, field: 'lo', cell: r => signed(r.lo) },
      { title: '95 % high ms', num: true, field: 'hi', cell: r => signed(r.hi) },
      { title: 'smallest effect ms', num: true, cell: () => `±${num(d.min_effect_ms, 3)}` },
    ], [row], { id: 'ab-difference' }), { small: true }));
  return { node, draw: () => intervals(canvas, ['B - A'], [row], { xTitle: 'difference of step time (ms)',
    band: [-d.min_effect_ms, d.min_effect_ms], bandLabel: 'smaller than the smallest effect that matters' }) };
}

function refutationsSection(d) {
  return el('section', {}, el('h2', {}, 'Refutations'),
    el('p', { class: 'muted' }, 'Attempts to refute the verdict; one that cannot run is not applicable and ' +
      'left out of the majority.'),
    table([
      { title: 'name', field: 'name', cell: r => r.name },
      { title: 'verdict', field: 'verdict', cell: r => VERDICT[r.verdict] || r.verdict },
      { title: 'agrees', field: 'agrees', cell: r => (r.agrees === null ? 'not applicable' : r.agrees ? 'yes' : 'no') },
      { title: 'what was tried', cell: r => r.detail },
    ], d.refutations, { id: 'ab-refutations' }));
}

function attributionSection(d) {
  if (!d.attribution) return { node: null, draw: () => {} };
  const parts = d.attribution;
  const canvas = el('canvas', { id: 'chart-ab-attribution', 'aria-label': 'the difference by part, with intervals (ms)' });
  const rows = parts.map(p => ({ part: p.category, value: p.ms, lo: p.ci95_ms[0], hi: p.ci95_ms[1] }));
  const node = el('section', {}, el('h2', {}, 'Where the difference comes from'),
    el('p', { class: 'muted' }, 'The parts of diff (A replayed with B\'s durations one category at a time), each ' +
      'the change of the mean step with its 95 % interval over steps. They sum to the difference of mean steps, ' +
      'not of the centers.'),
    figure(canvas, table([
      { title: 'part', field: 'part', cell: r => r.part },
      { title: 'ms', num: true, field: 'value', cell: r => signed(r.value) },
      { title: '95 % low ms', num: true, field: 'lo', cell: r => signed(r.lo) },
      { title: '95 % high ms', num: true, field: 'hi', cell: r => signed(r.hi) },
    ], rows, { id: 'ab-attribution' }), { tall: rows.length > 8 }));
  return { node, draw: () => intervals(canvas, rows.map(r => r.part), rows, { xTitle: 'ms per step' }) };
}

function render(out, d, names) {
  const parts = [distributions(d, names), differenceSection(d), attributionSection(d)];
  out.replaceChildren(verdictSection(d, names), parts[0].node, parts[1].node, refutationsSection(d), parts[2].node);
  for (const p of parts) p.draw();
}

export async function abView(view) {
  if (!(await viewOf(view, 'A/B: two runs compared',
    'Did the variant\'s change make the step faster or slower than the baseline, by how much, with what ' +
      'confidence, and does it survive attempts to refute it (as stepcast ab).', 'POST', '/v1/ab'))) return;
  const jobs = await readyJobs();
  if (jobs.length < 2) {
    view.append(el('p', { class: 'muted' }, 'An A/B needs two jobs with a ready model: upload the runs\' traces ' +
      'and build a model of each.'));
    return;
  }
  const json = jsonToggle('ab');
  const out = el('div', { id: 'ab-out' });
  const form = makeForm('ab', [pairFields(jobs, 'The runs (each job\'s newest ready model)'), {
    legend: 'Options', fields: [
      { name: 'min_effect_pct', label: 'Smallest effect that matters', unit: '% of A', value: 1, min: 0.01, max: 100,
        step: 'any', check: v => (v > 0 && v <= 100 ? null : 'More than 0, at most 100.') },
      { name: 'refutations', label: 'Refutations to run', value: 5, min: 0, max: 5, step: 1, check: whole(0, 5) },
      { name: 'seed', label: 'Seed (bootstrap and refutations)', value: 1, min: 0, step: 1, check: whole(0, 2 ** 31) },
    ],
  }], 'Compare', async v => {
    const model = name => jobs.find(j => j.job === name).model;
    const body = { a: model(v.baseline), b: model(v.variant), min_effect_pct: v.min_effect_pct,
      refutations: v.refutations, seed: v.seed };
    view.dataset.state = 'loading';
    json.show('POST /v1/ab (request)', body);
    try {
      const d = await api('/v1/ab', { method: 'POST', body });
      json.show('POST /v1/ab (answer)', d);
      render(out, d, { a: v.baseline, b: v.variant });
      view.dataset.state = 'ready';
    } catch (e) {
      out.replaceChildren(errorBox(e));
      view.dataset.state = 'error';
    }
  });
  view.append(form, json.node, out);
  view.dataset.state = 'ready';
}
