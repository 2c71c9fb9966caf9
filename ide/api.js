// api.js — the daemon's HTTP API and its event stream, with the workspace token.
// The IDE is served at /ide/<token>/..., so the token comes from our own path; every
// request carries it as a Bearer token and the event stream as ?token=.

// (Outside a page, as under node --test, there is no location and no token.)
export const token = decodeURIComponent(globalThis.location?.pathname.split('/')[2] || '');

export class ApiError extends Error {
  constructor(status, key, message) {
    super(message || key || `HTTP ${status}`);
    this.name = 'ApiError';
    this.status = status;
    this.key = key;
  }
}

async function request(method, path, body) {
  const headers = { Authorization: `Bearer ${token}` };
  const init = { method, headers, cache: 'no-store' };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let reply;
  try {
    reply = await fetch(path, init);
  } catch (e) {
    throw new ApiError(0, 'unreachable', e && e.message ? e.message : String(e));
  }
  const text = await reply.text();
  let data = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      throw new ApiError(reply.status, 'bad_json', text.slice(0, 200));
    }
  }
  if (!reply.ok) {
    const err = (data && data.error) || {};
    throw new ApiError(reply.status, err.key || `http_${reply.status}`, err.message || reply.statusText);
  }
  return data;
}

export const get = (path) => request('GET', path);
export const post = (path, body = {}) => request('POST', path, body);
export const put = (path, body = {}) => request('PUT', path, body);

// The named events the daemon sends (docs/multiverse.md, GET /api/events).
export const EVENT_NAMES = ['task', 'attempt', 'run', 'backlog', 'chat', 'execution', 'plan'];

// One shared, reconnecting event stream. A browser's EventSource gives up for good on
// some failures (a 401, a 503 when the daemon is full) and, when it does retry, does so
// at a fixed pace; so the source is replaced here with a backoff, and listeners attach
// to a stable EventTarget that outlives each EventSource. Besides the named events
// (MessageEvent, .data is the JSON text) it dispatches 'open' (detail: {reconnected}),
// 'down' when the connection is lost and 'refused' ({refused}) when the daemon no
// longer takes this page's token (it was restarted: open the URL it printed).
class EventStream extends EventTarget {
  constructor() {
    super();
    this.source = null;
    this.live = false;
    this.opened = 0;
    this.delay = 1000;
    this.timer = null;
    this.refused = false;
    if (globalThis.addEventListener) globalThis.addEventListener('online', () => this.retryNow());
    this.connect();
  }

  connect() {
    this.timer = null;
    const source = new EventSource(`/api/events?token=${encodeURIComponent(token)}`);
    this.source = source;
    source.addEventListener('open', () => {
      if (this.source !== source) return;
      this.live = true;
      this.delay = 1000;
      this.opened += 1;
      this.dispatchEvent(new CustomEvent('open', { detail: { reconnected: this.opened > 1 } }));
    });
    source.addEventListener('error', () => {
      if (this.source !== source) return;
      source.close();
      this.source = null;
      const was = this.live;
      this.live = false;
      if (was || this.opened === 0) this.dispatchEvent(new CustomEvent('down'));
      this.schedule();
    });
    for (const name of EVENT_NAMES) {
      source.addEventListener(name, (e) => {
        if (this.source !== source) return;
        this.dispatchEvent(new MessageEvent(name, { data: e.data, lastEventId: e.lastEventId }));
      });
    }
  }

  // 1 s, 2 s, 4 s ... at most 30 s, with some jitter so tabs do not reconnect in step.
  schedule() {
    if (this.timer) return;
    const wait = this.delay * (0.8 + Math.random() * 0.4);
    this.delay = Math.min(this.delay * 2, 30000);
    this.timer = setTimeout(() => this.reconnect(), wait);
  }

  // Before opening a new stream, ask once: a daemon restarted since this page loaded has
  // a new token and refuses the old one for good (the stream's error would not say so).
  async reconnect() {
    this.timer = null;
    let status = 0;
    try {
      const reply = await fetch('/api/execution', { headers: { Authorization: `Bearer ${token}` }, cache: 'no-store' });
      status = reply.status;
    } catch {
      this.schedule();
      return;
    }
    const refused = status === 401 || status === 403;
    if (refused !== this.refused) {
      this.refused = refused;
      this.dispatchEvent(new CustomEvent('refused', { detail: { refused } }));
    }
    if (refused || status >= 500) this.schedule();
    else this.connect();
  }

  // Try now (the user asked, or the tab came back online).
  retryNow() {
    if (this.live) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.source) this.source.close();
    this.source = null;
    this.reconnect();
  }
}

let stream = null;

// The shared event stream: addEventListener('task', e => JSON.parse(e.data)).
export function events() {
  if (!stream) stream = new EventStream();
  return stream;
}

/**
 * `fn` (async) run now, or, if it is running, once more after it ends: a burst of events
 * costs two fetches, and the last answer is never older than the last event.
 */
export function coalesce(fn) {
  let running = null;
  let again = false;
  return function run() {
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      try {
        do {
          again = false;
          await fn();
        } while (again);
      } finally {
        running = null;
      }
    })();
    return running;
  };
}
