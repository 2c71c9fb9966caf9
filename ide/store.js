// store.js — the single source of truth the views read: loaded from the API once, then
// kept current by the event stream. Nothing here polls on a timer: a `task` event carries
// the new state, reason, retry time and attempt count, so the row is updated in place;
// only what an event does not carry (a new task's row, the pools' counts, a backlog
// item's resolution) is fetched again, once per burst of events.
//
// Events the views subscribe to with store.on(name, fn): tasks (the list was replaced),
// task (id), plan, execution, backlog, pools, run (payload), chat (payload), attempt
// (payload), workspace, connection ({live}).

import * as api from './api.js';

const RUN_LINES = 500;


class Store {
  constructor() {
    this.tasks = new Map();
    this.order = [];
    this.execution = null;
    this.backlog = [];
    this.pools = [];
    this.workspace = null;
    this.runLines = new Map();
    this.connection = { live: false };
    this.loaded = false;
    this.error = null;
    this.handlers = new Map();
    this.refetchTasks = api.coalesce(() => this.loadTasks());
    this.refetchPools = api.coalesce(() => this.loadPools());
    this.refetchBacklog = api.coalesce(() => this.loadBacklog());
  }

  on(name, fn) {
    if (!this.handlers.has(name)) this.handlers.set(name, new Set());
    this.handlers.get(name).add(fn);
    return () => this.handlers.get(name).delete(fn);
  }

  emit(name, data) {
    for (const fn of [...(this.handlers.get(name) || [])]) {
      try {
        fn(data);
      } catch (e) {
        console.error(`store: a '${name}' handler failed`, e);
      }
    }
  }

  // The rows in WBS order.
  rows() {
    return this.order.map((id) => this.tasks.get(id)).filter(Boolean);
  }

  async loadTasks() {
    const rows = await api.get('/api/tasks');
    for (const row of rows) this.explainFailure(row);
    this.tasks = new Map(rows.map((r) => [r.id, r]));
    this.order = rows.map((r) => r.id);
    this.emit('tasks');
  }

  // A FAILED row carries no reason (the lifecycle keeps one only for BLOCKED), yet the
  // plan must say why a task failed: its last attempt's summary, which every row and
  // task event carries (`last_attempt`).
  explainFailure(row) {
    const last = row.last_attempt;
    if (row.state !== 'FAILED' || row.reason || !last) return;
    const code = last.exit_code === null || last.exit_code === undefined ? '' : ` (exit ${last.exit_code})`;
    row.reason = last.summary || `${last.status || 'failed'}${code}`;
    row.reasonFromAttempt = true;
  }

  async loadPools() {
    this.pools = await api.get('/api/pools');
    this.emit('pools', this.pools);
  }

  async loadBacklog() {
    this.backlog = await api.get('/api/backlog');
    this.emit('backlog', this.backlog);
  }

  async loadExecution() {
    this.execution = await api.get('/api/execution');
    this.emit('execution', this.execution);
  }

  async loadWorkspace() {
    this.workspace = await api.get('/api/workspace');
    this.emit('workspace', this.workspace);
  }

  // Everything, in parallel. Used at start and after the event stream reconnects
  // (events sent while it was down are lost, so the whole picture is read again).
  // Resolves once the workspace and the tasks are in — what the first paint needs; the
  // execution state, pools and backlog are drawn when they arrive (their own events).
  async loadAll() {
    const rest = Promise.all([this.loadExecution(), this.loadBacklog(), this.loadPools()]);
    rest.catch((err) => this.failed(err));
    await Promise.all([this.loadWorkspace(), this.loadTasks()]);
    this.loaded = true;
    this.rest = rest;
  }

  // Subscribes to the event stream first so nothing between the loads and the
  // subscription is missed, then loads.
  async start() {
    const stream = api.events();
    stream.addEventListener('open', (e) => {
      this.setLive(true);
      if (e.detail.reconnected) this.loadAll().catch((err) => this.failed(err));
    });
    stream.addEventListener('down', () => this.setLive(false));
    stream.addEventListener('refused', (e) => {
      this.connection = { live: false, refused: e.detail.refused };
      this.emit('connection', this.connection);
    });
    const on = (name, fn) =>
      stream.addEventListener(name, (e) => {
        let data;
        try {
          data = JSON.parse(e.data);
        } catch {
          return;
        }
        fn.call(this, data);
      });
    on('task', this.onTask);
    on('plan', this.onPlan);
    on('execution', this.onExecution);
    on('backlog', () => this.refetchBacklog().catch((err) => this.failed(err)));
    on('attempt', (d) => this.emit('attempt', d));
    on('run', this.onRun);
    on('chat', (d) => this.emit('chat', d));
    this.setLive(stream.live);
    await this.loadAll();
  }

  failed(err) {
    this.error = err;
    console.error('store:', err);
    this.emit('error', err);
  }

  setLive(live) {
    if (this.connection.live === live) return;
    this.connection = { live, refused: false };
    this.emit('connection', this.connection);
  }

  onTask(d) {
    const id = d.task;
    const row = this.tasks.get(id);
    if (d.added || !row) {
      this.refetchTasks().catch((err) => this.failed(err));
    } else if (d.stopping) {
      row.stopping = true;
      this.emit('task', id);
    } else {
      row.state = d.to ?? row.state;
      if ('node' in d) row.node = d.node;
      if ('reason' in d) row.reason = d.reason;
      if ('next_retry_at_ms' in d) row.next_retry_at_ms = d.next_retry_at_ms;
      if ('attempts' in d) row.attempts = d.attempts;
      if ('last_attempt' in d) row.last_attempt = d.last_attempt;
      if (d.message) row.message = d.message;
      if (row.state !== 'RUNNING') row.stopping = false;
      if (row.reasonFromAttempt && !('reason' in d && d.reason)) row.reason = null;
      row.reasonFromAttempt = false;
      this.explainFailure(row);
      this.emit('task', id);
    }
    this.refetchPools().catch((err) => this.failed(err));
  }

  onPlan(d) {
    this.refetchTasks()
      .then(() => this.emit('plan', d))
      .catch((err) => this.failed(err));
    this.refetchPools().catch((err) => this.failed(err));
  }

  onExecution(d) {
    this.execution = { ...(this.execution || {}), ...d };
    this.emit('execution', this.execution);
    this.refetchPools().catch((err) => this.failed(err));
  }

  onRun(d) {
    let lines = this.runLines.get(d.task);
    if (!lines) {
      lines = [];
      this.runLines.set(d.task, lines);
    }
    lines.push(d);
    if (lines.length > RUN_LINES) lines.splice(0, lines.length - RUN_LINES);
    this.emit('run', d);
  }
}

export const store = new Store();
