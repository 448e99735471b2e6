// tests/browser/dashboard.mjs: the dashboard in a real browser.
//
//   node tests/browser/dashboard.mjs [BUILD_DIR [SUBSTRING]]
//
// Starts build/stepcastd on 127.0.0.1 (a free port, a temp store), loads the
// sample job (with the description `make run` gives it) and a job whose
// kernel names and description are markup, then drives Debian's chromium
// (CHROMIUM, default /usr/bin/chromium) through playwright-core: log in,
// read the figures of a model and compare them with the API's, move a scale
// control, download a timeline; fill the Estimate, Plan, What-if, Ledger
// and Hardware forms with real inputs (a config.json of
// ../shared/models/hf, or STEPCAST_SHARED's; the sample job) and compare
// each chart's data points, read from the page's Chart.js objects, with
// the API's answer; compare two generated runs (build/gentrace) in the A/B
// view, create and close an experiment, rank the fleet with its filters;
// check that no raw JSON shows unless its toggle is on,
// that names from traces and requests stay text, that the keyboard alone
// reaches every control and every field has a label; open views of routes
// the server lacks. Each test saves a screenshot under
// BUILD_DIR/screenshots/. Ends with the runner's line `N passed, N
// failed`; a browser that cannot start fails every test.

import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { ADMIN, assert, call, launch, login, openPage, sleep, startDaemon } from './harness.mjs';

const BUILD = process.argv[2] || 'build';
const ONLY = process.argv[3]; // run only the tests whose name holds it
const SHOTS = join(BUILD, 'screenshots');
const SAMPLE = 'data/sample';
const SAMPLE_DESCRIPTION = readFileSync('data/sample-description.txt', 'utf8').trim();
const HF = join(process.env.STEPCAST_SHARED || '../shared', 'models/hf');
const HOSTILE_SOURCE = '<img src=x onerror="window.__pwned = \'ledger\'"> a run named in markup';
const HOSTILE_KERNELS = {
  ampere_sgemm_128x64_tn: '<script>window.__pwned = "script"</script>',
  'void at::native::vectorized_elementwise_kernel<4, at::native::relu>': '"><img src=x onerror="window.__pwned = \'img\'">',
};
const HOSTILE_DESCRIPTION = '<img src=x onerror="window.__pwned = \'description\'"> a job named in markup';
const HOSTILE_TEAM = '<img src=x onerror="window.__pwned = \'team\'">';
const HOSTILE_HYPOTHESIS = '<script>window.__pwned = "hypothesis"</script> the variant wins';
// The A/B runs (build/gentrace, as tests/integration/test_svc_ab.c makes
// them): two ranks, twelve steps; the variant's GPU work 1.3x longer; a
// third run whose first kernel of each step waits on nothing the trace
// shows (unexplained waits). Each job's description: [gentrace flags,
// description].
const RUNS = {
  'ab-base': [['--seed', '1'], { tags: { team: 'infra', cluster: 'west' } }],
  'ab-variant': [['--seed', '2', '--gpu-scale', '1.3'],
    { steps_per_day: 50000, gpu_hour_usd: 2.5, tags: { team: HOSTILE_TEAM, cluster: 'east' } }],
  'ab-waits': [['--seed', '3', '--gpu-delay', '400000'], { steps_per_day: 20000, tags: { team: 'infra', cluster: 'east' } }],
};

// The model view asks the server which scale kinds it takes; one it lacks
// answers 400, which the browser logs.
const PROBE = 'the server responded with a status of 400';

// ---- the jobs ----

async function buildModel(d, job) {
  const { model } = await call(d, 'POST', `/v1/jobs/${job}/models`);
  for (let i = 0; i < 500; i++) {
    const m = await call(d, 'GET', `/v1/models/${model}`);
    if (m.status === 'ready') return model;
    assert(m.status === 'building', `model ${model}: ${m.status} ${m.error}`);
    await sleep(20);
  }
  throw new Error(`model ${model} still building`);
}

function sampleRanks() {
  return ['rank0', 'rank1', 'rank2', 'rank3'].map(r => readFileSync(join(SAMPLE, `${r}.json.gz`)));
}

// The sample's ranks with two kernels renamed to markup.
function hostileRank(gz) {
  const doc = JSON.parse(gunzipSync(gz).toString('utf8'));
  let renamed = 0;
  for (const e of doc.traceEvents)
    if (e.cat === 'kernel' && HOSTILE_KERNELS[e.name]) {
      e.name = HOSTILE_KERNELS[e.name];
      renamed++;
    }
  assert(renamed > 0, 'the sample has none of the kernels to rename');
  return Buffer.from(JSON.stringify(doc));
}

