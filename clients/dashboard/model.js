// clients/dashboard/model.js: one model: its job's description (what the
// traces are: the sample says it is synthetic), measured against replayed
// step time per rank and step, the spread between ranks when they differ,
// the breakdown, the critical path by bound, the work with the most time on
// it, scale controls that re-query the replay, the download of a rank's
// replayed timeline, its opportunities, a diff against another model and a
// link to its what-ifs.

import { ApiError, api, path } from './api.js';
import { bars, figure } from './charts.js';
import { diffSection } from './diff.js';
import { el, errorBox, ms, num, pct, table } from './dom.js';
import { opportunitiesTable } from './opportunities.js';
import { routeSection } from './routes.js';

const FACTORS = [0.25, 0.5, 0.75, 1, 1.5, 2, 3, 4];
// The sliders, each scaling what the replay's `scale=WHAT=F` names: GPU
// work, host work (runtime calls and host gaps), communication.
const SCALES = [
  { key: 'gpu', label: 'GPU work', what: ['gpu'] },
  { key: 'host', label: 'host work', what: ['call', 'host'] },
  { key: 'comm', label: 'communication', what: ['communication'] },
];
const TOP_WORK = 15;

const sleep = t => new Promise(r => setTimeout(r, t));

function stepLabel(s) {
  return `r${s.rank} ${s.step}`;
}

// Whether the server takes scale=WHAT=F for each WHAT of a slider (it
// answers 400 for one it lacks).
async function scaleSupported(id, what) {
  try {
    await api(path`/v1/models/${id}/replay`, { query: what.map(w => ['scale', `${w}=1`]) });
    return true;
  } catch (e) {
    if (e instanceof ApiError && e.status === 400) return false;
    throw e;
  }
}

// The critical path's segments summed by task name over every step.
function topWork(cp) {
  const by = new Map();
  for (const step of cp.steps)
    for (const seg of step.path || []) {
      const w = by.get(seg.task) || { name: seg.task, family: seg.family || null, bounds: new Set(), ms: 0, count: 0 };
      w.ms += seg.end_ms - seg.start_ms;
      w.count++;
      w.bounds.add(seg.bound);
      by.set(seg.task, w);
    }
  return [...by.values()].sort((a, b) => b.ms - a.ms).slice(0, TOP_WORK);
}

function boundTotals(cp) {
  const tot = new Map();
  let all = 0;
  for (const s of cp.steps)
    for (const [k, v] of Object.entries(s.by_bound || {})) {
      tot.set(k, (tot.get(k) || 0) + v);
      all += v;
    }
  return [...tot.entries()].map(([bound, v]) => ({ bound, ms: v, share: all ? (100 * v) / all : 0 }))
    .sort((a, b) => b.ms - a.ms);
}

function keysOf(objects) {
  const keys = [];
  for (const o of objects) for (const k of Object.keys(o || {})) if (!keys.includes(k)) keys.push(k);
  return keys;
}

// Each rank's steps: measured min, mean and max, replayed mean.
export function rankSpread(steps) {
  const by = new Map();
  for (const s of steps) by.set(s.rank, [...(by.get(s.rank) || []), s]);
  return [...by.entries()].sort((a, b) => a[0] - b[0]).map(([rank, list]) => {
    const m = list.map(s => s.measured_ms);
    return {
      rank, steps: list.length, min: Math.min(...m), max: Math.max(...m),
      mean: m.reduce((a, b) => a + b, 0) / m.length,
      replayed: list.reduce((a, s) => a + s.replayed_ms, 0) / list.length,
    };
  });
}

function spreadSection(part, replay) {
  const ranks = rankSpread(replay.steps);
  const means = ranks.map(r => r.mean);
  const lo = Math.min(...means), hi = Math.max(...means);
  if (ranks.length < 2 || hi - lo < 5e-4) {
    part.section.hidden = true;
    return;
  }
  part.section.hidden = false;
  part.note.replaceChildren(`The ranks' mean measured steps differ by ${num(hi - lo, 3)} ms ` +
    `(${num(100 * (hi - lo) / lo, 2)} % of the fastest): rank ${ranks[means.indexOf(hi)].rank} is the slowest, ` +
    'and a step ends when its slowest rank does.');
  part.table.replaceChildren(table([
    { title: 'rank', num: true, field: 'rank', cell: r => r.rank },
    { title: 'steps', num: true, cell: r => r.steps },
    { title: 'measured min ms', num: true, cell: r => ms(r.min) },
    { title: 'measured mean ms', num: true, field: 'mean', cell: r => ms(r.mean) },
    { title: 'measured max ms', num: true, cell: r => ms(r.max) },
    { title: 'replayed mean ms', num: true, field: 'replayed', cell: r => ms(r.replayed) },
  ], ranks, { id: 'rank-spread' }));
  const chart = bars(part.chart, ranks.map(r => `rank ${r.rank}`), [
    { label: 'measured (mean)', values: means },
    { label: 'replayed (mean)', values: ranks.map(r => r.replayed) },
  ], { yTitle: 'ms per step', xTitle: 'rank' });
  chart.options.scales.y.beginAtZero = false;
  chart.update();
}

