// processes.js — logs and processes (mount): what runs for this workspace (the daemon,
// the planners chat turns wait for, each agent-runner attempt in flight and its Docker
// containers, or why Docker did not answer), read again when an `attempt`, `chat` or
// `execution` event says it changed; and a live log of the run: each attempt's
// agent-runner events (`run`: state changes, actions, the end; raw text lines), the
// tasks' state changes and the attempts' starts and ends, filtered by task, scrolling
// with the newest line unless paused, at most MAX_LINES kept.

import { h, clear } from './dom.js';
import { t } from './i18n.js';
import { ago, duration, errorText, coalesce, ticker, toMs } from './panels.js';

/** Log lines kept at most (the oldest go first). */
export const MAX_LINES = 3000;

/**
 * One `run` event payload ({task, attempt, event | text | skipped_bytes}) as a log line:
 * {kind, text, level, ts}. agent-runner's events (src/runner/events.rs): state {from,
 * to, message}, action {action, detail}, action_done {action, outcome}, finished
 * {status, exit_code, note}; each with ts.
 */
export function runLine(d) {
  if (d.text !== undefined) return { kind: 'text', text: String(d.text), level: 'plain', ts: null };
  if (d.skipped_bytes !== undefined) return { kind: 'skipped', text: t('proc.line.skipped', { bytes: d.skipped_bytes }), level: 'warn', ts: null };
  const e = d.event || {};
  const ts = toMs(e.ts);
  switch (e.event) {
    case 'state':
      return { kind: 'state', text: `${e.from ?? '∅'} → ${e.to ?? '?'}${e.message ? ` — ${e.message}` : ''}`, level: 'state', ts };
    case 'action':
      return { kind: 'action', text: `▶ ${e.action ?? ''}${e.detail ? ` ${typeof e.detail === 'string' ? e.detail : JSON.stringify(e.detail)}` : ''}`, level: 'plain', ts };
    case 'action_done': {
      const outcome = typeof e.outcome === 'string' ? e.outcome : JSON.stringify(e.outcome ?? '');
      return { kind: 'action_done', text: `✓ ${e.action ?? ''}${outcome ? ` → ${outcome}` : ''}`, level: /fail|error/i.test(outcome) ? 'error' : 'plain', ts };
    }
    case 'finished':
      return { kind: 'finished', text: `■ ${e.status ?? ''} (exit ${e.exit_code ?? '?'})${e.note ? ` — ${e.note}` : ''}`, level: e.status === 'complete' ? 'ok' : 'error', ts };
    default:
      return { kind: 'event', text: JSON.stringify(e), level: 'plain', ts };
  }
}

export function mount(root, ctx) {
  const { store, api } = ctx;
  const clock = ticker();
  const ui = { view: null, error: null, at: null, filter: '', paused: false, unseen: 0, lines: [], seq: 0, running: new Map(), gone: false };

  const table = h('div', { class: 'pr-table-slot' });
  const updated = h('span', { class: 'muted pr-updated' });
  const refreshButton = h('button', { type: 'button', class: 'btn btn-small', 'data-test': 'process-refresh', on: { click: () => refresh() } }, t('proc.refresh'));
  const refresh = coalesce(async () => {
    try {
      ui.view = await api.get('/api/processes');
      ui.error = null;
    } catch (e) {
      ui.error = e;
    }
    ui.at = Date.now();
    if (!ui.gone) drawTable({ ctx, clock, ui, table, updated });
  });
  const logs = logPane({ store, ctx, ui, refresh });
  clear(root).appendChild(
    h(
      'div',
      { class: 'pr' },
      h('h1', { class: 'view-title' }, t('proc.title')),
      h('section', { class: 'card pr-card' }, h('div', { class: 'pr-bar' }, h('h2', {}, t('proc.processes')), h('span', { class: 'spacer' }), updated, refreshButton), table),
      logs.section,
    ),
  );

  const stream = api.events();
  stream.addEventListener('task', logs.onTaskEvent);
  const offs = [
    () => stream.removeEventListener('task', logs.onTaskEvent),
    store.on('run', logs.onRun),
    store.on('attempt', logs.onAttempt),
    store.on('chat', () => refresh()),
    store.on('execution', () => refresh()),
    store.on('tasks', logs.drawFilter),
  ];
  seed(store, ui);
  logs.drawFilter();
  logs.redrawLog();
  refresh();
  return () => {
    ui.gone = true;
    clock.clear();
    offs.forEach((off) => off());
  };
}

