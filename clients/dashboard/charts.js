// clients/dashboard/charts.js: the charts, drawn by Chart.js (loaded before
// the modules by index.html as the global `Chart`). Charts draw on canvas:
// labels from traces are painted as text, never parsed as markup. Every
// chart comes with a table of the same figures beside it (figure()), its
// axes name their units, and its colours are Okabe and Ito's, which people
// with any common colour-vision deficiency tell apart.

import { el } from './dom.js';

// Okabe-Ito, in the order they stay distinct on white: blue, orange,
// bluish green, vermillion, sky blue, reddish purple, yellow, black.
export const PALETTE = ['#0072B2', '#E69F00', '#009E73', '#D55E00', '#56B4E9', '#CC79A7', '#F0E442', '#000000'];
// Point shapes to tell series apart without colour.
const SHAPES = ['circle', 'triangle', 'rect', 'rectRot', 'star', 'crossRot', 'cross', 'rectRounded'];

export function color(i) {
  return PALETTE[i % PALETTE.length];
}

export function shape(i) {
  return SHAPES[i % SHAPES.length];
}

// Draw (or redraw in place) a chart in a canvas; config as Chart.js takes it.
export function draw(canvas, config) {
  config.options = Object.assign({ animation: false, responsive: true, maintainAspectRatio: false }, config.options);
  config.options.plugins = Object.assign({ legend: { position: 'bottom', labels: { usePointStyle: true } } },
    config.options.plugins);
  const old = window.Chart.getChart(canvas);
  if (old) {
    old.data = config.data;
    old.options = config.options;
    old.update();
    return old;
  }
  return new window.Chart(canvas, config);
}

const axisTitle = text => ({ display: true, text });

// Bars per label: datasets [{label, values, color?}]; stacked or side by side.
export function bars(canvas, labels, datasets, { stacked = false, yTitle = 'ms', xTitle, horizontal = false, onClick } = {}) {
  const value = horizontal ? 'x' : 'y', category = horizontal ? 'y' : 'x';
  return draw(canvas, {
    type: 'bar',
    data: {
      labels,
      datasets: datasets.map((d, i) => ({
        label: d.label, data: d.values, backgroundColor: d.color || color(i), stack: d.stack,
      })),
    },
    options: {
      indexAxis: category,
      scales: {
        [category]: { stacked, title: xTitle ? axisTitle(xTitle) : undefined },
        [value]: { stacked, beginAtZero: true, title: axisTitle(yTitle) },
      },
      onClick,
    },
  });
}

// Points: datasets [{label, points: [{x, y, ...}], color?, shape?, line?}];
// a dataset with `line` is drawn as a line through its points (a front,
// y = x) instead of marks.
export function scatter(canvas, datasets, { xTitle, yTitle, log = false, onClick } = {}) {
  const type = log ? 'logarithmic' : 'linear';
  return draw(canvas, {
    type: 'scatter',
    data: {
      datasets: datasets.map((d, i) => ({
        label: d.label,
        data: d.points,
        backgroundColor: d.color || color(i),
        borderColor: d.color || color(i),
        pointStyle: d.line ? 'line' : (d.shape || shape(i)),
        pointRadius: d.line ? 0 : 5,
        showLine: Boolean(d.line),
        borderDash: d.dash,
        borderWidth: d.line ? 2 : 1,
        order: d.line ? 1 : 0,
      })),
    },
    options: {
      scales: { x: { type, title: axisTitle(xTitle) }, y: { type, title: axisTitle(yTitle) } },
      onClick,
    },
  });
}

// A chart with its table beside it: the table is the chart's figures for
// those who read numbers, or cannot see the canvas.
export function figure(canvas, table, { tall = false, small = false } = {}) {
  canvas.setAttribute('role', 'img');
  return el('div', { class: 'figure' },
    el('div', { class: tall ? 'chart tall' : small ? 'chart small' : 'chart' }, canvas),
    el('div', { class: 'figure-table' }, table));
}

// A box's figures of samples: quartiles by linear interpolation between
// order statistics, whiskers at the farthest samples within 1.5
// interquartile ranges of the box, the samples beyond them outliers.
export function boxStats(samples) {
  const v = [...samples].sort((a, b) => a - b);
  const q = p => {
    const h = (v.length - 1) * p, lo = Math.floor(h);
    return lo + 1 < v.length ? v[lo] + (h - lo) * (v[lo + 1] - v[lo]) : v[lo];
  };
  const q1 = q(0.25), median = q(0.5), q3 = q(0.75), reach = 1.5 * (q3 - q1);
  const inside = v.filter(x => x >= q1 - reach && x <= q3 + reach);
  return {
    n: v.length, min: v[0], q1, median, q3, max: v[v.length - 1], lo: inside[0], hi: inside[inside.length - 1],
    outliers: v.filter(x => x < q1 - reach || x > q3 + reach),
  };
}

// Box plots, one per label, drawn with Chart.js's own parts: the box a
// floating bar from the first to the third quartile, the whiskers a thin
// floating bar, the median and `marks` (more points per box: [{label,
// values}]) as points, the outliers as points. stats: boxStats() each.
export function boxes(canvas, labels, stats, { yTitle = 'ms', marks = [] } = {}) {
  const point = (label, data, i, style) => ({
    type: 'line', label, data, showLine: false, backgroundColor: color(i), borderColor: color(i),
    pointStyle: style, pointRadius: style === 'line' ? 18 : 5, borderWidth: 2, order: 0,
  });
  return draw(canvas, {
    type: 'bar',
    data: {
      labels,
      datasets: [
        point('median', stats.map(s => s.median), 7, 'line'),
        ...marks.map((m, i) => point(m.label, m.values, 3 + i, shape(1 + i))),
        point('outliers', stats.flatMap((s, i) => s.outliers.map(y => ({ x: labels[i], y }))), 5, 'circle'),
        { label: 'first to third quartile', data: stats.map(s => [s.q1, s.q3]), backgroundColor: color(4),
          grouped: false, barPercentage: 0.5, order: 1 },
        { label: 'whiskers (1.5 IQR)', data: stats.map(s => [s.lo, s.hi]), backgroundColor: color(7),
          grouped: false, barPercentage: 0.02, order: 2 },
      ],
    },
    options: { scales: { y: { beginAtZero: false, title: axisTitle(yTitle) } } },
  });
}

// One interval per label, horizontal: the figure a point, its interval a
// floating bar, and `band` ([lo, hi]: what does not matter) behind.
export function intervals(canvas, labels, rows, { xTitle = 'ms', band = null, bandLabel } = {}) {
  return draw(canvas, {
    type: 'bar',
    data: {
      labels,
      datasets: [
        { type: 'line', label: 'estimate', data: rows.map(r => r.value), showLine: false, pointStyle: 'rectRot',
          pointRadius: 7, backgroundColor: color(7), borderColor: color(7), indexAxis: 'y', order: 0 },
        { label: '95 % interval', data: rows.map(r => [r.lo, r.hi]), backgroundColor: color(1), grouped: false,
          barPercentage: 0.4, order: 1 },
        ...(band ? [{ label: bandLabel, data: labels.map(() => band), backgroundColor: color(4), grouped: false,
          barPercentage: 0.9, order: 2 }] : []),
      ],
    },
    options: { indexAxis: 'y', scales: { x: { title: axisTitle(xTitle) }, y: {} } },
  });
}