function figures(parts, replay, cp) {
  const steps = replay.steps;
  const labels = steps.map(stepLabel);
  spreadSection(parts.spread, replay);
  parts.summary.replaceChildren(
    `${steps.length} steps; mean |error| ${pct(replay.mean_abs_error_pct)} %, max ${pct(replay.max_abs_error_pct)} %`);
  parts.steps.replaceChildren(table([
    { title: 'rank', num: true, field: 'rank', cell: s => s.rank },
    { title: 'step', field: 'step', cell: s => s.step },
    { title: 'measured ms', num: true, field: 'measured', cell: s => ms(s.measured_ms) },
    { title: 'replayed ms', num: true, field: 'replayed', cell: s => ms(s.replayed_ms) },
    { title: 'error %', num: true, field: 'error', cell: s => pct(s.error_pct) },
  ], steps, { id: 'steps' }));
  bars(parts.stepChart, labels, [
    { label: 'measured', values: steps.map(s => s.measured_ms) },
    { label: 'replayed', values: steps.map(s => s.replayed_ms) },
  ]);
  const kinds = keysOf(steps.map(s => s.breakdown));
  bars(parts.breakdownChart, labels,
    kinds.map(k => ({ label: k, values: steps.map(s => (s.breakdown || {})[k] || 0) })), { stacked: true });
  const bounds = keysOf(cp.steps.map(s => s.by_bound));
  bars(parts.boundChart, cp.steps.map(stepLabel),
    bounds.map(b => ({ label: b, values: cp.steps.map(s => (s.by_bound || {})[b] || 0) })), { stacked: true });
  parts.bounds.replaceChildren(table([
    { title: 'bound', cell: b => b.bound },
    { title: 'ms on the path (all steps)', num: true, cell: b => ms(b.ms) },
    { title: 'share %', num: true, cell: b => pct(b.share) },
  ], boundTotals(cp), { id: 'bounds' }));
  const work = topWork(cp);
  parts.work.replaceChildren(table([
    { title: 'name', field: 'name', cell: w => el('span', { class: 'name' }, w.name) },
    // the family of a kernel, where the server's critical path names one
    ...(work.some(w => w.family) ? [{ title: 'family', cell: w => w.family || '—' }] : []),
    { title: 'bound', cell: w => [...w.bounds].join(', ') },
    { title: 'ms on the path', num: true, field: 'ms', cell: w => ms(w.ms) },
    { title: 'segments', num: true, cell: w => w.count },
  ], work, { id: 'kernels' }));
}

function timelineDownload(id, n_ranks, scaleQuery) {
  const rank = el('select', { id: 'timeline-rank', 'aria-label': 'rank' },
    Array.from({ length: n_ranks }, (_, r) => el('option', { value: String(r) }, `rank ${r}`)));
  const status = el('span', { class: 'muted' });
  const button = el('button', {
    type: 'button',
    id: 'timeline-download',
    on: {
      click: async () => {
        status.replaceChildren('fetching…');
        try {
          const blob = await api(path`/v1/models/${id}/timeline`, { query: [['rank', rank.value], ...scaleQuery()], raw: true });
          const a = el('a', { href: URL.createObjectURL(blob), download: `${id}-rank${rank.value}-timeline.json` });
          document.body.append(a);
          a.click();
          a.remove();
          setTimeout(() => URL.revokeObjectURL(a.href), 60000);
          status.replaceChildren('downloaded: open it in Perfetto (ui.perfetto.dev)');
        } catch (e) {
          status.replaceChildren(errorBox(e));
        }
      },
    },
  }, 'Download the replayed timeline');
  return el('p', {}, rank, ' ', button, ' ', status);
}