// --- processes -----------------------------------------------------------------

function row(clock, kind, what, pid, since, detail, attrs = {}) {
  const sinceCell = h('td', {}, since ? duration(since) : '—');
  if (since) clock.add((now) => (sinceCell.textContent = duration(since, null, now)));
  return h(
    'tr',
    { class: `pr-row kind-${kind}`, 'data-test': 'process-row', 'data-kind': kind, ...attrs },
    h('td', {}, h('span', { class: `pr-kind kind-${kind}` }, t(`proc.kind.${kind}`))),
    h('td', { class: 'pr-what' }, what),
    h('td', { class: 'mono' }, pid === null || pid === undefined ? '—' : String(pid)),
    sinceCell,
    h('td', { class: 'pr-detail' }, detail || ''),
  );
}

/** The daemon, the planners, the workers and their containers, each a row. */
function drawTable({ ctx, clock, ui, table, updated }) {
  clock.clear();
  clock.add(() => (updated.textContent = ui.at ? t('proc.updated', { ago: ago(ui.at) }) : ''));
  if (ui.error && !ui.view) {
    table.replaceChildren(h('p', { class: 'error-text', role: 'alert' }, t('proc.loadFailed', { error: errorText(ui.error) })));
    return;
  }
  if (!ui.view) return;
  const v = ui.view;
  const rows = [];
  const o = v.orchestrator || {};
  rows.push(row(clock, 'orchestrator', t('proc.daemon', { state: t(`exec.${o.execution || 'IDLE'}`) }), o.pid, o.started_at, ''));
  for (const p of v.planners || []) {
    rows.push(row(clock, 'planner', t('proc.plannerFor', { session: p.session }), null, p.since, '', { 'data-session': p.session }));
  }
  for (const w of v.workers || []) {
    const open = h('button', { type: 'button', class: 'link-btn mono', 'data-task': w.task, on: { click: () => ctx.openTask(w.task) } }, w.task);
    const what = h('span', {}, 'agent-runner · ', open, ' · ', t('proc.workerAttempt', { attempt: w.attempt }));
    rows.push(row(clock, 'worker', what, w.pid, w.started_at, h('span', { class: 'mono muted' }, w.run_dir), { 'data-task': w.task }));
  }
  const containers = v.containers || { listed: [] };
  for (const c of containers.listed || []) {
    rows.push(row(clock, 'container', h('span', { class: 'mono' }, c.name || c.id), null, null, h('span', {}, c.status, ' ', h('span', { class: 'mono muted' }, c.run_dir)), { 'data-container': c.id }));
  }
  const notes = [];
  if (!(v.workers || []).length) notes.push(h('p', { class: 'muted pr-small' }, t('proc.noWorkers')));
  if (containers.unavailable) notes.push(h('p', { class: 'pr-docker', 'data-test': 'docker-unavailable' }, t('proc.dockerUnavailable', { why: containers.unavailable })));
  else if (!(containers.listed || []).length) notes.push(h('p', { class: 'muted pr-small' }, t('proc.noContainers')));
  if (ui.error) notes.push(h('p', { class: 'error-text' }, t('proc.loadFailed', { error: errorText(ui.error) })));
  table.replaceChildren(
    h(
      'table',
      { class: 'pr-table' },
      h('thead', {}, h('tr', {}, ...['proc.kind', 'proc.what', 'proc.pid', 'proc.since', 'proc.detail'].map((k) => h('th', { scope: 'col' }, t(k))))),
      h('tbody', {}, ...rows),
    ),
    ...notes,
  );
}

// --- logs ----------------------------------------------------------------------

/**
 * The live log: every run's lines and the tasks' changes as they come, filtered by task,
 * followed unless paused (scrolling up pauses it). Returns its section and what the view
 * calls: {section, onRun, onTaskEvent, onAttempt, drawFilter, redrawLog}.
 */
