// clients/dashboard/hardware.js: the Hardware view (GET /v1/hardware): the
// GPU profiles the estimator knows, as a table, each figure's source beside
// it, filtered by architecture or name.

import { api } from './api.js';
import { el, num, table } from './dom.js';
import { jsonToggle, makeForm } from './form.js';
import { viewOf } from './routes.js';

const tflops = (h, d) => (h.peak_tflops && h.peak_tflops[d] ? num(h.peak_tflops[d], 1) : '—');

// Every profile's sources, one row a figure (or group of figures).
function sourcesTable(hardware) {
  const rows = hardware.flatMap(h => Object.entries(h.sources || {}).map(([figure, source]) => ({
    id: h.id, figure, source: String(source),
  })));
  return table([
    { title: 'profile', field: 'id', cell: r => el('code', {}, r.id) },
    { title: 'figure', field: 'figure', cell: r => r.figure },
    { title: 'source', field: 'source', cell: r => r.source },
  ], rows, { id: 'hardware-sources' });
}

function render(out, hardware) {
  out.replaceChildren(hardware.length ? table([
    { title: 'id', field: 'id', cell: h => el('code', {}, h.id) },
    { title: 'name', cell: h => h.name },
    { title: 'architecture', cell: h => h.architecture || '—' },
    { title: 'SMs', num: true, cell: h => h.sm_count },
    { title: 'memory GB', num: true, field: 'hbm', cell: h => num(h.hbm_gb, 0) },
    { title: 'memory GB/s', num: true, cell: h => num(h.hbm_gbps, 0) },
    { title: 'bf16 TFLOP/s', num: true, field: 'bf16', cell: h => tflops(h, 'bf16') },
    { title: 'fp8 TFLOP/s', num: true, cell: h => tflops(h, 'fp8') },
    { title: 'NVLink GB/s per direction', num: true, cell: h => num(h.nvlink_gbps, 0) },
    { title: 'network GB/s per direction', num: true, cell: h => num(h.network_gbps, 0) },
    { title: 'GPUs per NVLink domain', num: true, cell: h => h.gpus_per_node },
    { title: 'board power W', num: true, cell: h => num(h.board_power_w, 0) },
    { title: 'measured here', cell: h => [h.gemm_tflops && Object.keys(h.gemm_tflops).length ? 'GEMMs' : null,
      h.attention ? 'attention' : null, h.collective_lines ? 'NCCL' : null].filter(Boolean).join(', ') || '—' },
    { title: 'sources', num: true, field: 'sources', cell: h => Object.keys(h.sources || {}).length },
  ], hardware, { id: 'hardware' }) : el('p', { class: 'muted' }, 'No profile matches.'),
  hardware.length ? el('section', {}, el('h2', {}, 'Where each figure comes from'), sourcesTable(hardware)) : null);
}

export async function hardwareView(view) {
  if (!(await viewOf(view, 'Hardware profiles',
    'The GPUs a spec can name (cluster.gpu): dense peaks, memory, links and power, ' +
      'with where each figure comes from.', 'GET', '/v1/hardware'))) return;
  const { hardware } = await api('/v1/hardware');
  const json = jsonToggle('hardware');
  json.show('GET /v1/hardware', { hardware });
  const out = el('div', { id: 'hardware-out' });
  const archs = [...new Set(hardware.map(h => h.architecture).filter(Boolean))].sort();
  const form = makeForm('hardware', [{
    legend: 'Filter', fields: [
      { name: 'architecture', label: 'Architecture', type: 'select', value: '',
        options: [['', 'every architecture'], ...archs.map(a => [a, a])] },
      { name: 'name', label: 'Name or id contains', type: 'text', value: '' },
    ],
  }], 'Filter', v => {
    const q = v.name.trim().toLowerCase();
    render(out, hardware.filter(h => (!v.architecture || h.architecture === v.architecture) &&
      (!q || h.id.toLowerCase().includes(q) || h.name.toLowerCase().includes(q))));
  });
  view.append(form, json.node, out);
  render(out, hardware);
  view.dataset.state = 'ready';
}
