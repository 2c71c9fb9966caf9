// workspaces.js — the workspace picker (mount): the recent workspaces (most recent
// first: name, project, path, when last opened, whether it still exists, whether its
// daemon runs), Open (POST /api/workspaces/open → {url}, then go there; its daemon is
// started when none runs), Forget (takes it off the list after a confirmation that says
// nothing on disk is deleted), and a path to open another workspace or project.

import { h, clear } from './dom.js';
import { register, t } from './i18n.js';
import { ago, timeEl, errorText } from './panels.js';

register({
  en: {
    'ws.title': 'Workspaces',
    'ws.intro': 'Recent workspaces on this machine (~/.multiverse/workspaces.json). Opening one starts its daemon if none runs.',
    'ws.recent': 'Recent',
    'ws.empty': 'No workspace is on the list yet.',
    'ws.name': 'Workspace',
    'ws.project': 'Project',
    'ws.lastOpened': 'Last opened',
    'ws.status': 'Status',
    'ws.actions': 'Actions',
    'ws.current': 'This workspace',
    'ws.exists': 'Exists',
    'ws.missing': 'Missing on disk',
    'ws.daemon': 'Daemon running (pid {pid})',
    'ws.noDaemon': 'No daemon',
    'ws.open': 'Open',
    'ws.opening': 'Opening…',
    'ws.openHint': 'Open {path} (its daemon is started when none runs)',
    'ws.openMissing': 'This workspace is not on disk any more',
    'ws.forget': 'Forget',
    'ws.forgetHint': 'Take {path} off this list; nothing on disk is deleted',
    'ws.forgetConfirm': 'Take this workspace off the recent list?\n\n{path}\n\nNothing on disk is deleted: its plan, runs and history stay where they are, and it can be opened again by its path.',
    'ws.forgotten': '{path} was taken off the list (nothing on disk was deleted).',
    'ws.forgetFailed': 'Could not forget {path}: {error}',
    'ws.openFailed': 'Could not open {path}: {error}',
    'ws.loadFailed': 'Could not load the recent workspaces: {error}',
    'ws.other': 'Open another workspace',
    'ws.pathLabel': 'Path of a workspace directory, or of a project root',
    'ws.pathPlaceholder': '/home/me/projects/my-service',
    'ws.pathHelp': 'An absolute path. A project without a workspace gets one, with this workspace\'s settings.',
    'ws.openPath': 'Open',
    'ws.pathEmpty': 'Enter an absolute path.',
    'ws.pathRelative': 'The path must be absolute (start with /).',
  },
  ja: {
    'ws.title': 'ワークスペース',
    'ws.intro': 'このマシンで最近使ったワークスペースです（~/.multiverse/workspaces.json）。開くと、デーモンが動いていなければ起動します。',
    'ws.recent': '最近使ったもの',
    'ws.empty': '一覧にワークスペースはまだありません。',
    'ws.name': 'ワークスペース',
    'ws.project': 'プロジェクト',
    'ws.lastOpened': '最後に開いた日時',
    'ws.status': '状態',
    'ws.actions': '操作',
    'ws.current': 'このワークスペース',
    'ws.exists': 'ディスク上にあり',
    'ws.missing': 'ディスク上にありません',
    'ws.daemon': 'デーモン実行中（pid {pid}）',
    'ws.noDaemon': 'デーモンなし',
    'ws.open': '開く',
    'ws.opening': '開いています…',
    'ws.openHint': '{path} を開きます（デーモンが動いていなければ起動します）',
    'ws.openMissing': 'このワークスペースはディスク上にもうありません',
    'ws.forget': '一覧から外す',
    'ws.forgetHint': '{path} をこの一覧から外します。ディスク上のものは削除されません',
    'ws.forgetConfirm': 'このワークスペースを最近の一覧から外しますか？\n\n{path}\n\nディスク上のものは削除されません。計画・実行記録・履歴はそのまま残り、パスを指定すればまた開けます。',
    'ws.forgotten': '{path} を一覧から外しました（ディスク上のものは削除していません）。',
    'ws.forgetFailed': '{path} を一覧から外せませんでした: {error}',
    'ws.openFailed': '{path} を開けませんでした: {error}',
    'ws.loadFailed': '最近のワークスペースを読み込めませんでした: {error}',
    'ws.other': '別のワークスペースを開く',
    'ws.pathLabel': 'ワークスペースのディレクトリ、またはプロジェクトのルートのパス',
    'ws.pathPlaceholder': '/home/me/projects/my-service',
    'ws.pathHelp': '絶対パスで指定します。ワークスペースのないプロジェクトには、このワークスペースの設定で新しく作成します。',
    'ws.openPath': '開く',
    'ws.pathEmpty': '絶対パスを入力してください。',
    'ws.pathRelative': 'パスは絶対パス（/ で始まる）にしてください。',
  },
});

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

  function isCurrent(w) {
    const dir = store.workspace && store.workspace.dir;
    return Boolean(dir) && String(dir).replace(/\/+$/, '') === String(w.path).replace(/\/+$/, '');
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
        h('tbody', {}, ...ui.list.map(rowEl)),
      ),
    );
  }

  function rowEl(w) {
    const current = isCurrent(w);
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

  /** Opens `target`; a failure is a toast, or, for the typed path (`inline`), said under it. */
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
