// task/head.js — the top of the task panel: its id, state and close button, the title,
// why it is blocked or failed, the retry countdown, and Retry and Cancel. `p` is the
// panel (task.js): {id, ctx, state, clock, panel, draw, load}.

import { h, icon } from '../dom.js';
import { t } from '../i18n.js';
import { errorText, stateChip } from '../panels.js';
import { lastFinished } from './attempts.js';

/** States a cancel applies to (every state but a terminal one). */
const CANCELABLE = new Set(['PENDING', 'READY', 'BLOCKED', 'RUNNING', 'RETRY_WAIT']);
/** States a retry applies to (a new session of the lifecycle). */
const RETRYABLE = new Set(['FAILED', 'CANCELED']);

/**
 * Why a task is where it is: the blocked reason the daemon keeps, else, for a task whose
 * attempt failed (FAILED, RETRY_WAIT), that attempt's summary; null when there is none.
 */
export function reasonOf(task) {
  if (!task) return null;
  if (task.reason) return task.reason;
  if (task.state === 'FAILED' || task.state === 'RETRY_WAIT') {
    const last = lastFinished(task.attempts);
    if (last && last.summary) return last.summary;
  }
  return null;
}

/** The panel while the task is not shown: loading, or why it cannot be. */
export function drawProblem(p) {
  const { id, state } = p;
  const close = closeButton(p);
  if (!state.error) return [h('div', { class: 'tp-head' }, h('span', { class: 'tp-id' }, id), close), h('p', { class: 'muted tp-pad' }, t('task.loading', { id }))];
  const text = state.error.status === 404 ? t('task.notFound', { id }) : t('task.loadFailed', { id, error: errorText(state.error) });
  return [h('div', { class: 'tp-head' }, h('span', { class: 'tp-id' }, id), close), h('p', { class: 'tp-pad error-text', role: 'alert' }, text)];
}

function closeButton(p) {
  return h(
    'button',
    { type: 'button', class: 'icon-btn', 'data-test': 'task-close', 'aria-label': t('task.close'), title: t('task.close'), on: { click: () => p.ctx.closeTask() } },
    icon('close'),
  );
}

/** The task's id, state (and whether it is being stopped) and the close button. */
export function head(p, s, stopping) {
  return h(
    'div',
    { class: 'tp-head' },
    h('span', { class: 'tp-id mono' }, p.id),
    stateChip(s, { 'data-test': 'task-state' }),
    stopping ? h('span', { class: 'tp-stopping' }, t('task.stopping')) : null,
    h('span', { class: 'spacer' }),
    closeButton(p),
  );
}

/** The task's title, which names the panel. */
export function title(p, design) {
  p.panel.setAttribute('aria-labelledby', `tp-title-${p.id}`);
  return h('h2', { class: 'tp-title', id: `tp-title-${p.id}` }, design.title || p.id);
}

/** Why the task is blocked or failed, when something says. */
export function reasonBox(task) {
  const why = reasonOf(task);
  if (!why) return null;
  return h(
    'div',
    { class: `tp-reason state-${task.state || 'PENDING'}`, 'data-test': 'task-reason', role: 'note' },
    h('strong', {}, t('task.reason')),
    ' ',
    h('span', {}, why),
  );
}

/** The time left until a waiting task's next attempt, counted down each second. */
export function countdown(p, task) {
  const at = task.next_retry_at_ms;
  if (at === null || at === undefined || task.state !== 'RETRY_WAIT') return null;
  const text = h('span', {});
  const box = h('div', { class: 'tp-countdown', 'data-test': 'retry-countdown', 'data-at': String(at), role: 'timer', 'aria-live': 'off' }, h('span', { class: 'tp-countdown-dot', 'aria-hidden': 'true' }), text);
  p.clock.add((now) => {
    const left = at - now;
    text.textContent = left > 0 ? t('task.retryIn', { time: countdownText(left) }) : t('task.retryNow');
  });
  return box;
}

/** Retry and Cancel, each enabled when it applies to state `s`. */
export function actions(p, s, stopping) {
  const { state } = p;
  const canRetry = RETRYABLE.has(s);
  const canCancel = CANCELABLE.has(s) && !stopping;
  const retry = h(
    'button',
    {
      type: 'button',
      class: 'btn btn-primary',
      'data-test': 'task-retry',
      disabled: !canRetry || state.busy !== null,
      title: canRetry ? t('task.retryHint') : t('task.retryNotApplicable'),
      on: { click: () => act(p, 'retry') },
    },
    t('task.retry'),
  );
  const cancel = h(
    'button',
    {
      type: 'button',
      class: 'btn btn-danger',
      'data-test': 'task-cancel',
      disabled: !canCancel || state.busy !== null,
      title: canCancel ? t('task.cancelHint') : t('task.cancelNotApplicable'),
      on: { click: () => act(p, 'cancel') },
    },
    t('task.cancel'),
  );
  return h('div', { class: 'tp-actions' }, retry, cancel);
}

async function act(p, what) {
  const { id, ctx, state, draw, load } = p;
  state.busy = what;
  draw();
  try {
    await ctx.api.post(`/api/tasks/${encodeURIComponent(id)}/${what}`, {});
    ctx.toast(t(what === 'retry' ? 'task.retried' : 'task.canceled', { id }), 'info');
  } catch (e) {
    ctx.toast(t('task.actionFailed', { id, error: errorText(e) }), 'error');
  } finally {
    state.busy = null;
    if (!state.gone) load();
  }
}

/** "1 min 05 s" style text for a countdown (ms > 0). */
export function countdownText(ms) {
  const s = Math.ceil(ms / 1000);
  if (s < 60) return t('time.seconds', { n: s });
  const m = Math.floor(s / 60);
  if (m < 60) return t('time.minutes', { m, s: s % 60 });
  return t('time.hours', { h: Math.floor(m / 60), m: m % 60 });
}
