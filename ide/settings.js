// settings.js — the chat planner's settings (mount): provider, model, for openai-chat
// the NAME of the environment variable holding the API key (never the key: only whether
// it is set where the daemon runs is shown) and the base URL; Save (PUT /api/settings;
// a refusal's `settings.*` key is shown at the field it is about) and a real connection
// test of the form's values (POST /api/settings/test; nothing is saved by it).

import { h, clear } from './dom.js';
import { t, locale } from './i18n.js';
import { errorText } from './panels.js';

export const PROVIDERS = ['openai-chat', 'codex-cli', 'claude-code', 'mock'];

/** Each provider's model when none is given (src/runner/provider/config.rs). */
export const DEFAULT_MODELS = { 'openai-chat': 'gpt-5.2', 'codex-cli': 'gpt-5.2', 'claude-code': 'sonnet', mock: 'mock' };

/** The field a refusal's key is about ('provider', 'model', 'keyEnv', 'baseUrl'), or null. */
export function fieldOfError(key, message = '') {
  switch (key) {
    case 'settings.unknown_provider':
      return 'provider';
    case 'settings.empty_model':
    case 'settings.model_too_long':
      return 'model';
    case 'settings.bad_key_variable':
      return 'keyEnv';
    case 'settings.bad_base_url':
      return 'baseUrl';
    case 'settings.not_for_provider':
      return /base_url/.test(message) ? 'baseUrl' : /api_key_env/.test(message) ? 'keyEnv' : 'provider';
    default:
      return null;
  }
}

/** The body of PUT /api/settings (and of the test) from the form's values. */
export function settingsBody(form) {
  const body = { provider: form.provider, model: String(form.model || '').trim() };
  // Only openai-chat has a key variable and a base URL; sending them for another
  // provider is refused (settings.not_for_provider).
  if (form.provider === 'openai-chat') {
    const keyEnv = String(form.keyEnv || '').trim();
    const baseUrl = String(form.baseUrl || '').trim();
    if (keyEnv) body.api_key_env = keyEnv;
    if (baseUrl) body.base_url = baseUrl;
  }
  return body;
}

export function mount(root, ctx) {
  const { api } = ctx;
  const ui = { saved: null, busy: null, errors: new Map(), general: null, result: null, gone: false };
  // The form's parts and what its handlers share.
  const f = { api, ctx, ui };
  clear(root).appendChild(h('div', { class: 'st' }, h('h1', { class: 'view-title' }, t('settings.title')), buildForm(f)));
  drawState(f);
  load(f);
  return () => {
    ui.gone = true;
  };
}

/** The form: provider, model, the openai-chat endpoint's fields, Save and Test. */
function buildForm(f) {
  const provider = h('select', { id: 'set-provider', 'data-test': 'settings-provider', on: { change: () => onProvider(f) } }, ...PROVIDERS.map((p) => h('option', { value: p }, t(`settings.provider.${p}`))));
  const model = h('input', { type: 'text', id: 'set-model', 'data-test': 'settings-model', autocomplete: 'off', spellcheck: 'false', on: { input: () => changed(f) } });
  const keyEnv = h('input', { type: 'text', id: 'set-key-env', 'data-test': 'settings-key-env', autocomplete: 'off', spellcheck: 'false', placeholder: 'OPENAI_API_KEY', on: { input: () => changed(f) } });
  const baseUrl = h('input', { type: 'url', id: 'set-base-url', 'data-test': 'settings-base-url', autocomplete: 'off', spellcheck: 'false', placeholder: 'https://api.openai.com/v1', on: { input: () => changed(f) } });
  // Only for a test of an endpoint or variable that is not the saved one; sent with that
  // test alone, never with a save, and cleared once used.
  const testKey = h('input', { type: 'password', id: 'set-test-key', 'data-test': 'settings-test-key', autocomplete: 'off', spellcheck: 'false' });
  const providerHelp = h('p', { class: 'muted st-help', id: 'set-provider-help' });
  const modelHelp = h('p', { class: 'muted st-help', id: 'set-model-help' });
  const keyState = h('p', { class: 'st-key', id: 'set-key-state', 'aria-live': 'polite' });
  const command = h('p', { class: 'muted st-help' });
  const errorSlots = {
    provider: h('p', { class: 'st-error', 'data-field': 'provider', 'aria-live': 'polite' }),
    model: h('p', { class: 'st-error', 'data-field': 'model', 'aria-live': 'polite' }),
    keyEnv: h('p', { class: 'st-error', 'data-field': 'keyEnv', 'aria-live': 'polite' }),
    baseUrl: h('p', { class: 'st-error', 'data-field': 'baseUrl', 'aria-live': 'polite' }),
  };
  const openaiOnly = h(
    'div',
    { class: 'st-openai' },
    field('set-key-env', 'settings.keyEnv', keyEnv, [h('p', { class: 'muted st-help' }, t('settings.keyEnvHelp')), keyState], errorSlots.keyEnv),
    field('set-base-url', 'settings.baseUrl', baseUrl, [h('p', { class: 'muted st-help' }, t('settings.baseUrlHelp'))], errorSlots.baseUrl),
  );
  const testKeyField = field('set-test-key', 'settings.testKey', testKey, [h('p', { class: 'muted st-help' }, t('settings.testKeyHelp'))], null);
  const save = h('button', { type: 'submit', class: 'btn btn-primary', 'data-test': 'settings-save' }, t('settings.save'));
  const test = h('button', { type: 'button', class: 'btn', 'data-test': 'settings-test', title: t('settings.testHint'), on: { click: () => runTest(f) } }, t('settings.test'));
  const status = h('span', { class: 'muted st-status', role: 'status' });
  const general = h('div', { class: 'st-general', 'aria-live': 'polite' });
  const result = h('div', { class: 'st-result-slot', 'aria-live': 'polite' });
  const form = h(
    'form',
    { class: 'card st-form', novalidate: true, on: { submit: (e) => { e.preventDefault(); runSave(f); } } },
    h('h2', {}, t('settings.planner')),
    h('p', { class: 'muted' }, t('settings.intro')),
    field('set-provider', 'settings.provider', provider, [providerHelp], errorSlots.provider),
    field('set-model', 'settings.model', model, [modelHelp], errorSlots.model),
    openaiOnly,
    testKeyField,
    command,
    h('div', { class: 'st-actions' }, save, test, status),
    general,
    result,
  );
  Object.assign(f, { provider, model, keyEnv, baseUrl, testKey, providerHelp, modelHelp, keyState, command, errorSlots, openaiOnly, testKeyField, save, test, status, general, result });
  return form;
}

