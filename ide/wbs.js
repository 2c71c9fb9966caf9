// wbs.js — the plan as a work breakdown: milestone → phase → task, from the rows'
// milestone and phase fields (tasks with neither under "Unassigned"), each group with
// its progress (succeeded / total) and a bar, collapsible; a row opens its task.
// A `task` event redraws that row and its groups' progress; the tree is rebuilt only
// when the list of tasks is replaced.

import { h, clear, icon } from './dom.js';
import { t, formatDuration } from './i18n.js';

// Groups in order of first appearance in the WBS order; "Unassigned" last.
export function groupRows(rows) {
  const milestones = new Map();
  let unassigned = null;
  for (const row of rows) {
    const m = row.milestone || '';
    const p = row.phase || '';
    let group;
    if (!m) {
      unassigned = unassigned || { name: '', unassigned: true, phases: new Map(), tasks: [], all: [] };
      group = unassigned;
    } else {
      if (!milestones.has(m)) milestones.set(m, { name: m, phases: new Map(), tasks: [], all: [] });
      group = milestones.get(m);
    }
    group.all.push(row);
    if (p) {
      if (!group.phases.has(p)) group.phases.set(p, { name: p, tasks: [], all: [] });
      const phase = group.phases.get(p);
      phase.tasks.push(row);
      phase.all.push(row);
    } else {
      group.tasks.push(row);
    }
  }
  const list = [...milestones.values()];
  if (unassigned) list.push(unassigned);
  return list;
}

export function progressOf(rows) {
  let done = 0;
  let failed = 0;
  for (const r of rows) {
    if (r.state === 'SUCCEEDED') done++;
    else if (r.state === 'FAILED') failed++;
  }
  return { done, failed, total: rows.length };
}

export function mountWbs(root, ctx) {
  const { store, openTask } = ctx;
  const collapsed = mountWbs.collapsed; // kept across remounts (switching views)
  const rowEls = new Map(); // task id -> row element
  const groupsOf = new Map(); // task id -> [group refresh fn]
  const tree = h('div', { class: 'wbs-tree', role: 'tree', 'aria-label': t('wbs.label') });
  const filter = h('input', {
    type: 'search',
    class: 'wbs-filter',
    'data-test': 'wbs-filter',
    placeholder: t('wbs.filter'),
    'aria-label': t('wbs.filterHint'),
    title: t('wbs.filterHint'),
    value: mountWbs.filter,
    on: {
      input: () => {
        mountWbs.filter = filter.value;
        applyFilter();
      },
    },
  });
  const noMatch = h('p', { class: 'wbs-nomatch muted', hidden: true });
  const tools = h(
    'div',
    { class: 'wbs-tools' },
    filter,
    h('span', { class: 'spacer' }),
    h('button', { type: 'button', class: 'btn btn-quiet', on: { click: () => setAll(false) } }, icon('expand'), t('wbs.expandAll')),
    h('button', { type: 'button', class: 'btn btn-quiet', on: { click: () => setAll(true) } }, icon('collapse'), t('wbs.collapseAll')),
  );
  const wrap = h('div', { class: 'wbs' }, tools, noMatch, tree);

  // Rows that do not match are hidden, and so are groups left with none; the progress
  // stays the whole group's.
  function applyFilter() {
    const q = filter.value.trim().toLowerCase();
    for (const [id, el] of rowEls) {
      const row = store.tasks.get(id);
      el.hidden = Boolean(q) && !(id.toLowerCase().includes(q) || String(row?.title || '').toLowerCase().includes(q));
    }
    let any = false;
    for (const g of [...tree.querySelectorAll('.wbs-phase'), ...tree.querySelectorAll('.wbs-milestone')]) {
      const shown = !q || g.querySelector('.wbs-task:not([hidden])') !== null;
      g.hidden = !shown;
      any = any || shown;
    }
    noMatch.hidden = !q || any;
    noMatch.textContent = t('wbs.noMatch', { q: filter.value.trim() });
  }
  root.appendChild(wrap);
  // What the rows and groups share: they fill these as they are built.
  const w = { store, openTask, collapsed, rowEls, groupsOf, keys: [] };

  function setAll(closed) {
    for (const k of w.keys) {
      if (closed) collapsed.add(k);
      else collapsed.delete(k);
    }
    render();
  }

  // Depth in the task tree (a task's parent is another task), for indentation.
  function render() {
    rowEls.clear();
    groupsOf.clear();
    w.keys = [];
    const groups = groupRows(store.rows());
    const out = groups.map((m) => {
      const mName = m.unassigned ? '' : m.name;
      const mLabel = m.unassigned ? t('wbs.unassigned') : m.name;
      const phases = [...m.phases.values()].map((p) =>
        group(w, 'phase', `${mName}\u0001${p.name}`, p.name, p.name, p.all, p.tasks.map((r) => taskRow(w, r))),
      );
      return group(w, 'milestone', mName, mName, mLabel, m.all, [...phases, ...m.tasks.map((r) => taskRow(w, r))]);
    });
    clear(tree).append(...out);
    applyFilter();
  }

  function onTask(id) {
    const row = store.tasks.get(id);
    const el = rowEls.get(id);
    if (!row || !el) return;
    fillRow(el, row);
    for (const update of groupsOf.get(id) || []) update();
  }

  // The plan's summary asked for a state: go to its next task (scrolled to and focused).
  let stateCursor = { state: null, at: -1 };
  function focusState(state) {
    const rows = [...rowEls.entries()].filter(([id, el]) => !el.hidden && store.tasks.get(id)?.state === state);
    if (!rows.length) return;
    if (stateCursor.state !== state) stateCursor = { state, at: -1 };
    stateCursor.at = (stateCursor.at + 1) % rows.length;
    const el = rows[stateCursor.at][1];
    // A collapsed group is opened so the row can be seen.
    for (let g = el.closest('.wbs-children'); g; g = g.parentElement.closest('.wbs-children')) {
      if (g.hidden) g.previousElementSibling.click();
    }
    el.scrollIntoView({ block: 'center' });
    el.focus({ preventScroll: true });
    el.classList.remove('flash');
    void el.offsetWidth; // restart the animation
    el.classList.add('flash');
  }

  render();
  const offs = [store.on('tasks', render), store.on('task', onTask), store.on('focus-state', focusState)];
  return () => offs.forEach((off) => off());
}
mountWbs.collapsed = new Set();
mountWbs.filter = '';

