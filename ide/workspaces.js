// workspaces.js — the workspace picker (mount): the recent workspaces (most recent
// first: name, project, path, when last opened, whether it still exists, whether its
// daemon runs), Open (POST /api/workspaces/open → {url}, then go there; its daemon is
// started when none runs), Forget (takes it off the list after a confirmation that says
// nothing on disk is deleted), and a path to open another workspace or project.

import { h, clear } from './dom.js';
import { t } from './i18n.js';
import { ago, timeEl, errorText } from './panels.js';

export function mount(root, ctx) {
  const { api, store } = ctx;
  const ui = { list: null, error: null, busy: null, pathError: null, gone: false };

  const body = h('div', { class: 'wp-slot', 'aria-live': 'polite' });
  const path = h('input', {
    type: 'text',
    id: 'wp-path',
    class: 'mono',
    'data-test': 'workspace-path',
    placeholder: t('ws.pathPlaceholder'),
    autocomplete: 'off',
    spellcheck: 'false',
    'aria-describedby': 'wp-path-help',
    on: { input: () => { ui.pathError = null; drawPathError(); } },
  });
  const openPath = h('button', { type: 'submit', class: 'btn btn-primary', 'data-test': 'workspace-open-path' }, t('ws.openPath'));
  const pathError = h('p', { class: 'error-text', role: 'alert', hidden: true });
  const form = h(
    'form',
    { class: 'card wp-other', on: { submit: (e) => { e.preventDefault(); openTyped(); } } },
    h('h2', {}, t('ws.other')),
    h('div', { class: 'field' }, h('label', { for: 'wp-path' }, t('ws.pathLabel')), h('div', { class: 'wp-path-row' }, path, openPath), h('p', { class: 'muted', id: 'wp-path-help' }, t('ws.pathHelp')), pathError),
  );
  clear(root).appendChild(
    h('div', { class: 'wp' }, h('h1', { class: 'view-title' }, t('ws.title')), h('p', { class: 'muted' }, t('ws.intro')), h('section', { class: 'card wp-card' }, h('h2', {}, t('ws.recent')), body), form),
  );

  async function load() {
    try {
      ui.list = await api.get('/api/workspaces');
      ui.error = null;
    } catch (e) {
      ui.error = e;
    }
    if (!ui.gone) draw();
  }

  function draw() {
    if (ui.error) {
      body.replaceChildren(h('p', { class: 'error-text', role: 'alert' }, t('ws.loadFailed', { error: errorText(ui.error) })));
      return;
    }
    if (!ui.list) return;
    if (!ui.list.length) {
      body.replaceChildren(h('p', { class: 'muted', 'data-test': 'workspaces-empty' }, t('ws.empty')));
      return;
    }
    body.replaceChildren(
      h(
        'table',
        { class: 'wp-table' },
        h('thead', {}, h('tr', {}, ...['ws.name', 'ws.project', 'ws.lastOpened', 'ws.status', 'ws.actions'].map((k) => h('th', { scope: 'col' }, t(k))))),
        h('tbody', {}, ...ui.list.map((w) => rowEl({ store, ui, open: openWorkspace, forget: forgetWorkspace }, w))),
      ),
    );
  }

  async function openWorkspace(target, inline = false) {
    if (ui.busy) return;
    ui.busy = target;
    draw();
    openPath.disabled = true;
    try {
      const answer = await api.post('/api/workspaces/open', { path: target });
      // The answer's url is relative to this page for this workspace (`./`).
      location.assign(new URL(answer.url, location.href).href);
      return true;
    } catch (e) {
      if (!inline) ctx.toast(t('ws.openFailed', { path: target, error: errorText(e) }), 'error');
      return e;
    } finally {
      ui.busy = null;
      openPath.disabled = false;
      if (!ui.gone) draw();
    }
  }

  async function openTyped() {
    const value = path.value.trim();
    if (!value) ui.pathError = t('ws.pathEmpty');
    else if (!value.startsWith('/')) ui.pathError = t('ws.pathRelative');
    else ui.pathError = null;
    drawPathError();
    if (ui.pathError) {
      path.focus();
      return;
    }
    const outcome = await openWorkspace(value, true);
    if (outcome !== true && outcome) {
      ui.pathError = t('ws.openFailed', { path: value, error: errorText(outcome) });
      drawPathError();
    }
  }

  function drawPathError() {
    pathError.hidden = !ui.pathError;
    pathError.textContent = ui.pathError || '';
    if (ui.pathError) path.setAttribute('aria-invalid', 'true');
    else path.removeAttribute('aria-invalid');
  }

  async function forgetWorkspace(target) {
    if (ui.busy) return;
    if (!window.confirm(t('ws.forgetConfirm', { path: target }))) return;
    ui.busy = target;
    draw();
    try {
      await api.post('/api/workspaces/forget', { path: target });
      ctx.toast(t('ws.forgotten', { path: target }), 'info');
    } catch (e) {
      ctx.toast(t('ws.forgetFailed', { path: target, error: errorText(e) }), 'error');
    } finally {
      ui.busy = null;
    }
    await load();
  }

  load();
  return () => {
    ui.gone = true;
  };
}