async function loadJobs(d) {
  const ranks = sampleRanks();
  for (let r = 0; r < ranks.length; r++) await call(d, 'PUT', `/v1/jobs/sample/ranks/${r}/trace`, ranks[r]);
  await call(d, 'PUT', '/v1/jobs/sample', JSON.stringify({ description: SAMPLE_DESCRIPTION }),
    { 'Content-Type': 'application/json' });
  await call(d, 'PUT', '/v1/jobs/hostile', JSON.stringify({ description: HOSTILE_DESCRIPTION }),
    { 'Content-Type': 'application/json' });
  for (let r = 0; r < ranks.length; r++) await call(d, 'PUT', `/v1/jobs/hostile/ranks/${r}/trace`, hostileRank(ranks[r]));
  const models = { sample: await buildModel(d, 'sample'), hostile: await buildModel(d, 'hostile') };
  const gentrace = join(BUILD, 'gentrace');
  assert(existsSync(gentrace), `no ${gentrace}: make ${gentrace}`);
  const dir = mkdtempSync(join(tmpdir(), 'stepcast-runs-'));
  try {
    for (const [job, [flags, description]] of Object.entries(RUNS)) {
      execFileSync(gentrace, ['--ranks', '2', '--steps', '12', ...flags, '--gzip', join(dir, job)]);
      await call(d, 'PUT', `/v1/jobs/${job}`, JSON.stringify(description), { 'Content-Type': 'application/json' });
      for (let r = 0; r < 2; r++)
        await call(d, 'PUT', `/v1/jobs/${job}/ranks/${r}/trace`, readFileSync(join(dir, job, `rank${r}.json.gz`)));
      models[job] = await buildModel(d, job);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return models;
}

// ---- the page ----

async function shot(page, name) {
  await page.screenshot({ path: join(SHOTS, name), fullPage: true });
}

// The steps table as the page shows it.
async function pageSteps(page) {
  return page.$$eval('#steps tbody tr', rows => rows.map(r => {
    const f = n => r.querySelector(`[data-field=${n}]`).textContent;
    return { rank: f('rank'), step: f('step'), measured: f('measured'), replayed: f('replayed'), error: f('error') };
  }));
}

function apiSteps(doc) {
  return doc.steps.map(s => ({
    rank: String(s.rank), step: s.step, measured: s.measured_ms.toFixed(3), replayed: s.replayed_ms.toFixed(3),
    error: s.error_pct.toFixed(2),
  }));
}

async function openModel(page, d, model, scale = 'none') {
  await page.goto(`${d.url}/#/models/${model}`);
  await page.waitForSelector(`#view[data-state=ready][data-scale="${scale}"]`);
}

// ---- the tests ----

const tests = [];
const test = (name, fn) => tests.push({ name, fn });

test('login: the token prompt, then the jobs; the token stays out of URLs', async (ctx, page) => {
  const res = await page.goto(ctx.d.url + '/');
  const csp = res.headers()['content-security-policy'] || '';
  assert(csp.includes("script-src 'self'") && csp.includes("default-src 'none'"), `CSP: '${csp}'`);
  await page.waitForSelector('#login');
  await page.fill('#token', 'sct_0000000000000000000000000000000000000000');
  await page.click('#login button[type=submit]');
  await page.waitForSelector('#login .error');
  const refused = await page.textContent('#login .error');
  assert(refused.includes('unauthorized'), `a wrong token: '${refused}'`);
  await page.fill('#token', ADMIN);
  await page.click('#login button[type=submit]');
  await page.waitForSelector('#jobs');
  const jobs = await page.$$eval('#jobs tbody tr td:first-child', tds => tds.map(t => t.textContent));
  assert(jobs.includes('sample') && jobs.includes('hostile'), `jobs shown: ${jobs}`);
  const models = await page.textContent('#jobs');
  assert(models.includes(ctx.models.sample), 'the sample job\'s model is listed');
  assert(await page.evaluate(() => sessionStorage.getItem('stepcast.token')) === ADMIN, 'token in sessionStorage');
  assert(!ctx.page_requests_with_token(page), 'the token appeared in a URL');
  await shot(page, 'dashboard-jobs.png');
  page.assertClean(['401']);
});

test('job: its traces and models; building a model opens it', async (ctx, page) => {
  await login(page, ctx.d);
  await page.click('#jobs a[href="#/jobs/sample"]');
  await page.waitForSelector('#traces');
  const job = await call(ctx.d, 'GET', '/v1/jobs/sample');
  const shas = await page.$$eval('#traces tbody tr code', cs => cs.map(c => c.textContent));
  assert(JSON.stringify(shas) === JSON.stringify(job.traces.map(t => t.sha256.slice(0, 16))), `traces ${shas}`);
  const models = await page.$$eval('#models tbody a', as => as.map(a => a.textContent));
  assert(models.length === job.models.length, `models ${models}`);
  await shot(page, 'dashboard-job.png');
  await page.click('text=Build a model from the current traces');
  await page.waitForSelector('#view[data-view=models][data-state=ready]');
  const id = decodeURIComponent(page.url().split('#/models/')[1]);
  const m = await call(ctx.d, 'GET', `/v1/models/${id}`);
  assert(m.job === 'sample' && m.status === 'ready' && !job.models.some(x => x.id === id), `built ${id}`);
  await page.click('#logout');
  await page.waitForSelector('#login');
  assert(await page.evaluate(() => sessionStorage.getItem('stepcast.token')) === null, 'the token is forgotten');
  page.assertClean([PROBE]);
});

test('model: the step figures on the page are the API\'s', async (ctx, page) => {
  await login(page, ctx.d);
  await openModel(page, ctx.d, ctx.models.sample);
  const shown = await pageSteps(page);
  const want = apiSteps(await call(ctx.d, 'GET', `/v1/models/${ctx.models.sample}/replay`));
  assert(shown.length === want.length && want.length > 0, `${shown.length} rows shown, ${want.length} in the API`);
  assert(JSON.stringify(shown) === JSON.stringify(want), `page ${JSON.stringify(shown[0])} api ${JSON.stringify(want[0])}`);
  const kernels = await page.$$eval('#kernels tbody tr', rows => rows.length);
  assert(kernels > 0, 'the critical path\'s work is listed');
  const bounds = await page.$$eval('#bounds tbody tr td:first-child', tds => tds.map(t => t.textContent));
  const cp = await call(ctx.d, 'GET', `/v1/models/${ctx.models.sample}/critical-path`);
  const cpBounds = new Set(cp.steps.flatMap(s => Object.keys(s.by_bound)));
  assert(bounds.length === cpBounds.size && bounds.every(b => cpBounds.has(b)), `bounds ${bounds}`);
  for (const id of ['chart-steps', 'chart-breakdown', 'chart-bounds'])
    assert(await page.$eval(`#${id}`, c => c.width > 0 && c.height > 0), `${id} drawn`);
  await shot(page, 'dashboard-model.png');
  page.assertClean([PROBE]);
});

test('model: moving the GPU and communication scales re-queries and redraws', async (ctx, page) => {
  await login(page, ctx.d);
  await openModel(page, ctx.d, ctx.models.sample);
  const before = await pageSteps(page);
  await page.focus('#scale-gpu');
  await page.keyboard.press('ArrowRight'); // x1.5
  await page.keyboard.press('ArrowRight'); // x2
  await page.waitForSelector('#view[data-state=ready][data-scale="gpu=2"]');
  assert((await page.textContent('output[for=scale-gpu]')) === '×2', 'the control shows x2');
  const after = await pageSteps(page);
  const want = apiSteps(await call(ctx.d, 'GET', `/v1/models/${ctx.models.sample}/replay?scale=gpu=2`));
  assert(JSON.stringify(after) === JSON.stringify(want), 'the scaled figures are the API\'s');
  assert(after.some((s, i) => Number(s.replayed) > 1.05 * Number(before[i].replayed)), 'replayed steps grew');
  assert(after.every((s, i) => s.measured === before[i].measured), 'measured steps stay');
  // then communication x0.5: both scales go to the server
  await page.focus('#scale-comm');
  await page.keyboard.press('ArrowLeft'); // x0.75
  await page.keyboard.press('ArrowLeft'); // x0.5
  await page.waitForSelector('#view[data-state=ready][data-scale="gpu=2&communication=0.5"]');
  const both = await pageSteps(page);
  const wantBoth = apiSteps(await call(ctx.d, 'GET',
    `/v1/models/${ctx.models.sample}/replay?scale=gpu=2&scale=communication=0.5`));
  assert(JSON.stringify(both) === JSON.stringify(wantBoth), 'the figures of both scales are the API\'s');
  assert(both.some((s, i) => Number(s.replayed) < 0.98 * Number(after[i].replayed)), 'less communication, shorter steps');
  // host work: runtime calls and host gaps, enabled when the server takes both
  const res = await fetch(`${ctx.d.url}/v1/models/${ctx.models.sample}/replay?scale=call=1&scale=host=1`,
    { headers: { Authorization: `Bearer ${ADMIN}` } });
  const disabled = await page.$eval('#scale-host', i => i.disabled);
  assert(disabled === (res.status !== 200), `scale host: disabled ${disabled}, server ${res.status}`);
  await shot(page, 'dashboard-model-scaled.png');
  page.assertClean([PROBE]);
});

test('model: a rank\'s replayed timeline downloads as a Kineto trace', async (ctx, page) => {
  await login(page, ctx.d);
  await openModel(page, ctx.d, ctx.models.sample);
  await page.selectOption('#timeline-rank', '1');
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('#timeline-download')]);
  const file = await download.path();
  const doc = JSON.parse(readFileSync(file, 'utf8'));
  const want = await call(ctx.d, 'GET', `/v1/models/${ctx.models.sample}/timeline?rank=1`);
  assert(download.suggestedFilename() === `${ctx.models.sample}-rank1-timeline.json`, download.suggestedFilename());
  assert(doc.traceEvents.length > 0 && doc.traceEvents.length === want.traceEvents.length, 'the timeline\'s events');
  page.assertClean([PROBE]);
});

test('hostile names: markup from traces and requests is shown as text', async (ctx, page) => {
  await login(page, ctx.d);
  const description = await page.$$eval('#jobs tbody tr', rows => rows.map(r => r.children[1].textContent));
  assert(description.includes(HOSTILE_DESCRIPTION), 'the description is shown literally');
  await openModel(page, ctx.d, ctx.models.hostile);
  const names = await page.$$eval('#kernels [data-field=name]', tds => tds.map(t => t.textContent));
  for (const name of Object.values(HOSTILE_KERNELS))
    assert(names.includes(name), `'${name}' is listed as text (listed: ${names.slice(0, 4).join(' | ')})`);
  assert(await page.evaluate(() => window.__pwned === undefined), 'a script from a trace ran');
  assert(await page.evaluate(() => document.querySelectorAll('img, script:not([src])').length === 0),
    'an element from a trace was created');
  assert(!page.seen.requests.some(u => u.endsWith('/x')), 'an image from a trace was loaded');
  await shot(page, 'dashboard-hostile-names.png');
  page.assertClean([PROBE]);
});

test('opportunities: the fleet ranked, a model\'s opportunities as a table', async (ctx, page) => {
  await login(page, ctx.d);
  const fleet = await call(ctx.d, 'GET', '/v1/opportunities');
  await page.goto(`${ctx.d.url}/#/opportunities`);
  await page.waitForSelector('#fleet tbody tr');
  const jobs = await page.$$eval('#fleet [data-field=job]', tds => tds.map(t => t.textContent));
  assert(jobs.length === fleet.jobs.length && jobs.every((j, i) => j === fleet.jobs[i].job),
    `the fleet's jobs in the server's order (${jobs.join(', ')})`);
  await shot(page, 'dashboard-fleet-opportunities.png');
  const model = fleet.jobs[0].model;
  const doc = await call(ctx.d, 'GET', `/v1/models/${model}/opportunities`);
  await openModel(page, ctx.d, model);
  await page.waitForSelector('#opportunities tbody tr');
  const changes = await page.$$eval('#opportunities [data-field=change]', tds => tds.map(t => t.textContent));
  assert(changes.length === doc.opportunities.length && changes[0] === doc.opportunities[0].change,
    `the model's opportunities, largest saving first (${changes.slice(0, 3).join(', ')})`);
  page.assertClean();
});

// ---- the views of forms and charts ----

// A chart's labels and datasets as the page's Chart.js object holds them.
async function chartData(page, id) {
  return page.$eval(`#${id}`, c => {
    const ch = window.Chart.getChart(c);
    return ch ? {
      labels: ch.data.labels || [], type: ch.config.type,
      scales: Object.fromEntries(Object.entries(ch.options.scales || {}).map(([k, v]) => [k, { type: v.type, title: v.title && v.title.text }])),
      datasets: ch.data.datasets.map(d => ({ label: d.label, data: d.data, color: d.backgroundColor, type: d.type })),
    } : null;
  });
}

