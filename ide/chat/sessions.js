// chat/sessions.js — the chat's conversations: their tabs (newest first, each titled
// by its first message as plain text), a new one, the one shown (kept per workspace in
// localStorage) and reading its messages. `chat` is the mounted chat (chat.js).

import { h } from '../dom.js';
import { t } from '../i18n.js';
import { ago } from '../panels.js';
import { plainText } from '../lib/markdown/markdown.js';

/** The localStorage key of the conversation shown last, per workspace. */
function sessionKey(store) {
  return `mv.chat.session:${(store.workspace && store.workspace.dir) || ''}`;
}

/** The conversation shown last in this workspace, if one was saved. */
export function readSaved(store) {
  try {
    return localStorage.getItem(sessionKey(store)) || null;
  } catch {
    return null;
  }
}

export function save(chat, session) {
  const { store } = chat;
  try {
    if (session) localStorage.setItem(sessionKey(store), session);
    else localStorage.removeItem(sessionKey(store));
  } catch {
    // Private mode: the choice lasts for this page.
  }
}

export async function loadSessions(chat) {
  const { api, state } = chat;
  try {
    state.sessions = await api.get('/api/chat');
  } catch (e) {
    state.sessions = [];
    state.loadError = e;
  }
  // A saved conversation that is gone (or none saved): the newest, else a new one.
  if (state.session && !state.sessions.some((s) => s.session === state.session) && !state.pending) {
    state.session = null;
  }
  if (!state.session && !state.pending && state.sessions.length && !state.fresh) {
    state.session = state.sessions[0].session;
  }
  drawSessions(chat);
}

export async function loadMessages(chat) {
  const { api, state } = chat;
  const session = state.session;
  if (!session) {
    state.messages = [];
    chat.drawLog();
    return;
  }
  try {
    const messages = await api.get(`/api/chat/${encodeURIComponent(session)}`);
    if (session !== state.session) return;
    state.messages = messages;
    state.loadError = null;
  } catch (e) {
    state.loadError = e;
  }
  chat.drawLog();
}

function selectSession(chat, session) {
  const { state } = chat;
  if (state.pending) return;
  state.session = session;
  state.fresh = false;
  save(chat, session);
  drawSessions(chat);
  loadMessages(chat);
}

export function newSession(chat) {
  const { state } = chat;
  if (state.pending) return;
  state.session = null;
  state.fresh = true;
  state.messages = [];
  save(chat, null);
  drawSessions(chat);
  chat.drawLog();
  chat.input.focus();
}

export function drawSessions(chat) {
  const { state } = chat;
  const chips = state.sessions.map((s) => {
    // The title is the first message as typed, Markdown and all: a tab shows its text.
    const title = plainText(s.title) || t('chat.untitled');
    return h(
      'button',
      {
        type: 'button',
        class: 'cw-session',
        'data-test': 'chat-session',
        'data-session': s.session,
        'aria-current': s.session === state.session ? 'true' : null,
        title: `${title} — ${ago(s.started_at)}`,
        disabled: Boolean(state.pending),
        on: { click: () => selectSession(chat, s.session) },
      },
      title,
    );
  });
  if (!state.session) chips.unshift(h('span', { class: 'cw-session cw-session-new', 'aria-current': 'true' }, t('chat.untitled')));
  chat.sessionsBar.replaceChildren(...chips);
  chat.newButton.disabled = Boolean(state.pending);
}
