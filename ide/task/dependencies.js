// task/dependencies.js — the tasks this one depends on and the tasks that depend on
// it, each a chip in its state's colour that opens it. `p` is the panel (task.js):
// {id, ctx}.

import { h } from '../dom.js';
import { t } from '../i18n.js';

function taskLink(p, dep, attrs = {}) {
  const row = p.ctx.store.tasks.get(dep);
  const s = (row && row.state) || 'PENDING';
  return h(
    'button',
    { type: 'button', class: `tp-dep state-${s}`, 'data-task': dep, 'data-state': s, title: row ? `${row.title} — ${t(`state.${s}`)}` : dep, on: { click: () => p.ctx.openTask(dep) }, ...attrs },
    h('span', { class: 'state-dot', 'aria-hidden': 'true' }),
    h('span', { class: 'mono' }, dep),
    row ? h('span', { class: 'tp-dep-title' }, row.title) : null,
  );
}

/** The tasks this one waits for, then the tasks that wait for it. */
export function dependenciesBlock(p, design) {
  const deps = design.dependencies || [];
  const dependents = [...p.ctx.store.tasks.values()].filter((r) => (r.dependencies || []).includes(p.id)).map((r) => r.id);
  const out = [];
  if (deps.length) out.push(h('div', { class: 'tp-deps' }, ...deps.map((d) => taskLink(p, d, { 'data-test': 'task-dependency' }))));
  else out.push(h('p', { class: 'muted' }, t('task.noDependencies')));
  if (dependents.length) {
    out.push(h('p', { class: 'tp-sub' }, t('task.dependents')));
    out.push(h('div', { class: 'tp-deps' }, ...dependents.map((d) => taskLink(p, d, { 'data-test': 'task-dependent' }))));
  }
  return h('div', {}, ...out);
}