function dataset(chart, label) {
  const d = chart.datasets.find(x => x.label === label);
  assert(d, `no dataset '${label}' (have: ${chart.datasets.map(x => x.label).join(', ')})`);
  return d.data;
}

function near(a, b, what, tol = 1e-6) {
  assert(typeof a === 'number' && typeof b === 'number' && Math.abs(a - b) <= tol * Math.max(1, Math.abs(b)),
    `${what}: page ${a}, API ${b}`);
}

// A figure as the page writes it with 3 decimals (dom.js num).
const num3 = x => x.toLocaleString('en-US', { minimumFractionDigits: 3, maximumFractionDigits: 3 });

// Okabe and Ito's colours: every chart's datasets draw in them.
const OKABE_ITO = ['#0072B2', '#E69F00', '#009E73', '#D55E00', '#56B4E9', '#CC79A7', '#F0E442', '#000000'];

function checkChart(chart, id) {
  assert(chart, `${id}: not drawn`);
  for (const d of chart.datasets) assert(OKABE_ITO.includes(d.color), `${id}: '${d.label}' in ${d.color}`);
  for (const [axis, s] of Object.entries(chart.scales))
    if (axis === 'y' || axis === 'x') assert(!s.title || /\S/.test(s.title), `${id}: axis ${axis} untitled`);
}

// No answer shows as JSON text unless the view's JSON toggle is on.
async function noRawJson(page) {
  const shown = await page.evaluate(() => {
    const visible = e => e.offsetParent !== null || e.getClientRects().length > 0;
    const pres = [...document.querySelectorAll('#view pre.json')].filter(visible).length;
    const text = [...document.querySelectorAll('#view section, #view > p, #view table')]
      .filter(e => !e.closest('form')).map(e => e.innerText).join('\n');
    return { pres, json: /\{\s*"[a-z_]+"\s*:/.test(text) };
  });
  assert(shown.pres === 0 && !shown.json, `raw JSON shown without the toggle: ${JSON.stringify(shown)}`);
}

async function toggleJson(page, prefix, needle) {
  await page.setChecked(`#${prefix}-json-toggle`, true);
  const text = await page.textContent(`#${prefix}-json`);
  assert(await page.isVisible(`#${prefix}-json pre.json`) && text.includes(needle), `JSON toggle of ${prefix}`);
  await page.setChecked(`#${prefix}-json-toggle`, false);
  assert(!(await page.isVisible(`#${prefix}-json pre.json`)), `${prefix}: JSON stays after the toggle is off`);
}

// What every view's test ends with: no raw JSON until the toggle shows
// NEEDLE, a screenshot, the keyboard's reach, a clean page.
async function viewChecked(page, prefix, needle, shotName, allowErrors = []) {
  await noRawJson(page);
  await toggleJson(page, prefix, needle);
  await shot(page, shotName);
  await keyboardOnly(page);
  page.assertClean(allowErrors);
}

// Every field has a label; Tab alone reaches every control of the page.
async function keyboardOnly(page) {
  const unlabelled = await page.evaluate(() => [...document.querySelectorAll('input, select, textarea')]
    .filter(i => i.type !== 'hidden' && !(i.labels && i.labels.length) && !i.getAttribute('aria-label') &&
      !i.getAttribute('aria-labelledby')).map(i => i.id || i.name || i.outerHTML.slice(0, 60)));
  assert(!unlabelled.length, `fields without a label: ${unlabelled.join(', ')}`);
  const total = await page.evaluate(() => {
    const all = [...document.querySelectorAll('a[href], button, input, select, textarea, summary')]
      .filter(e => !e.disabled && (e.offsetParent !== null || e.getClientRects().length > 0));
    all.forEach((e, i) => { e.dataset.kb = String(i); });
    document.activeElement && document.activeElement.blur();
    return all.length;
  });
  const reached = new Set();
  // a date field takes a Tab per part (month, day, year)
  for (let i = 0; i < 3 * total + 5 && reached.size < total; i++) {
    await page.keyboard.press('Tab');
    const k = await page.evaluate(() => document.activeElement && document.activeElement.dataset.kb);
    if (k !== undefined && k !== null) reached.add(k);
  }
  const missed = await page.evaluate(seen => [...document.querySelectorAll('[data-kb]')]
    .filter(e => !seen.includes(e.dataset.kb)).map(e => e.id || e.textContent.slice(0, 30)), [...reached]);
  assert(!missed.length, `the keyboard does not reach: ${missed.slice(0, 8).join(' | ')} (${reached.size} of ${total})`);
}

function hfConfig(name) {
  const file = join(HF, name);
  if (!existsSync(file)) return null;
  return readFileSync(file, 'utf8');
}

// The body of the first request to `path` the page makes while `act` runs.
async function requestBody(page, method, path, act) {
  const [req] = await Promise.all([
    page.waitForRequest(r => r.method() === method && new URL(r.url()).pathname === path, { timeout: 60000 }),
    act(),
  ]);
  return req.postData();
}

test('estimate: a config.json and a layout; the charts are the API\'s figures', async (ctx, page) => {
  const config = hfConfig('llama-3.1-8b.json');
  if (!config) return console.log(`     skipped: no ${HF}/llama-3.1-8b.json`);
  await login(page, ctx.d);
  await page.goto(`${ctx.d.url}/#/estimate`);
  await page.waitForSelector('#estimate-form');
  await noRawJson(page);
  await page.fill('#estimate-hf_config', config);
  await page.fill('#estimate-tp', '2');
  await page.fill('#estimate-pp', '2');
  await page.fill('#estimate-dp', '2');
  await page.fill('#estimate-global_batch', '63');
  await page.selectOption('#estimate-gpu', 'h100-sxm');
  // a batch that micro-batch x dp does not divide: said beside the field, nothing sent
  let sent = false;
  const spy = r => { if (r.url().endsWith('/v1/estimate')) sent = true; };
  page.on('request', spy);
  await page.click('#estimate-submit');
  const message = await page.textContent('#estimate-global_batch-msg');
  assert(message.includes('multiple of micro-batch x dp') && !sent, `validation: '${message}', sent ${sent}`);
  page.off('request', spy);
  await page.fill('#estimate-global_batch', '64');
  const body = JSON.parse(await requestBody(page, 'POST', '/v1/estimate', () => page.click('#estimate-submit')));
  await page.waitForSelector('#view[data-state=ready]');
  const hf = await call(ctx.d, 'POST', '/v1/specs/from-hf', config, { 'Content-Type': 'application/json' });
  assert(JSON.stringify(body.model) === JSON.stringify(hf.model), 'the spec\'s model is the server\'s reading of the config');
  assert(body.parallel.tp === 2 && body.parallel.pp === 2 && body.parallel.dp === 2 && body.parallel.global_batch === 64 &&
    body.cluster.gpu === 'h100-sxm', `the spec sent: ${JSON.stringify(body.parallel)}`);
  const e = await call(ctx.d, 'POST', '/v1/estimate', JSON.stringify(body), { 'Content-Type': 'application/json' });
  // the breakdown
  const br = await chartData(page, 'chart-estimate-breakdown');
  checkChart(br, 'breakdown');
  for (const [key, label] of [['compute_exposed', 'compute alone'], ['overlap', 'compute and communication overlapped'],
    ['comm_exposed', 'communication exposed'], ['host', 'host'], ['idle', 'idle']])
    near(dataset(br, label)[0], e.breakdown[key], `breakdown ${key}`);
  // per stage, busy and bubble
  const st = await chartData(page, 'chart-estimate-stages');
  checkChart(st, 'stages');
  assert(st.labels.length === e.per_stage.length && e.per_stage.length === 2, `stages: ${st.labels}`);
  e.per_stage.forEach((s, i) => {
    near(dataset(st, 'bubble')[i], s.bubble_ms, `stage ${i} bubble`);
    near(dataset(st, 'busy')[i] + dataset(st, 'bubble')[i], s.step_ms, `stage ${i} step`);
  });
  // memory stacked against the usable memory
  const mem = await chartData(page, 'chart-estimate-memory');
  checkChart(mem, 'memory');
  e.per_stage.forEach((s, i) => {
    for (const [k, label] of [['weights_gb', 'weights'], ['gradients_gb', 'gradients'], ['optimizer_gb', 'optimizer state'],
      ['activations_gb', 'activations']])
      near(dataset(mem, label)[i], s.memory[k], `stage ${i} ${k}`);
    near(dataset(mem, 'usable memory')[i], e.memory_usable_gb, 'usable memory');
  });
  assert(mem.scales.y.title.includes('GB'), `memory axis: ${mem.scales.y.title}`);
  // tokens/s, MFU, cost, energy
  for (const [key, value] of [['tokens_per_s', e.tokens_per_s], ['mfu', 100 * e.mfu],
    ['cost_usd_per_m_tokens', e.cost_usd_per_m_tokens], ['energy_kwh_per_m_tokens', e.energy_kwh_per_m_tokens]]) {
    const c = await chartData(page, `chart-metric-${key}`);
    checkChart(c, key);
    near(dataset(c, 'estimate')[0], value, key);
  }
  const bandNote = await page.textContent('#view');
  assert(e.band.needed ? bandNote.includes('No band yet') : bandNote.includes('80 %'), 'the band is said');
  // ten measured runs of this spec in the ledger: the figures get their band
  for (let i = 0; i < 10; i++)
    await call(ctx.d, 'POST', '/v1/validations', JSON.stringify({ spec: body, measured_step_ms: e.step_ms * (0.9 + 0.03 * i),
      source: `run ${i}`, run_at: '2026-11-15' }), { 'Content-Type': 'application/json' });
  await page.click('#estimate-submit');
  await page.waitForSelector('#view[data-state=ready]');
  const banded = await call(ctx.d, 'POST', '/v1/estimate', JSON.stringify(body), { 'Content-Type': 'application/json' });
  assert(typeof banded.band.ratio_lo === 'number', `the API's band: ${JSON.stringify(banded.band)}`);
  const { ratio_lo: lo, ratio_hi: hi } = banded.band;
  for (const [key, value, dir] of [['step_ms', banded.step_ms, 1], ['tokens_per_s', banded.tokens_per_s, -1],
    ['mfu', 100 * banded.mfu, -1], ['cost_usd_per_m_tokens', banded.cost_usd_per_m_tokens, 1],
    ['energy_kwh_per_m_tokens', banded.energy_kwh_per_m_tokens, 1]]) {
    const c = await chartData(page, `chart-metric-${key}`);
    const [a, b] = dataset(c, '80 % band')[0];
    near(a, dir > 0 ? value * lo : value / hi, `${key} band low`);
    near(b, dir > 0 ? value * hi : value / lo, `${key} band high`);
  }
  near(banded.band.lo_ms, banded.step_ms * lo, 'the step\'s band is the ratios\'');
  await viewChecked(page, 'estimate', '"per_stage"', 'dashboard-estimate.png');
});

test('plan: ranked, sortable, the scatter\'s marks and Pareto front, the top row\'s Megatron arguments', async (ctx, page) => {
  const config = hfConfig('llama-3.1-8b.json');
  if (!config) return console.log(`     skipped: no ${HF}/llama-3.1-8b.json`);
  await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: ctx.d.url });
  await login(page, ctx.d);
  await page.goto(`${ctx.d.url}/#/plan`);
  await page.waitForSelector('#plan-form');
  await page.fill('#plan-hf_config', config);
  await page.fill('#plan-gpus', '32');
  await page.fill('#plan-top', '40');
  await page.selectOption('#plan-objective', 'cost');
  const [res] = await Promise.all([
    page.waitForResponse(r => r.request().method() === 'POST' && r.url().endsWith('/v1/plans')),
    page.click('#plan-submit'),
  ]);
  const first = await res.json();
  await page.waitForSelector('#view[data-state=ready]', { timeout: 120000 });
  const doc = first.top ? first : await call(ctx.d, 'GET', `/v1/plans/${first.id}`);
  assert(doc.top.length > 1, `${doc.top.length} rows`);
  const steps = await page.$$eval('#plan-rows tbody [data-field=step_ms]', tds => tds.map(t => t.textContent));
  assert(JSON.stringify(steps) === JSON.stringify(doc.top.map(r => r.estimate.step_ms.toLocaleString('en-US',
    { minimumFractionDigits: 2, maximumFractionDigits: 2 }))), `the rows in the API's order: ${steps.slice(0, 3)}`);
  const marks = await page.$$eval('#plan-rows tbody [data-field=extrapolated]', tds => tds.map(t => t.textContent));
  doc.top.forEach((r, i) => assert(marks[i].startsWith(r.extrapolated ? 'extrapolated' : 'within'), `row ${i + 1} mark`));
  const bands = await page.$$eval('#plan-rows tbody [data-field=band]', tds => tds.map(t => t.textContent));
  doc.top.forEach((r, i) => assert(r.band ? bands[i].includes('…') : bands[i] === 'none', `row ${i + 1} band '${bands[i]}'`));
  // the scatter: cost against GPUs, one mark a row, and the front
  await page.selectOption('#plan-y', 'cost');
  const sc = await chartData(page, 'chart-plan');
  checkChart(sc, 'plan');
  const marksShown = [...dataset(sc, 'configuration'), ...dataset(sc, 'extrapolated')];
  assert(marksShown.length === doc.top.length, `${marksShown.length} marks for ${doc.top.length} rows`);
  for (const [i, r] of doc.top.entries()) {
    const m = marksShown.find(p => p.rank === i + 1);
    assert(m && m.x === r.estimate.gpus && m.y === r.estimate.cost_usd_per_m_tokens, `row ${i + 1}'s mark`);
  }
  let best = Infinity;
  const front = doc.top.map(r => ({ x: r.estimate.gpus, y: r.estimate.cost_usd_per_m_tokens }))
    .sort((a, b) => a.x - b.x || a.y - b.y).filter(p => (p.y < best ? ((best = p.y), true) : false));
  const shownFront = dataset(sc, 'Pareto front').map(p => [p.x, p.y]);
  assert(JSON.stringify(shownFront) === JSON.stringify(front.map(p => [p.x, p.y])), `front ${JSON.stringify(shownFront)}`);
  assert(new Set(doc.top.map(r => r.estimate.gpus)).size > 1, 'up-to planned several GPU counts');
  // sorted by step time from its header
  await page.click('#plan-rows th[data-key=step_ms] button');
  const sorted = await page.$$eval('#plan-rows tbody [data-field=step_ms]', tds => tds.map(t => Number(t.textContent.replace(/,/g, ''))));
  assert(sorted.every((x, i) => !i || sorted[i - 1] <= x), `sorted by step time: ${sorted.slice(0, 5)}`);
  assert(await page.getAttribute('#plan-rows th[data-key=step_ms]', 'aria-sort') === 'ascending', 'aria-sort');
  // the top row's Megatron arguments, copied
  const args = await page.textContent('#megatron-args');
  assert(args === doc.top[0].megatron_args, 'the top row\'s arguments are the API\'s');
  for (const a of ['--tensor-model-parallel-size', '--pipeline-model-parallel-size', '--context-parallel-size',
    '--micro-batch-size', '--global-batch-size'])
    assert(args.includes(a), `arguments lack ${a}`);
  await page.click('#megatron-copy');
  await page.waitForSelector('text=Copied.');
  assert(await page.evaluate(() => navigator.clipboard.readText()) === args, 'the clipboard holds the arguments');
  await noRawJson(page);
  await toggleJson(page, 'plan', '"megatron_args"');
  await shot(page, 'dashboard-plan.png');
  page.assertClean();
});

