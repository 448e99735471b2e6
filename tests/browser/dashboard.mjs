// tests/browser/dashboard.mjs: the dashboard in a real browser.
//
//   node tests/browser/dashboard.mjs [BUILD_DIR [SUBSTRING]]
//
// Starts build/stepcastd on 127.0.0.1 (a free port, a temp store), loads the
// sample job and a job whose kernel names and description are markup, then
// drives Debian's chromium (CHROMIUM, default /usr/bin/chromium) through
// playwright-core: log in, read the figures of a model and compare them with
// the API's, move a scale control, download a timeline, open views of routes
// the server lacks, and check that names from traces stay text. Each test
// saves a screenshot under BUILD_DIR/screenshots/. Ends with the runner's
// line `N passed, N failed`; a browser that cannot start fails every test.

import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { chromium } from 'playwright-core';

const BUILD = process.argv[2] || 'build';
const ONLY = process.argv[3]; // run only the tests whose name holds it
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const ADMIN = 'admin-secret-0123456789abcdef';
const SHOTS = join(BUILD, 'screenshots');
const SAMPLE = 'data/sample';
const HOSTILE_KERNELS = {
  ampere_sgemm_128x64_tn: '<script>window.__pwned = "script"</script>',
  'void at::native::vectorized_elementwise_kernel<4, at::native::relu>': '"><img src=x onerror="window.__pwned = \'img\'">',
};
const HOSTILE_DESCRIPTION = '<img src=x onerror="window.__pwned = \'description\'"> a job named in markup';

// The model view asks the server which scale kinds it takes; one it lacks
// answers 400, which the browser logs.
const PROBE = 'the server responded with a status of 400';

const sleep = t => new Promise(r => setTimeout(r, t));

function assert(cond, msg) {
  if (!cond) throw new Error(msg);
}

// ---- the daemon ----

