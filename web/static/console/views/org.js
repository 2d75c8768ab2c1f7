// Organization (account mode): the person's organizations, the active one's
// members and invitations, and what may be done to them. Owners and admins
// invite, change roles and remove members; only an owner grants or takes
// the owner role and deletes the organization; the last owner can neither
// leave nor be demoted, so those actions are not offered to them (the API
// refuses them too, with 409 last_owner, whose words are shown).
import { h, clear, button, field, form, table, badge, section, dl } from '../lib/dom.js';
import { time, plural } from '../lib/format.js';
import { page, load, act, api } from '../lib/ui.js';
import { fieldProblem, clearProblems, copyButton } from '../lib/forms.js';

const ROLES = ['owner', 'admin', 'member'];

// DEFAULT_TENANT is the organization svc starts with; the API refuses to
// delete it (409 default_org), so the page does not offer it.
const DEFAULT_TENANT = 'default';

export async function render(ctx) {
  page(ctx, 'Organization');
  const [orgs, active] = await Promise.all([api('GET', '/api/v1/orgs'), api('GET', '/api/v1/orgs/active')]);
  if (!ctx.current()) return;
  ctx.root.append(orgsSection(ctx, orgs));
  if (!active.ok) {
    ctx.root.append(h('p', { class: 'status', role: 'alert', dataset: { kind: 'error' } },
      'The active organization could not be loaded: ' + active.error.message));
    return;
  }
  const org = active.data;
  const me = ctx.session.user ? ctx.session.user.id : '';
  const owners = (org.members || []).filter((m) => m.role === 'owner').length;
  const state = { org, me, owners, mine: org.role, lastOwner: org.role === 'owner' && owners === 1 };

  ctx.root.append(
    section(org.name, dl([
      ['Your role', badge(org.role, org.role === 'member' ? 'info' : 'ok')],
      ['Created', time(org.createdAt)],
      ['Members', plural((org.members || []).length, 'member')],
    ], { id: 'active-org' }), ctx.session.canAct ? renameForm(ctx, org) : null),
    membersSection(ctx, state));
  if (ctx.session.canAct) {
    const invites = section('Invitations', h('div', { id: 'invite-result', 'aria-live': 'polite' }), h('div', { id: 'invite-list' }, h('p', { class: 'quiet' }, 'Loading…')));
    invites.insertBefore(inviteForm(ctx, invites), invites.querySelector('#invite-result'));
    ctx.root.append(invites);
    await drawInvites(ctx, invites.querySelector('#invite-list'));
    if (!ctx.current()) return;
  }
  ctx.root.append(leaveSection(ctx, state));
  if (org.role === 'owner') {
    ctx.root.append(org.tenantId === DEFAULT_TENANT
      ? section('Delete this organization', h('p', { id: 'delete-default' }, 'The default organization holds svc’s own traffic and cannot be deleted.'))
      : deleteSection(ctx, org));
  }
  if (focusAfter) {
    // The router focuses the heading once render returns; the row is
    // focused just after that.
    const email = focusAfter;
    focusAfter = '';
    setTimeout(() => {
      if (ctx.current()) focusMember(email);
    });
  }
}

// orgsSection lists the person's organizations, the active one marked, with
// a switch for each other one and a form for a new one.
function orgsSection(ctx, res) {
  if (!res.ok) return h('p', { class: 'status', role: 'alert', dataset: { kind: 'error' } }, 'Your organizations could not be loaded: ' + res.error.message);
  const list = h('ul', { id: 'org-list', class: 'org-list' }, (res.data.orgs || []).map((o) => h('li', { 'aria-current': o.active ? 'true' : null },
    h('span', { class: 'org-name' }, o.name), ' · ', o.role,
    o.createdAt ? [' · ', h('time', { datetime: o.createdAt, title: o.createdAt }, 'since ' + o.createdAt.slice(0, 10))] : null,
    o.active ? h('strong', {}, ' (active)') : ' ',
    o.active ? null : button('Switch', async () => {
      const r = await act(ctx, 'POST', '/api/v1/orgs/switch', { tenantId: o.tenantId }, 'Switched to ' + o.name + '.');
      if (r.ok) await ctx.refreshSession();
    }, { class: 'secondary small', 'aria-label': 'Switch to ' + o.name }))));
  const create = form({ id: 'create-org', class: 'inline-form' }, [
    field('New organization’s name', h('input', { name: 'name', id: 'new-org-name', required: true, maxlength: 200, autocomplete: 'organization' })),
    h('button', { type: 'submit', id: 'create-org-submit', class: 'secondary' }, 'Create organization'),
  ], (values, f) => sendName(ctx, f, 'POST', '/api/v1/orgs', values,
    (data) => `${data.org.name} is created, and you are its owner. It is now your active organization.`));
  return section('Your organizations', list, create);
}