test('plan: the keyboard reaches every control; fields have labels', async (ctx, page) => {
  await login(page, ctx.d);
  await page.goto(`${ctx.d.url}/#/plan`);
  await page.waitForSelector('#plan-form');
  await keyboardOnly(page);
  page.assertClean();
});

test('what-if: the job\'s configuration saved from its form, then before and after by part', async (ctx, page) => {
  await login(page, ctx.d);
  await page.goto(`${ctx.d.url}/#/whatif`);
  await page.click(`#whatif-models-list a[href="#/whatif/${ctx.models.sample}"]`);
  await page.waitForSelector('#config-form');
  await page.waitForSelector('text=Save the job\'s configuration first');
  await page.fill('#config-tp', '1');
  await page.fill('#config-pp', '1');
  await page.fill('#config-dp', '0');
  await page.click('#config-submit');
  assert((await page.textContent('#config-dp-msg')).length > 0, 'dp 0 is refused beside its field');
  await page.fill('#config-dp', '4');
  await page.fill('#config-layers', '8');
  await page.click('#config-submit');
  await page.waitForSelector('#job-config .saved');
  const job = await call(ctx.d, 'GET', '/v1/jobs/sample');
  assert(JSON.stringify(job.config) === JSON.stringify({ dp: 4, layers: 8, pp: 1, tp: 1 }), `config ${JSON.stringify(job.config)}`);
  assert(job.description === SAMPLE_DESCRIPTION, 'the job\'s description stays');
  assert(await page.inputValue('#whatif-dp') === '8', 'the change starts at twice the traced dp');
  const body = JSON.parse(await requestBody(page, 'POST', `/v1/models/${ctx.models.sample}/whatif`,
    () => page.click('#whatif-submit')));
  await page.waitForSelector('#view[data-state=ready]');
  assert(JSON.stringify(body) === JSON.stringify({ set: { dp: 8 } }), `sent ${JSON.stringify(body)}`);
  const w = await call(ctx.d, 'POST', `/v1/models/${ctx.models.sample}/whatif`, JSON.stringify(body));
  const replay = await call(ctx.d, 'GET', `/v1/models/${ctx.models.sample}/replay`);
  const mean = (steps, k) => steps.reduce((a, s) => a + (s.breakdown[k] || 0), 0) / steps.length;
  const c = await chartData(page, 'chart-whatif');
  checkChart(c, 'whatif');
  const parts = ['compute_exposed', 'overlap', 'comm_exposed', 'unexplained', 'host', 'idle'];
  assert(w.breakdown_sources && parts.every(k => w.breakdown_sources[k]), 'the API says where each part came from');
  const sources = await page.$$eval('#whatif-parts [data-field=source]', tds => tds.map(t => t.textContent));
  parts.forEach((k, i) => {
    near(dataset(c, 'before (replayed as traced)')[i], mean(replay.steps, k), `before ${k}`);
    const after = mean(w.steps, k), share = w.breakdown_sources[k].modelled_share;
    const [measured, modelled, none] = ['after: measured', 'after: modelled', 'after: idle (no work)']
      .map(l => dataset(c, l)[i]);
    near(measured + modelled + none, after, `after ${k}`);
    near(modelled, share === null ? 0 : after * share, `after ${k}, modelled`);
    near(none, share === null ? after : 0, `after ${k}, no work`);
    assert(sources[i] === w.breakdown_sources[k].source, `${k}: source '${sources[i]}'`);
  });
  // dp 4 -> 8 re-times the data-parallel collectives and keeps the kernels
  assert(w.breakdown_sources.comm_exposed.modelled_share > 0 && w.breakdown_sources.compute_exposed.source === 'measured',
    `sources ${JSON.stringify(w.breakdown_sources)}`);
  const src = await chartData(page, 'chart-whatif-source');
  near(dataset(src, 'from measurement')[0], w.from_measured_ms, 'from measurement');
  near(dataset(src, 'from models')[0], w.from_models_ms, 'from models');
  const models = await page.$$eval('#whatif-models [data-field=model]', tds => tds.map(t => t.textContent));
  assert(JSON.stringify(models) === JSON.stringify(w.models_used.map(m => m.model)), `models ${models}`);
  await viewChecked(page, 'whatif', '"from_models_ms"', 'dashboard-whatif.png');
});

