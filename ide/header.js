// header.js — the top bar: the workspace, the execution state (always visible) with
// Start / Pause / Resume / Stop (each enabled only when it applies), the pools with their
// running / waiting / failed counts, the event stream's state and the language. It reads
// the store; the store refetches the pools when a task or execution event arrives. A
// RUNNING execution with nothing left to run says so (activityOf): RUNNING only means
// that ready tasks may start, and a settled plan would otherwise look busy forever.

import { h, clear, icon } from './dom.js';
import { t, locale, LOCALES } from './i18n.js';

const LANGUAGE_NAMES = { en: 'English', ja: '日本語' };

// Which controls apply in which execution state. Start and Resume both ask for RUNNING;
// they are told apart so that each says what it does.
const CONTROLS = [
  { test: 'exec-start', label: 'header.start', hint: 'header.startHint', icon: 'play', to: 'RUNNING', when: ['IDLE'], kind: 'primary' },
  { test: 'exec-pause', label: 'header.pause', hint: 'header.pauseHint', icon: 'pause', to: 'PAUSED', when: ['RUNNING'] },
  { test: 'exec-resume', label: 'header.resume', hint: 'header.resumeHint', icon: 'play', to: 'RUNNING', when: ['PAUSED'], kind: 'primary' },
  { test: 'exec-stop', label: 'header.stop', hint: 'header.stopHint', icon: 'stop', to: 'IDLE', when: ['RUNNING', 'PAUSED'], kind: 'danger' },
];

/** States a task ends in (the lifecycle contract's terminal ones). */
const ENDED = new Set(['SUCCEEDED', 'FAILED', 'CANCELED']);

/**
 * What a RUNNING execution has left, from the task rows (state, dependencies) and the
 * backlog: 'active' while a task runs or will start by itself (RUNNING, RETRY_WAIT,
 * READY not held by an open chat question, PENDING on dependencies that succeed or will
 * get there); else 'settled' when every task has ended, or 'stalled' when the rest wait
 * for a person (BLOCKED, held, or PENDING behind those). null for an empty plan.
 */
export function activityOf(rows, backlog) {
  if (!rows.length) return null;
  const byId = new Map(rows.map((r) => [r.id, r]));
  const held = new Set();
  for (const item of backlog || []) {
    const holds = item && item.kind === 'QUESTION' && !item.resolved_at && item.metadata && item.metadata.holds;
    if (Array.isArray(holds)) holds.forEach((id) => held.add(id));
  }
  const memo = new Map();
  const moves = (id) => {
    if (memo.has(id)) return memo.get(id);
    memo.set(id, false); // a cycle (the daemon refuses one) would never move
    const r = byId.get(id);
    let yes = false;
    if (r && (r.state === 'RUNNING' || r.state === 'RETRY_WAIT')) yes = true;
    else if (r && r.state === 'READY') yes = !held.has(id);
    else if (r && r.state === 'PENDING') {
      yes = !held.has(id) && (r.dependencies || []).every((d) => (byId.get(d) || {}).state === 'SUCCEEDED' || moves(d));
    }
    memo.set(id, yes);
    return yes;
  };
  if (rows.some((r) => moves(r.id))) return 'active';
  return rows.every((r) => ENDED.has(r.state)) ? 'settled' : 'stalled';
}