function field(id, label, input, help, error) {
  input.setAttribute('aria-describedby', `${id}-help`);
  return h('div', { class: 'field' }, h('label', { for: id }, t(label)), input, h('div', { id: `${id}-help` }, ...help), error);
}

function values(f) {
  const { provider, model, keyEnv, baseUrl } = f;
  return { provider: provider.value, model: model.value, keyEnv: keyEnv.value, baseUrl: baseUrl.value };
}

function onProvider(f) {
  const { ui, provider, model } = f;
  // A model left at the old provider's default follows the new provider's.
  const before = ui.lastProvider;
  if (!model.value.trim() || model.value.trim() === DEFAULT_MODELS[before]) model.value = DEFAULT_MODELS[provider.value] || '';
  ui.lastProvider = provider.value;
  changed(f);
}

function changed(f) {
  const { ui } = f;
  ui.errors.clear();
  ui.general = null;
  drawState(f);
}

function fill(f, s) {
  const { ui, provider, model, keyEnv, baseUrl } = f;
  ui.saved = s;
  provider.value = PROVIDERS.includes(s.provider) ? s.provider : 'openai-chat';
  ui.lastProvider = provider.value;
  model.value = s.model || '';
  keyEnv.value = s.api_key_env || '';
  baseUrl.value = s.base_url || '';
}

/** Whether the form names another endpoint or key variable than the saved ones (the
 * daemon then sends no key unless one is typed for the test). */
function endpointChanged(f) {
  const { ui, provider } = f;
  const s = ui.saved;
  if (!s || provider.value !== 'openai-chat') return false;
  const v = settingsBody(values(f));
  const url = (x) => String(x || '').replace(/\/+$/, '');
  return s.provider !== 'openai-chat' || (v.api_key_env || s.api_key_env || '') !== (s.api_key_env || '') || url(v.base_url || s.base_url) !== url(s.base_url);
}

function dirty(f) {
  const { ui } = f;
  if (!ui.saved) return false;
  const v = settingsBody(values(f));
  const s = ui.saved;
  return v.provider !== s.provider || v.model !== s.model ||
    (v.provider === 'openai-chat' && ((v.api_key_env || '') !== (s.api_key_env || '') || (v.base_url || '') !== (s.base_url || '')));
}

