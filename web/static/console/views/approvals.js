// Approvals: requests a policy held for a person, what each asked and the
// rule that held it; owners and admins approve or deny with a reason. An
// approval grants an exception: the identical request from the same caller
// passes until it ends.
import { h, link, button, field, dl } from '../lib/dom.js';
import { time, when, plural } from '../lib/format.js';
import { page, load, api, qs } from '../lib/ui.js';
import { stateBadge, heldRequest, refusal, words } from '../lib/governance.js';

// The tabs. The API knows pending, approved and rejected; an approved
// request whose exception has ended is shown apart as expired.
const TABS = [
  { id: 'pending', label: 'Pending', status: 'pending' },
  { id: 'approved', label: 'Approved', status: 'approved', keep: (a) => !ended(a) },
  { id: 'expired', label: 'Expired', status: 'approved', keep: (a) => ended(a) },
  { id: 'rejected', label: 'Rejected', status: 'rejected' },
  { id: 'all', label: 'All', status: '' },
];

// targetName says what kind of request was held.
function targetName(target) {
  return { chat: 'Chat request', tool: 'Tool call', web: 'Web action' }[target] || words(target);
}

function ended(a) {
  return a.status === 'approved' && a.expiresAt && Date.parse(a.expiresAt) <= Date.now();
}

export async function render(ctx) {
  const tab = TABS.find((t) => t.id === ctx.query.get('status')) || TABS[0];
  const focusID = ctx.query.get('id') || '';
  page(ctx, 'Approvals', 'Requests a policy held for a person to decide. ',
    ctx.session.canAct ? 'Approve or deny each with a reason; an approval lets the identical request through for a while.'
      : 'Owners and admins decide them.');
  ctx.root.append(h('nav', { class: 'tabs', 'aria-label': 'Approvals by status' },
    h('ul', {}, TABS.map((t) => h('li', {}, link('#/approvals' + qs({ status: t.id === 'pending' ? '' : t.id }), t.label,
      t === tab ? { 'aria-current': 'page' } : {}))))));
  const data = await load(ctx, '/api/v1/approvals' + qs({ status: tab.status, limit: 200 }), 'The approvals');
  if (!data) return;
  const list = (data.approvals || []).filter((a) => !tab.keep || tab.keep(a));
  const holder = h('section', { class: 'approvals', 'aria-labelledby': 'queue-title' },
    h('h2', { id: 'queue-title', tabindex: '-1' }, `${tab.label}: ${plural(list.length, 'request')}`));
  ctx.root.append(holder);
  if (list.length === 0) {
    holder.append(h('p', { class: 'empty' }, tab.id === 'pending' ? 'Nothing waits for a decision.' : 'None.'));
    return;
  }
  for (const a of list) holder.append(card(ctx, a));
  if (focusID) {
    const el = holder.querySelector(`[data-id="${CSS.escape(focusID)}"]`);
    if (el) {
      el.classList.add('focused');
      el.scrollIntoView({ block: 'start' });
    }
  }
}

// card is one approval: what it asked, who asked, the rules that held it,
// and its decision or the form to make one.
function card(ctx, a) {
  const status = ended(a) ? 'expired' : a.status;
  const by = a.requestedBy || {};
  return h('article', { class: 'approval', dataset: { id: a.id, status } },
    h('header', {},
      h('h3', {}, targetName(a.target), ' ', h('code', {}, a.id)), ' ', stateBadge(status)),
    dl([
      ['Asked', time(a.createdAt)],
      ['By', [by.actor, by.app && `app ${by.app}`, by.agent && `agent ${by.agent}`, by.subject && `subject ${by.subject}`]
        .filter(Boolean).join(' · ') || null],
      ['Run', a.runId ? link('#/runs/' + encodeURIComponent(a.runId), a.runId) : null],
    ]),
    h('div', { class: 'held-by' }, h('p', { class: 'sub' }, 'Held by'),
      h('ul', { class: 'rules' }, (a.rules || []).map((r) => h('li', {},
        link('#/policies/' + encodeURIComponent(r.id), r.id, { class: 'rule-link' }),
        r.reason ? h('span', { class: 'reason' }, ': ' + r.reason) : null)))),
    h('details', { class: 'asked', open: a.status === 'pending' },
      h('summary', {}, 'What it asked'), heldRequest(a.target, a.request)),
    a.status === 'pending' ? decision(ctx, a) : outcome(a));
}

// outcome is a decided approval's decision and, when approved, the
// exception it grants.
function outcome(a) {
  const parts = [dl([
    ['Decision', `${words(a.status)} by ${a.decidedBy || 'someone'}`],
    ['When', a.decidedAt ? time(a.decidedAt) : null],
    ['Reason', a.reason || null],
  ])];
  if (a.status === 'approved' && a.expiresAt) {
    const over = ended(a);
    parts.push(h('p', { class: 'exception', dataset: { ended: over ? 'yes' : 'no' } },
      over ? 'The exception it granted ended ' : 'Exception in force: the identical request from the same caller passes until ',
      h('time', { datetime: a.expiresAt }, when(a.expiresAt)), ' (', time(a.expiresAt), ').'));
  }
  return h('div', { class: 'outcome' }, parts);
}

// decision is the form to approve or deny a pending approval, for owners
// and admins; a member reads that it waits.
function decision(ctx, a) {
  if (!ctx.session.canAct) return h('p', { class: 'quiet waiting' }, 'Waiting for an owner or admin to decide.');
  const reason = h('textarea', { name: 'reason', rows: '2', required: true, maxlength: '2000', class: 'reason-input' });
  const problemBox = h('div', { class: 'decision-problem' });
  const decide = (approve) => async () => {
    problemBox.replaceChildren();
    const res = await api('POST', `/api/v1/approvals/${encodeURIComponent(a.id)}/${approve ? 'approve' : 'reject'}`,
      { reason: reason.value });
    if (!ctx.current()) return;
    if (!res.ok) {
      problemBox.append(refusal(res.error));
      ctx.say(res.error.message, 'error');
      reason.focus();
      return;
    }
    const d = res.data.approval;
    ctx.say(approve ? `Approved ${d.id}: the identical request passes until ${when(d.expiresAt)}.` : `Denied ${d.id}.`, 'ok');
    await render(ctx);
    if (!ctx.current()) return;
    const heading = ctx.root.querySelector('#queue-title');
    if (heading) heading.focus();
  };
  return h('div', { class: 'decide' },
    field('Reason for the decision', reason, 'Recorded with the decision and in the audit log.'),
    problemBox,
    h('div', { class: 'toolbar' },
      button('Approve', decide(true), { class: 'approve' }),
      button('Deny', decide(false), { class: 'danger deny' })));
}