export function mountHeader(root, ctx) {
  const { store, api, toast } = ctx;
  let busy = false;

  const stateEl = h('span', { class: 'exec-state', 'data-test': 'execution-state', role: 'status', 'aria-live': 'polite' });
  const buttons = CONTROLS.map((c) =>
    h(
      'button',
      {
        type: 'button',
        class: `btn btn-exec ${c.kind ? `btn-${c.kind}` : ''}`,
        'data-test': c.test,
        title: t(c.hint),
        on: { click: () => setExecution(c.to) },
      },
      icon(c.icon),
      h('span', {}, t(c.label)),
    ),
  );
  const pools = h('div', { class: 'pools', role: 'list', 'aria-label': t('header.pools') });
  const conn = h('button', {
    type: 'button',
    class: 'connection',
    'data-test': 'connection',
    on: { click: () => api.events().retryNow() },
  });
  const language = h(
    'select',
    {
      class: 'lang-select',
      'data-test': 'language',
      'aria-label': t('header.language'),
      on: { change: (e) => ctx.setLanguage(e.target.value) },
    },
    ...LOCALES.map((l) => h('option', { value: l, selected: l === locale }, LANGUAGE_NAMES[l])),
  );
  const ws = store.workspace || {};
  const brand = h(
    'div',
    { class: 'brand' },
    h('span', { class: 'brand-mark', 'aria-hidden': 'true' }),
    h('span', { class: 'brand-name' }, t('header.brand')),
    h(
      'span',
      { class: 'ws-name', title: t('header.workspace', { name: ws.name || '', root: ws.project_root || '' }) },
      ws.name || '',
    ),
  );
  const exec = h(
    'div',
    { class: 'exec', role: 'group', 'aria-label': t('header.execution') },
    stateEl,
    h('div', { class: 'exec-buttons' }, ...buttons),
  );
  const bar = h('div', { class: 'topbar-inner' }, brand, exec, pools, h('div', { class: 'spacer' }), conn, h('label', { class: 'lang' }, icon('globe'), language));
  clear(root).appendChild(bar);

  async function setExecution(to) {
    if (busy) return;
    busy = true;
    renderExecution();
    try {
      const answer = await api.post('/api/execution', { state: to });
      // The event will say it too; showing the answer now keeps a click from feeling lost.
      if (answer && answer.state) store.onExecution({ state: answer.state });
    } catch (e) {
      toast(t('header.execFailed', { message: e.message }), 'error');
    } finally {
      busy = false;
      renderExecution();
    }
  }

  function renderExecution() {
    // Until GET /api/execution answers, the state is unknown and nothing is offered.
    const state = store.execution && store.execution.state;
    if (state) stateEl.setAttribute('data-state', state);
    else stateEl.removeAttribute('data-state');
    const activity = state === 'RUNNING' ? activityOf(store.rows(), store.backlog) : null;
    if (activity) stateEl.setAttribute('data-activity', activity);
    else stateEl.removeAttribute('data-activity');
    const word = state ? t(`exec.${state}`) : '…';
    if (activity === 'settled' || activity === 'stalled') {
      const rest = store.rows().filter((r) => !ENDED.has(r.state)).length;
      stateEl.textContent = t(`header.${activity}`, { state: word });
      stateEl.title = t(`header.${activity}Hint`, { n: rest });
    } else {
      stateEl.textContent = word;
      stateEl.removeAttribute('title');
    }
    CONTROLS.forEach((c, i) => {
      buttons[i].disabled = busy || !state || !c.when.includes(state);
    });
  }

  function renderPools() {
    clear(pools);
    for (const p of store.pools || []) {
      const chip = h(
        'div',
        {
          class: 'pool',
          role: 'listitem',
          'data-test': 'pool',
          'data-pool': p.pool,
          'data-running': String(p.running),
          'data-waiting': String(p.waiting),
          'data-failed': String(p.failed),
          title: t('header.pool', p),
        },
        h('span', { class: 'pool-name' }, p.pool),
        h('span', { class: `pool-count running${p.running ? ' on' : ''}`, 'data-count': 'running' }, icon('play'), `${p.running}/${p.limit}`),
        h('span', { class: `pool-count waiting${p.waiting ? ' on' : ''}`, 'data-count': 'waiting' }, icon('clock'), String(p.waiting)),
        h('span', { class: `pool-count failed${p.failed ? ' on' : ''}`, 'data-count': 'failed' }, icon('close'), String(p.failed)),
      );
      chip.setAttribute('aria-label', t('header.pool', p));
      pools.appendChild(chip);
    }
  }

  function renderConnection() {
    const live = Boolean(store.connection.live);
    const refused = !live && Boolean(store.connection.refused);
    conn.setAttribute('data-live', String(live));
    conn.toggleAttribute('data-refused', refused);
    conn.title = t(live ? 'header.liveHint' : refused ? 'header.refusedHint' : 'header.offlineHint');
    const label = t(live ? 'header.live' : refused ? 'header.refused' : 'header.offline');
    clear(conn).append(h('span', { class: 'conn-dot', 'aria-hidden': 'true' }), label);
  }

  renderExecution();
  renderPools();
  renderConnection();
  const offs = [
    store.on('execution', renderExecution),
    // Whether a running execution has anything left follows the tasks and the questions.
    store.on('task', renderExecution),
    store.on('tasks', renderExecution),
    store.on('backlog', renderExecution),
    store.on('pools', renderPools),
    store.on('connection', renderConnection),
  ];
  return () => offs.forEach((off) => off());
}
