// Pieces the governance views share: how a policy effect, a lifecycle state
// and a held request are shown, a refusal from the API with what it names,
// and a button that asks once more before it acts.
import { h, badge, button, dl, pre } from './dom.js';

// effectBadge colours a policy effect or decision: deny red,
// require_approval amber, allow green.
export function effectBadge(effect) {
  const kind = effect === 'deny' ? 'bad' : effect === 'require_approval' ? 'warn' : effect === 'allow' ? 'ok' : 'info';
  return badge(words(effect || 'none'), kind);
}

// stateBadge colours a lifecycle state of a pattern, an artifact or an
// approval.
export function stateBadge(state) {
  const kinds = {
    promoted: 'ok', approved: 'ok', shadow: 'info', candidate: 'info', observed: 'info', pending: 'warn',
    quarantined: 'bad', rejected: 'bad', negative: 'bad', retired: 'warn', expired: 'warn',
  };
  return badge(words(state || 'unknown'), kinds[state] || 'info');
}

// words writes a snake_case name for people: require_approval → require approval.
export function words(name) {
  return String(name).replace(/_/g, ' ');
}

// refusal is a box with an API error's message as the API wrote it, its
// code, the parameter it names and, for a policy, the verdict beside it.
export function refusal(error, prefix = '') {
  const parts = [h('p', { class: 'refusal-message' }, prefix + (error && error.message ? error.message : String(error)))];
  const facts = [];
  if (error && error.code) facts.push(['Code', h('code', {}, error.code)]);
  if (error && error.param) facts.push(['Field', h('code', {}, error.param)]);
  if (facts.length) parts.push(dl(facts, { class: 'facts refusal-facts' }));
  return h('div', { class: 'status refusal', role: 'alert', dataset: { kind: 'error' } }, parts);
}

// confirmButton is a button that, pressed, offers "label" and "Cancel"
// beside a question; only the second press acts. onConfirm runs like a
// button's action.
export function confirmButton(label, question, onConfirm, props = {}) {
  const wrap = h('span', { class: 'confirm' });
  const first = h('button', { type: 'button', class: props.class || 'secondary' }, label);
  const ask = () => {
    const yes = button('Yes, ' + label.toLowerCase(), async () => {
      await onConfirm();
      if (wrap.isConnected) reset();
    }, { class: ['confirm-yes', props.danger && 'danger'].filter(Boolean).join(' ') });
    const no = h('button', { type: 'button', class: 'secondary' }, 'Cancel');
    no.addEventListener('click', () => {
      reset();
      first.focus();
    });
    wrap.replaceChildren(h('span', { class: 'confirm-question' }, question), yes, no);
    yes.focus();
  };
  const reset = () => wrap.replaceChildren(first);
  first.addEventListener('click', ask);
  wrap.append(first);
  return wrap;
}

// heldRequest lays out what a held request asked: a chat request's model,
// messages and tools; a tool call's name, level and arguments; a web
// action's URL and fields; anything else as JSON.
export function heldRequest(target, request) {
  const r = request && typeof request === 'object' ? request : {};
  if (target === 'chat' && Array.isArray(r.messages)) {
    const tools = Array.isArray(r.tools) ? r.tools.map((t) => (t && t.function && t.function.name) || (t && t.name) || '?') : [];
    return h('div', { class: 'held' },
      dl([['Model', r.model ? h('code', {}, r.model) : null], ['Tools offered', tools.length ? tools.join(', ') : null]]),
      h('ol', { class: 'messages' }, r.messages.map((m) => h('li', {},
        h('span', { class: 'role' }, (m && m.role) || '?'), ' ',
        h('span', { class: 'content' }, messageText(m && m.content))))));
  }
  if (target === 'tool' && r.tool) {
    return h('div', { class: 'held' },
      dl([['Tool', h('code', {}, r.tool)], ['Side-effect level', r.level !== undefined ? String(r.level) : null]]),
      h('p', { class: 'sub' }, 'Arguments'), pre(r.args || {}));
  }
  if (target === 'web' && r.url) {
    const fields = r.fields && typeof r.fields === 'object' ? Object.entries(r.fields) : [];
    return h('div', { class: 'held' },
      dl([['Action', r.action || null], ['Address', r.url], ['Web session', r.session || null]]),
      fields.length ? dl(fields.map(([k, v]) => [k, String(v)]), { class: 'facts fields' }) : null);
  }
  return h('div', { class: 'held' }, pre(request));
}

// messageText is a message's content as text: a string, or the text parts
// of a list of parts.
function messageText(content) {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content.map((p) => (p && typeof p.text === 'string' ? p.text : p && p.type ? `[${p.type}]` : '')).join(' ');
  }
  return content === undefined || content === null ? '' : JSON.stringify(content);
}