function renameForm(ctx, org) {
  return form({ id: 'rename-org', class: 'inline-form' }, [
    field('Name', h('input', { name: 'name', id: 'org-rename', value: org.name, required: true, maxlength: 200 })),
    h('button', { type: 'submit', class: 'secondary' }, 'Rename'),
  ], (values, f) => sendName(ctx, f, 'PATCH', '/api/v1/orgs/active', values, (data) => 'Renamed to ' + data.name + '.'));
}

// sendName sends an organization's name typed in form f (to create or to
// rename one), shows a refusal under the field it names, and on success
// reads the session again and says done(answer).
async function sendName(ctx, f, method, path, values, done) {
  clearProblems(f);
  const r = await api(method, path, { name: values.name.trim() });
  if (!ctx.current()) return;
  if (!r.ok) {
    if (!fieldProblem(f, r.error)) ctx.say(r.error.message, 'error');
    return;
  }
  await ctx.refreshSession();
  ctx.say(done(r.data), 'ok');
}

function membersSection(ctx, st) {
  const { org, me, mine, owners } = st;
  // What this person may do to member m, as the API decides it.
  const mayChange = (m) => ctx.session.canAct && (mine === 'owner' || m.role !== 'owner') && !(m.role === 'owner' && owners === 1);
  const mayRemove = (m) => mayChange(m) && m.userId !== me;
  const rows = org.members || [];
  const box = section('Members', table([
    { label: 'Name', cell: (m) => [m.name || m.email, m.userId === me ? h('span', { class: 'quiet' }, ' (you)') : null] },
    // Actions come second so that a phone reaches them without scrolling.
    ...(ctx.session.canAct ? [{ label: 'Actions', cell: (m) => memberActions(ctx, st, m, mayChange(m), mayRemove(m)) }] : []),
    { label: 'Email', cell: (m) => m.email },
    { label: 'Role', cell: (m) => [badge(m.role, m.role === 'member' ? 'info' : 'ok'), m.role === 'owner' && owners === 1 ? h('span', { class: 'quiet' }, ' the only owner') : null] },
  ], rows, 'No members.'));
  box.id = 'members';
  const trs = box.querySelectorAll('tbody tr');
  rows.forEach((m, i) => trs[i].setAttribute('data-member', m.email));
  return box;
}