function isCurrent(store, w) {
  const dir = store.workspace && store.workspace.dir;
  return Boolean(dir) && String(dir).replace(/\/+$/, '') === String(w.path).replace(/\/+$/, '');
}

/** A recent workspace's row: its name, project, when, status, Open and Forget. */
function rowEl({ store, ui, open: openWorkspace, forget: forgetWorkspace }, w) {
  const current = isCurrent(store, w);
  const busy = ui.busy === w.path;
  const badges = [
    current ? h('span', { class: 'wp-badge current' }, t('ws.current')) : null,
    h('span', { class: `wp-badge ${w.exists ? 'ok' : 'bad'}`, 'data-test': 'workspace-exists', 'data-exists': String(Boolean(w.exists)) }, t(w.exists ? 'ws.exists' : 'ws.missing')),
    h('span', { class: `wp-badge ${w.daemon ? 'live' : ''}`, 'data-test': 'workspace-daemon', 'data-daemon': String(Boolean(w.daemon)) }, w.daemon ? t('ws.daemon', { pid: w.daemon_pid ?? '?' }) : t('ws.noDaemon')),
  ];
  const open = h(
    'button',
    {
      type: 'button',
      class: 'btn btn-small btn-primary',
      'data-test': 'workspace-open',
      'data-path': w.path,
      disabled: !w.exists || ui.busy !== null,
      title: w.exists ? t('ws.openHint', { path: w.path }) : t('ws.openMissing'),
      on: { click: () => openWorkspace(w.path) },
    },
    t(busy ? 'ws.opening' : 'ws.open'),
  );
  const forget = h(
    'button',
    { type: 'button', class: 'btn btn-small btn-quiet', 'data-test': 'workspace-forget', 'data-path': w.path, disabled: ui.busy !== null, title: t('ws.forgetHint', { path: w.path }), on: { click: () => forgetWorkspace(w.path) } },
    t('ws.forget'),
  );
  return h(
    'tr',
    { class: `wp-row${current ? ' current' : ''}${w.exists ? '' : ' missing'}`, 'data-test': 'workspace-row', 'data-path': w.path, 'aria-current': current ? 'true' : null },
    h('td', {}, h('div', { class: 'wp-name' }, w.name || w.path.split('/').pop()), h('div', { class: 'mono muted wp-path' }, w.path)),
    h('td', { class: 'mono wp-project' }, w.project || '—'),
    h('td', {}, h('div', {}, ago(w.last_opened)), h('div', { class: 'muted wp-small' }, timeEl(w.last_opened))),
    h('td', {}, h('div', { class: 'wp-badges' }, ...badges)),
    h('td', {}, h('div', { class: 'wp-actions' }, open, forget)),
  );
}