function depthOf(store, row) {
  let d = 0;
  let p = row.parent;
  const seen = new Set();
  while (p && store.tasks.has(p) && !seen.has(p) && d < 8) {
    seen.add(p);
    d++;
    p = store.tasks.get(p).parent;
  }
  return d;
}

/** A task's row: its state, id, title, reason or countdown, attempts; it opens the task. */
function taskRow(w, row) {
  const { store, openTask, rowEls } = w;
  const el = h('div', {
    class: 'wbs-task',
    'data-test': 'wbs-task',
    'data-task': row.id,
    role: 'treeitem',
    tabindex: '0',
    on: {
      click: () => openTask(row.id),
      keydown: (e) => {
        if (e.key === 'Enter' || e.key === ' ') {
          e.preventDefault();
          openTask(row.id);
        }
      },
    },
  });
  el.style.setProperty('--depth', String(depthOf(store, row)));
  fillRow(el, row);
  rowEls.set(row.id, el);
  return el;
}

function fillRow(el, row) {
  const state = row.state || 'PENDING';
  el.setAttribute('data-state', state);
  let extra = '';
  if ((state === 'BLOCKED' || state === 'FAILED') && row.reason) extra = row.reason;
  else if (state === 'RETRY_WAIT' && row.next_retry_at_ms) {
    extra = t('wbs.retryIn', { time: formatDuration(row.next_retry_at_ms - Date.now()) });
  }
  clear(el).append(
    h('span', { class: 'state-dot', 'aria-hidden': 'true' }),
    h('span', { class: 'wbs-id' }, row.id),
    h('span', { class: 'wbs-title', title: row.title }, row.title),
    extra ? h('span', { class: 'wbs-reason', title: extra }, extra) : h('span', { class: 'wbs-reason' }),
    h('span', { class: 'wbs-attempts' }, row.attempts ? t('wbs.attempts', { n: row.attempts }) : ''),
    h('span', { class: `state-chip state-${state}` }, t(`state.${state}`)),
  );
  el.setAttribute('aria-label', `${row.id} ${row.title}: ${t(`state.${state}`)}${extra ? `, ${extra}` : ''}`);
}

function progressBar(w, rows) {
  const { store, groupsOf } = w;
  const bar = h('span', { class: 'progress-bar', 'aria-hidden': 'true' });
  const fillDone = h('span', { class: 'progress-done' });
  const fillFailed = h('span', { class: 'progress-failed' });
  bar.append(fillDone, fillFailed);
  const text = h('span', { class: 'wbs-progress', 'data-test': 'wbs-progress' });
  const update = () => {
    const p = progressOf(rows.map((r) => store.tasks.get(r.id) || r));
    text.textContent = `${p.done}/${p.total}`;
    text.title = t('wbs.progress', p);
    fillDone.style.width = `${p.total ? (100 * p.done) / p.total : 0}%`;
    fillFailed.style.width = `${p.total ? (100 * p.failed) / p.total : 0}%`;
  };
  update();
  for (const r of rows) {
    if (!groupsOf.has(r.id)) groupsOf.set(r.id, []);
    groupsOf.get(r.id).push(update);
  }
  return [bar, text];
}

/** A milestone's or a phase's group: its head (name, count, progress) toggles its rows. */
function group(w, level, key, name, label, rows, children) {
  const { collapsed, keys } = w;
  const closed = collapsed.has(key);
  keys.push(key);
  const body = h('div', { class: 'wbs-children', role: 'group', hidden: closed });
  body.append(...children);
  const head = h(
    'button',
    {
      type: 'button',
      class: 'wbs-head',
      'aria-expanded': String(!closed),
      'aria-label': t('wbs.toggle', { name: label }),
      on: {
        click: () => {
          const nowClosed = !collapsed.has(key);
          if (nowClosed) collapsed.add(key);
          else collapsed.delete(key);
          body.hidden = nowClosed;
          head.setAttribute('aria-expanded', String(!nowClosed));
        },
      },
    },
    icon('chevron', { class: 'icon icon-chevron wbs-chevron' }),
    h('span', { class: 'wbs-name' }, label),
    h('span', { class: 'wbs-count' }, String(rows.length)),
    ...progressBar(w, rows),
  );
  return h(
    'section',
    {
      class: `wbs-group wbs-${level}`,
      'data-test': 'wbs-group',
      'data-group': name,
      'data-level': level,
      'data-unassigned': level === 'milestone' && name === '' ? 'true' : null,
      role: 'treeitem',
      'aria-expanded': String(!closed),
    },
    head,
    body,
  );
}