export async function modelView(view, id) {
  let m = await api(path`/v1/models/${id}`);
  view.append(el('h1', {}, 'Model ', el('span', { class: 'name' }, m.id)));
  const info = el('p', { class: 'muted' });
  const about = el('p', { id: 'job-description', class: 'about' });
  view.append(info, about);
  while (m.status === 'building') {
    info.replaceChildren(`building: ${Math.round(100 * (m.progress || 0))} %`);
    await sleep(300);
    if (!view.isConnected) return;
    m = await api(path`/v1/models/${id}`);
  }
  info.replaceChildren('job ', el('a', { href: `#/jobs/${encodeURIComponent(m.job)}` }, m.job),
    `, ${m.n_ranks} ranks, ${m.status}, built by stepcast ${m.version} at ${m.finished || m.created}`);
  const job = await api(path`/v1/jobs/${m.job}`);
  if (job.description) about.replaceChildren(el('strong', {}, 'About these traces: '), job.description);
  else about.remove();
  if (m.status !== 'ready') {
    view.append(errorBox({ code: 'build failed', message: m.error || m.status }));
    return;
  }

  const state = Object.fromEntries(SCALES.map(s => [s.key, 1]));
  const scaleQuery = () => SCALES.filter(s => state[s.key] !== 1)
    .flatMap(s => s.what.map(w => ['scale', `${w}=${state[s.key]}`]));
  const parts = {
    summary: el('p', { id: 'summary' }),
    steps: el('div'),
    stepChart: el('canvas', { id: 'chart-steps' }),
    breakdownChart: el('canvas', { id: 'chart-breakdown' }),
    boundChart: el('canvas', { id: 'chart-bounds' }),
    bounds: el('div'),
    work: el('div'),
    spread: { section: null, note: el('p'), chart: el('canvas', { id: 'chart-rank-spread' }), table: el('div') },
  };
  parts.spread.section = el('section', { id: 'spread', hidden: true }, el('h2', {}, 'The ranks differ'),
    parts.spread.note, figure(parts.spread.chart, parts.spread.table));
  const problem = el('div');
  let seq = 0, timer = null;
  async function redraw() {
    const mine = ++seq;
    view.dataset.state = 'loading';
    try {
      const query = scaleQuery();
      const [replay, cp] = await Promise.all([
        api(path`/v1/models/${id}/replay`, { query }),
        api(path`/v1/models/${id}/critical-path`, { query }),
      ]);
      if (mine !== seq) return;
      figures(parts, replay, cp);
      problem.replaceChildren();
      view.dataset.scale = query.map(q => q[1]).join('&') || 'none';
      view.dataset.state = 'ready';
    } catch (e) {
      if (mine !== seq) return;
      problem.replaceChildren(errorBox(e));
      view.dataset.state = 'error';
    }
  }

  const controls = el('section', { id: 'scales', class: 'controls' }, el('h2', {}, 'Scale the replay'));
  const supported = await Promise.all(SCALES.map(s => scaleSupported(id, s.what)));
  SCALES.forEach((s, i) => {
    const shown = el('output', { for: `scale-${s.key}` }, '×1');
    const input = el('input', {
      type: 'range', id: `scale-${s.key}`, min: 0, max: FACTORS.length - 1, step: 1,
      value: String(FACTORS.indexOf(1)), disabled: !supported[i], 'aria-label': `scale ${s.label}`,
      on: {
        input: () => {
          state[s.key] = FACTORS[Number(input.value)];
          shown.replaceChildren(`×${state[s.key]}`);
          view.dataset.state = 'loading';
          clearTimeout(timer);
          timer = setTimeout(redraw, 200);
        },
      },
    });
    controls.append(el('label', { class: 'scale' }, el('span', {}, s.label), input, shown,
      supported[i] ? null : el('span', { class: 'muted' }, ' not available on this server')));
  });

  view.append(controls, problem,
    el('section', {}, el('h2', {}, 'Step time: measured and replayed'), parts.summary,
      el('div', { class: 'chart' }, parts.stepChart), parts.steps),
    parts.spread.section,
    el('section', {}, el('h2', {}, 'Where the step goes (replayed breakdown)'),
      el('div', { class: 'chart' }, parts.breakdownChart)),
    el('section', {}, el('h2', {}, 'Critical path by bound'),
      el('div', { class: 'chart' }, parts.boundChart), parts.bounds),
    el('section', {}, el('h2', {}, 'Work with the most time on the critical path'),
      el('p', { class: 'muted' }, 'Kernels, copies, collectives and host calls on the critical path of every replayed step.'),
      parts.work),
    el('section', {}, el('h2', {}, 'Replayed timeline'), timelineDownload(id, m.n_ranks, scaleQuery)));
  await redraw();
  view.append(
    el('section', { id: 'whatif-link' }, el('h2', {}, 'What-if'),
      el('p', {}, el('a', { href: `#/whatif/${encodeURIComponent(id)}` }, 'This model on another configuration'),
        ': its job\'s configuration, then what to change, before and after.')),
    await routeSection('Opportunities of this model', 'GET', '/v1/models/{id}/opportunities', { id }, opportunitiesTable),
    await diffSection(id));
}
