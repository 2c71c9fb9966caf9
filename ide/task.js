// task.js — the task panel (mountTask): one task's title, state, why it is blocked or
// failed, its description (Markdown), acceptance criteria with the verdicts of its last
// finished attempt's result JSON, the suggested implementation, dependencies and
// dependents, and every attempt (status, times, duration, exit code, summary, files
// changed, its Task Note rendered on demand); a live retry countdown, Retry and Cancel.
// It refetches the task when a `task` or `attempt` event names it (the attempts' details
// are not in the events); a local one-second clock drives the countdown and the running
// attempt's duration.
//
// This module keeps the panel's state, loads the task and draws it section by section;
// the sections are in task/: head.js (id, state, title, reason, countdown, Retry and
// Cancel), question.js (the questions that hold the task), description.js (description,
// suggested implementation, details), criteria.js, dependencies.js and attempts.js.

import { h, clear } from './dom.js';
import { t } from './i18n.js';
import { coalesce, ticker } from './panels.js';
import { drawProblem, head, title, reasonBox, countdown, actions } from './task/head.js';
import { questionBoxes } from './task/question.js';
import { descriptionBlock, suggestedBlock, detailsBlock } from './task/description.js';
import { criteriaBlock } from './task/criteria.js';
import { dependenciesBlock } from './task/dependencies.js';
import { attemptsBlock, appendRunLine, lastFinished } from './task/attempts.js';

export { reasonOf, countdownText } from './task/head.js';
export { questionsOf, retriesOnAnswer } from './task/question.js';
export { criteriaVerdicts } from './task/criteria.js';
export { lastFinished };

/**
 * Mounts the panel for task `id` into `root`; returns its unmount. ctx: {api, store,
 * openTask, closeTask, toast}.
 */
export function mountTask(root, ctx, id) {
  const state = {
    task: null, // GET /api/tasks/{id}
    error: null,
    results: new Map(), // attempt number → result JSON, or null when it left none
    notes: new Map(), // attempt number → {status: loading|ok|missing|error, node?, error?}
    openNotes: new Set(),
    logs: new Map(), // attempt number → {status: loading|ok|missing|error, log?, error?}
    openLogs: new Set(),
    answers: new Map(), // backlog item id → {text, busy, error}
    showAllFiles: new Set(),
    busy: null, // 'retry' | 'cancel' while a request is out
    live: null, // the running attempt's live output, appended to by `run` events
    gone: false,
  };
  const panel = h('article', { class: 'tp', 'data-test': 'task-panel', 'data-task': id, 'aria-busy': 'true' });
  clear(root).appendChild(panel);
  // What the sections share: they read the state and ask for a redraw or a reload.
  const p = { id, ctx, state, panel, clock: ticker(), draw: () => draw(p), load: null };
  p.load = coalesce(() => load(p));

  const offs = [
    ctx.store.on('task', (changed) => {
      if (changed === id) p.load();
      // A dependency's colour changed: the chips show it.
      else if (state.task && (state.task.design.dependencies || []).includes(changed)) p.draw();
    }),
    ctx.store.on('attempt', (d) => {
      if (d && d.task === id) p.load();
    }),
    // A line of the running attempt: appended, not redrawn.
    ctx.store.on('run', (d) => appendRunLine(p, d)),
    // The plan changed (a chat's patch, an answered question adds to the description).
    ctx.store.on('tasks', () => p.load()),
    // A question about this task opened or answered.
    ctx.store.on('backlog', () => p.draw()),
  ];
  p.draw();
  p.load();
  return () => {
    state.gone = true;
    p.clock.clear();
    offs.forEach((off) => off());
  };
}

/** Reads the task, and the result of its last finished attempt once, then draws. */
async function load(p) {
  const { id, ctx, state } = p;
  try {
    state.task = await ctx.api.get(`/api/tasks/${encodeURIComponent(id)}`);
    state.error = null;
  } catch (e) {
    state.error = e;
  }
  if (state.gone) return;
  const last = state.task && lastFinished(state.task.attempts);
  if (last && !state.results.has(last.number)) {
    try {
      const answer = await ctx.api.get(`/api/tasks/${encodeURIComponent(id)}/attempts/${last.number}/result`);
      state.results.set(last.number, answer.result);
    } catch (e) {
      // 404 no_result: the attempt ended without writing one (it was killed, say).
      // Any other failure is left unknown and asked again at the next load.
      if (e && e.status === 404) state.results.set(last.number, null);
    }
  }
  if (!state.gone) p.draw();
}

function draw(p) {
  const { panel, state, clock } = p;
  // Keep the focus where it was across a redraw (a button of an attempt, say).
  const active = document.activeElement && panel.contains(document.activeElement) ? document.activeElement : null;
  const focused = active ? focusKey(active) : null;
  const caret = active && typeof active.selectionStart === 'number' ? [active.selectionStart, active.selectionEnd] : null;
  clock.clear();
  panel.removeAttribute('aria-busy');
  const body = state.task ? drawTask(p, state.task) : drawProblem(p);
  panel.replaceChildren(...body);
  if (focused) {
    const again = panel.querySelector(focused);
    if (again) {
      again.focus({ preventScroll: true });
      if (caret && again.setSelectionRange) again.setSelectionRange(caret[0], caret[1]);
    }
  }
}

function drawTask(p, task) {
  const design = task.design || {};
  const s = task.state || 'PENDING';
  const row = p.ctx.store.tasks.get(p.id);
  const stopping = Boolean(row && row.stopping);
  const top = h('div', { class: 'tp-pad' }, title(p, design), reasonBox(task), questionBoxes(p), countdown(p, task), actions(p, s, stopping));
  const parts = [head(p, s, stopping), top];
  parts.push(section('task.description', descriptionBlock(design)));
  parts.push(section('task.criteria', criteriaBlock(p, design, task)));
  const suggested = suggestedBlock(design.suggested_impl);
  if (suggested) parts.push(section('task.suggested', suggested));
  parts.push(section('task.dependencies', dependenciesBlock(p, design)));
  parts.push(section('task.details', detailsBlock(design, task)));
  parts.push(section('task.attempts', attemptsBlock(p, task), (task.attempts || []).length));
  return parts;
}

function section(key, content, count) {
  return h(
    'section',
    { class: 'tp-section', 'aria-label': t(key) },
    h('h3', { class: 'tp-h' }, t(key), count ? h('span', { class: 'tp-count' }, String(count)) : null),
    content,
  );
}

/** A selector that finds the same control after a redraw, or null. */
function focusKey(el) {
  const test = el.getAttribute('data-test');
  if (!test) return null;
  const attempt = el.getAttribute('data-attempt');
  const task = el.getAttribute('data-task');
  const item = el.getAttribute('data-item');
  let sel = `[data-test="${test}"]`;
  if (attempt) sel += `[data-attempt="${attempt}"]`;
  if (item) sel += `[data-item="${CSS.escape(item)}"]`;
  if (task) sel += `[data-task="${CSS.escape(task)}"]`;
  return sel;
}