function logPane({ store, ctx, ui, refresh }) {
  const filter = h('select', { id: 'log-filter', 'data-test': 'log-filter', on: { change: (e) => { ui.filter = e.target.value; redrawLog(); } } });
  const pauseButton = h('button', { type: 'button', class: 'btn btn-small', 'data-test': 'log-pause', 'aria-pressed': 'false', on: { click: () => setPaused(!ui.paused) } }, t('proc.pause'));
  const clearButton = h('button', { type: 'button', class: 'btn btn-small btn-quiet', 'data-test': 'log-clear', on: { click: () => { ui.lines = []; redrawLog(); } } }, t('proc.clear'));
  const pausedNote = h('button', { type: 'button', class: 'pr-paused', hidden: true, on: { click: () => setPaused(false) } });
  const log = h('div', { class: 'pr-log', 'data-test': 'log', role: 'log', 'aria-live': 'off', tabindex: '0', on: { scroll: onScroll } });
  const section = h(
    'section',
    { class: 'card pr-card pr-logs' },
    h('div', { class: 'pr-bar' }, h('h2', {}, t('proc.logs')), h('span', { class: 'spacer' }), h('label', { for: 'log-filter' }, t('proc.filter')), filter, pauseButton, clearButton),
    h('div', { class: 'pr-log-wrap' }, log, pausedNote),
    h('p', { class: 'muted pr-small' }, t('proc.capped', { n: MAX_LINES })),
  );

  function addLine(task, attempt, line) {
    const entry = { seq: ++ui.seq, task, attempt, at: line.ts ?? Date.now(), ...line };
    ui.lines.push(entry);
    let dropped = 0;
    if (ui.lines.length > MAX_LINES) {
      dropped = ui.lines.length - MAX_LINES;
      ui.lines.splice(0, dropped);
    }
    ensureOption(task);
    if (ui.filter && ui.filter !== task) return;
    // Appended, not redrawn: thousands of lines stay cheap.
    while (dropped-- > 0 && log.firstChild && log.firstChild.classList && log.firstChild.classList.contains('pr-line')) log.firstChild.remove();
    const empty = log.querySelector('.pr-empty');
    if (empty) empty.remove();
    log.appendChild(lineEl(entry));
    while (log.childElementCount > MAX_LINES) log.firstChild.remove();
    if (ui.paused) {
      ui.unseen++;
      pausedNote.hidden = false;
      pausedNote.textContent = t('proc.paused', { n: ui.unseen });
    } else {
      log.scrollTop = log.scrollHeight;
    }
  }

  function lineEl(e) {
    const time = new Date(e.at).toLocaleTimeString(undefined, { hour12: false });
    return h(
      'div',
      { class: `pr-line level-${e.level} kind-${e.kind}`, 'data-test': 'log-line', 'data-task': e.task || '', 'data-kind': e.kind },
      h('span', { class: 'pr-time' }, time),
      e.task ? h('button', { type: 'button', class: 'pr-task link-btn', tabindex: '-1', on: { click: () => ctx.openTask(e.task) } }, e.attempt ? `${e.task}#${e.attempt}` : e.task) : h('span', { class: 'pr-task' }, ''),
      h('span', { class: 'pr-text' }, e.text),
    );
  }

  function redrawLog() {
    const shown = ui.filter ? ui.lines.filter((l) => l.task === ui.filter) : ui.lines;
    if (!shown.length) log.replaceChildren(h('div', { class: 'pr-empty muted' }, t('proc.empty')));
    else log.replaceChildren(...shown.map(lineEl));
    ui.unseen = 0;
    pausedNote.hidden = true;
    if (!ui.paused) log.scrollTop = log.scrollHeight;
  }

  function ensureOption(task) {
    if (!task || filter.querySelector(`option[value="${CSS.escape(task)}"]`)) return;
    filter.appendChild(h('option', { value: task }, task));
  }

  function drawFilter() {
    const tasks = new Set([...store.order, ...ui.lines.map((l) => l.task).filter(Boolean)]);
    filter.replaceChildren(h('option', { value: '' }, t('proc.filterAll')), ...[...tasks].map((id) => h('option', { value: id }, id)));
    filter.value = ui.filter;
  }

  function setPaused(paused) {
    ui.paused = paused;
    pauseButton.setAttribute('aria-pressed', String(paused));
    pauseButton.textContent = t(paused ? 'proc.resume' : 'proc.pause');
    if (!paused) {
      ui.unseen = 0;
      pausedNote.hidden = true;
      log.scrollTop = log.scrollHeight;
    }
  }

  // Scrolling up to read pauses the follow; scrolling back to the bottom resumes it.
  function onScroll() {
    const atBottom = log.scrollHeight - log.scrollTop - log.clientHeight < 24;
    if (!atBottom && !ui.paused && log.scrollTop > 0 && ui.userScrolled) setPaused(true);
    else if (atBottom && ui.paused && ui.userScrolled) setPaused(false);
  }
  // Only the person's scrolling pauses (not ours when a line is appended).
  log.addEventListener('wheel', () => (ui.userScrolled = true), { passive: true });
  log.addEventListener('keydown', (e) => {
    if (['ArrowUp', 'PageUp', 'Home'].includes(e.key)) ui.userScrolled = true;
  });

  function onRun(d) {
    addLine(d.task, d.attempt, runLine(d));
  }

  // A `task` event as it came (the store keeps the row, not each change's own message).
  function onTaskEvent(e) {
    let d;
    try {
      d = JSON.parse(e.data);
    } catch {
      return;
    }
    if (!d || !d.task) return;
    if (d.added) {
      addLine(d.task, null, { kind: 'task', text: t('proc.line.added'), level: 'plain', ts: null });
      return;
    }
    if (d.stopping) {
      addLine(d.task, null, { kind: 'task', text: t('proc.line.stopping'), level: 'warn', ts: null });
      return;
    }
    if (!d.to) return;
    const text = t('proc.line.task', { from: d.from ? t(`state.${d.from}`) : '∅', to: t(`state.${d.to}`) }) +
      (d.message ? ` — ${d.message}` : '') + (d.reason && (d.to === 'BLOCKED' || d.to === 'FAILED') ? ` (${d.reason})` : '');
    const level = d.to === 'FAILED' ? 'error' : d.to === 'SUCCEEDED' ? 'ok' : d.to === 'BLOCKED' || d.to === 'RETRY_WAIT' ? 'warn' : 'state';
    addLine(d.task, null, { kind: 'task', text, level, ts: null });
  }

  function onAttempt(d) {
    // An attempt's end names no number: it is the one that started last for the task.
    if (d.started) ui.running.set(d.task, d.attempt);
    const attempt = d.attempt ?? ui.running.get(d.task) ?? null;
    if (d.started) addLine(d.task, attempt, { kind: 'attempt', text: t('proc.line.attemptStarted', { attempt, pid: d.pid ?? '?' }), level: 'state', ts: d.at_ms ?? null });
    else if (d.ended) addLine(d.task, attempt, { kind: 'attempt', text: t(attempt ? 'proc.line.attemptEnded' : 'proc.line.attemptEndedSome', { attempt, status: d.status ?? '?', code: d.exit_code ?? '?' }) + (d.summary ? ` — ${d.summary}` : ''), level: d.status === 'complete' ? 'ok' : 'error', ts: d.at_ms ?? null });
    refresh();
  }

  return { section, onRun, onTaskEvent, onAttempt, drawFilter, redrawLog };
}

// What the store kept before this view was opened: each task's last run lines.
function seed(store, ui) {
  const kept = [];
  for (const lines of store.runLines.values()) for (const d of lines) kept.push(d);
  kept.sort((a, b) => (toMs(a.event && a.event.ts) ?? 0) - (toMs(b.event && b.event.ts) ?? 0));
  for (const d of kept.slice(-MAX_LINES)) {
    const line = runLine(d);
    ui.lines.push({ seq: ++ui.seq, task: d.task, attempt: d.attempt, at: line.ts ?? Date.now(), ...line });
  }
  // Where each task in flight stands now: its changes before this view opened were
  // not seen here, and an attempt may write no events at all.
  for (const r of store.rows()) {
    if (r.state !== 'RUNNING' && r.state !== 'RETRY_WAIT') continue;
    const text = t('proc.line.now', { state: t(`state.${r.state}`) }) + (r.message ? ` — ${r.message}` : '');
    ui.lines.push({ seq: ++ui.seq, task: r.id, attempt: r.attempts || null, at: Date.now(), kind: 'task', text, level: r.state === 'RUNNING' ? 'state' : 'warn', ts: null });
  }
}
