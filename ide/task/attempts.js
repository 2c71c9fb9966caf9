// task/attempts.js — the task panel's attempts: each attempt newest first (status,
// times, duration, exit code, summary, files changed), the running one's live output as
// its `run` events come, and a finished one's log and Task Note, read when asked.
// `p` is the panel (task.js): {id, ctx, state, clock, draw}.

import { h } from '../dom.js';
import { t } from '../i18n.js';
import { timeEl, duration, errorText, md } from '../panels.js';
import { runLine } from '../processes.js';

/** The statuses an attempt ends with (agent-runner's, and `interrupted` after a crash). */
const ATTEMPT_STATUSES = new Set(['running', 'complete', 'failed', 'incomplete', 'cancelled', 'needs_human', 'interrupted', 'unknown']);
/** Lines of a running attempt's live output shown in the panel. */
const LIVE_LINES = 40;
/** Files changed listed before "show all". */
const FILES_SHOWN = 12;

/** The last attempt that has ended (its result JSON holds the verdicts), or null. */
export function lastFinished(attempts) {
  for (let k = (attempts || []).length - 1; k >= 0; k--) {
    if (attempts[k].finished_at) return attempts[k];
  }
  return null;
}

/** Every attempt, newest first. */
export function attemptsBlock(p, task) {
  const attempts = task.attempts || [];
  if (!attempts.length) return h('p', { class: 'muted' }, t('task.noAttempts'));
  // Newest first: the one a person looks for is the last.
  return h('ol', { class: 'tp-attempts', reversed: true }, ...[...attempts].reverse().map((a) => attemptItem(p, a)));
}

function attemptItem(p, a) {
  const { state, clock, draw } = p;
  const running = !a.finished_at;
  const status = a.status || (running ? 'running' : 'unknown');
  // The result's word, in the page's language when it is one agent-runner writes.
  const statusText = ATTEMPT_STATUSES.has(status) ? t(`task.status.${status}`) : status;
  const dur = h('span', {}, duration(a.started_at, a.finished_at));
  if (running) clock.add((now) => (dur.textContent = duration(a.started_at, null, now)));
  const dl = h(
    'dl',
    { class: 'tp-dl tp-dl-grid' },
    h('dt', {}, t('task.started')),
    h('dd', {}, timeEl(a.started_at)),
    h('dt', {}, t('task.finished')),
    h('dd', {}, running ? '—' : timeEl(a.finished_at)),
    h('dt', {}, t('task.duration')),
    h('dd', { 'data-test': 'attempt-duration' }, dur),
    h('dt', {}, t('task.exitCode')),
    h('dd', { class: 'mono', 'data-test': 'attempt-exit-code' }, a.exit_code === null || a.exit_code === undefined ? '—' : String(a.exit_code)),
  );
  const files = a.files_changed || [];
  const all = state.showAllFiles.has(a.number);
  const filesBlock = files.length
    ? h(
        'div',
        { class: 'tp-files-changed', 'data-test': 'attempt-files' },
        h('div', { class: 'tp-sub' }, t('task.filesChanged', { n: files.length })),
        h('ul', { class: 'tp-files' }, ...(all ? files : files.slice(0, FILES_SHOWN)).map((f) => h('li', { class: 'mono' }, f))),
        !all && files.length > FILES_SHOWN
          ? h('button', { type: 'button', class: 'btn btn-quiet btn-small', 'data-attempt': String(a.number), on: { click: () => { state.showAllFiles.add(a.number); draw(); } } }, t('task.showAllFiles', { n: files.length }))
          : null,
      )
    : h('p', { class: 'muted tp-small', 'data-test': 'attempt-files' }, t('task.noFilesChanged'));
  const open = state.openNotes.has(a.number);
  const noteButton = h(
    'button',
    {
      type: 'button',
      class: 'btn btn-small',
      'data-test': 'attempt-note-open',
      'data-attempt': String(a.number),
      'aria-expanded': String(open),
      disabled: running,
      on: { click: () => toggleNote(p, a.number) },
    },
    t(open ? 'task.noteHide' : 'task.noteOpen'),
  );
  // A finished attempt's log, read when asked (a running one shows its events live).
  const logOpen = state.openLogs.has(a.number);
  const logButton = running
    ? null
    : h(
        'button',
        {
          type: 'button',
          class: 'btn btn-small',
          'data-test': 'attempt-log-open',
          'data-attempt': String(a.number),
          'aria-expanded': String(logOpen),
          on: { click: () => toggleLog(p, a.number) },
        },
        t(logOpen ? 'task.logHide' : 'task.logOpen'),
      );
  return h(
    'li',
    { class: `tp-attempt status-${cssToken(status)}`, 'data-test': 'attempt', 'data-attempt': String(a.number), 'data-status': status },
    h(
      'div',
      { class: 'tp-attempt-head' },
      h('strong', { class: 'tp-attempt-label', 'data-test': 'attempt-label' }, t('task.attempt', { n: a.number })),
      h('span', { class: `tp-status status-${cssToken(status)}`, 'data-test': 'attempt-status' }, statusText),
      h('span', { class: 'tp-attempt-actions' }, logButton, noteButton),
    ),
    dl,
    a.summary ? h('p', { class: 'tp-summary', 'data-test': 'attempt-summary' }, a.summary) : null,
    filesBlock,
    a.run_dir ? h('p', { class: 'muted tp-small', title: t('task.runDir') }, h('span', { class: 'mono' }, a.run_dir)) : null,
    running ? liveBlock(p, a.number) : null,
    logOpen ? logBlock(p, a.number) : null,
    open ? noteBlock(p, a.number) : null,
  );
}

