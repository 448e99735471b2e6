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
export function bars(canvas, labels, datasets, { stacked = false, yTitle = 'ms', xTitle, horizontal = false } = {}) {
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
export function figure(canvas, table, { tall = false } = {}) {
  canvas.setAttribute('role', 'img');
  return el('div', { class: 'figure' },
    el('div', { class: tall ? 'chart tall' : 'chart' }, canvas),
    el('div', { class: 'figure-table' }, table));
}
