// clients/dashboard/api.js: the API, as this page's token sees it.
//
// The token lives in sessionStorage (gone with the tab) and travels only in
// the Authorization header, never in a URL. Identifiers go into paths as
// one encoded segment each. Which routes the server has comes from its
// OpenAPI document, so views of routes it lacks can say so.

const KEY = 'stepcast.token';

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

export const token = {
  get: () => sessionStorage.getItem(KEY),
  set: t => sessionStorage.setItem(KEY, t),
  clear: () => sessionStorage.removeItem(KEY),
};

// A path from a template and its parameters: path`/v1/models/${id}/replay`.
export function path(strings, ...values) {
  return strings.reduce((out, s, i) => out + s + (i < values.length ? encodeURIComponent(values[i]) : ''), '');
}

// fetch with the token; JSON back (a Blob with raw), ApiError on 4xx/5xx.
export async function api(p, { method = 'GET', body, query, raw = false } = {}) {
  const headers = { Authorization: `Bearer ${token.get() || ''}` };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const qs = query && query.length ? '?' + query.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&') : '';
  let res;
  try {
    res = await fetch(p + qs, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: 'no-store' });
  } catch (e) {
    throw new ApiError(0, 'unreachable', `the server did not answer (${e.message})`);
  }
  if (!res.ok) {
    let code = `http_${res.status}`, message = res.statusText;
    try {
      const doc = await res.json();
      code = doc.error.code;
      message = doc.error.message;
    } catch (e) { /* not the API's error document */ }
    throw new ApiError(res.status, code, message);
  }
  return raw ? res.blob() : res.json();
}

// Every row of a list route (GET /v1/jobs, /v1/models, ...): its pages of
// 1,000 rows, each asked for with the next_cursor of the one before.
export async function apiList(p, key, query = []) {
  const doc = await api(p, { query: [...query, ['limit', 1000]] });
  for (let cursor = doc.next_cursor; cursor;) {
    const page = await api(p, { query: [...query, ['limit', 1000], ['cursor', cursor]] });
    doc[key].push(...page[key]);
    cursor = page.next_cursor;
  }
  delete doc.next_cursor;
  return doc;
}

let routes = null;

// Whether the server has METHOD TEMPLATE ("GET", "/v1/opportunities").
export async function hasRoute(method, template) {
  if (!routes) routes = api('/v1/openapi.json').then(d => d.paths || {}, e => { routes = null; throw e; });
  const paths = await routes;
  return Boolean(paths[template] && paths[template][method.toLowerCase()]);
}

export function forgetRoutes() {
  routes = null;
}
