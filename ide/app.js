// app.js — the IDE's shell: loads the store, then draws the header, the left nav, the
// current view (from location.hash), the task panel on the right and the floating chat
// window, and wires the keyboard and the toasts. The panel and view modules
// (backlog.js, processes.js, settings.js, workspaces.js, task.js, chat.js) are imported
// when first shown, so one that fails to load leaves a message, not a broken shell.
//
// Routes: #/plan, #/plan/wbs, #/backlog, #/processes, #/settings, #/workspaces, and
// #/task/ID, which opens the task panel over the view shown before.

import { h, clear, icon } from './dom.js';
import * as api from './api.js';
import { store } from './store.js';
import { t, setLocale, onLocale } from './i18n.js';
import { mountHeader } from './header.js';
import { mountGraph } from './graph.js';
import { mountWbs, progressOf } from './wbs.js';

const VIEWS = [
  { route: 'plan', test: 'nav-plan', label: 'nav.plan', icon: 'graph', key: 'p' },
  { route: 'backlog', test: 'nav-backlog', label: 'nav.backlog', icon: 'inbox', key: 'b', module: './backlog.js' },
  { route: 'processes', test: 'nav-processes', label: 'nav.processes', icon: 'terminal', key: 'l', module: './processes.js' },
  { route: 'settings', test: 'nav-settings', label: 'nav.settings', icon: 'sliders', key: 's', module: './settings.js' },
  { route: 'workspaces', test: 'nav-workspaces', label: 'nav.workspaces', icon: 'folder', key: 'w', module: './workspaces.js' },
];

const shell = {
  header: null,
  nav: null,
  navLinks: new Map(),
  main: null,
  panel: null,
  chat: null,
  chatToggle: null,
  toasts: null,
  backlogBadge: null,
};

// What is mounted now, so a route change unmounts exactly that.
const current = { view: null, sub: null, unmount: null, task: null, unmountTask: null, chatOpen: false, unmountChat: null };
let lastView = '#/plan';
let painted = false;

const ctx = {
  api,
  store,
  t,
  openTask,
  closeTask,
  toast,
  setLanguage,
  navigate: (hash) => {
    location.hash = hash;
  },
};

// --- toasts -----------------------------------------------------------------------

export function toast(text, kind = 'info') {
  const close = h('button', { type: 'button', class: 'toast-close', 'aria-label': t('toast.dismiss'), on: { click: () => remove() } }, icon('close'));
  const el = h('div', { class: `toast toast-${kind}`, 'data-test': 'toast', 'data-kind': kind, role: kind === 'error' ? 'alert' : 'status' }, h('span', { class: 'toast-text' }, text), close);
  const remove = () => {
    el.classList.add('leaving');
    setTimeout(() => el.remove(), 180);
  };
  shell.toasts.appendChild(el);
  // Errors stay longer: the user may be looking elsewhere when one comes.
  setTimeout(remove, kind === 'error' ? 12000 : 5000);
  while (shell.toasts.children.length > 5) shell.toasts.firstChild.remove();
}

// --- routing ----------------------------------------------------------------------

function parseHash() {
  const m = /^#\/task\/(.+)$/.exec(location.hash);
  return m ? { task: decodeURIComponent(m[1]) } : parseViewHash(location.hash);
}

function openTask(id) {
  location.hash = `#/task/${encodeURIComponent(id)}`;
}

