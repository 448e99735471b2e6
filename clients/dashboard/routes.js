// clients/dashboard/routes.js: sections for routes a server may not have
// yet (opportunities, what-if, diff, estimate, plan, validations,
// hardware). Each asks the server's OpenAPI document first: a route it
// lacks gives a clear "not available on this server"; a route it has gets
// its answer shown by `render` or as JSON text (GET), or a JSON request
// form (POST).

import { api, hasRoute } from './api.js';
import { el, errorBox } from './dom.js';

function fill(template, params) {
  return template.replace(/\{(\w+)\}/g, (_, k) => encodeURIComponent(params[k]));
}

function answer(doc) {
  return el('pre', { class: 'json' }, JSON.stringify(doc, null, 2));
}

export async function routeSection(title, method, template, params = {}, render = answer) {
  const section = el('section', { class: 'route', data: { route: `${method} ${template}` } }, el('h2', {}, title));
  let have;
  try {
    have = await hasRoute(method, template);
  } catch (e) {
    section.append(errorBox(e));
    return section;
  }
  if (!have) {
    section.append(el('p', { class: 'unavailable' }, `Not available on this server: it has no ${method} ${template}.`));
    return section;
  }
  const out = el('div');
  const p = fill(template, params);
  if (method === 'GET') {
    try {
      out.append(render(await api(p)));
    } catch (e) {
      out.append(errorBox(e));
    }
    section.append(out);
    return section;
  }
  const body = el('textarea', { rows: 8, cols: 80, spellcheck: 'false', 'aria-label': 'request body (JSON)' }, '{}');
  const send = el('button', {
    type: 'button',
    on: {
      click: async () => {
        out.replaceChildren();
        try {
          out.append(answer(await api(p, { method, body: JSON.parse(body.value) })));
        } catch (e) {
          out.append(errorBox(e));
        }
      },
    },
  }, `${method} ${template}`);
  section.append(el('p', {}, 'Request body (JSON):'), body, el('p', {}, send), out);
  return section;
}
