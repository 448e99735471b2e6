// tests/browser/bench_plan.mjs: the time the dashboard takes to draw a plan
// of 2,000 rows (the Plan view's scatter, Pareto front, Megatron arguments
// and sortable table), in chromium, median of 3 runs; beside it, as the
// baseline of the same run, a plain table of the same rows and cells
// (dom.js's table(), no chart, no sorting): the ratio is what the view
// costs over the bare DOM it cannot avoid.
//
//   node tests/browser/bench_plan.mjs [BUILD_DIR]
//
// The rows are real: two plans of tests/bench/specs/plan-llama8b-h100.json
// (a Llama 3.1 8B shape; 1,000 rows each, the API's most, on 64 and on 128
// GPUs by cost), drawn as one document.

import { readFileSync } from 'node:fs';
import { ADMIN, call, launch, openPage, sleep, startDaemon } from './harness.mjs';

const BUILD = process.argv[2] || 'build';
const SPEC = JSON.parse(readFileSync('tests/bench/specs/plan-llama8b-h100.json', 'utf8'));
const ROWS = 2000;
const RUNS = 3;

async function plan(d, gpus) {
  const body = JSON.stringify({ spec: SPEC, gpus, top: 1000, objective: 'cost' });
  let doc = await call(d, 'POST', '/v1/plans', body, { 'Content-Type': 'application/json' });
  while (doc.state === 'running') {
    await sleep(200);
    doc = await call(d, 'GET', `/v1/plans/${doc.id}`);
  }
  return doc;
}

const median = xs => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main() {
  const d = await startDaemon(BUILD);
  const browser = await launch();
  try {
    const a = await plan(d, 64), b = await plan(d, 128);
    const doc = { ...a, top: [...a.top, ...b.top].slice(0, ROWS) };
    if (doc.top.length < ROWS) throw new Error(`the plans gave ${doc.top.length} rows, not ${ROWS}`);
    const page = await openPage(browser, d);
    await page.goto(`${d.url}/`);
    await page.evaluate(t => sessionStorage.setItem('stepcast.token', t), ADMIN);
    await page.goto(`${d.url}/#/hardware`);
    await page.waitForSelector('#hardware');
    const times = { view: [], table: [] };
    for (let i = 0; i < RUNS; i++)
      for (const what of ['view', 'table']) {
        // from the call to the first frame painted after it
        const ms = await page.evaluate(async ([plan, what]) => {
          const { renderPlan, COLUMNS } = await import('/ui/plan.js');
          const { el, table } = await import('/ui/dom.js');
          const out = el('div');
          document.getElementById('view').replaceChildren(out);
          await new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)));
          const t0 = performance.now();
          if (what === 'view') renderPlan(out, plan);
          else out.append(table(COLUMNS.map(c => ({ title: c.title, num: c.num, cell: r => String(c.value(r)) })),
            plan.top.map((r, k) => ({ ...r, rank: k + 1 }))));
          void out.getBoundingClientRect().height;
          await new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)));
          const drawn = out.querySelector(what === 'view' ? '#plan-rows' : 'table');
          return [performance.now() - t0, drawn.tBodies[0].rows.length];
        }, [doc, what]);
        if (ms[1] !== ROWS) throw new Error(`${what}: ${ms[1]} rows drawn`);
        times[what].push(ms[0]);
      }
    page.assertClean();
    const view = median(times.view), base = median(times.table);
    console.log(`plan view of ${ROWS} rows: ${view.toFixed(0)} ms (median of ${RUNS}: ` +
      `${times.view.map(t => t.toFixed(0)).join(', ')}); a plain table of the same rows ${base.toFixed(0)} ms ` +
      `(${times.table.map(t => t.toFixed(0)).join(', ')}); ratio ${(view / base).toFixed(2)}`);
  } finally {
    await browser.close();
    await d.stop();
  }
}

main().catch(e => {
  console.log(`FAIL the plan view's benchmark: ${e.message}`);
  process.exitCode = 1;
});
