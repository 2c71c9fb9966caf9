// backlog.js — the backlog view (mount): what the orchestrator cannot decide alone —
// failures (a task's last attempt failed), questions (from a chat's planner or a task
// that asked) and blockers — open or resolved, newest first. Each item names its kind,
// its task (a click opens it), what happened and when; an open one is resolved here with
// a note (a question's note is its answer, added to the task's description) and, when
// asked, a retry of its task. Live: redrawn from the store on each `backlog` event.

import { h, clear } from './dom.js';
import { t } from './i18n.js';
import { timeEl, ago, errorText } from './panels.js';

/**
 * The items a filter shows, newest first: `show` is 'open' | 'resolved' | 'all', `kind`
 * a kind or 'all'.
 */
export function visibleItems(items, show, kind = 'all') {
  return (items || [])
    .filter((item) => (show === 'all' ? true : show === 'resolved' ? Boolean(item.resolved_at) : !item.resolved_at))
    .filter((item) => kind === 'all' || item.kind === kind)
    .sort((a, b) => String(b.created_at || '').localeCompare(String(a.created_at || '')) || String(b.id).localeCompare(String(a.id)));
}

/**
 * Whether resolving `item` should retry its task unless the person says otherwise: a
 * failure, and a task's own question (its task is BLOCKED until retried) do; a chat's
 * question (`metadata.holds`: its tasks only wait for the answer) does not.
 */
export function retryByDefault(item) {
  if (!item || !item.task) return false;
  if (item.kind === 'FAILURE') return true;
  if (item.kind === 'QUESTION') return !(item.metadata && Array.isArray(item.metadata.holds));
  return false;
}

export function mount(root, ctx) {
  const { store, api } = ctx;
  const ui = { show: 'open', kind: 'all', drafts: new Map(), busy: new Set(), errors: new Map(), gone: false };

  const filter = h('select', { 'data-test': 'backlog-filter', id: 'backlog-filter', on: { change: (e) => { ui.show = e.target.value; draw(); } } });
  const kindSelect = h('select', { 'data-test': 'backlog-kind', id: 'backlog-kind', on: { change: (e) => { ui.kind = e.target.value; draw(); } } });
  const list = h('div', { class: 'bl-list', 'aria-live': 'polite' });
  const view = h(
    'div',
    { class: 'bl' },
    h('h1', { class: 'view-title' }, t('backlog.title')),
    h('p', { class: 'muted bl-intro' }, t('backlog.intro')),
    h(
      'div',
      { class: 'bl-bar' },
      h('label', { for: 'backlog-filter' }, t('backlog.filter')),
      filter,
      h('label', { for: 'backlog-kind' }, t('backlog.kind')),
      kindSelect,
    ),
    list,
  );
  clear(root).appendChild(view);
  // What the items' cards share with the view.
  const b = { store, api, ctx, ui, draw };

  function drawFilters() {
    const items = store.backlog || [];
    const open = items.filter((i) => !i.resolved_at).length;
    const options = [
      ['open', t('backlog.filter.open', { n: open })],
      ['resolved', t('backlog.filter.resolved', { n: items.length - open })],
      ['all', t('backlog.filter.all', { n: items.length })],
    ];
    filter.replaceChildren(...options.map(([value, label]) => h('option', { value, selected: value === ui.show }, label)));
    filter.value = ui.show;
    const kinds = ['all', 'FAILURE', 'QUESTION', 'BLOCKER'];
    kindSelect.replaceChildren(...kinds.map((k) => h('option', { value: k, selected: k === ui.kind }, t(k === 'all' ? 'backlog.kind.all' : `backlog.kind.${k}`))));
    kindSelect.value = ui.kind;
  }

  function draw() {
    const active = document.activeElement;
    // A note being typed keeps its focus and caret across a redraw (events come while typing).
    const keep = active && list.contains(active)
      ? { test: active.getAttribute('data-test'), item: active.getAttribute('data-item'), start: active.selectionStart, end: active.selectionEnd }
      : null;
    drawFilters();
    const items = visibleItems(store.backlog, ui.show, ui.kind);
    if (!items.length) {
      const empty = ui.show === 'open' ? 'backlog.emptyOpen' : ui.show === 'resolved' ? 'backlog.emptyResolved' : 'backlog.empty';
      list.replaceChildren(h('div', { class: 'bl-empty', 'data-test': 'backlog-empty' }, t(empty)));
    } else {
      list.replaceChildren(...items.map((item) => itemEl(b, item)));
    }
    if (keep && keep.test && keep.item) {
      const again = list.querySelector(`[data-test="${keep.test}"][data-item="${CSS.escape(keep.item)}"]`);
      if (again) {
        again.focus({ preventScroll: true });
        if (typeof keep.start === 'number' && again.setSelectionRange) again.setSelectionRange(keep.start, keep.end);
      }
    }
  }

  const offs = [
    store.on('backlog', draw),
    // Task chips show their task's state.
    store.on('task', (id) => {
      for (const el of list.querySelectorAll(`button.bl-task[data-task="${CSS.escape(id)}"]`)) {
        const row = store.tasks.get(id);
        if (row) el.className = `bl-task state-${row.state || 'PENDING'}`;
      }
    }),
  ];
  draw();
  store.refetchBacklog().catch((e) => {
    list.prepend(h('p', { class: 'error-text', role: 'alert' }, t('backlog.loadFailed', { error: errorText(e) })));
  });
  return () => {
    ui.gone = true;
    offs.forEach((off) => off());
  };
}

