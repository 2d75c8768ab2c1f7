// Settings: every setting of the organization with what it does. Owners
// and admins change them one at a time; the API checks each value and its
// refusal is shown under the field, in its words. A secret is never shown:
// the API reads it as "[set]" and the page only offers to replace or clear it.
import { h, clear, field, form, button } from '../lib/dom.js';
import { page, load, api } from '../lib/ui.js';
import { fieldProblem, clearProblems } from '../lib/forms.js';

// SETTINGS describes the settings svc has (internal/settings), in its order.
// kind picks the control: number, integer, boolean, url or secret.
const SETTINGS = [
  { key: 'retention_days', label: 'Retention', unit: 'days', kind: 'number',
    about: 'How long runs, traces and their evidence are kept. A positive number, at most 1,000,000.' },
  { key: 'redaction', label: 'Redaction', kind: 'boolean',
    about: 'Mask personal data in stored requests and answers.' },
  { key: 'webhook_url', label: 'Webhook URL', kind: 'url',
    about: 'Where svc posts events (approvals, artifacts, checkpoints). A public http(s) address; empty turns webhooks off.' },
  { key: 'webhook_secret', label: 'Webhook secret', kind: 'secret',
    about: 'Signs each webhook so the receiver can check it came from svc. Never shown once set.' },
  { key: 'approval_exception_ttl_hours', label: 'Approval exception', unit: 'hours', kind: 'number',
    about: 'How long an approved request passes again without asking.' },
  { key: 'canary_enabled', label: 'Canary', kind: 'boolean',
    about: 'Serve a promoted artifact to a share of requests first, instead of to all of them.' },
  { key: 'approval_pending_limit', label: 'Pending approvals per caller', kind: 'integer',
    about: 'How many approvals one key or person may have waiting at once; past it, requests a rule would hold are refused. A whole number from 1 to 10,000.' },
];

export async function render(ctx) {
  page(ctx, 'Settings', ctx.session.canAct
    ? 'The organization’s settings. Each is saved on its own and checked by the API.'
    : 'The organization’s settings. Only owners and admins change them.');
  const data = await load(ctx, '/api/v1/settings', 'The settings');
  if (!data) return;
  const box = h('div', { id: 'settings' });
  ctx.root.append(box);
  draw(ctx, box, data.settings || {});
}

function draw(ctx, box, values) {
  const known = new Set(SETTINGS.map((s) => s.key));
  // A setting the API has that this page does not know yet is still shown.
  const extra = Object.keys(values).filter((k) => !known.has(k)).sort()
    .map((key) => ({ key, label: key, kind: 'json', about: '' }));
  clear(box, [...SETTINGS, ...extra].map((s) => (ctx.session.canAct
    ? editor(ctx, box, s, values[s.key])
    : reader(s, values[s.key]))));
}

// shown writes a value for reading: a secret only as set or not set.
function shown(s, v) {
  if (s.kind === 'secret') return v ? '[set]' : 'not set';
  if (v === null || v === undefined || v === '') return 'not set';
  if (s.kind === 'boolean') return v ? 'on' : 'off';
  if (s.kind === 'json') return JSON.stringify(v);
  return s.unit ? `${v} ${s.unit}` : String(v);
}

function reader(s, v) {
  return h('div', { class: 'setting', dataset: { setting: s.key } },
    h('h2', {}, s.label),
    h('p', { class: 'setting-value' }, h('code', {}, s.key), ' ', h('strong', { id: `setting-${s.key}-value` }, shown(s, v))),
    s.about ? h('p', { class: 'hint' }, s.about) : null);
}

// editor is one setting's form.
function editor(ctx, box, s, v) {
  const name = 'value';
  let control;
  const id = `setting-${s.key}`;
  switch (s.kind) {
    case 'boolean':
      control = h('input', { type: 'checkbox', name, id, checked: !!v });
      break;
    case 'secret':
      control = h('input', { type: 'password', name, id, autocomplete: 'new-password', value: '',
        placeholder: v ? 'Type a new secret to replace it' : 'Type a secret' });
      break;
    case 'number':
    case 'integer':
      control = h('input', { type: 'text', inputmode: s.kind === 'integer' ? 'numeric' : 'decimal', name, id, value: v === null || v === undefined ? '' : String(v) });
      break;
    case 'json':
      control = h('input', { type: 'text', name, id, value: JSON.stringify(v) });
      break;
    default:
      control = h('input', { type: 'url', name, id, value: v || '', autocomplete: 'off' });
  }
  const label = s.unit ? `${s.label} (${s.unit})` : s.label;
  const controlField = s.kind === 'boolean'
    ? h('div', { class: 'field check' }, control, h('label', { for: id }, `${s.label} on`))
    : field(label, control);
  const status = s.kind === 'secret' ? h('p', { class: 'setting-value' }, 'Now: ', h('strong', { id: `${id}-value` }, shown(s, v))) : null;
  const save = async (value, f) => {
    clearProblems(f);
    const res = await api('PUT', '/api/v1/settings', { key: s.key, value });
    if (!ctx.current()) return;
    if (!res.ok) {
      if (!fieldProblem(f, res.error, { [s.key]: name })) ctx.say(res.error.message, 'error');
      else ctx.say('');
      return;
    }
    ctx.say(`${s.label} saved.`, 'ok');
    // Only this setting's form is redrawn, so unsaved edits in the others stay.
    const settings = (res.data && res.data.settings) || {};
    const fresh = editor(ctx, box, s, settings[s.key]);
    f.replaceWith(fresh);
    fresh.querySelector('h2')?.focus();
  };
  const f = form({ class: 'setting', id: `${id}-form`, dataset: { setting: s.key } }, [
    h('h2', { tabindex: '-1' }, s.label, ' ', h('code', { class: 'key' }, s.key)),
    s.about ? h('p', { class: 'hint' }, s.about) : null,
    status,
    controlField,
    h('div', { class: 'toolbar' },
      h('button', { type: 'submit', id: `${id}-save` }, s.kind === 'secret' ? 'Save secret' : 'Save'),
      s.kind === 'secret' && v ? button('Clear secret', () => save(null, f), { class: 'secondary', id: `${id}-clear` }) : null),
  ], async (values, el) => {
    // A secret is cleared only by its Clear button: an empty save is refused
    // here, and what was typed is sent as typed (spaces are part of it).
    if (s.kind === 'secret') {
      if (values[name] === '') {
        fieldProblem(el, { param: name, message: 'Type a secret, or use Clear secret.' });
        return;
      }
      return save(values[name], el);
    }
    return save(encode(s, values[name]), el);
  });
  return f;
}

// encode turns what was typed into the JSON value sent. A number that does
// not parse is sent as typed, so the API's own message says what is wrong.
function encode(s, raw) {
  switch (s.kind) {
    case 'boolean':
      return raw === true;
    case 'number':
    case 'integer': {
      const t = String(raw).trim();
      return t !== '' && Number.isFinite(Number(t)) ? Number(t) : t;
    }
    case 'json':
      try {
        return JSON.parse(raw);
      } catch {
        return raw;
      }
    default:
      return String(raw).trim() === '' ? null : String(raw).trim();
  }
}
