// chat/patch.js — what a chat turn's patch did to the plan: created, updated, moved and
// deleted tasks as chips in their state's colour that open the task, the dependencies it
// removed, the conflicts it saw, and whether execution started. `chat` is the mounted
// chat (chat.js).

import { h } from '../dom.js';
import { t } from '../i18n.js';

/** A task's chip: a button that opens it, or plain text for a task no longer there. */
export function chip(chat, id, clickable = true) {
  const row = chat.store.tasks.get(id);
  const s = (row && row.state) || null;
  const label = [h('span', { class: 'mono' }, id), row ? h('span', { class: 'cw-chip-title' }, row.title) : null];
  if (!clickable || !row) return h('span', { class: 'cw-chip', 'data-task': id }, ...label);
  return h(
    'button',
    { type: 'button', class: `cw-chip state-${s || 'PENDING'}`, 'data-task': id, title: t('chat.openTask', { id }), on: { click: () => chat.ctx.openTask(id) } },
    h('span', { class: 'state-dot', 'aria-hidden': 'true' }),
    ...label,
  );
}

/** The patch of a turn's outcome, or null when it changed nothing. */
export function patchEl(chat, outcome) {
  const p = outcome && outcome.patch;
  if (!p) return null;
  const groups = [];
  const group = (test, key, ids, clickable = true) => {
    if (!ids || !ids.length) return;
    groups.push(h('div', { class: `cw-group cw-${test}`, 'data-test': test }, h('span', { class: 'cw-group-name' }, t(key)), h('span', { class: 'cw-chips' }, ...ids.map((id) => chip(chat, id, clickable)))));
  };
  group('patch-created', 'chat.created', (p.created || []).map((c) => c.id));
  group('patch-updated', 'chat.updated', p.updated);
  group('patch-moved', 'chat.moved', p.moved);
  group('patch-deleted', 'chat.deleted', p.deleted, false);
  if ((p.removed_dependencies || []).length) {
    groups.push(
      h('div', { class: 'cw-group' }, h('span', { class: 'cw-group-name' }, t('chat.removedDeps')), h('ul', { class: 'cw-list' }, ...p.removed_dependencies.map((r) => h('li', {}, t('chat.removedDep', r))))),
    );
  }
  if ((p.conflicts || []).length) {
    groups.push(
      h(
        'div',
        { class: 'cw-group cw-conflicts' },
        h('span', { class: 'cw-group-name' }, t('chat.conflicts')),
        h(
          'ul',
          { class: 'cw-list' },
          ...p.conflicts.map((c) =>
            h('li', { 'data-test': 'patch-conflict', 'data-file': c.file }, h('span', { class: 'mono' }, c.file), ' ', h('span', { class: 'cw-chips' }, ...(c.tasks || []).map((id) => chip(chat, id))), c.reason ? h('span', { class: 'muted' }, ` — ${c.reason}`) : null),
          ),
        ),
      ),
    );
  }
  if (outcome.autopilot) groups.push(h('p', { class: 'cw-autopilot' }, t('chat.autopilot')));
  if (!groups.length) return null;
  return h('div', { class: 'cw-patch', 'data-test': 'chat-patch', 'aria-label': t('chat.patch') }, ...groups);
}

/** Task chips follow their task's state without redrawing the conversation. */
export function recolourChips(chat) {
  for (const el of chat.log.querySelectorAll('button.cw-chip[data-task]')) {
    const row = chat.store.tasks.get(el.getAttribute('data-task'));
    if (row) el.className = `cw-chip state-${row.state || 'PENDING'}`;
  }
}