function memberActions(ctx, st, m, change, remove) {
  if (!change && !remove) return '';
  const cell = h('div', { class: 'member-actions' });
  if (change) {
    const roles = st.mine === 'owner' ? ROLES : ROLES.filter((r) => r !== 'owner');
    const select = h('select', { 'aria-label': `Role of ${m.name || m.email}`, 'data-role-of': m.email },
      roles.map((r) => h('option', { value: r, selected: r === m.role }, r)));
    const who = m.name || m.email;
    const self = m.userId === st.me;
    const change = async (role) => {
      const r = await act(ctx, 'PATCH', `/api/v1/orgs/active/members/${encodeURIComponent(m.userId)}`, { role },
        (d) => (self ? 'You are now ' : `${who} is now `) + (d && d.member ? d.member.role : role) + '.');
      if (!r.ok || !ctx.current()) return;
      if (self) {
        // The person's own rights changed: the whole console is read again,
        // and the page then focuses their row.
        focusAfter = m.email;
        await ctx.refreshSession();
        return;
      }
      await render(ctx);
      focusMember(m.email);
    };
    // A person's own row asks before changing their role, like Remove: one
    // click must not take their rights away.
    const slot = h('span', { class: 'confirm' });
    const ask = () => {
      const no = button('Cancel', () => {
        clear(slot, start());
        slot.querySelector('button').focus();
      }, { class: 'secondary small' });
      clear(slot, h('span', { class: 'confirm-text', id: 'self-role-confirm' }, `Make yourself ${select.value === 'admin' ? 'an' : 'a'} ${select.value}? ${losing(m.role, select.value)}`), ' ',
        button('Change my role', () => change(select.value), { class: 'danger small', 'data-confirm-role': m.email }), ' ', no);
      no.focus();
    };
    const start = () => button('Change role', () => {
      if (select.value === m.role) {
        ctx.say(self ? `You are already ${m.role === 'owner' ? 'an' : 'a'} ${m.role}.` : `${who} is already ${m.role === 'owner' ? 'an' : 'a'} ${m.role}.`, 'info');
        return;
      }
      if (self) ask();
      else return change(select.value);
    }, { class: 'secondary small', 'data-change-role': m.email, 'aria-label': self ? 'Change your own role' : `Change the role of ${who}` });
    slot.append(start());
    cell.append(select, slot);
  }
  if (remove) {
    const slot = h('span', { class: 'confirm' });
    const ask = () => {
      const no = button('Cancel', () => {
        clear(slot, start());
        slot.querySelector('button').focus();
      }, { class: 'secondary small' });
      clear(slot, h('span', { class: 'confirm-text' }, `Remove ${m.name || m.email}? They lose access at once.`), ' ',
        button('Remove now', async () => {
          const r = await act(ctx, 'DELETE', `/api/v1/orgs/active/members/${encodeURIComponent(m.userId)}`, undefined,
            `${m.name || m.email} is removed from the organization.`);
          if (!r.ok || !ctx.current()) return;
          await render(ctx);
          document.getElementById('members')?.querySelector('h2')?.setAttribute('tabindex', '-1');
          document.getElementById('members')?.querySelector('h2')?.focus();
        }, { class: 'danger small', 'data-confirm-remove': m.email }), ' ', no);
      no.focus();
    };
    const start = () => button('Remove', ask, { class: 'secondary small', 'data-remove': m.email, 'aria-label': `Remove ${m.name || m.email}` });
    slot.append(start());
    cell.append(slot);
  }
  return cell;
}

// losing says what a person gives up by changing their own role from
// `from` to `to`.
function losing(from, to) {
  const lost = [];
  if (from === 'owner') lost.push('granting or taking the owner role and deleting the organization');
  if (to === 'member') lost.push('changing keys, settings, members and invitations');
  return `You lose ${lost.join(', and ')}; only ${from === 'owner' ? 'an owner' : 'an owner or admin'} can give it back.`;
}

// focusAfter names the member whose row the next drawing of the page
// focuses (after a person changed their own role and the console was read
// again).
let focusAfter = '';

// focusMember moves focus to a member's row in the members table.
function focusMember(email) {
  const row = [...document.querySelectorAll('#members tbody tr')].find((tr) => tr.dataset.member === email);
  if (!row) return;
  row.setAttribute('tabindex', '-1');
  row.focus();
}

function inviteForm(ctx, box) {
  return form({ id: 'invite-form', class: 'inline-form' }, [
    field('Email', h('input', { type: 'email', name: 'email', id: 'invite-email', required: true, autocomplete: 'off' })),
    field('Role', h('select', { name: 'role', id: 'invite-role' }, h('option', { value: 'member' }, 'member'), h('option', { value: 'admin' }, 'admin'))),
    h('button', { type: 'submit', id: 'invite-submit' }, 'Invite'),
  ], async (values, f) => {
    clearProblems(f);
    const r = await api('POST', '/api/v1/orgs/active/invites', { email: values.email.trim(), role: values.role });
    if (!ctx.current()) return;
    if (!r.ok) {
      if (!fieldProblem(f, r.error)) ctx.say(r.error.message, 'error');
      return;
    }
    f.reset();
    const linkBox = h('input', { id: 'invite-link', readonly: true, value: r.data.acceptUrl, spellcheck: 'false' });
    clear(box.querySelector('#invite-result'), h('div', { class: 'panel token-panel' },
      h('p', {}, `We emailed an invitation to ${r.data.invite.email}. You can also send them this link; it works once, until ${new Date(r.data.invite.expiresAt).toLocaleString()}.`),
      field('Accept link', linkBox),
      copyButton(linkBox, 'Copy link', { id: 'copy-invite-link' })));
    ctx.say(`Invited ${r.data.invite.email} as ${r.data.invite.role}.`, 'ok');
    await drawInvites(ctx, box.querySelector('#invite-list'));
  });
}

