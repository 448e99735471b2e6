// tests/browser/harness.mjs: what the browser tests and the dashboard's
// render benchmark share: build/stepcastd on 127.0.0.1 (a free port, a
// temp store, an admin token), its API, Debian's chromium (CHROMIUM,
// default /usr/bin/chromium) through playwright-core, and a page that
// records script errors, CSP violations and requests leaving the server.

import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

export const ADMIN = 'admin-secret-0123456789abcdef';
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';

export const sleep = t => new Promise(r => setTimeout(r, t));

export function assert(cond, msg) {
  if (!cond) throw new Error(msg);
}

// ---- the daemon ----

export async function startDaemon(build) {
  const dir = mkdtempSync(join(tmpdir(), 'stepcast-browser-'));
  const portFile = join(dir, 'port');
  const log = [];
  const proc = spawn(join(build, 'stepcastd'), ['--data-dir', join(dir, 'data'), '--listen', '127.0.0.1:0',
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

export async function call(d, method, path, body, headers = {}) {
  const res = await fetch(d.url + path, {
    method, body, headers: { Authorization: `Bearer ${ADMIN}`, ...headers },
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return JSON.parse(text);
}

// ---- the browser ----

export function launch() {
  // as root, chromium runs only without its sandbox
  const args = process.getuid && process.getuid() === 0 ? ['--no-sandbox'] : [];
  return chromium.launch({ executablePath: CHROMIUM, args });
}

// A fresh page that records what would betray a broken page: script errors,
// CSP violations, requests leaving the server.
export async function openPage(browser, d) {
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
  page.assertClean = (allowErrors = []) => {
    const errs = seen.errors.filter(e => !allowErrors.some(a => e.includes(a)));
    assert(!errs.length, `the page reported: ${errs.join(' | ')}`);
    const away = seen.requests.filter(u => !u.startsWith(d.url + '/') && !u.startsWith('blob:'));
    assert(!away.length, `requests left the server: ${away.join(', ')}`);
  };
  return page;
}

export async function login(page, d) {
  await page.goto(d.url + '/');
  await page.fill('#token', ADMIN);
  await page.click('#login button[type=submit]');
  await page.waitForSelector('#jobs');
}