/** The running attempt's agent-runner events as they come (kept by the store). */
function liveBlock(p, n) {
  const { id, ctx, state } = p;
  const lines = (ctx.store.runLines.get(id) || []).filter((d) => d.attempt === n).slice(-LIVE_LINES);
  const box = h('div', { class: 'tp-live', 'data-test': 'attempt-live', 'data-attempt': String(n), role: 'log', 'aria-label': t('task.live') });
  if (!lines.length) box.appendChild(h('div', { class: 'tp-live-empty' }, t('task.liveWaiting')));
  for (const d of lines) box.appendChild(liveLine(d));
  state.live = box;
  requestAnimationFrame(() => (box.scrollTop = box.scrollHeight));
  return box;
}

/** An attempt's Task Note, rendered once it is read. */
function noteBlock(p, n) {
  const note = p.state.notes.get(n);
  const box = h('div', { class: 'tp-note', 'data-test': 'note', 'data-attempt': String(n), 'aria-live': 'polite' });
  if (!note || note.status === 'loading') box.appendChild(h('p', { class: 'muted' }, t('task.noteLoading')));
  else if (note.status === 'ok') box.appendChild(note.node);
  else if (note.status === 'missing') box.appendChild(h('p', { class: 'muted' }, t('task.noteMissing')));
  else box.appendChild(h('p', { class: 'error-text' }, t('task.noteFailed', { error: errorText(note.error) })));
  return box;
}

/** A finished attempt's log: agent-runner's events as lines, then its stderr's tail. */
function logBlock(p, n) {
  const known = p.state.logs.get(n);
  const box = h('div', { class: 'tp-live tp-log', 'data-test': 'attempt-log', 'data-attempt': String(n), role: 'log' });
  if (!known || known.status === 'loading') box.appendChild(h('div', { class: 'tp-live-empty' }, t('task.logLoading')));
  else if (known.status === 'missing') box.appendChild(h('div', { class: 'tp-live-empty' }, t('task.logMissing')));
  else if (known.status === 'error') box.appendChild(h('div', { class: 'tp-live-line level-error' }, t('task.logFailed', { error: errorText(known.error) })));
  else {
    const log = known.log;
    if (log.events_cut) box.appendChild(h('div', { class: 'tp-live-empty' }, t('task.logCut')));
    if (!log.events.length) box.appendChild(h('div', { class: 'tp-live-empty' }, t('task.logEmpty')));
    // The file's lines are what `run` events carried: an event, or {text} for a line
    // that was not JSON.
    for (const e of log.events) {
      const plain = e && typeof e.text === 'string' && Object.keys(e).length === 1;
      box.appendChild(liveLine(plain ? { text: e.text } : { event: e }));
    }
    if (log.stderr) {
      box.appendChild(h('div', { class: 'tp-live-empty' }, t('task.stderr') + (log.stderr_cut ? ` — ${t('task.logCut')}` : '')));
      box.appendChild(h('div', { class: 'tp-live-line', 'data-test': 'attempt-stderr' }, log.stderr));
    }
  }
  return box;
}

async function toggleLog(p, n) {
  const { id, ctx, state, draw } = p;
  if (state.openLogs.has(n)) {
    state.openLogs.delete(n);
    draw();
    return;
  }
  state.openLogs.add(n);
  if (!state.logs.has(n) || state.logs.get(n).status === 'error') {
    state.logs.set(n, { status: 'loading' });
    draw();
    try {
      const log = await ctx.api.get(`/api/tasks/${encodeURIComponent(id)}/attempts/${n}/log`);
      state.logs.set(n, { status: 'ok', log });
    } catch (e) {
      state.logs.set(n, e && e.status === 404 ? { status: 'missing' } : { status: 'error', error: e });
    }
  }
  if (!state.gone) draw();
}

async function toggleNote(p, n) {
  const { id, ctx, state, draw } = p;
  if (state.openNotes.has(n)) {
    state.openNotes.delete(n);
    draw();
    return;
  }
  state.openNotes.add(n);
  const known = state.notes.get(n);
  if (known && (known.status === 'ok' || known.status === 'loading')) {
    draw();
    return;
  }
  state.notes.set(n, { status: 'loading' });
  draw();
  try {
    const answer = await ctx.api.get(`/api/tasks/${encodeURIComponent(id)}/attempts/${n}/note`);
    // Rendered once and kept: a redraw moves the same nodes, it does not re-parse.
    state.notes.set(n, { status: 'ok', node: md(answer.markdown) });
  } catch (e) {
    state.notes.set(n, e && e.status === 404 ? { status: 'missing' } : { status: 'error', error: e });
  }
  if (!state.gone) draw();
}

/** A line of the running attempt (a `run` event): appended to its live box, not redrawn. */
export function appendRunLine(p, d) {
  const box = p.state.live;
  if (!d || d.task !== p.id || !box || !box.isConnected || box.getAttribute('data-attempt') !== String(d.attempt)) return;
  const empty = box.querySelector('.tp-live-empty');
  if (empty) empty.remove();
  const stick = box.scrollHeight - box.scrollTop - box.clientHeight < 30;
  box.appendChild(liveLine(d));
  while (box.childElementCount > LIVE_LINES) box.firstChild.remove();
  if (stick) box.scrollTop = box.scrollHeight;
}

function liveLine(d) {
  const line = runLine(d);
  return h('div', { class: `tp-live-line level-${line.level}` }, line.text);
}

function cssToken(s) {
  return String(s).replace(/[^A-Za-z0-9_-]/g, '_');
}

