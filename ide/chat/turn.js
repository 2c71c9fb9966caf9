// chat/turn.js — a chat turn: sending a message (Ctrl/Cmd+Enter or Send), its progress
// while `POST /api/chat` is pending (the chat turn contract's steps, from `chat`
// events), and what the answer left (the turn's steps, patch and questions, kept for
// this page). `chat` is the mounted chat (chat.js).

import { h } from '../dom.js';
import { t } from '../i18n.js';
import { errorText } from '../panels.js';
import { save, loadSessions, loadMessages, drawSessions } from './sessions.js';

const TERMINAL = new Set(['REPLIED', 'FAILED', 'CANCELED']);

/** A turn's steps; `live` marks the one under way. */
export function stepsEl(steps, live = false) {
  const last = steps[steps.length - 1];
  return h(
    'ol',
    { class: `cw-steps${live ? ' live' : ''}`, 'aria-label': t('chat.steps') },
    ...steps.map((s) =>
      h(
        'li',
        {
          class: `cw-step step-${s.state}${live && s === last && !TERMINAL.has(s.state) ? ' current' : ''}`,
          'data-test': 'chat-step',
          'data-state': s.state,
        },
        h('span', { class: 'cw-step-dot', 'aria-hidden': 'true' }),
        h('strong', {}, t(`chat.step.${s.state}`)),
        s.message ? h('span', { class: 'cw-step-msg', title: s.message }, s.message) : null,
      ),
    ),
  );
}

export async function submit(chat) {
  const { api, store, state, input } = chat;
  const message = input.value.trim();
  if (!message || state.pending) return;
  const session = state.session;
  // Events of this conversation now belong to the new turn.
  for (const turn of state.turns) if (turn.session === session) turn.done = true;
  state.pending = { message, session: session || undefined, steps: [{ state: 'RECEIVED', message: t('chat.step.sent') }] };
  setBusy(chat, true);
  drawSessions(chat);
  chat.drawLog();
  let outcome = null;
  try {
    outcome = await api.post('/api/chat', session ? { message, session } : { message });
    input.value = '';
  } catch (e) {
    chat.ctx.toast(t('chat.sendFailed', { error: errorText(e) }), 'error');
  }
  const steps = state.pending.steps;
  state.pending = null;
  setBusy(chat, false);
  if (state.gone) return;
  if (outcome) {
    state.fresh = false;
    state.session = outcome.session;
    save(chat, outcome.session);
    // The final step, when its event has not come (yet): the answer says it.
    const ended = steps.some((s) => TERMINAL.has(s.state));
    if (!ended && outcome.state) steps.push({ state: outcome.state, message: null });
    state.turns.push({ session: outcome.session, reply: outcome.reply, outcome, steps, done: ended });
    for (const id of outcome.questions || []) state.questionIds.add(id);
    if (outcome.questions && outcome.questions.length && store.refetchBacklog) store.refetchBacklog().catch(() => {});
  }
  await Promise.all([loadSessions(chat), loadMessages(chat)]);
  input.focus();
}

function setBusy(chat, busy) {
  const { send, input, form } = chat;
  send.disabled = busy;
  input.readOnly = busy;
  input.setAttribute('aria-busy', String(busy));
  form.classList.toggle('busy', busy);
}

/** A `chat` event: a step of the turn pending here, of one answered here, or of another. */
export function onChatEvent(chat, d) {
  const { state } = chat;
  if (!d || !d.state) return;
  const pending = state.pending;
  if (pending) {
    // A new conversation learns its id from its first event.
    if (pending.session === undefined && !state.sessions.some((s) => s.session === d.session)) pending.session = d.session;
    if (d.session === pending.session) {
      pending.steps.push({ state: d.state, message: d.message || null });
      chat.drawLog();
      return;
    }
  }
  // A step of a turn that already answered here (its event came after the answer):
  // it takes the place of the step the answer stood in for.
  const turn = state.turns.find((x) => x.session === d.session && !x.done);
  if (turn) {
    const k = turn.steps.findIndex((s) => s.state === d.state && !s.message);
    if (k >= 0) turn.steps[k] = { state: d.state, message: d.message || null };
    else turn.steps.push({ state: d.state, message: d.message || null });
    if (TERMINAL.has(d.state)) turn.done = true;
    chat.drawLog();
    return;
  }
  // A turn of the conversation shown, sent from elsewhere (another tab, the CLI).
  if (d.finished && d.session === state.session && !state.pending) {
    loadMessages(chat);
    loadSessions(chat);
  }
}