async function drawInvites(ctx, box) {
  const res = await api('GET', '/api/v1/orgs/active/invites');
  if (!ctx.current()) return;
  if (!res.ok) {
    clear(box, h('p', { class: 'status', dataset: { kind: 'error' } }, 'The invitations could not be loaded: ' + res.error.message));
    return;
  }
  const invites = res.data.invites || [];
  clear(box, table([
    { label: 'Email', cell: (i) => i.email },
    // The action comes second, in reach on a phone.
    { label: 'Action', cell: (i) => (i.status === 'pending' ? button('Revoke', async () => {
      const r = await act(ctx, 'POST', `/api/v1/orgs/active/invites/${encodeURIComponent(i.id)}/revoke`, {}, `The invitation of ${i.email} is revoked.`);
      if (r.ok) await drawInvites(ctx, box);
    }, { class: 'secondary small', 'data-revoke-invite': i.email, 'aria-label': `Revoke the invitation of ${i.email}` }) : '') },
    { label: 'Role', cell: (i) => i.role },
    { label: 'State', cell: (i) => badge(i.status, i.status === 'pending' ? 'warn' : i.status === 'accepted' ? 'ok' : 'info') },
    { label: 'Sent', cell: (i) => time(i.createdAt) },
    { label: 'Expires', cell: (i) => (i.status === 'pending' ? time(i.expiresAt) : '–') },
  ], invites, 'No invitations yet.'));
}

function leaveSection(ctx, st) {
  if (st.lastOwner) {
    return section('Leave', h('p', { id: 'leave-blocked' },
      'You are the only owner, so you cannot leave. Make another member an owner first, or delete the organization.'));
  }
  const box = h('div', { id: 'leave' });
  const ask = () => {
    const no = button('Cancel', () => {
      clear(box, start());
      box.querySelector('button').focus();
    }, { class: 'secondary' });
    clear(box, h('p', {}, `Leave ${st.org.name}? You lose access to it until someone invites you again.`),
      h('div', { class: 'toolbar' }, button('Leave now', async () => {
        const r = await act(ctx, 'POST', '/api/v1/orgs/active/leave', {},
          (d) => `You left ${st.org.name}.` + (d && d.activeOrg ? ` You are now in ${d.activeOrg.name}.` : ''));
        if (r.ok) await ctx.refreshSession();
      }, { class: 'danger', id: 'leave-confirm' }), no));
    no.focus();
  };
  const start = () => button('Leave this organization', ask, { class: 'secondary', id: 'leave-org' });
  box.append(start());
  return section('Leave', box);
}

// deleteSection deletes the organization and all its data once its name is
// typed: the button stays disabled until the name matches exactly.
function deleteSection(ctx, org) {
  const input = h('input', { name: 'confirm', id: 'delete-confirm', autocomplete: 'off', spellcheck: 'false' });
  const submit = h('button', { type: 'submit', class: 'danger', id: 'delete-org', disabled: true }, 'Delete this organization');
  input.addEventListener('input', () => {
    submit.disabled = input.value !== org.name;
  });
  const f = h('form', { id: 'delete-form', novalidate: true },
    h('p', {}, 'Deleting removes the organization and everything in it: runs, keys, settings, approvals, patterns, artifacts, caches, snapshots, the audit trail, members and invitations. It cannot be undone.'),
    field(`Type “${org.name}” to confirm`, input),
    submit);
  f.addEventListener('submit', async (event) => {
    event.preventDefault();
    if (input.value !== org.name || submit.getAttribute('aria-busy') === 'true') return;
    clearProblems(f);
    submit.disabled = true;
    submit.setAttribute('aria-busy', 'true');
    const r = await api('DELETE', '/api/v1/orgs/active', { confirm: input.value });
    submit.removeAttribute('aria-busy');
    if (!ctx.current()) return;
    if (!r.ok) {
      if (!fieldProblem(f, r.error)) ctx.say(r.error.message, 'error');
      submit.disabled = input.value !== org.name;
      return;
    }
    await ctx.refreshSession();
    ctx.say(`${org.name} and all its data are deleted.`, 'ok');
  });
  const s = section('Delete this organization', f);
  s.classList.add('danger-zone');
  return s;
}