function closeTask() {
  if (/^#\/task\//.test(location.hash)) location.hash = lastView;
}

function route() {
  const r = parseHash();
  if (r.task) {
    if (!current.view) showView(parseViewHash(lastView));
    showTask(r.task);
  } else {
    lastView = location.hash && location.hash !== '#' ? location.hash : '#/plan';
    hideTask();
    showView(r);
  }
}

function parseViewHash(hash) {
  const parts = hash.replace(/^#\/?/, '').split('/');
  const view = VIEWS.some((v) => v.route === parts[0]) ? parts[0] : 'plan';
  return { view, sub: view === 'plan' ? (parts[1] === 'wbs' ? 'wbs' : 'graph') : null };
}

function showView({ view, sub }, force = false) {
  if (!force && current.view === view && current.sub === sub) return;
  if (current.unmount) current.unmount();
  current.unmount = null;
  current.view = view;
  current.sub = sub;
  for (const [route, link] of shell.navLinks) {
    if (route === view) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  clear(shell.main);
  shell.main.setAttribute('data-view', view);
  if (view === 'plan') {
    current.unmount = mountPlan(shell.main, sub);
    return;
  }
  const spec = VIEWS.find((v) => v.route === view);
  const root = h('div', { class: `view view-${view}` });
  shell.main.appendChild(root);
  let unmount = null;
  let gone = false;
  current.unmount = () => {
    gone = true;
    if (typeof unmount === 'function') unmount();
  };
  loadModule(spec.module).then(
    (mod) => {
      if (gone) return;
      try {
        unmount = mod.mount(root, ctx);
      } catch (e) {
        unavailable(root, spec.module, e);
      }
    },
    (e) => {
      if (!gone) unavailable(root, spec.module, e);
    },
  );
}

// The panel modules load on first use: the plan's first paint does not wait for them,
// and one that fails to load (or is missing) costs its own view only.
function loadModule(path) {
  return import(path);
}

function unavailable(root, name, e) {
  console.error(`${name}:`, e);
  clear(root).appendChild(
    h('div', { class: 'unavailable', role: 'alert' }, t('common.unavailable', { name: name.replace('./', ''), error: e && e.message ? e.message : String(e) })),
  );
}

// --- the plan view: graph or WBS --------------------------------------------------

function mountPlan(root, sub) {
  const counts = h('div', { class: 'plan-summary', 'aria-live': 'polite' });
  const switcher = h(
    'div',
    { class: 'segmented', role: 'group', 'aria-label': t('plan.views') },
    h('a', { href: '#/plan', class: 'seg', 'data-test': 'view-graph', 'aria-current': sub === 'graph' ? 'true' : null }, icon('graph'), t('plan.graph')),
    h('a', { href: '#/plan/wbs', class: 'seg', 'data-test': 'view-wbs', 'aria-current': sub === 'wbs' ? 'true' : null }, icon('list'), t('plan.wbs')),
  );
  const bar = h('div', { class: 'plan-bar' }, h('h1', { class: 'view-title' }, t('plan.title')), switcher, counts);
  const body = h('div', { class: `plan-body plan-${sub}` });
  root.append(h('div', { class: 'view view-plan' }, bar, body));

  let inner = null;
  let emptyShown = null;
  function renderBody() {
    const empty = store.order.length === 0;
    if (empty === emptyShown) return;
    emptyShown = empty;
    if (inner) inner();
    inner = null;
    clear(body);
    if (empty) {
      body.appendChild(
        h(
          'div',
          { class: 'plan-empty', 'data-test': 'plan-empty' },
          h('div', { class: 'plan-empty-art', 'aria-hidden': 'true' }, icon('graph', { width: '56', height: '56' })),
          h('h2', {}, t('plan.emptyTitle')),
          h('p', {}, t('plan.emptyText')),
          h('button', { type: 'button', class: 'btn btn-primary', on: { click: () => toggleChat(true) } }, icon('chat'), t('plan.emptyChat')),
        ),
      );
    } else {
      inner = (sub === 'wbs' ? mountWbs : mountGraph)(body, ctx);
    }
  }

  function renderCounts() {
    const rows = store.rows();
    const by = {};
    for (const r of rows) by[r.state || 'PENDING'] = (by[r.state || 'PENDING'] || 0) + 1;
    const p = progressOf(rows);
    const order = ['RUNNING', 'RETRY_WAIT', 'READY', 'PENDING', 'BLOCKED', 'FAILED', 'CANCELED', 'SUCCEEDED'];
    const bar = h('span', { class: 'progress-bar wide', 'aria-hidden': 'true' });
    for (const s of order) {
      if (!by[s]) continue;
      const seg = h('span', { class: `seg-fill state-bg-${s}` });
      seg.style.width = `${(100 * by[s]) / rows.length}%`;
      bar.appendChild(seg);
    }
    clear(counts).append(
      h('span', { class: 'plan-progress', title: t('plan.progress', p) }, `${p.done}/${p.total}`),
      bar,
      ...order
        .filter((s) => by[s])
        .map((s) =>
          h(
            'button',
            {
              type: 'button',
              class: `count-chip state-${s}`,
              'data-state': s,
              'data-test': 'state-count',
              title: t('plan.findState', { state: t(`state.${s}`) }),
              on: { click: () => store.emit('focus-state', s) },
            },
            h('span', { class: 'state-dot' }),
            `${t(`state.${s}`)} ${by[s]}`,
          ),
        ),
    );
  }

  renderBody();
  renderCounts();
  if (!painted && store.loaded) {
    painted = true;
    performance.mark('mv-plan-painted');
  }
  const offs = [
    store.on('tasks', () => {
      renderBody();
      renderCounts();
    }),
    store.on('task', renderCounts),
  ];
  return () => {
    offs.forEach((off) => off());
    if (inner) inner();
  };
}

// --- task panel and chat ----------------------------------------------------------

function showTask(id) {
  if (current.task === id) return;
  hideTask(true);
  current.task = id;
  shell.panel.hidden = false;
  shell.panel.setAttribute('aria-label', t('panel.task', { id }));
  document.body.classList.add('panel-open');
  const root = h('div', { class: 'task-panel-body' });
  clear(shell.panel).appendChild(root);
  let unmount = null;
  let gone = false;
  current.unmountTask = () => {
    gone = true;
    if (typeof unmount === 'function') unmount();
  };
  loadModule('./task.js').then(
    (mod) => {
      if (gone) return;
      try {
        unmount = mod.mountTask(root, ctx, id);
      } catch (e) {
        unavailable(root, './task.js', e);
      }
      // Keyboard users land in the panel; Esc takes them back.
      if (!shell.panel.contains(document.activeElement)) shell.panel.focus({ preventScroll: true });
    },
    (e) => {
      if (!gone) unavailable(root, './task.js', e);
    },
  );
}

function hideTask(replacing = false) {
  if (current.unmountTask) current.unmountTask();
  current.unmountTask = null;
  const was = current.task;
  current.task = null;
  if (replacing) return;
  shell.panel.hidden = true;
  clear(shell.panel);
  document.body.classList.remove('panel-open');
  // Give the focus back to the node or row the panel was opened from.
  if (was) {
    const back = document.querySelector(`[data-task="${CSS.escape(was)}"][tabindex]`);
    if (back && document.activeElement === document.body) back.focus({ preventScroll: true });
  }
}

function toggleChat(open = !current.chatOpen) {
  if (open === current.chatOpen) {
    if (open) focusChat();
    return;
  }
  current.chatOpen = open;
  shell.chatToggle.setAttribute('aria-expanded', String(open));
  shell.chat.hidden = !open;
  if (!open) {
    if (current.unmountChat) current.unmountChat();
    current.unmountChat = null;
    clear(shell.chat);
    shell.chatToggle.focus({ preventScroll: true });
    return;
  }
  const root = h('div', { class: 'chat-body' });
  const head = h(
    'div',
    { class: 'chat-head' },
    h('span', { class: 'chat-title' }, icon('chat'), t('nav.chat')),
    h('button', { type: 'button', class: 'icon-btn', 'aria-label': t('common.close'), title: t('common.close'), 'data-test': 'chat-close', on: { click: () => toggleChat(false) } }, icon('close')),
  );
  clear(shell.chat).append(head, root);
  let unmount = null;
  let gone = false;
  current.unmountChat = () => {
    gone = true;
    if (typeof unmount === 'function') unmount();
  };
  loadModule('./chat.js').then(
    (mod) => {
      if (gone) return;
      try {
        unmount = mod.mountChat(root, ctx);
      } catch (e) {
        unavailable(root, './chat.js', e);
      }
      focusChat();
    },
    (e) => {
      if (!gone) unavailable(root, './chat.js', e);
    },
  );
}

function focusChat() {
  const input = shell.chat.querySelector('[data-test=chat-input]');
  if (input) input.focus();
}

// --- shell ------------------------------------------------------------------------

function buildNav() {
  shell.navLinks.clear();
  const links = VIEWS.map((v) => {
    const a = h(
      'a',
      { href: `#/${v.route}`, class: 'nav-link', 'data-test': v.test, title: `${t(v.label)} (g ${v.key})` },
      icon(v.icon),
      h('span', { class: 'nav-label' }, t(v.label)),
    );
    if (v.route === 'backlog') {
      shell.backlogBadge = h('span', { class: 'badge', hidden: true });
      a.appendChild(shell.backlogBadge);
    }
    shell.navLinks.set(v.route, a);
    return a;
  });
  shell.chatToggle = h(
    'button',
    {
      type: 'button',
      class: 'nav-link chat-toggle',
      'data-test': 'chat-toggle',
      'aria-expanded': String(current.chatOpen),
      'aria-controls': 'chat-window',
      title: t('nav.chatHint'),
      on: { click: () => toggleChat() },
    },
    icon('chat'),
    h('span', { class: 'nav-label' }, t('nav.chat')),
  );
  clear(shell.nav).append(
    h('div', { class: 'nav-links' }, ...links),
    h('div', { class: 'nav-foot' }, shell.chatToggle, h('p', { class: 'nav-hint' }, t('keys.hint'))),
  );
  shell.nav.setAttribute('aria-label', t('nav.label'));
  renderBacklogBadge();
}

function renderBacklogBadge() {
  if (!shell.backlogBadge) return;
  const open = (store.backlog || []).filter((b) => !b.resolved_at).length;
  shell.backlogBadge.hidden = open === 0;
  shell.backlogBadge.textContent = String(open);
  shell.backlogBadge.setAttribute('data-test', 'backlog-count');
}

let unmountHeader = null;

function buildShell() {
  const app = document.getElementById('app');
  shell.header = h('header', { class: 'topbar' });
  shell.nav = h('nav', { class: 'sidenav' });
  shell.main = h('main', { class: 'main', id: 'main', tabindex: '-1' });
  shell.panel = h('aside', { class: 'task-panel-host', role: 'dialog', 'aria-modal': 'false', tabindex: '-1', hidden: true });
  shell.chat = h('section', { class: 'chat-window', id: 'chat-window', role: 'dialog', 'aria-modal': 'false', 'aria-label': t('chat.window'), hidden: true });
  shell.toasts = h('div', { class: 'toasts', 'aria-label': t('toasts.label'), 'aria-live': 'polite' });
  clear(app).append(shell.header, h('div', { class: 'frame' }, shell.nav, shell.main, shell.panel), shell.chat, shell.toasts);
  unmountHeader = mountHeader(shell.header, ctx);
  buildNav();
}

// A language change redraws the shell's words and remounts what is shown (the modules
// read t() when they draw).
function relabel() {
  if (unmountHeader) unmountHeader();
  unmountHeader = mountHeader(shell.header, ctx);
  buildNav();
  shell.chat.setAttribute('aria-label', t('chat.window'));
  shell.toasts.setAttribute('aria-label', t('toasts.label'));
  if (current.view) showView({ view: current.view, sub: current.sub }, true);
  if (current.task) {
    const id = current.task;
    current.task = null;
    showTask(id);
  }
  if (current.chatOpen) {
    toggleChat(false);
    toggleChat(true);
  }
}

function setLanguage(l) {
  try {
    localStorage.setItem('mv.locale', l);
  } catch {
    // Private mode: the choice lasts for this page only.
  }
  setLocale(l);
}

// ?lang=ja in the page's URL wins (a link or a screenshot run can pick the language
// without touching the saved choice), then the choice saved by the language switch.
function savedLocale() {
  const asked = new URLSearchParams(location.search).get('lang');
  if (asked) return asked;
  try {
    return localStorage.getItem('mv.locale');
  } catch {
    return null;
  }
}

// --- keyboard ---------------------------------------------------------------------

let pendingG = 0;

function onKey(e) {
  if (e.key === 'Escape') {
    if (current.task && (!shell.chat.contains(document.activeElement) || !current.chatOpen)) {
      closeTask();
      e.preventDefault();
    } else if (current.chatOpen) {
      toggleChat(false);
      e.preventDefault();
    }
    return;
  }
  const typing = e.target.closest && e.target.closest('input, textarea, select, [contenteditable=true]');
  if (typing || e.ctrlKey || e.metaKey || e.altKey) return;
  if (e.key === 'g') {
    pendingG = Date.now();
    return;
  }
  if (pendingG && Date.now() - pendingG < 1500) {
    pendingG = 0;
    const v = VIEWS.find((x) => x.key === e.key);
    if (v) {
      location.hash = `#/${v.route}`;
      e.preventDefault();
    }
    return;
  }
  if (e.key === 'c') {
    toggleChat();
    e.preventDefault();
  }
}

// --- events that deserve a toast --------------------------------------------------

function watchForToasts() {
  const previous = new Map();
  for (const [id, r] of store.tasks) previous.set(id, r.state);
  store.on('tasks', () => {
    for (const [id, r] of store.tasks) previous.set(id, r.state);
  });
  store.on('task', (id) => {
    const r = store.tasks.get(id);
    if (!r) return;
    const was = previous.get(id);
    previous.set(id, r.state);
    if (was === r.state) return;
    if (r.state === 'FAILED') {
      // The event carries the last attempt, which the store made the reason.
      toast(t('toast.failed', { id, reason: r.reason || t('state.FAILED') }), 'error');
    }
    // A running task that ends BLOCKED asked a person something (a dependency's failure
    // blocks tasks that never ran); the question waits in the backlog.
    else if (r.state === 'BLOCKED' && was === 'RUNNING') toast(t('toast.question', { id }), 'info');
  });
  // Only a connection that was live, went down and came back deserves a word; the
  // first open after the page loads does not.
  let wasLive = store.connection.live;
  let everLive = wasLive;
  store.on('connection', ({ live }) => {
    if (live && !wasLive && everLive) toast(t('toast.reconnected'), 'info');
    if (live) everLive = true;
    wasLive = live;
  });
  store.on('backlog', renderBacklogBadge);
  // The tab's title counts what runs and what failed, for a fleet watched from another tab.
  const retitle = () => {
    let running = 0;
    let failed = 0;
    for (const r of store.tasks.values()) {
      if (r.state === 'RUNNING') running++;
      else if (r.state === 'FAILED') failed++;
    }
    const name = (store.workspace && store.workspace.name) || '';
    const counts = [running ? `▶${running}` : '', failed ? `✕${failed}` : ''].filter(Boolean).join(' ');
    const title = `${counts ? `${counts} · ` : ''}${name ? `${name} — ` : ''}Multiverse`;
    if (document.title !== title) document.title = title;
  };
  store.on('tasks', retitle);
  store.on('task', retitle);
  retitle();
}

// --- boot -------------------------------------------------------------------------

function bootScreen(error) {
  const app = document.getElementById('app');
  if (!error) {
    clear(app).appendChild(h('div', { class: 'boot' }, h('span', { class: 'boot-mark', 'aria-hidden': 'true' }), t('boot.loading')));
    return;
  }
  const refused = error.status === 401 || error.status === 403;
  clear(app).appendChild(
    h(
      'div',
      { class: 'boot boot-error', role: 'alert' },
      h('h1', {}, t('boot.failed')),
      h('p', {}, refused ? t('boot.token') : error.message || String(error)),
      h('button', { type: 'button', class: 'btn btn-primary', on: { click: () => location.reload() } }, t('boot.retry')),
    ),
  );
}

async function boot() {
  // Until the workspace says, the saved choice or the browser's language.
  await setLocale(savedLocale() || ((navigator.language || '').startsWith('ja') ? 'ja' : 'en'));
  bootScreen();
  try {
    await store.start();
    // With mv-plan-painted, splits a first paint into the daemon's answers and our drawing.
    performance.mark('mv-data-loaded');
  } catch (e) {
    console.error('boot:', e);
    bootScreen(e);
    return;
  }
  await setLocale(savedLocale() || (store.workspace && store.workspace.locale) || 'en');
  buildShell();
  watchForToasts();
  onLocale(relabel);
  window.addEventListener('hashchange', route);
  document.addEventListener('keydown', onKey);
  route();
  document.body.setAttribute('data-ready', 'true');
}

boot();