test('what-if: the description\'s every key saved from its form and shown again; a set sends its choices', async (ctx, page) => {
  const json = { 'Content-Type': 'application/json' };
  const want = { tp: 1, pp: 1, dp: 4, layers: 8, hidden: 1024, heads: 16, kv_heads: 4, ffn: 4096, seq: 1024,
    vocab: 50304, cp: 1, ep: 2, etp: 1, gpus_per_node: 4, zero_stage: 1, mlp: 'swiglu', sequence_parallel: false,
    recompute: 'full', moe: { experts: 16, top_k: 2, ffn: 1024, shared_experts: 0 } };
  await login(page, ctx.d);
  await page.goto(`${ctx.d.url}/#/whatif/${ctx.models.sample}`);
  await page.waitForSelector('#config-form');
  for (const [k, v] of Object.entries(want)) {
    if (k === 'moe') for (const [m, n] of Object.entries(v)) await page.fill(`#config-moe_${m}`, String(n));
    else if (typeof v === 'number' && k !== 'zero_stage') await page.fill(`#config-${k}`, String(v));
    else await page.selectOption(`#config-${k}`, String(v));
  }
  await page.click('#config-submit');
  await page.waitForSelector('#job-config .saved');
  const job = await call(ctx.d, 'GET', '/v1/jobs/sample');
  const sorted = o => JSON.stringify(o, Object.keys({ ...o, ...o.moe, ...o.mla }).sort());
  assert(sorted(job.config) === sorted(want), `config ${JSON.stringify(job.config)}`);
  // read back: the form shows what the job holds
  await page.reload();
  await page.waitForSelector('#config-form');
  assert(await page.inputValue('#config-moe_experts') === '16' && await page.inputValue('#config-kv_heads') === '4',
    'the saved MoE and GQA fields are shown');
  assert(await page.inputValue('#config-recompute') === 'full' && await page.inputValue('#config-mlp') === 'swiglu' &&
    await page.inputValue('#config-sequence_parallel') === 'false', 'the saved choices are shown');
  // a field left empty is taken out of the description (moe with it)
  for (const m of ['experts', 'top_k', 'ffn', 'shared_experts']) await page.fill(`#config-moe_${m}`, '');
  await page.selectOption('#config-recompute', '');
  await page.click('#config-submit');
  await page.waitForSelector('#job-config .saved');
  const cleared = (await call(ctx.d, 'GET', '/v1/jobs/sample')).config;
  assert(cleared.moe === undefined && cleared.recompute === undefined && cleared.kv_heads === 4,
    `config ${JSON.stringify(cleared)}`);
  // latent attention (its key/value heads are the heads): saved, shown again, taken out
  const mla = { kv_lora_rank: 512, q_lora_rank: 1536, qk_head_dim: 128, qk_pos_emb_head_dim: 64, v_head_dim: 128 };
  await page.fill('#config-kv_heads', '');
  for (const [m, n] of Object.entries(mla)) await page.fill(`#config-mla_${m}`, String(n));
  await page.click('#config-submit');
  await page.waitForSelector('#job-config .saved');
  const latent = (await call(ctx.d, 'GET', '/v1/jobs/sample')).config;
  assert(JSON.stringify(latent.mla, Object.keys(mla).sort()) === JSON.stringify(mla, Object.keys(mla).sort()) &&
    latent.kv_heads === undefined, `config ${JSON.stringify(latent)}`);
  await page.reload();
  await page.waitForSelector('#config-form');
  assert(await page.inputValue('#config-mla_kv_lora_rank') === '512' &&
    await page.inputValue('#config-mla_qk_pos_emb_head_dim') === '64', 'the saved latent attention fields are shown');
  for (const m of Object.keys(mla)) await page.fill(`#config-mla_${m}`, '');
  await page.click('#config-submit');
  await page.waitForSelector('#job-config .saved');
  assert((await call(ctx.d, 'GET', '/v1/jobs/sample')).config.mla === undefined, 'mla taken out');
  // the sample's own description again, then a what-if that sets a choice
  await call(ctx.d, 'PUT', '/v1/jobs/sample', JSON.stringify({ config: { tp: 1, pp: 1, dp: 4, layers: 8 },
    description: SAMPLE_DESCRIPTION }), json);
  await page.reload();
  await page.waitForSelector('#whatif-form');
  await page.selectOption('#whatif-zero_stage', '1');
  await page.selectOption('#whatif-sequence_parallel', 'true');
  const body = JSON.parse(await requestBody(page, 'POST', `/v1/models/${ctx.models.sample}/whatif`,
    () => page.click('#whatif-submit')));
  await page.waitForSelector('#view[data-state=ready]');
  assert(JSON.stringify(body) === JSON.stringify({ set: { dp: 8, zero_stage: 1, sequence_parallel: true } }),
    `sent ${JSON.stringify(body)}`);
  page.assertClean();
});

