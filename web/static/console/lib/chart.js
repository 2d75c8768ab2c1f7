// Small SVG charts drawn from data, with no library: a line chart of one or
// more series over days, and a bar chart. Each chart carries a table of its
// numbers for screen readers and keyboard users (the SVG is decorative to
// them), and its colours come from classes in the style sheet.

const NS = 'http://www.w3.org/2000/svg';

function svg(tag, attrs = {}) {
  const el = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  return el;
}

const W = 640;
const H = 200;
const PAD = { top: 12, right: 12, bottom: 24 };

// CHAR is about how wide one character of an axis label is, in the chart's
// units (the label's font is 12 px on a 640-unit-wide chart at full size).
const CHAR = 7.5;

// lineChart draws series [{name, values: [number…], kind: 'a'|'b'|'c'|'d'}]
// over labels [string…] (one per point). format writes an axis value;
// counts set wholeNumbers, so the axis stops at whole numbers only.
// It returns a <figure> holding the chart, a legend and the data table.
export function lineChart({ title, labels, series, format = String, wholeNumbers = false }) {
  const max = Math.max(0, ...series.flatMap((s) => s.values.map(Number)));
  // A count's axis tops at an even whole number, so its middle line is one too.
  const top = wholeNumbers ? Math.max(2, 2 * Math.ceil((max * 1.1) / 2)) : max > 0 ? max * 1.1 : 1;
  const ticks = [0, 0.5, 1].map((f) => ({ f, text: format(top * f) }));
  // The left margin fits the longest axis label ($0.0001947 is wide).
  const left = Math.max(40, Math.ceil(Math.max(...ticks.map((t) => String(t.text).length)) * CHAR) + 12);
  const PADL = { ...PAD, left };
  const iw = W - PADL.left - PADL.right;
  const ih = H - PAD.top - PAD.bottom;
  const x = (i) => PADL.left + (labels.length <= 1 ? iw / 2 : (i * iw) / (labels.length - 1));
  const y = (v) => PAD.top + ih - (Number(v) / top) * ih;

  const root = svg('svg', { viewBox: `0 0 ${W} ${H}`, class: 'chart', 'aria-hidden': 'true', focusable: 'false' });
  for (const { f, text } of ticks) {
    const gy = PAD.top + ih - f * ih;
    root.append(svg('line', { x1: PADL.left, x2: W - PAD.right, y1: gy, y2: gy, class: 'grid' }));
    const label = svg('text', { x: PADL.left - 6, y: gy + 4, class: 'axis', 'text-anchor': 'end' });
    label.textContent = text;
    root.append(label);
  }
  if (labels.length > 0) {
    for (const i of new Set([0, labels.length - 1])) {
      const t = svg('text', { x: x(i), y: H - 6, class: 'axis', 'text-anchor': i === 0 && labels.length > 1 ? 'start' : 'end' });
      t.textContent = labels[i];
      root.append(t);
    }
  }
  for (const s of series) {
    const pts = s.values.map((v, i) => `${x(i)},${y(v)}`).join(' ');
    root.append(svg('polyline', { points: pts, class: 'series', 'data-kind': s.kind || 'a' }));
    if (s.values.length === 1) root.append(svg('circle', { cx: x(0), cy: y(s.values[0]), r: 3, class: 'dot', 'data-kind': s.kind || 'a' }));
  }
  return figure(title, root, labels, series, format);
}

// barChart draws one bar per item [{label, value, kind}].
export function barChart({ title, items, format = String }) {
  const max = Math.max(0, ...items.map((i) => Number(i.value)));
  const top = max > 0 ? max : 1;
  const rowH = 22;
  const h = items.length * rowH + 4;
  const labelW = 150;
  const root = svg('svg', { viewBox: `0 0 ${W} ${h}`, class: 'chart bars', 'aria-hidden': 'true', focusable: 'false' });
  items.forEach((it, i) => {
    const yy = i * rowH + 2;
    const name = svg('text', { x: labelW - 6, y: yy + 15, class: 'axis', 'text-anchor': 'end' });
    name.textContent = it.label;
    const w = Math.max(1, (Number(it.value) / top) * (W - labelW - 90));
    const bar = svg('rect', { x: labelW, y: yy + 3, width: w, height: rowH - 8, class: 'bar', 'data-kind': it.kind || 'a' });
    const val = svg('text', { x: labelW + w + 6, y: yy + 15, class: 'axis' });
    val.textContent = format(it.value);
    root.append(name, bar, val);
  });
  return figure(title, root, items.map((i) => i.label), [{ name: 'value', values: items.map((i) => i.value) }], format);
}

function figure(title, chart, labels, series, format) {
  const fig = document.createElement('figure');
  fig.className = 'chart-figure';
  const cap = document.createElement('figcaption');
  cap.textContent = title;
  fig.append(cap, chart);
  if (series.length > 1) {
    const legend = document.createElement('ul');
    legend.className = 'legend';
    for (const s of series) {
      const li = document.createElement('li');
      li.dataset.kind = s.kind || 'a';
      li.textContent = s.name;
      legend.append(li);
    }
    fig.append(legend);
  }
  // The numbers, for people who cannot see the chart.
  const details = document.createElement('details');
  const summary = document.createElement('summary');
  summary.textContent = 'The numbers';
  const table = document.createElement('table');
  const head = table.createTHead().insertRow();
  for (const text of ['', ...series.map((s) => s.name)]) {
    const th = document.createElement('th');
    th.scope = 'col';
    th.textContent = text;
    head.append(th);
  }
  const body = table.createTBody();
  labels.forEach((label, i) => {
    const row = body.insertRow();
    const th = document.createElement('th');
    th.scope = 'row';
    th.textContent = label;
    row.append(th);
    for (const s of series) row.insertCell().textContent = format(s.values[i]);
  });
  details.append(summary, table);
  fig.append(details);
  return fig;
}