async function startDaemon() {
  const dir = mkdtempSync(join(tmpdir(), 'stepcast-browser-'));
  const portFile = join(dir, 'port');
  const log = [];
  const proc = spawn(join(BUILD, 'stepcastd'), ['--data-dir', join(dir, 'data'), '--listen', '127.0.0.1:0',
    '--port-file', portFile, '--log-level', 'warn'], { env: { ...process.env, STEPCAST_ADMIN_TOKEN: ADMIN } });
  proc.stderr.on('data', d => log.push(d.toString()));
  for (let i = 0; !existsSync(portFile) || !readFileSync(portFile, 'utf8').trim(); i++) {
    if (proc.exitCode !== null || i > 500) throw new Error(`stepcastd did not start: ${log.join('')}`);
    await sleep(10);
  }
  const url = `http://127.0.0.1:${readFileSync(portFile, 'utf8').trim()}`;
  return {
    url, log,
    async stop() {
      proc.kill('SIGTERM');
      await new Promise(r => (proc.exitCode !== null ? r() : proc.on('exit', r)));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function call(d, method, path, body, headers = {}) {
  const res = await fetch(d.url + path, {
    method, body, headers: { Authorization: `Bearer ${ADMIN}`, ...headers },
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return JSON.parse(text);
}

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
  await call(d, 'PUT', '/v1/jobs/hostile', JSON.stringify({ description: HOSTILE_DESCRIPTION }),
    { 'Content-Type': 'application/json' });
  for (let r = 0; r < ranks.length; r++) await call(d, 'PUT', `/v1/jobs/hostile/ranks/${r}/trace`, hostileRank(ranks[r]));
  return { sample: await buildModel(d, 'sample'), hostile: await buildModel(d, 'hostile') };
}

// ---- the page ----

// A fresh page that records what would betray a broken page: script errors,
// CSP violations, requests leaving the server.
async function openPage(browser, d) {
  const page = await browser.newPage({ acceptDownloads: true, viewport: { width: 1280, height: 900 } });
  const seen = { errors: [], requests: [] };
  page.on('pageerror', e => seen.errors.push(`page error: ${e.message}`));
  page.on('console', m => { if (m.type() === 'error') seen.errors.push(`console: ${m.text()}`); });
  page.on('request', r => seen.requests.push(r.url()));
  await page.addInitScript(() => {
    document.addEventListener('securitypolicyviolation',
      e => console.error(`CSP violation: ${e.violatedDirective} ${e.blockedURI}`));
  });
  page.seen = seen;
  page.check = (allowErrors = []) => {
    const errs = seen.errors.filter(e => !allowErrors.some(a => e.includes(a)));
    assert(!errs.length, `the page reported: ${errs.join(' | ')}`);
    const away = seen.requests.filter(u => !u.startsWith(d.url + '/') && !u.startsWith('blob:'));
    assert(!away.length, `requests left the server: ${away.join(', ')}`);
  };
  return page;
}

async function login(page, d) {
  await page.goto(d.url + '/');
  await page.fill('#token', ADMIN);
  await page.click('#login button[type=submit]');
  await page.waitForSelector('#jobs');
}

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
  page.check(['401']);
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
  page.check([PROBE]);
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
  page.check([PROBE]);
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
  page.check([PROBE]);
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
  page.check([PROBE]);
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
  page.check([PROBE]);
});

test('routes the server lacks say so; the others answer', async (ctx, page) => {
  await login(page, ctx.d);
  const { paths } = await call(ctx.d, 'GET', '/v1/openapi.json');
  const views = { opportunities: ['get', '/v1/opportunities'], estimate: ['post', '/v1/estimate'], plan: ['post', '/v1/plans'],
    validations: ['get', '/v1/validations'], hardware: ['get', '/v1/hardware'] };
  for (const [view, [method, route]] of Object.entries(views)) {
    await page.goto(`${ctx.d.url}/#/${view}`);
    await page.waitForSelector(`#view[data-view=${view}] section.route h2`);
    const text = await page.textContent('#view');
    const have = Boolean(paths[route] && paths[route][method]);
    assert(text.includes('Not available on this server') === !have, `${view}: '${text}'`);
    if (!have) await shot(page, 'dashboard-not-available.png');
  }
  page.check();
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
  page.check();
});

test('what-if: the job description saved from the page, then a what-if from it answers', async (ctx, page) => {
  await login(page, ctx.d);
  await openModel(page, ctx.d, ctx.models.sample);
  const config = { tp: 1, pp: 1, dp: 4, layers: 8 };
  await page.waitForSelector('section.job-config textarea');
  await page.fill('section.job-config textarea', JSON.stringify(config));
  await page.click('section.job-config button');
  await page.waitForSelector('section.job-config .saved');
  const job = await call(ctx.d, 'GET', '/v1/jobs/sample');
  assert(JSON.stringify(job.config) === JSON.stringify({ dp: 4, layers: 8, pp: 1, tp: 1 }),
    `the job's config: ${JSON.stringify(job.config)}`);
  const whatif = 'section.route[data-route="POST /v1/models/{id}/whatif"]';
  await page.fill(`${whatif} textarea`, '{"set": {"dp": 8}}');
  await page.click(`${whatif} button`);
  await page.waitForSelector(`${whatif} pre.json, ${whatif} .error`);
  const answer = await page.textContent(whatif);
  assert(answer.includes('"step_ms"') && answer.includes('"dp": 8'), `the what-if's answer: ${answer.slice(0, 300)}`);
  await shot(page, 'dashboard-whatif.png');
  page.check([PROBE]);
});

async function main() {
  mkdirSync(SHOTS, { recursive: true });
  const chosen = tests.filter(t => !ONLY || t.name.includes(ONLY));
  let d, browser, passed = 0, failed = 0;
  try {
    d = await startDaemon();
    const models = await loadJobs(d);
    // as root, chromium runs only without its sandbox
    const args = process.getuid && process.getuid() === 0 ? ['--no-sandbox'] : [];
    browser = await chromium.launch({ executablePath: CHROMIUM, args });
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
