// API keys: the organization's keys, a new key (its token shown this once),
// and revocation. Keys are managed by owners and admins only; a member is
// told so and the keys API is not called.
import { h, clear, button, field, form, table, badge, section } from '../lib/dom.js';
import { time } from '../lib/format.js';
import { page, load, act, api } from '../lib/ui.js';
import { fieldProblem, clearProblems, copyButton } from '../lib/forms.js';

export async function render(ctx) {
  page(ctx, 'API keys', 'Keys let programs call the gateway and the API. Each key has a mode, may be pinned to one app, and may be an admin key.');
  if (!ctx.session.canAct) {
    ctx.root.append(h('p', { id: 'keys-members', class: 'status', dataset: { kind: 'info' } },
      'Only the organization’s owners and admins manage API keys. Ask one of them for a key.'));
    return;
  }
  const fresh = h('div', { id: 'new-key', 'aria-live': 'polite' });
  const list = h('div', { id: 'key-list' });
  ctx.root.append(createSection(ctx, fresh, () => redraw(ctx, list)), fresh, section('Keys', list));
  await redraw(ctx, list);
}

function createSection(ctx, fresh, reload) {
  const f = form({ id: 'create-key', class: 'stack' }, [
    field('Name', h('input', { name: 'name', id: 'key-name', required: true, maxlength: 200, autocomplete: 'off' }),
      'What uses the key: a service, a script, a person.'),
    field('Mode', h('select', { name: 'mode', id: 'key-mode' },
      h('option', { value: 'optimize', selected: true }, 'optimize: caches, artifacts and policies apply'),
      h('option', { value: 'observe' }, 'observe: record what svc would do, never block or serve from a cache'))),
    field('App', h('input', { name: 'appId', id: 'key-app', maxlength: 200, autocomplete: 'off' }),
      'Optional. Pins the key to this app: its requests are recorded as this app whatever they say.'),
    h('div', { class: 'field check' },
      h('input', { type: 'checkbox', name: 'admin', id: 'key-admin' }),
      h('label', { for: 'key-admin' }, 'Admin key: may manage keys, settings, policies and approvals through the API')),
    h('button', { type: 'submit', id: 'create-key-submit' }, 'Create key'),
  ], async (values, el) => {
    clearProblems(el);
    const body = { name: values.name.trim(), mode: values.mode, admin: values.admin };
    if (values.appId.trim() !== '') body.appId = values.appId.trim();
    const res = await api('POST', '/api/v1/keys', body);
    if (!ctx.current()) return;
    if (!res.ok) {
      // The status line must not keep an earlier key's success beside this refusal.
      if (!fieldProblem(el, res.error)) ctx.say(res.error.message, 'error');
      else ctx.say('');
      return;
    }
    el.reset();
    showToken(ctx, fresh, res.data);
    ctx.say(`Key “${res.data.name}” created. Copy its token now: it is not shown again.`, 'ok');
    await reload();
  });
  return section('Create a key', f);
}

// showToken shows a new key's token, the one time the API gives it. It lives
// only in this page: nothing stores it, so a reload does not show it again.
function showToken(ctx, box, key) {
  const token = h('input', { id: 'new-key-token', readonly: true, value: key.token, class: 'token', spellcheck: 'false', autocomplete: 'off' });
  const done = h('button', { type: 'button', class: 'secondary small', id: 'new-key-done' }, 'I have stored it');
  done.addEventListener('click', () => {
    clear(box);
    document.getElementById('create-key-submit')?.focus();
  });
  clear(box, h('section', { class: 'panel token-panel', 'aria-labelledby': 'new-key-title' },
    h('h2', { id: 'new-key-title' }, `The token of “${key.name}”`),
    h('p', {}, 'This is the only time the token is shown. Store it in your secret manager now; if it is lost, create another key and revoke this one.'),
    field('Token', token),
    h('div', { class: 'toolbar' }, copyButton(token, 'Copy token', { id: 'copy-token' }), done)));
  token.focus();
  token.select();
}

async function redraw(ctx, box) {
  const data = await load(ctx, '/api/v1/keys', 'The keys');
  if (!data) return;
  const keys = data.keys || [];
  clear(box, table([
    { label: 'Name', cell: (k) => k.name },
    // The action comes second so that a phone reaches it without scrolling
    // to the table's end.
    { label: 'Action', cell: (k) => (k.revokedAt ? '' : revokeControl(ctx, k, () => redraw(ctx, box))) },
    { label: 'Token starts', cell: (k) => h('code', {}, k.prefix + '…') },
    { label: 'Mode', cell: (k) => k.mode },
    { label: 'App', cell: (k) => k.appId || h('span', { class: 'quiet' }, 'any') },
    { label: 'Admin', cell: (k) => (k.admin ? badge('admin', 'warn') : 'no') },
    { label: 'Created', cell: (k) => time(k.createdAt) },
    { label: 'State', cell: (k) => (k.revokedAt ? h('span', {}, badge('revoked', 'bad'), ' ', time(k.revokedAt)) : badge('active', 'ok')) },
  ], keys, 'No keys yet. Create one above.'));
  const rows = box.querySelectorAll('tbody tr');
  keys.forEach((k, i) => rows[i].setAttribute('data-key', k.id));
}

// revokeControl asks once more before revoking: a revoked key fails on its
// very next request, and cannot be restored.
function revokeControl(ctx, key, reload) {
  const cell = h('span', { class: 'confirm' });
  const ask = () => {
    const yes = button('Revoke now', async () => {
      const res = await act(ctx, 'POST', `/api/v1/keys/${encodeURIComponent(key.id)}/revoke`, {}, `Key “${key.name}” revoked.`);
      if (!res.ok || !ctx.current()) return;
      await reload();
      // The row's buttons are gone: the focus goes to its state.
      const row = document.querySelector(`#key-list tr[data-key="${CSS.escape(key.id)}"]`);
      if (row) {
        row.setAttribute('tabindex', '-1');
        row.focus();
      }
    }, { class: 'danger small', 'data-confirm-revoke': key.id });
    const no = button('Cancel', () => {
      clear(cell, start());
      cell.querySelector('button').focus();
    }, { class: 'secondary small' });
    clear(cell, h('span', { class: 'confirm-text' }, `Revoke “${key.name}”? Programs using it are refused at once.`), ' ', yes, ' ', no);
    no.focus();
  };
  const start = () => button('Revoke', ask, { class: 'secondary small', 'data-revoke': key.id, 'aria-label': `Revoke ${key.name}` });
  return clear(cell, start());
}