test('ledger: predicted against measured, log-log with y = x; MAPE by kind and month; names stay text', async (ctx, page) => {
  const config = hfConfig('llama-3.1-8b.json');
  if (!config) return console.log(`     skipped: no ${HF}/llama-3.1-8b.json`);
  const json = { 'Content-Type': 'application/json' };
  const { model } = await call(ctx.d, 'POST', '/v1/specs/from-hf', config, json);
  const spec = { model, parallel: { tp: 2, pp: 2, dp: 2, global_batch: 64 }, cluster: { gpu: 'h100-sxm' } };
  await call(ctx.d, 'PUT', '/v1/jobs/sample', JSON.stringify({ config: { tp: 1, pp: 1, dp: 4, layers: 8 },
    description: SAMPLE_DESCRIPTION }), json);
  const add = v => call(ctx.d, 'POST', '/v1/validations', JSON.stringify(v), json);
  await add({ spec, measured_step_ms: 8000, source: HOSTILE_SOURCE, run_at: '2026-10-03' });
  await add({ spec: { ...spec, cluster: { gpu: 'a100-sxm4-80gb' } }, measured_step_ms: 21000, run_at: '2026-11-20' });
  await add({ model: ctx.models.sample, measured_step_ms: 18.5, run_at: '2026-11-01' });
  await add({ model: ctx.models.sample, set: { dp: 8 }, measured_step_ms: 21, run_at: '2026-11-02' });
  await login(page, ctx.d);
  await page.goto(`${ctx.d.url}/#/ledger`);
  await page.waitForSelector('#view[data-state=ready] #chart-ledger');
  const doc = await call(ctx.d, 'GET', '/v1/validations');
  const c = await chartData(page, 'chart-ledger');
  checkChart(c, 'ledger');
  assert(c.scales.x.type === 'logarithmic' && c.scales.y.type === 'logarithmic', 'log-log');
  const points = c.datasets.filter(d => !/^y = x$| band, /.test(d.label)).flatMap(d => d.data);
  const scored = doc.entries.filter(e => typeof e.predicted_step_ms === 'number');
  assert(points.length === scored.length && scored.length >= 4, `${points.length} marks, ${scored.length} entries`);
  for (const e of scored) {
    const p = points.find(q => q.id === e.id);
    assert(p && p.x === e.predicted_step_ms && p.y === e.measured_step_ms, `entry ${e.id}'s mark`);
  }
  const yx = dataset(c, 'y = x');
  assert(yx.length === 2 && yx.every(p => p.x === p.y), 'the y = x line');
  const labels = c.datasets.map(d => d.label);
  assert(labels.includes('h100-sxm, estimate') && labels.includes('a100-sxm4-80gb, estimate') &&
    labels.includes('the traced GPU, replay') && labels.includes('the traced GPU, whatif'), `series ${labels}`);
  for (const [id, key] of [['chart-mape-kind', 'by_kind'], ['chart-mape-month', 'by_month']]) {
    const m = await chartData(page, id);
    checkChart(m, id);
    const want = Object.keys(doc[key]).sort();
    assert(JSON.stringify(m.labels) === JSON.stringify(want), `${id}: ${m.labels}`);
    want.forEach((k, i) => near(dataset(m, 'MAPE')[i], doc[key][k].mape_pct, `${key} ${k}`));
  }
  const sources = await page.$$eval('#ledger-entries [data-field=source]', tds => tds.map(t => t.textContent));
  assert(sources.includes(HOSTILE_SOURCE), 'the hostile source is shown as text');
  assert(await page.evaluate(() => window.__pwned === undefined && !document.querySelector('#view img')), 'markup ran');
  await noRawJson(page);
  await toggleJson(page, 'ledger', '"by_month"');
  await shot(page, 'dashboard-ledger.png');
  // more entries than a page (100): the view follows next_cursor and
  // shows every one of them (before, the first 100)
  for (let i = 0; i < 100; i++)
    await add({ model: ctx.models.sample, measured_step_ms: 18 + i / 100, run_at: '2026-11-03' });
  const first = await call(ctx.d, 'GET', '/v1/validations');
  assert(first.entries.length === 100 && first.next_cursor, 'the list is paged');
  await page.click('#ledger-submit');
  await page.waitForFunction(n => document.querySelectorAll('#ledger-entries tbody tr').length === n,
    scored.length + 100, { timeout: 10000 });
  // one kind: the form asks the server again
  const estimates = scored.filter(e => e.kind === 'estimate').length;
  await page.selectOption('#ledger-kind', 'estimate');
  await page.click('#ledger-submit');
  await page.waitForFunction(n => document.querySelectorAll('#ledger-entries tbody tr').length === n, estimates);
  await keyboardOnly(page);
  page.assertClean();
});

test('hardware: the profiles with their sources; a filter', async (ctx, page) => {
  await login(page, ctx.d);
  await page.goto(`${ctx.d.url}/#/hardware`);
  await page.waitForSelector('#hardware tbody tr');
  const { hardware } = await call(ctx.d, 'GET', '/v1/hardware');
  const ids = await page.$$eval('#hardware [data-field=id]', tds => tds.map(t => t.textContent));
  assert(JSON.stringify(ids) === JSON.stringify(hardware.map(h => h.id)), `ids ${ids}`);
  const h100 = hardware.find(h => h.id === 'h100-sxm');
  assert(h100.sources && Object.keys(h100.sources).length > 0, 'the API gives the profile\'s sources');
  const sources = await page.$$eval('#hardware-sources tbody tr', trs => trs.map(tr =>
    ['id', 'figure', 'source'].map(f => tr.querySelector(`[data-field=${f}]`).textContent)));
  const want = hardware.flatMap(h => Object.entries(h.sources || {}).map(([k, v]) => [h.id, k, String(v)]));
  assert(JSON.stringify(sources) === JSON.stringify(want), `${sources.length} sources shown, ${want.length} in the API`);
  await page.selectOption('#hardware-architecture', 'hopper');
  await page.click('#hardware-submit');
  const hopper = await page.$$eval('#hardware [data-field=id]', tds => tds.map(t => t.textContent));
  assert(JSON.stringify(hopper) === JSON.stringify(hardware.filter(h => h.architecture === 'hopper').map(h => h.id)),
    `hopper: ${hopper}`);
  await viewChecked(page, 'hardware', '"sources"', 'dashboard-hardware.png');
});

test('model: the sample says it is synthetic; the ranks\' spread; a diff names kernels as text', async (ctx, page) => {
  await login(page, ctx.d);
  await openModel(page, ctx.d, ctx.models.sample);
  const about = await page.textContent('#job-description');
  assert(about.includes(SAMPLE_DESCRIPTION) && /synthetic/i.test(about), `about: '${about}'`);
  const replay = await call(ctx.d, 'GET', `/v1/models/${ctx.models.sample}/replay`);
  const ranks = [...new Set(replay.steps.map(s => s.rank))].sort((a, b) => a - b);
  const mean = r => { const m = replay.steps.filter(s => s.rank === r).map(s => s.measured_ms); return m.reduce((a, b) => a + b, 0) / m.length; };
  const differ = Math.max(...ranks.map(mean)) - Math.min(...ranks.map(mean)) >= 5e-4;
  assert(await page.isVisible('#spread') === differ, `the spread shown: ${!differ}`);
  if (differ) {
    const c = await chartData(page, 'chart-rank-spread');
    checkChart(c, 'spread');
    ranks.forEach((r, i) => near(dataset(c, 'measured (mean)')[i], mean(r), `rank ${r} mean`));
  }
  await noRawJson(page);
  // against the hostile model: its renamed kernels listed as text
  await page.selectOption('#diff-other', ctx.models.hostile);
  await page.click('#diff-submit');
  await page.waitForSelector('#diff-attribution');
  const d = await call(ctx.d, 'POST', `/v1/models/${ctx.models.sample}/diff`, JSON.stringify({ other: ctx.models.hostile }));
  const c = await chartData(page, 'chart-diff');
  Object.values(d.attribution).forEach((ms, i) => near(c.datasets[0].data[i], ms, 'attribution'));
  const names = await page.$$eval('#diff-added [data-field=name]', tds => tds.map(t => t.textContent));
  assert(Object.values(HOSTILE_KERNELS).every(n => names.includes(n)), `added kernels: ${names.slice(0, 3)}`);
  assert(await page.evaluate(() => window.__pwned === undefined), 'a kernel name ran');
  await shot(page, 'dashboard-model-views.png');
  await keyboardOnly(page);
  page.assertClean([PROBE]);
});

// A box's figures as the test reads them: quartiles by linear
// interpolation, whiskers at the farthest samples within 1.5 IQR.
function quartiles(samples) {
  const v = [...samples].sort((a, b) => a - b);
  const q = p => { const h = (v.length - 1) * p, i = Math.floor(h); return v[i] + (h - i) * ((v[i + 1] ?? v[i]) - v[i]); };
  const q1 = q(0.25), q3 = q(0.75), r = 1.5 * (q3 - q1);
  const inside = v.filter(x => x >= q1 - r && x <= q3 + r);
  return { q1, median: q(0.5), q3, lo: inside[0], hi: inside.at(-1), outliers: v.length - inside.length };
}

// Whether a click or submit sends METHOD `path` while `act` runs.
async function sends(page, method, path, act) {
  let sent = false;
  const spy = r => { if (new URL(r.url()).pathname === path && r.method() === method) sent = true; };
  page.on('request', spy);
  await act();
  await sleep(200);
  page.off('request', spy);
  return sent;
}

