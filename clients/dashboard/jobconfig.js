// clients/dashboard/jobconfig.js: the description of a model's job (its
// `config`, which what-ifs and plans of the model start from), shown as
// JSON text to edit and saved with PUT /v1/jobs/{job}: the job's hardware
// and description are sent back as they are, since a PUT replaces them.

import { api, path } from './api.js';
import { el, errorBox } from './dom.js';

const EXAMPLE = '{"tp": 1, "pp": 1, "dp": 8, "layers": 24, "hidden": 2048, "heads": 16, "seq": 2048}';

export async function jobConfigSection(job) {
  const section = el('section', { class: 'job-config' },
    el('h2', {}, 'Job description'),
    el('p', { class: 'muted' }, 'What-ifs start from it: tp, pp and dp required; the other keys as README\'s ' +
      '"whatif" lists them (layers, hidden, heads, seq, global_batch, cp, ep, zero_stage, moe, ...).'));
  const text = el('textarea', { rows: 4, cols: 80, spellcheck: 'false', placeholder: EXAMPLE,
    'aria-label': 'job description (JSON)' });
  const status = el('div', { class: 'status' });
  let doc = null;
  try {
    doc = await api(path`/v1/jobs/${job}`);
    if (doc.config) text.value = JSON.stringify(doc.config);
  } catch (e) {
    status.append(errorBox(e));
  }
  const save = el('button', {
    type: 'button',
    on: {
      click: async () => {
        status.replaceChildren();
        try {
          const body = { config: JSON.parse(text.value) };
          for (const k of ['hardware', 'description']) if (doc && typeof doc[k] === 'string') body[k] = doc[k];
          doc = await api(path`/v1/jobs/${job}`, { method: 'PUT', body });
          text.value = JSON.stringify(doc.config);
          status.append(el('p', { class: 'saved' }, 'Saved: the what-ifs below start from it.'));
        } catch (e) {
          status.append(errorBox(e));
        }
      },
    },
  }, 'Save the job description');
  section.append(text, el('p', {}, save), status);
  return section;
}