function drawState(f) {
  const { ui, provider, model, keyEnv, baseUrl, providerHelp, modelHelp, keyState, command, errorSlots, openaiOnly, testKeyField, save, test, status, general } = f;
  const p = provider.value;
  providerHelp.textContent = t(`settings.providerHelp.${p}`);
  modelHelp.textContent = t('settings.modelHelp', { model: DEFAULT_MODELS[p] || '—' });
  openaiOnly.hidden = p !== 'openai-chat';
  testKeyField.hidden = !endpointChanged(f);
  const s = ui.saved;
  if (s && p === 'openai-chat' && s.provider === 'openai-chat' && keyEnv.value.trim() === (s.api_key_env || '')) {
    keyState.hidden = false;
    keyState.className = `st-key ${s.api_key_set ? 'ok' : 'bad'}`;
    keyState.setAttribute('data-test', 'settings-key-set');
    keyState.setAttribute('data-set', String(Boolean(s.api_key_set)));
    keyState.textContent = t(s.api_key_set ? 'settings.keySet' : 'settings.keyNotSet', { name: s.api_key_env || '' });
  } else {
    keyState.hidden = true;
  }
  const cli = p === 'codex-cli' || p === 'claude-code';
  command.hidden = !cli;
  if (cli) command.textContent = `${t('settings.command')}: ${s && s.provider === p && s.command ? s.command : t('settings.commandDefault')}`;
  for (const [name, slot] of Object.entries(errorSlots)) {
    const err = ui.errors.get(name);
    if (err) {
      slot.setAttribute('data-test', 'settings-error');
      slot.setAttribute('data-key', err.key);
      slot.textContent = err.text;
      slot.hidden = false;
    } else {
      slot.removeAttribute('data-test');
      slot.textContent = '';
      slot.hidden = true;
    }
  }
  for (const [name, input] of [['provider', provider], ['model', model], ['keyEnv', keyEnv], ['baseUrl', baseUrl]]) {
    if (ui.errors.has(name)) input.setAttribute('aria-invalid', 'true');
    else input.removeAttribute('aria-invalid');
  }
  general.replaceChildren(...(ui.general ? [h('p', { class: 'error-text', 'data-test': 'settings-error', 'data-key': ui.general.key || '', role: 'alert' }, ui.general.text)] : []));
  save.disabled = ui.busy !== null;
  test.disabled = ui.busy !== null;
  save.textContent = t(ui.busy === 'save' ? 'settings.saving' : 'settings.save');
  test.textContent = t(ui.busy === 'test' ? 'settings.testing' : 'settings.test');
  if (!ui.busy) status.textContent = dirty(f) ? t('settings.unsaved') : '';
}

/** Shows a refusal at its field (or above the buttons when it names none). */
function refused(f, e) {
  const { ui, provider, model, keyEnv, baseUrl } = f;
  const key = e && e.key;
  const localised = key && t(`settings.err.${key}`) !== `settings.err.${key}` ? t(`settings.err.${key}`) : null;
  // The server's message says exactly what was wrong; the localised line says it in
  // the page's language. A key pasted as the variable is never echoed by the server.
  // In English the server's own message is the more precise of the two.
  const text = localised && locale !== 'en' ? `${localised}（${e.message}）` : e && e.message ? e.message : errorText(e);
  const where = fieldOfError(key, e && e.message);
  if (where) ui.errors.set(where, { key, text });
  else ui.general = { key, text: t('settings.saveFailed', { error: text }) };
  drawState(f);
  const input = { provider, model, keyEnv, baseUrl }[where];
  if (input) input.focus();
}

async function load(f) {
  const { api, ui } = f;
  try {
    fill(f, await api.get('/api/settings'));
    ui.general = null;
  } catch (e) {
    ui.general = { key: e.key, text: t('settings.loadFailed', { error: errorText(e) }) };
  }
  if (!ui.gone) drawState(f);
}

async function runSave(f) {
  const { api, ctx, ui, status } = f;
  if (ui.busy) return;
  ui.busy = 'save';
  ui.errors.clear();
  ui.general = null;
  drawState(f);
  try {
    const saved = await api.put('/api/settings', settingsBody(values(f)));
    fill(f, saved);
    ui.busy = null;
    status.textContent = t('settings.saved');
    ctx.toast(t('settings.saved'), 'info');
    drawState(f);
    status.textContent = t('settings.saved');
  } catch (e) {
    ui.busy = null;
    refused(f, e);
  }
}

async function runTest(f) {
  const { api, ui, testKey, result } = f;
  if (ui.busy) return;
  ui.busy = 'test';
  ui.errors.clear();
  ui.general = null;
  result.replaceChildren();
  drawState(f);
  try {
    const body = settingsBody(values(f));
    const typed = testKey.value.trim();
    if (typed && endpointChanged(f)) body.api_key = typed;
    testKey.value = '';
    const answer = await api.post('/api/settings/test', body);
    ui.busy = null;
    showResult(f, answer);
    drawState(f);
  } catch (e) {
    ui.busy = null;
    refused(f, e);
  }
}

function showResult(f, r) {
  const { result } = f;
  const ok = Boolean(r.ok);
  const lines = [h('p', { class: 'st-result-head' }, ok ? t('settings.testOk', { provider: r.provider, model: r.model, ms: r.latency_ms }) : t('settings.testFailed', { ms: r.latency_ms }))];
  if (r.error) lines.push(h('p', { class: 'st-result-error' }, h('span', { class: 'mono' }, r.error.key), ' ', r.error.message));
  if (r.detail) lines.push(h('p', { class: 'muted st-result-detail' }, r.detail));
  result.replaceChildren(h('div', { class: `st-result ${ok ? 'ok' : 'bad'}`, 'data-test': 'settings-result', 'data-ok': String(ok), role: 'status' }, ...lines));
}
