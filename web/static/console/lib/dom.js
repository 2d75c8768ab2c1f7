// Building the page from data. Everything a person typed or the server
// named goes in as text (a text node or textContent), never as HTML, so no
// answer from the API can inject markup; and nothing sets a style attribute,
// which the Content-Security-Policy refuses.

// h makes an element: h('a', {href: '#/runs', class: 'x'}, 'text', child…).
// Props: class, text, on<Event> (a function), dataset (an object), aria-*,
// and any other attribute (true sets it empty, false/null/undefined leaves
// it out). Children may be strings, numbers, nodes, arrays or null.
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'class') el.className = Array.isArray(value) ? value.filter(Boolean).join(' ') : value;
    else if (key === 'text') el.textContent = String(value);
    else if (key === 'dataset') Object.assign(el.dataset, value);
    else if (key.startsWith('on') && typeof value === 'function') el.addEventListener(key.slice(2).toLowerCase(), value);
    else if (key === 'value' && 'value' in el) el.value = value;
    else if (key === 'checked' || key === 'selected' || key === 'disabled' || key === 'hidden') el[key] = !!value;
    else el.setAttribute(key, value === true ? '' : String(value));
  }
  append(el, children);
  return el;
}

// append adds children (strings, nodes, arrays, null) to el.
export function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

// clear empties el and fills it with children.
export function clear(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

// link is an in-console link to a route ('#/runs/…').
export function link(route, text, props = {}) {
  return h('a', { href: route, ...props }, text);
}

// button is a plain button that runs onClick with the button disabled and
// marked busy until it settles, so a double click acts once.
export function button(label, onClick, props = {}) {
  const b = h('button', { type: 'button', ...props }, label);
  b.addEventListener('click', async (event) => {
    if (b.getAttribute('aria-busy') === 'true') return;
    b.setAttribute('aria-busy', 'true');
    b.disabled = true;
    try {
      await onClick(event);
    } finally {
      b.disabled = false;
      b.removeAttribute('aria-busy');
    }
  });
  return b;
}

let fieldCount = 0;

// field is a labelled form control: field('Reason', h('input', {name: 'reason'})).
// It gives the control an id when it has none, so the label points at it.
export function field(label, control, hint) {
  if (!control.id) control.id = 'f' + (++fieldCount);
  const parts = [h('label', { for: control.id }, label), control];
  if (hint) {
    const hintEl = h('p', { class: 'hint', id: control.id + '-hint' }, hint);
    control.setAttribute('aria-describedby', hintEl.id);
    parts.push(hintEl);
  }
  return h('div', { class: 'field' }, parts);
}

// form is a form whose submit runs onSubmit(values, form) with its buttons
// disabled until it settles; values maps each named control to its value
// (checkboxes to true/false). The browser's own submission never happens.
export function form(props, children, onSubmit) {
  const f = h('form', { novalidate: true, ...props }, children);
  f.addEventListener('submit', async (event) => {
    event.preventDefault();
    if (f.getAttribute('aria-busy') === 'true') return;
    const values = {};
    for (const el of f.elements) {
      if (!el.name) continue;
      values[el.name] = el.type === 'checkbox' ? el.checked : el.value;
    }
    f.setAttribute('aria-busy', 'true');
    const buttons = [...f.querySelectorAll('button')];
    for (const b of buttons) b.disabled = true;
    try {
      await onSubmit(values, f);
    } finally {
      f.removeAttribute('aria-busy');
      for (const b of buttons) b.disabled = false;
    }
  });
  return f;
}

// table is a data table: columns are {label, cell: row => node|string,
// class?}; rows an array. With no rows it shows empty (a sentence) instead.
// The table sits in a scroller named label (a section names its unnamed
// scrollers after its title), so a phone scrolls it sideways.
export function table(columns, rows, empty = 'Nothing yet.', label = '') {
  if (!rows || rows.length === 0) return h('p', { class: 'empty' }, empty);
  return scroller(label, h('table', {},
    h('thead', {}, h('tr', {}, columns.map((c) => h('th', { scope: 'col', class: c.class }, c.label)))),
    h('tbody', {}, rows.map((row) => h('tr', {}, columns.map((c) => h('td', { class: c.class }, c.cell(row))))))));
}

// scroller wraps a wide table in a named region that scrolls sideways. It
// is a tab stop (so a keyboard can scroll it) only while its table is wider
// than it; otherwise tabbing would stop on a box with nothing to do.
export function scroller(label, content) {
  const box = h('div', { class: 'table-scroll', role: 'region', 'aria-label': label || 'Table',
    dataset: label ? {} : { unnamed: '' } }, content);
  const fit = () => {
    if (box.scrollWidth > box.clientWidth + 1) box.setAttribute('tabindex', '0');
    else box.removeAttribute('tabindex');
  };
  if (typeof ResizeObserver === 'function') {
    const seen = new ResizeObserver(fit);
    seen.observe(box);
    if (content instanceof Element) seen.observe(content);
  } else {
    box.setAttribute('tabindex', '0');
  }
  return box;
}

// dl is a description list of [term, value] pairs; pairs whose value is
// null or undefined are left out.
export function dl(pairs, props = {}) {
  return h('dl', { class: 'facts', ...props },
    pairs.filter(([, v]) => v !== null && v !== undefined && v !== '')
      .map(([term, value]) => [h('dt', {}, term), h('dd', {}, value)]));
}

// pre shows a value as indented JSON (or a string as it is).
export function pre(value) {
  return h('pre', { class: 'code' }, typeof value === 'string' ? value : JSON.stringify(value, null, 2));
}

// badge is a short coloured label; kind picks its colour (ok, warn, bad, info).
export function badge(text, kind = 'info') {
  return h('span', { class: 'badge', dataset: { kind } }, text);
}

// section is a titled part of a view. Tables in it that were given no name
// are named after its title.
export function section(title, ...children) {
  const s = h('section', { class: 'panel' }, h('h2', {}, title), children);
  for (const box of s.querySelectorAll('.table-scroll[data-unnamed]')) {
    box.setAttribute('aria-label', String(title));
    delete box.dataset.unnamed;
  }
  return s;
}