test('A/B: two generated runs from the form; box plots, the interval, the verdict, refutations, attribution', async (ctx, page) => {
  await login(page, ctx.d);
  await page.goto(`${ctx.d.url}/#/ab`);
  await page.waitForSelector('#ab-form');
  await noRawJson(page);
  assert(await page.inputValue('#ab-baseline') === 'ab-base' && await page.inputValue('#ab-variant') === 'ab-variant',
    'the first two jobs with a ready model are the defaults');
  // the same job twice, and no effect: said beside the fields, nothing sent
  await page.selectOption('#ab-variant', 'ab-base');
  await page.fill('#ab-min_effect_pct', '0');
  assert(!(await sends(page, 'POST', '/v1/ab', () => page.click('#ab-submit'))), 'an invalid A/B was sent');
  assert((await page.textContent('#ab-variant-msg')).includes('other than the baseline'), 'the same job twice');
  assert((await page.textContent('#ab-min_effect_pct-msg')).length > 0, 'a zero effect');
  await page.selectOption('#ab-variant', 'ab-variant');
  await page.fill('#ab-min_effect_pct', '2');
  await page.fill('#ab-seed', '3');
  const body = JSON.parse(await requestBody(page, 'POST', '/v1/ab', () => page.click('#ab-submit')));
  await page.waitForSelector('#view[data-state=ready] #ab-verdict');
  assert(JSON.stringify(body) === JSON.stringify({ a: ctx.models['ab-base'], b: ctx.models['ab-variant'],
    min_effect_pct: 2, refutations: 5, seed: 3 }), `sent ${JSON.stringify(body)}`);
  const d = await call(ctx.d, 'POST', '/v1/ab', JSON.stringify(body));
  assert(d.verdict === 'slower' && d.ci95_ms[0] > 0, `the variant's GPU work is 1.3x: ${d.verdict} ${d.ci95_ms}`);
  assert(await page.getAttribute('#ab-verdict', 'data-verdict') === d.verdict, 'the verdict shown');
  const said = await page.textContent('#ab-verdict');
  assert(said.includes(d.survives ? 'It survives' : 'does not survive'), `survives: '${said}'`);
  // the box plots, from the samples the API compared
  const box = await chartData(page, 'chart-ab-steps');
  checkChart(box, 'ab steps');
  assert(box.labels.length === 2 && box.labels[0].includes('ab-base') && box.labels[1].includes('ab-variant'), `${box.labels}`);
  assert(box.scales.y.title.includes('ms'), 'the step axis has its unit');
  ['a', 'b'].forEach((run, i) => {
    assert(d.samples_ms[run].length === d.steps[run], `${run}: ${d.samples_ms[run].length} samples, ${d.steps[run]} steps`);
    const q = quartiles(d.samples_ms[run]);
    const [q1, q3] = dataset(box, 'first to third quartile')[i], [lo, hi] = dataset(box, 'whiskers (1.5 IQR)')[i];
    near(q1, q.q1, `${run} Q1`);
    near(q3, q.q3, `${run} Q3`);
    near(lo, q.lo, `${run} low whisker`);
    near(hi, q.hi, `${run} high whisker`);
    near(dataset(box, 'median')[i], q.median, `${run} median`);
    near(dataset(box, 'center')[i], d.center_ms[run], `${run} center`);
    assert(dataset(box, 'outliers').filter(p => p.x === box.labels[i]).length === q.outliers, `${run} outliers`);
  });
  // the difference, its interval and the band of no effect
  const diff = await chartData(page, 'chart-ab-difference');
  checkChart(diff, 'ab difference');
  near(dataset(diff, 'estimate')[0], d.difference_ms, 'difference');
  near(dataset(diff, '95 % interval')[0][0], d.ci95_ms[0], 'interval low');
  near(dataset(diff, '95 % interval')[0][1], d.ci95_ms[1], 'interval high');
  near(dataset(diff, 'smaller than the smallest effect that matters')[0][1], d.min_effect_ms, 'min effect');
  // the refutations
  const refs = await page.$$eval('#ab-refutations tbody tr', trs => trs.map(tr =>
    ['name', 'verdict', 'agrees'].map(f => tr.querySelector(`[data-field=${f}]`).textContent)));
  const words = { no_change: 'no change', not_applicable: 'not applicable' };
  assert(JSON.stringify(refs) === JSON.stringify(d.refutations.map(r => [r.name, words[r.verdict] || r.verdict,
    r.agrees === null ? 'not applicable' : r.agrees ? 'yes' : 'no'])), `refutations ${JSON.stringify(refs)}`);
  // the attribution, each part with its interval
  const at = await chartData(page, 'chart-ab-attribution');
  checkChart(at, 'ab attribution');
  assert(JSON.stringify(at.labels) === JSON.stringify(d.attribution.map(p => p.category)), `parts ${at.labels}`);
  d.attribution.forEach((p, i) => {
    near(dataset(at, 'estimate')[i], p.ms, `${p.category}`);
    near(dataset(at, '95 % interval')[i][0], p.ci95_ms[0], `${p.category} low`);
    near(dataset(at, '95 % interval')[i][1], p.ci95_ms[1], `${p.category} high`);
  });
  await viewChecked(page, 'ab', '"samples_ms"', 'dashboard-ab.png');
});

test('experiments: created from the form, decided, closed from the keyboard; the bank; a hostile hypothesis stays text', async (ctx, page) => {
  await login(page, ctx.d);
  await page.goto(`${ctx.d.url}/#/experiments`);
  await page.waitForSelector('#view[data-state=ready] #experiment-form');
  await noRawJson(page);
  await page.selectOption('#experiment-baseline', 'ab-variant');
  await page.selectOption('#experiment-variant', 'ab-variant');
  assert(!(await sends(page, 'POST', '/v1/experiments', () => page.click('#experiment-submit'))), 'the same job twice was sent');
  assert((await page.textContent('#experiment-variant-msg')).includes('other than the baseline'), 'the same job twice');
  // the faster run as the variant: it wins, and banks at the baseline's cadence
  await page.selectOption('#experiment-variant', 'ab-base');
  await page.fill('#experiment-hypothesis', HOSTILE_HYPOTHESIS);
  await page.fill('#experiment-external_id', 'sched-42');
  const body = JSON.parse(await requestBody(page, 'POST', '/v1/experiments', () => page.click('#experiment-submit')));
  assert(JSON.stringify(body) === JSON.stringify({ baseline: 'ab-variant', variant: 'ab-base',
    hypothesis: HOSTILE_HYPOTHESIS, external_id: 'sched-42' }), `sent ${JSON.stringify(body)}`);
  await page.waitForSelector('#experiments [data-field=external]:text-is("sched-42")');
  await page.waitForSelector('#view[data-state=ready]');
  const { experiments } = await call(ctx.d, 'GET', '/v1/experiments?external_id=sched-42');
  const e = experiments[0];
  assert(experiments.length === 1 && e.state === 'decided' && e.verdict.verdict === 'faster', `API: ${e.state}`);
  const row = async () => page.$eval(`#experiments tr:has(code:text-is("${e.id}"))`, tr =>
    Object.fromEntries([...tr.querySelectorAll('[data-field]')].map(td => [td.dataset.field, td.textContent])));
  let shown = await row();
  assert(shown.hypothesis === HOSTILE_HYPOTHESIS, `the hypothesis as text: '${shown.hypothesis}'`);
  assert(shown.state === 'decided' && shown.verdict.startsWith('faster') &&
    shown.verdict.includes(e.verdict.difference_ms.toFixed(3).replace('-', '')), `row ${JSON.stringify(shown)}`);
  // closed from the keyboard: its button focused, Enter
  await page.focus(`button.close-experiment[data-id="${e.id}"]`);
  await page.keyboard.press('Enter');
  await page.waitForFunction(id => [...document.querySelectorAll('#experiments tr')].some(tr =>
    tr.textContent.includes(id) && tr.querySelector('[data-field=state]').textContent === 'closed'), e.id);
  await page.waitForSelector('#view[data-state=ready]');
  const closed = await call(ctx.d, 'GET', `/v1/experiments/${e.id}`);
  assert(closed.state === 'closed' && closed.bank && closed.bank.gpu_hours_per_day > 0, `bank ${JSON.stringify(closed.bank)}`);
  shown = await row();
  assert(shown.bank.includes(num3(closed.bank.gpu_hours_per_day)) && shown.bank.includes('summed over ranks') &&
    shown.bank.includes(closed.bank.usd_per_day.toFixed(2)), `bank shown: '${shown.bank}'`);
  const { experiments: all } = await call(ctx.d, 'GET', '/v1/experiments');
  const hours = all.filter(x => x.bank && typeof x.bank.gpu_hours_per_day === 'number')
    .reduce((a, x) => a + x.bank.gpu_hours_per_day, 0);
  assert((await page.textContent('#experiments-bank')).includes(num3(hours)), 'the bank summed');
  assert(await page.evaluate(() => window.__pwned === undefined && !document.querySelector('#view img, #view script')),
    'markup from a request ran');
  await viewChecked(page, 'experiments', '"bank"', 'dashboard-experiments.png');
});


