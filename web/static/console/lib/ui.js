// Pieces every view uses: the page heading, a problem from the API in its
// own words, and actions that call the API and say how it went.
import { api } from '/account.js';
import { h, clear } from './dom.js';

export { api };

// page clears the view's root and gives it its heading (focused by the
// router) and an optional line under it. It returns the root.
export function page(ctx, title, ...intro) {
  return clear(ctx.root, h('h1', { tabindex: '-1' }, title), intro.length ? h('p', { class: 'lede' }, intro) : null);
}

// rerender draws the view again after an action changed what it shows, and
// puts the focus back on the page (the element focus names, or the heading),
// which the redraw would otherwise drop to the document's start.
export async function rerender(ctx, render, focus = 'h1') {
  await render(ctx);
  if (!ctx.current()) return;
  const el = ctx.root.querySelector(focus) || ctx.root.querySelector('h1');
  if (!el) return;
  if (!el.hasAttribute('tabindex')) el.setAttribute('tabindex', '-1');
  el.focus();
}

// problem is a box with an API error's message, as the API wrote it.
export function problem(error, prefix = '') {
  const message = error && error.message ? error.message : String(error);
  return h('p', { class: 'status', role: 'alert', dataset: { kind: 'error' } }, prefix + message);
}

// load calls GET path; on failure it shows the API's words in ctx.root (after
// the heading) and returns null, else the answer's data.
export async function load(ctx, path, what = 'This') {
  const res = await api('GET', path);
  if (!ctx.current()) return null;
  if (!res.ok) {
    ctx.root.append(problem(res.error, `${what} could not be loaded: `));
    return null;
  }
  return res.data;
}

// act calls the API for an action and says in the status line how it went:
// done on success, the API's own words on failure. It returns the answer
// (ok, data, error) for the caller to redraw.
export async function act(ctx, method, path, body, done) {
  const res = await api(method, path, body);
  if (res.ok) ctx.say(typeof done === 'function' ? done(res.data) : done, 'ok');
  else ctx.say(res.error.message, 'error');
  return res;
}

// adminOnly returns nodes only when the person may act (owners and admins,
// and open dev mode); a member sees nothing of it.
// operates says whether this person runs svc itself: an owner or admin of
// the operator's default organization (or anyone in open dev mode). The
// API keeps reloads and the providers' status to them.
export function operates(session) {
  return session.canAct && (session.mode === 'open' || session.tenantId === 'default');
}

export function adminOnly(ctx, ...nodes) {
  return ctx.session.canAct ? nodes : null;
}

// qs builds a query string from an object, leaving out empty values.
export function qs(params) {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') p.set(k, v);
  const s = p.toString();
  return s ? '?' + s : '';
}