function taskButton(b, id) {
  const { store, ctx } = b;
  const row = store.tasks.get(id);
  const s = (row && row.state) || 'PENDING';
  return h(
    'button',
    { type: 'button', class: `bl-task state-${s}`, 'data-task': id, 'data-test': 'backlog-task', title: row ? `${row.title} — ${t(`state.${s}`)}` : id, on: { click: () => ctx.openTask(id) } },
    h('span', { class: 'state-dot', 'aria-hidden': 'true' }),
    h('span', { class: 'mono' }, id),
    row ? h('span', { class: 'bl-task-title' }, row.title) : null,
  );
}

/** An item's card: kind, title, task, when; its resolution, or the form that resolves it. */
function itemEl(b, item) {
  const resolved = Boolean(item.resolved_at);
  const kind = item.kind || 'BLOCKER';
  const head = h(
    'div',
    { class: 'bl-head' },
    h('span', { class: `bl-kind kind-${kind}` }, t(`backlog.kind.${kind}`)),
    h('span', { class: 'bl-title' }, item.title || item.id),
    h('span', { class: 'spacer' }),
    h('span', { class: 'muted bl-when', title: item.created_at || '' }, t('backlog.created', { ago: ago(item.created_at) })),
  );
  const meta = h(
    'div',
    { class: 'bl-meta' },
    item.task ? taskButton(b, item.task) : null,
    item.metadata && typeof item.metadata.attempts === 'number' ? h('span', { class: 'muted' }, t('backlog.attempts', { n: item.metadata.attempts })) : null,
    h('span', { class: 'muted mono bl-id' }, item.id),
  );
  const card = h(
    'article',
    { class: `card bl-item${resolved ? ' resolved' : ''}`, 'data-test': 'backlog-item', 'data-item': item.id, 'data-kind': kind, 'data-resolved': String(resolved) },
    head,
    meta,
    item.description ? h('p', { class: 'bl-description' }, item.description) : null,
  );
  if (resolved) {
    card.appendChild(
      h(
        'div',
        { class: 'bl-resolution' },
        h('span', { class: 'muted' }, t('backlog.resolvedAt', { ago: ago(item.resolved_at) }), ' · ', timeEl(item.resolved_at)),
        item.resolution ? h('p', {}, h('strong', {}, t('backlog.resolution')), ' ', item.resolution) : h('p', { class: 'muted' }, t('backlog.noResolution')),
      ),
    );
    return card;
  }
  card.appendChild(resolveForm(b, item));
  return card;
}

function resolveForm(b, item) {
  const { ui } = b;
  const question = item.kind === 'QUESTION';
  const draft = ui.drafts.get(item.id) || { note: '', retry: retryByDefault(item) };
  const busy = ui.busy.has(item.id);
  const noteId = `bl-note-${item.id}`;
  const retryId = `bl-retry-${item.id}`;
  const note = h('textarea', {
    id: noteId,
    class: 'bl-note',
    rows: '2',
    'data-test': 'backlog-note',
    'data-item': item.id,
    placeholder: t(question ? 'backlog.answerPlaceholder' : 'backlog.notePlaceholder'),
    value: draft.note,
    disabled: busy,
    on: {
      input: (e) => ui.drafts.set(item.id, { ...currentDraft(b, item), note: e.target.value }),
      keydown: (e) => {
        if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
          e.preventDefault();
          resolve(b, item);
        }
      },
    },
  });
  const retry = h('input', {
    type: 'checkbox',
    id: retryId,
    'data-test': 'backlog-retry',
    'data-item': item.id,
    checked: draft.retry,
    disabled: busy || !item.task,
    on: { change: (e) => ui.drafts.set(item.id, { ...currentDraft(b, item), retry: e.target.checked }) },
  });
  const error = ui.errors.get(item.id);
  return h(
    'div',
    { class: 'bl-form' },
    h('label', { for: noteId, class: 'field-label' }, t(question ? 'backlog.answer' : 'backlog.note')),
    note,
    h(
      'div',
      { class: 'bl-actions' },
      h('label', { class: 'bl-check', for: retryId, title: t('backlog.retryHint') }, retry, ' ', t('backlog.retry')),
      h('span', { class: 'spacer' }),
      h('button', { type: 'button', class: 'btn btn-primary', 'data-test': 'backlog-resolve', 'data-item': item.id, disabled: busy, on: { click: () => resolve(b, item) } }, t('backlog.resolve')),
    ),
    error ? h('p', { class: 'error-text', role: 'alert' }, error) : null,
  );
}

function currentDraft(b, item) {
  return b.ui.drafts.get(item.id) || { note: '', retry: retryByDefault(item) };
}

async function resolve(b, item) {
  const { store, api, ctx, ui, draw } = b;
  const draft = currentDraft(b, item);
  ui.busy.add(item.id);
  ui.errors.delete(item.id);
  draw();
  try {
    await api.post(`/api/backlog/${encodeURIComponent(item.id)}/resolve`, { note: draft.note.trim(), retry: Boolean(draft.retry && item.task) });
    ui.drafts.delete(item.id);
    ctx.toast(draft.retry && item.task ? t('backlog.resolvedRetry', { id: item.id, task: item.task }) : t('backlog.resolved', { id: item.id }), 'info');
    // The event refetches the list too; reading it now shows the result at once.
    await store.refetchBacklog();
  } catch (e) {
    ui.errors.set(item.id, t('backlog.failed', { id: item.id, error: errorText(e) }));
  } finally {
    ui.busy.delete(item.id);
    if (!ui.gone) draw();
  }
}
