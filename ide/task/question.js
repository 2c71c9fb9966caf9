// task/question.js — the open questions that hold the task, each answered in place:
// its own question (an attempt ended asking one) or a chat's naming it. Answering
// resolves the QUESTION backlog item with the answer as its note (a task's own question
// also retries the task). `p` is the panel (task.js): {id, ctx, state, draw, load}.

import { h } from '../dom.js';
import { t } from '../i18n.js';
import { errorText } from '../panels.js';

/**
 * The open QUESTION backlog items that hold task `id`: its own question (an attempt
 * ended asking one: `task` is it) or a chat's question naming it (`metadata.holds`).
 */
export function questionsOf(backlog, id) {
  return (backlog || []).filter((item) => {
    if (!item || item.kind !== 'QUESTION' || item.resolved_at) return false;
    const holds = item.metadata && Array.isArray(item.metadata.holds) ? item.metadata.holds : [];
    return item.task === id || holds.includes(id);
  });
}

/**
 * Whether answering `item` also retries its task: a task's own question leaves it
 * BLOCKED until retried; a chat's question only holds its tasks back, and they start
 * once it is answered.
 */
export function retriesOnAnswer(item) {
  return !(item && item.metadata && Array.isArray(item.metadata.holds));
}

/** The open questions holding this task, each answerable here. */
export function questionBoxes(p) {
  const items = questionsOf(p.ctx.store.backlog, p.id);
  if (!items.length) return null;
  return h('div', { class: 'tp-questions' }, ...items.map((item) => questionBox(p, item)));
}

function questionBox(p, item) {
  const { state } = p;
  const draft = state.answers.get(item.id) || { text: '', busy: false, error: null };
  const field = h('textarea', {
    class: 'tp-answer',
    rows: '2',
    'data-test': 'task-answer',
    'data-item': item.id,
    'aria-label': t('task.answerLabel', { question: item.description || item.title }),
    placeholder: t('task.answerPlaceholder'),
    value: draft.text,
    disabled: draft.busy,
    on: {
      input: (e) => state.answers.set(item.id, { ...draft, text: e.target.value, error: null }),
      keydown: (e) => {
        if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
          e.preventDefault();
          answer(p, item);
        }
      },
    },
  });
  return h(
    'div',
    { class: 'tp-question', 'data-test': 'task-question', 'data-item': item.id },
    h('div', { class: 'tp-q-head' }, t('task.question')),
    h('p', { class: 'tp-q-text' }, item.description || item.title),
    field,
    h(
      'div',
      { class: 'tp-q-actions' },
      h('span', { class: 'muted tp-small' }, t(retriesOnAnswer(item) ? 'task.answerRetries' : 'task.answerReleases')),
      h('button', { type: 'button', class: 'btn btn-primary btn-small', 'data-test': 'task-answer-submit', 'data-item': item.id, disabled: draft.busy, on: { click: () => answer(p, item) } }, t('task.answerSubmit')),
    ),
    draft.error ? h('p', { class: 'error-text tp-small', role: 'alert' }, draft.error) : null,
  );
}

async function answer(p, item) {
  const { id, ctx, state, draw, load } = p;
  const draft = state.answers.get(item.id) || { text: '' };
  const text = (draft.text || '').trim();
  if (!text) {
    state.answers.set(item.id, { text: '', busy: false, error: t('task.answerEmpty') });
    draw();
    return;
  }
  state.answers.set(item.id, { text, busy: true, error: null });
  draw();
  try {
    await ctx.api.post(`/api/backlog/${encodeURIComponent(item.id)}/resolve`, { note: text, retry: retriesOnAnswer(item) });
    state.answers.delete(item.id);
    ctx.toast(t('task.answered', { id }), 'info');
    await ctx.store.refetchBacklog();
  } catch (e) {
    state.answers.set(item.id, { text, busy: false, error: t('task.answerFailed', { error: errorText(e) }) });
  }
  if (!state.gone) load();
}
