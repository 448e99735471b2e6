// clients/dashboard/app.js: the dashboard's entry point: the token prompt
// and the views, chosen by the URL's fragment (#/jobs, #/jobs/J,
// #/models/M, #/estimate, #/plan, #/whatif/M, ...), so the browser's back
// button works and no token or name ever reaches the server in a URL.

import { abView } from './ab.js';
import { ApiError, api, forgetRoutes, token } from './api.js';
import { el, errorBox } from './dom.js';
import { estimateView } from './estimate.js';
import { experimentsView } from './experiments.js';
import { fleetView } from './fleet.js';
import { hardwareView } from './hardware.js';
import { jobView, jobsView } from './jobs.js';
import { ledgerView } from './ledger.js';
import { modelView } from './model.js';
import { fleetTable } from './opportunities.js';
import { planView } from './plan.js';
import { routeSection } from './routes.js';
import { whatifView } from './whatif.js';

const main = document.getElementById('main');
const logout = document.getElementById('logout');

const VIEWS = {
  estimate: estimateView, plan: planView, whatif: whatifView, ledger: ledgerView, validations: ledgerView,
  hardware: hardwareView, ab: abView, experiments: experimentsView, fleet: fleetView,
};
// Views of routes a server may not have: [title, method, route, params,
// renderer, the command that shows it].
const ROUTES = {
  opportunities: ['Opportunities across the fleet', 'GET', '/v1/opportunities', {}, fleetTable],
};

function login(message) {
  logout.hidden = true;
  const input = el('input', { type: 'password', id: 'token', autocomplete: 'off', required: true, size: 48 });
  const form = el('form', {
    id: 'login',
    on: {
      submit: e => {
        e.preventDefault();
        token.set(input.value.trim());
        forgetRoutes();
        show();
      },
    },
  },
  el('h1', {}, 'stepcast'),
  el('p', {}, 'A token of this server (read scope is enough to look; write to build models). It is kept in this tab only.'),
  el('label', {}, 'Token ', input), ' ', el('button', { type: 'submit' }, 'Open'),
  message ? errorBox(message) : null);
  main.replaceChildren(form);
  input.focus();
}

async function render(view, parts) {
  const [what, arg] = parts;
  if (what === 'jobs' && arg) return jobView(view, arg);
  if (what === 'models' && arg) return modelView(view, arg);
  if (VIEWS[what]) return VIEWS[what](view, arg);
  if (ROUTES[what]) return view.append(await routeSection(...ROUTES[what]));
  return jobsView(view);
}

async function show() {
  if (!token.get()) return login();
  logout.hidden = false;
  const parts = location.hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent);
  const view = el('div', { class: 'view', id: 'view', data: { view: parts[0] || 'jobs' } });
  main.replaceChildren(view);
  for (const a of document.querySelectorAll('#nav a')) {
    const here = a.getAttribute('href') === `#/${parts[0] || 'jobs'}`;
    a.classList.toggle('current', here);
    if (here) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  try {
    await render(view, parts);
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) {
      token.clear();
      return login(e);
    }
    view.append(errorBox(e));
  }
}

logout.addEventListener('click', () => {
  token.clear();
  forgetRoutes();
  login();
});
window.addEventListener('hashchange', show);
api('/healthz').then(h => {
  document.getElementById('server').textContent = `stepcastd ${h.version}`;
}, () => {});
show();
