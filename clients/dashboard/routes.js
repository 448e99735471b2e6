// clients/dashboard/routes.js: views and sections of routes a server may
// not have (the opportunities, the A/B comparison, experiments and the
// fleet on an older server). Each asks the server's OpenAPI document
// first: a route it lacks gives a clear "not available on this server"; a
// GET route it has gets its answer drawn by `render`.

import { api, hasRoute } from './api.js';
import { el, errorBox } from './dom.js';

function unavailable(method, template) {
  return el('p', { class: 'unavailable' }, `Not available on this server: it has no ${method} ${template}.`);
}

// Whether the server lacks METHOD TEMPLATE; when it does, `node` says so.
export async function lacksRoute(node, method, template) {
  if (await hasRoute(method, template)) return false;
  node.append(unavailable(method, template));
  return true;
}

// A view's title and what it does; false (and said) when the server lacks
// the route the view needs.
export async function viewOf(view, title, about, method, template) {
  view.append(el('h1', {}, title), el('p', { class: 'muted' }, about));
  return !(await lacksRoute(view, method, template));
}

function fill(template, params) {
  return template.replace(/\{(\w+)\}/g, (_, k) => encodeURIComponent(params[k]));
}

export async function routeSection(title, method, template, params, render) {
  const section = el('section', { class: 'route', data: { route: `${method} ${template}` } }, el('h2', {}, title));
  let have;
  try {
    have = await hasRoute(method, template);
  } catch (e) {
    section.append(errorBox(e));
    return section;
  }
  if (!have) {
    section.append(unavailable(method, template));
    return section;
  }
  try {
    section.append(render(await api(fill(template, params))));
  } catch (e) {
    section.append(errorBox(e));
  }
  return section;
}
