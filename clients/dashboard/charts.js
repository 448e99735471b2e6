// clients/dashboard/charts.js: the charts, drawn by Chart.js (loaded before
// the modules by index.html as the global `Chart`). Charts draw on canvas:
// labels from traces are painted as text, never parsed as markup.

const COLORS = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f'];

export function color(i) {
  return COLORS[i % COLORS.length];
}

// Draw (or redraw in place) a chart in a canvas; config as Chart.js takes it.
export function draw(canvas, config) {
  config.options = Object.assign({ animation: false, responsive: true, maintainAspectRatio: false }, config.options);
  const old = window.Chart.getChart(canvas);
  if (old) {
    old.data = config.data;
    old.options = config.options;
    old.update();
    return old;
  }
  return new window.Chart(canvas, config);
}

// Bars per label: datasets [{label, values}]; stacked or side by side.
export function bars(canvas, labels, datasets, { stacked = false, yTitle = 'ms', horizontal = false } = {}) {
  const value = horizontal ? 'x' : 'y', category = horizontal ? 'y' : 'x';
  return draw(canvas, {
    type: 'bar',
    data: {
      labels,
      datasets: datasets.map((d, i) => ({ label: d.label, data: d.values, backgroundColor: color(i) })),
    },
    options: {
      indexAxis: category,
      scales: {
        [category]: { stacked },
        [value]: { stacked, beginAtZero: true, title: { display: true, text: yTitle } },
      },
      plugins: { legend: { position: 'bottom' } },
    },
  });
}
