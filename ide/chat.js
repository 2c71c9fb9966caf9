// chat.js — the floating chat (mountChat): the conversations (newest first, a new one),
// the messages of the one shown, the progress of a turn while `POST /api/chat` is
// pending (the chat turn contract's steps, from `chat` events), the patch a reply made
// (created / updated / moved / deleted tasks as chips that open the task, removed
// dependencies, conflicts) and the questions it opened, each saying which tasks it holds
// back, answered in place (the QUESTION backlog item is resolved with the answer as its
// note; a task's own question also retries it). Ctrl/Cmd+Enter sends.
//
// This module mounts the window and draws the conversation shown; the sections are in
// chat/: sessions.js (the conversations' tabs), turn.js (sending, a turn's progress),
// patch.js (what a turn did to the plan) and questions.js (the questions it opened).
// They share `chat`, the state of the mounted chat.

import { h, clear } from './dom.js';
import { t } from './i18n.js';
import { timeEl, errorText, md } from './panels.js';
import { readSaved, loadSessions, loadMessages, newSession, drawSessions } from './chat/sessions.js';
import { submit, stepsEl, onChatEvent } from './chat/turn.js';
import { patchEl, recolourChips } from './chat/patch.js';
import { questionsFor, questionsEl } from './chat/questions.js';

export { questionsFor };

/**
 * Mounts the chat into `root` (the shell's chat window body); returns its unmount.
 * ctx: {api, store, openTask, toast}.
 */
export function mountChat(root, ctx) {
  const { api, store } = ctx;
  const state = {
    sessions: [],
    session: readSaved(store),
    messages: [],
    loadError: null,
    pending: null, // {message, steps: [{state, message}], session}
    turns: [], // [{session, reply, outcome, steps}] answered in this page
    questionIds: new Set(), // backlog items opened by turns in this page
    answers: new Map(), // item id → {text, busy, error}
    gone: false,
  };

  const sessionsBar = h('div', { class: 'cw-sessions', role: 'group', 'aria-label': t('chat.conversations') });
  const log = h('div', { class: 'cw-log', role: 'log', 'aria-live': 'polite', 'aria-relevant': 'additions', tabindex: '0' });
  const input = h('textarea', {
    class: 'cw-input',
    'data-test': 'chat-input',
    rows: '3',
    'aria-label': t('chat.input'),
    placeholder: t('chat.placeholder'),
    on: { keydown: onKeydown },
  });
  const send = h('button', { type: 'submit', class: 'btn btn-primary cw-send', 'data-test': 'chat-send', title: t('chat.sendHint') }, t('chat.send'));
  const form = h(
    'form',
    { class: 'cw-form', on: { submit: (e) => { e.preventDefault(); submit(chat); } } },
    input,
    h('div', { class: 'cw-form-row' }, h('span', { class: 'muted cw-keys' }, t('chat.keys')), send),
  );
  const newButton = h('button', { type: 'button', class: 'btn btn-small cw-new', 'data-test': 'chat-new', title: t('chat.newHint'), on: { click: () => newSession(chat) } }, '+ ', t('chat.new'));
  const top = h('div', { class: 'cw-top' }, newButton, sessionsBar);
  clear(root).appendChild(h('div', { class: 'cw', 'data-test': 'chat' }, top, log, form));

  // What the sections share: the state, the window's parts, and how to redraw.
  const chat = { api, store, ctx, state, log, input, send, form, sessionsBar, newButton, rendered: new WeakMap() };
  chat.drawLog = () => drawLog(chat);

  function onKeydown(e) {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      submit(chat);
    }
  }

  const offs = [
    store.on('chat', (d) => onChatEvent(chat, d)),
    store.on('backlog', () => chat.drawLog()),
    store.on('task', () => recolourChips(chat)),
    // New tasks (a patch applied): chips of unknown tasks become links.
    store.on('tasks', () => chat.drawLog()),
  ];
  drawSessions(chat);
  chat.drawLog();
  loadSessions(chat).then(() => loadMessages(chat));
  return () => {
    state.gone = true;
    offs.forEach((off) => off());
  };
}

function nearBottom(log) {
  return log.scrollHeight - log.scrollTop - log.clientHeight < 80;
}