test('fleet: wasted GPU-hours a day by job and kind, per step apart, filters, links to models, waits apart', async (ctx, page) => {
  await login(page, ctx.d);
  await page.goto(`${ctx.d.url}/#/fleet`);
  await page.waitForSelector('#view[data-state=ready] #fleet-out');
  const doc = await call(ctx.d, 'GET', '/v1/fleet?top=10');
  const byDay = doc.jobs.filter(j => j.ranked_by === 'wasted_gpu_hours_per_day_summed');
  const perStep = doc.jobs.filter(j => j.ranked_by === 'wasted_gpu_ms_per_step_summed');
  assert(byDay.some(j => j.job === 'ab-variant') && perStep.some(j => j.job === 'ab-base'), 'the jobs\' tiers');
  // each tier's bars: the job's figure split by kind, in the API's order
  for (const [id, jobs, key] of [['chart-fleet-day', byDay, 'wasted_gpu_hours_per_day_summed'],
    ['chart-fleet-step', perStep, 'wasted_gpu_ms_per_step_summed']]) {
    const c = await chartData(page, id);
    checkChart(c, id);
    assert(JSON.stringify(c.labels) === JSON.stringify(jobs.map(j => `#${j.rank} ${j.job}`)), `${id}: ${c.labels}`);
    assert(/summed over ranks/.test(c.scales.x.title), `${id}: the axis says summed over ranks (${c.scales.x.title})`);
    jobs.forEach((j, i) => {
      near(c.datasets.reduce((a, ds) => a + ds.data[i], 0), j[key], `${j.job}'s bar`);
      for (const k of j.waste_by_kind) {
        const ds = c.datasets.find(x => x.label.toLowerCase().includes(k.kind === 'gpu' ? 'gpu work' : k.kind));
        assert(ds, `${id}: no bar part for ${k.kind}`);
        near(ds.data[i], j[key] * k.share, `${j.job} ${k.kind}`);
      }
    });
  }
  const stepNote = await page.textContent('#fleet-step');
  assert(stepNote.includes('ranked per step') && stepNote.includes('per rank'), 'the per-step jobs say so');
  // the teams, as text, in the table and the filter
  const teams = await page.$$eval('#fleet-day-details [data-field=team]', tds => tds.map(t => t.textContent));
  assert(teams.includes(HOSTILE_TEAM), `teams ${teams}`);
  const tags = await page.$$eval('#fleet-tag option', os => os.map(o => o.value));
  assert(tags.includes(`team:${HOSTILE_TEAM}`) && tags.includes('team:infra'), `tags ${tags}`);
  // the unexplained waits, apart
  const apart = await page.$$eval('#fleet-apart-table [data-field=job]', tds => tds.map(t => t.textContent));
  assert(doc.needs_tracing_of_more_ranks.some(a => a.job === 'ab-waits'), 'the API lists the waits apart');
  assert(JSON.stringify(apart) === JSON.stringify(doc.needs_tracing_of_more_ranks.map(a => a.job)), `apart ${apart}`);
  await noRawJson(page);
  await shot(page, 'dashboard-fleet.png');
  // in dollars: the jobs with a price
  await page.selectOption('#fleet-unit', 'usd');
  await page.click('#fleet-submit');
  await page.waitForSelector('#view[data-state=ready] #fleet-unpriced');
  const usd = await chartData(page, 'chart-fleet-day');
  const priced = byDay.filter(j => typeof j.wasted_usd_per_day === 'number');
  assert(usd.labels.length === priced.length && priced.length > 0, `${usd.labels} priced`);
  priced.forEach((j, i) => near(usd.datasets.reduce((a, ds) => a + ds.data[i], 0), j.wasted_usd_per_day, `${j.job} $`));
  assert(/USD a day, summed over ranks/.test(usd.scales.x.title), 'the dollars\' axis');
  // a tag: the server's answer for it
  await page.selectOption('#fleet-unit', 'gpu_hours');
  await page.selectOption('#fleet-tag', 'team:infra');
  await page.click('#fleet-submit');
  await page.waitForSelector('#view[data-state=ready]');
  const infra = await call(ctx.d, 'GET', '/v1/fleet?top=10&tag=team:infra');
  const shownJobs = await page.$$eval('#fleet-out [data-field=job] a', as => as.map(a => a.textContent));
  const wantJobs = [...infra.jobs.filter(j => j.ranked_by === 'wasted_gpu_hours_per_day_summed'),
    ...infra.jobs.filter(j => j.ranked_by !== 'wasted_gpu_hours_per_day_summed'),
    ...infra.needs_tracing_of_more_ranks].map(j => j.job);
  assert(JSON.stringify(shownJobs) === JSON.stringify(wantJobs), `team:infra ${shownJobs} (API ${wantJobs})`);
  // a window: before the first day, refused; one in the future, none
  await page.fill('#fleet-since', '2099-01-02');
  await page.fill('#fleet-until', '2099-01-01');
  assert(!(await sends(page, 'GET', '/v1/fleet', () => page.click('#fleet-submit'))), 'an empty window was asked for');
  assert((await page.textContent('#fleet-until-msg')).length > 0, 'until before since is refused');
  await page.fill('#fleet-until', '');
  await page.click('#fleet-submit');
  await page.waitForSelector('#fleet-out :text("No job has a ready model built in the window")');
  assert((await call(ctx.d, 'GET', '/v1/fleet?tag=team:infra&since=2099-01-02')).jobs.length === 0, 'the API agrees');
  // a bar opens its job's model
  await page.fill('#fleet-since', '');
  await page.selectOption('#fleet-tag', '');
  await page.click('#fleet-submit');
  await page.waitForSelector('#view[data-state=ready] #chart-fleet-day');
  const at = await page.$eval('#chart-fleet-day', c => {
    const bar = window.Chart.getChart(c).getDatasetMeta(0).data[0], r = c.getBoundingClientRect();
    return { x: r.left + (bar.x + bar.base) / 2, y: r.top + bar.y };
  });
  await page.mouse.click(at.x, at.y);
  await page.waitForSelector('#view[data-view=models][data-state=ready]');
  assert(decodeURIComponent(page.url().split('#/models/')[1]) === byDay[0].model, `the bar opened ${page.url()}`);
  await page.goBack();
  await page.waitForSelector('#view[data-state=ready] #fleet-form');
  assert(await page.evaluate(() => window.__pwned === undefined && !document.querySelector('#view img')), 'a tag ran');
  await toggleJson(page, 'fleet', '"needs_tracing_of_more_ranks"');
  await keyboardOnly(page);
  page.assertClean([PROBE]);
});

test('A/B, experiments, fleet: "not available" where the server lacks the route', async (ctx, page) => {
  // the server's OpenAPI document, less these routes: an older server
  const views = { ab: ['post', '/v1/ab'], experiments: ['get', '/v1/experiments'], fleet: ['get', '/v1/fleet'],
    opportunities: ['get', '/v1/opportunities'] };
  await page.route('**/v1/openapi.json', async route => {
    const res = await route.fetch();
    const doc = await res.json();
    for (const [, path] of Object.values(views)) delete doc.paths[path];
    await route.fulfill({ response: res, json: doc });
  });
  await login(page, ctx.d);
  for (const [view, [method, path]] of Object.entries(views)) {
    await page.goto(`${ctx.d.url}/#/${view}`);
    await page.waitForSelector(`#view[data-view=${view}] .unavailable`);
    const text = await page.textContent('#view .unavailable');
    assert(text.includes('Not available on this server') && text.includes(`${method.toUpperCase()} ${path}`), `${view}: '${text}'`);
    assert(!(await page.$('#view form')), `${view}: a form without its route`);
    if (view === 'fleet') await shot(page, 'dashboard-not-available.png');
  }
  page.assertClean();
});

test('the dashboard\'s files are under 500 KB compressed', async (ctx, page) => {
  await login(page, ctx.d);
  const files = await page.evaluate(() => performance.getEntriesByType('resource').map(r => r.name)
    .filter(u => new URL(u).pathname.startsWith('/ui/')));
  let total = 0;
  for (const u of new Set(files)) total += gzipSync(Buffer.from(await (await fetch(u)).arrayBuffer())).length;
  assert(files.length >= 10 && total < 500 * 1024, `${files.length} files, ${total} bytes compressed`);
  console.log(`     ${new Set(files).size} files, ${(total / 1024).toFixed(1)} KB compressed`);
  page.assertClean();
});

async function main() {
  mkdirSync(SHOTS, { recursive: true });
  const chosen = tests.filter(t => !ONLY || t.name.includes(ONLY));
  let d, browser, passed = 0, failed = 0;
  try {
    d = await startDaemon(BUILD);
    const models = await loadJobs(d);
    browser = await launch();
    const ctx = {
      d, models,
      page_requests_with_token: page => page.seen.requests.some(u => u.includes(ADMIN)) || page.url().includes(ADMIN),
    };
    for (const t of chosen) {
      const page = await openPage(browser, d);
      const t0 = Date.now();
      try {
        await t.fn(ctx, page);
        console.log(`ok   ${t.name} (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
        passed++;
      } catch (e) {
        console.log(`FAIL ${t.name}: ${e.message}`);
        await shot(page, `dashboard-failed-${tests.indexOf(t)}.png`).catch(() => {});
        failed++;
      }
      await page.close();
    }
  } catch (e) {
    console.log(`FAIL the browser tests could not run: ${e.message}`);
    failed += chosen.length - passed - failed;
  } finally {
    if (browser) await browser.close();
    if (d) await d.stop();
  }
  console.log(`${passed} passed, ${failed} failed`);
  process.exitCode = failed ? 1 : 0;
}

main();
