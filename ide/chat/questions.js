// chat/questions.js — the questions a conversation opened, each saying which tasks it
// holds back, answered in place: the QUESTION backlog item is resolved with the answer
// as its note (a task's own question also retries it). `chat` is the mounted chat
// (chat.js).

import { h } from '../dom.js';
import { t } from '../i18n.js';
import { errorText } from '../panels.js';
import { retryByDefault } from '../backlog.js';
import { chip } from './patch.js';

/**
 * The QUESTION backlog items that belong to a conversation: those a turn of it opened
 * (`ids`), and open ones about a task it created (the daemon files a chat question with
 * `task` = its first task and `metadata.holds` = every task it holds back), or, for a
 * chat question that names no task, whose text one of its replies quotes (each reply
 * has a line per question it opened) — so they are found again after a reload.
 */
export function questionsFor(backlog, ids, createdTasks, replies = []) {
  const wanted = new Set(ids || []);
  const created = new Set(createdTasks || []);
  return (backlog || []).filter((item) => {
    if (!item || item.kind !== 'QUESTION') return false;
    if (wanted.has(item.id)) return true;
    if (item.resolved_at) return false;
    const chatQuestion = Boolean(item.metadata && Array.isArray(item.metadata.holds));
    const holds = (chatQuestion ? item.metadata.holds : []).concat(item.task ? [item.task] : []);
    if (holds.some((task) => created.has(task))) return true;
    const text = String(item.description || '').trim();
    return chatQuestion && text !== '' && replies.some((reply) => String(reply).includes(text));
  });
}

export function questionsEl(chat, items) {
  return h(
    'div',
    { class: 'cw-questions' },
    h('div', { class: 'cw-group-name' }, t('chat.questions')),
    ...items.map((item) => questionEl(chat, item)),
  );
}

function questionEl(chat, item) {
  const { state } = chat;
  const answer = state.answers.get(item.id) || { text: '', busy: false, error: null };
  const resolved = Boolean(item.resolved_at);
  const tasks = (item.metadata && Array.isArray(item.metadata.holds) ? item.metadata.holds : item.task ? [item.task] : []);
  const retry = retryByDefault(item);
  const box = h(
    'div',
    { class: `cw-question${resolved ? ' resolved' : ''}`, 'data-test': 'chat-question', 'data-item': item.id, 'data-resolved': String(resolved) },
    h('p', { class: 'cw-q-text' }, item.description || item.title),
    tasks.length ? h('div', { class: 'cw-chips' }, ...tasks.map((id) => chip(chat, id))) : null,
  );
  if (resolved) {
    box.appendChild(h('p', { class: 'cw-answered' }, t('chat.answered', { answer: item.resolution || '' })));
    return box;
  }
  const field = h('input', {
    type: 'text',
    class: 'cw-answer',
    'data-test': 'question-answer',
    'data-item': item.id,
    'aria-label': t('chat.answerLabel', { question: item.description || item.title }),
    placeholder: t('chat.answer'),
    value: answer.text,
    disabled: answer.busy,
    on: {
      input: (e) => state.answers.set(item.id, { ...answer, text: e.target.value, error: null }),
      keydown: (e) => {
        if (e.key === 'Enter') {
          e.preventDefault();
          resolve(chat, item.id);
        }
      },
    },
  });
  const submitButton = h('button', { type: 'button', class: 'btn btn-small btn-primary', 'data-test': 'question-submit', 'data-item': item.id, disabled: answer.busy, on: { click: () => resolve(chat, item.id) } }, t('chat.answerSubmit'));
  box.appendChild(h('p', { class: 'muted cw-small', 'data-test': 'question-effect' }, questionEffect(item, tasks, retry)));
  box.appendChild(h('div', { class: 'cw-answer-row' }, field, submitButton));
  if (answer.error) box.appendChild(h('p', { class: 'error-text cw-small', role: 'alert' }, answer.error));
  return box;
}

async function resolve(chat, itemId) {
  const { api, store, state } = chat;
  const answer = state.answers.get(itemId) || { text: '' };
  const text = (answer.text || '').trim();
  if (!text) {
    state.answers.set(itemId, { ...answer, error: t('chat.answerEmpty') });
    chat.drawLog();
    focusAnswer(chat, itemId);
    return;
  }
  state.answers.set(itemId, { text, busy: true, error: null });
  chat.drawLog();
  try {
    // A task's own question left it BLOCKED until retried; a chat's question only held
    // its tasks back, and they start once it is resolved.
    const item = (store.backlog || []).find((x) => x.id === itemId);
    await api.post(`/api/backlog/${encodeURIComponent(itemId)}/resolve`, { note: text, retry: retryByDefault(item) });
    state.answers.delete(itemId);
    // Shown as answered from now on, not dropped from the conversation.
    state.questionIds.add(itemId);
    // The backlog event refetches the store's list; read it now too, so the answer
    // shows even when the event stream is down.
    if (store.refetchBacklog) await store.refetchBacklog();
  } catch (e) {
    state.answers.set(itemId, { text, busy: false, error: t('chat.answerFailed', { error: errorText(e) }) });
  }
  if (!state.gone) chat.drawLog();
}

/**
 * What an open question does to the tasks, as the orchestrator has it: a chat's
 * question keeps the tasks it names from starting (the others run) and its answer goes
 * into the first one's description; a task's own question keeps that task BLOCKED until
 * it is answered, which retries it.
 */
function questionEffect(item, tasks, retry) {
  if (retry) return t('question.own', { task: item.task });
  if (!tasks.length) return t('question.holdsNone');
  return t('question.holds', { tasks: tasks.join(', '), first: tasks[0] });
}

function focusAnswer(chat, itemId) {
  const el = chat.log.querySelector(`[data-test=question-answer][data-item="${CSS.escape(itemId)}"]`);
  if (el) el.focus();
}