/** The conversation shown: its messages, each turn's steps and patch, its questions. */
function drawLog(chat) {
  const { store, state, log } = chat;
  const stick = nearBottom(log);
  // An answer being typed keeps its focus and caret across a redraw.
  const active = document.activeElement;
  const keep = active && log.contains(active) && active.getAttribute('data-test')
    ? { test: active.getAttribute('data-test'), item: active.getAttribute('data-item'), start: active.selectionStart, end: active.selectionEnd }
    : null;
  const items = [];
  if (state.loadError) items.push(h('p', { class: 'error-text cw-error', role: 'alert' }, t('chat.loadFailed', { error: errorText(state.loadError) })));
  const messages = state.messages || [];
  if (!messages.length && !state.pending) items.push(emptyState());
  // Each turn answered in this page is shown after its reply.
  const turnsHere = state.turns.filter((turn) => turn.session === state.session);
  const placed = new Set();
  const created = [];
  messages.forEach((m, k) => {
    items.push(messageEl(chat, m));
    if (m.role !== 'assistant') return;
    const turn = turnsHere.find((x) => !placed.has(x) && x.reply === m.content && isLastWith(messages, k, m.content));
    if (turn) {
      placed.add(turn);
      if (turn.steps.length) items.push(stepsEl(turn.steps));
      const patch = patchEl(chat, turn.outcome);
      if (patch) items.push(patch);
    } else if (m.created_tasks && m.created_tasks.length) {
      items.push(patchEl(chat, { patch: { created: m.created_tasks.map((id) => ({ id })) } }));
    }
    for (const id of m.created_tasks || []) created.push(id);
  });
  // Selecting another conversation is disabled while a turn is pending: it is this one's.
  if (state.pending) {
    items.push(messageEl(chat, { role: 'user', content: state.pending.message, at: null }, true));
    items.push(stepsEl(state.pending.steps, true));
  }
  for (const turn of turnsHere) for (const c of (turn.outcome.patch && turn.outcome.patch.created) || []) created.push(c.id);
  const replies = messages.filter((m) => m.role === 'assistant').map((m) => m.content);
  const questions = questionsFor(store.backlog, [...state.questionIds], created, replies);
  if (questions.length) items.push(questionsEl(chat, questions));
  log.replaceChildren(...items);
  if (keep) {
    const sel = `[data-test="${keep.test}"]` + (keep.item ? `[data-item="${CSS.escape(keep.item)}"]` : '');
    const again = log.querySelector(sel);
    if (again) {
      again.focus({ preventScroll: true });
      if (typeof keep.start === 'number' && again.setSelectionRange) again.setSelectionRange(keep.start, keep.end);
    }
  }
  if (stick || state.pending) log.scrollTop = log.scrollHeight;
}

function isLastWith(messages, k, content) {
  for (let j = messages.length - 1; j > k; j--) if (messages[j].role === 'assistant' && messages[j].content === content) return false;
  return true;
}

function emptyState() {
  return h('div', { class: 'cw-empty' }, h('h3', {}, t('chat.emptyTitle')), h('p', {}, t('chat.emptyText')), h('p', { class: 'cw-example' }, t('chat.emptyExample')));
}

// A message's element, built once per message read: a redraw (every backlog or plan
// event) moves it instead of parsing its Markdown again.
function messageEl(chat, m, pending = false) {
  const { rendered } = chat;
  if (!pending && rendered.has(m)) return rendered.get(m);
  const el = buildMessage(m, pending);
  if (!pending) rendered.set(m, el);
  return el;
}

function buildMessage(m, pending) {
  const role = m.role === 'assistant' || m.role === 'system' ? m.role : 'user';
  const body = role === 'user' ? h('div', { class: 'cw-text' }, m.content) : h('div', { class: 'cw-md' }, md(m.content));
  return h(
    'div',
    { class: `cw-msg cw-${role}${pending ? ' cw-pending' : ''}`, 'data-test': 'chat-message', 'data-role': role },
    h('div', { class: 'cw-meta' }, h('span', { class: 'cw-who' }, t(`chat.role.${role}`)), m.at ? timeEl(m.at, 'cw-at') : null),
    body,
  );
}
