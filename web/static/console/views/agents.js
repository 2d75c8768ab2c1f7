// Agents: the callers that named themselves (X-Svc-Agent), their standing
// (trust moves with their policy verdicts) and their recent decisions.
import { h, link, table, section, badge } from '../lib/dom.js';
import { money, num, time } from '../lib/format.js';
import { page, load, api, problem, qs } from '../lib/ui.js';
import { effectBadge, words } from '../lib/governance.js';

const TRUST = {
  trusted: ['ok', 'A long run of allowed calls.'],
  unverified: ['info', 'svc has not seen enough of it yet.'],
  restricted: ['bad', 'Repeatedly denied: rules may refuse it.'],
};

function trustBadge(trust) {
  const [kind] = TRUST[trust] || ['info'];
  return badge(trust || 'unknown', kind);
}

export async function render(ctx) {
  const chosen = ctx.query.get('agent') || '';
  page(ctx, 'Agents', 'Callers that name themselves with X-Svc-Agent. Their standing moves with the policy verdicts on their calls, and rules can read it as agent.trust.');
  const data = await load(ctx, '/api/v1/agents', 'The agents');
  if (!data) return;
  const agents = data.agents || [];
  ctx.root.append(section('Agents', table([
    { label: 'Agent', cell: (a) => link('#/agents' + qs({ agent: a.name }), a.name,
      a.name === chosen ? { 'aria-current': 'true', class: 'agent-link' } : { class: 'agent-link' }) },
    { label: 'Standing', cell: (a) => h('span', {}, trustBadge(a.trust), ' ', h('span', { class: 'quiet small' }, (TRUST[a.trust] || [])[1] || '')) },
    { label: 'Runs', class: 'num', cell: (a) => num(a.runCount) },
    { label: 'First seen', cell: (a) => time(a.firstSeen) },
    { label: 'Last seen', cell: (a) => time(a.lastSeen) },
  ], agents, 'No agent has called yet. A call with the header X-Svc-Agent: <name> adds one.')));
  const name = chosen || (agents[0] && agents[0].name) || '';
  if (!name) return;
  const s = section(`Recent decisions of ${name}`);
  s.classList.add('agent-runs');
  ctx.root.append(s);
  const res = await api('GET', '/api/v1/runs' + qs({ agent: name, limit: 20 }));
  if (!ctx.current()) return;
  if (!res.ok) {
    s.append(problem(res.error, 'Its runs could not be loaded: '));
    return;
  }
  const runs = (res.data && res.data.runs) || [];
  s.append(table([
    { label: 'Run', cell: (r) => link('#/runs/' + encodeURIComponent(r.id), r.id) },
    { label: 'When', cell: (r) => time(r.createdAt) },
    { label: 'Policy', cell: (r) => {
      const p = r.routeExplanation && r.routeExplanation.policy;
      return p && p.decision ? effectBadge(p.decision) : '–';
    } },
    { label: 'Route', cell: (r) => words(r.route || '') },
    { label: 'Status', cell: (r) => words(r.status || '') },
    { label: 'Model', cell: (r) => r.model || '–' },
    { label: 'Cost', class: 'num', cell: (r) => money(r.costUsd) },
  ], runs, 'No recent run of this agent.', `Recent decisions of ${name}`));
}
