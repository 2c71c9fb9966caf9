// Markdown inlines for markdown.js: code spans, emphasis and strong (the CommonMark
// delimiter algorithm), ~~strike~~, links, <autolinks> and bare http(s) URLs, escapes
// and breaks, parsed into plain nodes (text, codespan, em, strong, del, link, break).
// Links keep only http, https and mailto targets (safeHref); anything else is text.
//
// Linear time: code spans are matched by a forward-only table of backtick runs,
// brackets by one stack pass, emphasis with CommonMark's "openers bottom" bound, and
// what is read ahead for link destinations, titles and bare URLs is charged to a budget
// proportional to the input, past which no more links are tried (the text stays).

const MAX_DEST = 4096;
const MAX_TITLE = 1024;
const MAX_AUTOLINK = 2048;

const PUNCT = /[!-/:-@[-`{-~\p{P}\p{S}]/u;
const SPACE = /\s/u;

function isPunct(c) {
  return c !== undefined && c !== '' && PUNCT.test(c);
}
function isSpace(c) {
  return c === undefined || c === '' || SPACE.test(c);
}

/** Code spans of `src` as [[start, end, contentStart, contentEnd]], in order. */
function codeSpans(src) {
  const runs = [];
  for (let i = 0; i < src.length; i++) {
    if (src[i] !== '`') continue;
    let j = i;
    while (j < src.length && src[j] === '`') j++;
    runs.push([i, j - i]);
    i = j - 1;
  }
  // For each run length, the runs of that length, and how far the search has come.
  const byLength = new Map();
  for (const [pos, len] of runs) {
    if (!byLength.has(len)) byLength.set(len, { list: [], next: 0 });
    byLength.get(len).list.push(pos);
  }
  const spans = [];
  let after = 0;
  for (const [pos, len] of runs) {
    if (pos < after) continue; // inside the previous span
    if (pos > 0 && src[pos - 1] === '\\' && !escapedBackslash(src, pos - 1)) continue;
    const same = byLength.get(len);
    while (same.next < same.list.length && same.list[same.next] <= pos) same.next++;
    if (same.next >= same.list.length) continue;
    const close = same.list[same.next];
    same.next++;
    spans.push([pos, close + len, pos + len, close]);
    after = close + len;
  }
  return spans;
}

/** Whether the backslash at `i` is itself escaped (an odd run of backslashes before). */
function escapedBackslash(src, i) {
  let n = 0;
  while (i - 1 - n >= 0 && src[i - 1 - n] === '\\') n++;
  return n % 2 === 1;
}

function codeSpanText(raw) {
  let text = raw.replace(/\n/g, ' ');
  if (text.length >= 2 && text[0] === ' ' && text[text.length - 1] === ' ' && text.trim() !== '') {
    text = text.slice(1, -1);
  }
  return text;
}

/** For each `[` (by position) the position of its `]`, skipping code spans and escapes. */
function matchBrackets(src, spans) {
  const match = new Map();
  const stack = [];
  let s = 0;
  for (let i = 0; i < src.length; i++) {
    if (s < spans.length && i === spans[s][0]) {
      i = spans[s][1] - 1;
      s++;
      continue;
    }
    const c = src[i];
    if (c === '\\') {
      i++;
      continue;
    }
    if (c === '[') stack.push(i);
    else if (c === ']' && stack.length) match.set(stack.pop(), i);
  }
  return match;
}

/**
 * Parses `(dest "title")` at `i` (the `(`): {href, title, end} or null. `budget.left`
 * is lowered by the characters read: a text made of thousands of `](` cannot make the
 * parser read each long destination again and again.
 */
function linkTail(src, i, budget) {
  const found = linkTailScan(src, i);
  budget.left -= found.read;
  return found.tail;
}

function linkTailScan(src, i) {
  if (src[i] !== '(') return { tail: null, read: 1 };
  let j = i + 1;
  const skipSpace = () => {
    let lines = 0;
    while (j < src.length && (src[j] === ' ' || src[j] === '\t' || src[j] === '\n')) {
      if (src[j] === '\n' && ++lines > 1) return false;
      j++;
    }
    return true;
  };
  if (!skipSpace()) return { tail: null, read: j - i };
  let dest = '';
  if (src[j] === '<') {
    const limit = Math.min(src.length, j + MAX_DEST);
    let k = j + 1;
    while (k < limit && src[k] !== '>' && src[k] !== '\n' && src[k] !== '<') {
      if (src[k] === '\\') k++;
      k++;
    }
    if (src[k] !== '>') return { tail: null, read: k - i };
    dest = src.slice(j + 1, k);
    j = k + 1;
  } else {
    const limit = Math.min(src.length, j + MAX_DEST);
    let depth = 0;
    const start = j;
    while (j < limit) {
      const c = src[j];
      if (c === '\\' && j + 1 < src.length && isPunct(src[j + 1])) {
        j += 2;
        continue;
      }
      if (c === '(') {
        if (++depth > 32) return { tail: null, read: j - i };
      } else if (c === ')') {
        if (depth === 0) break;
        depth--;
      } else if (c === ' ' || c === '\t' || c === '\n' || c.charCodeAt(0) < 32) {
        break;
      }
      j++;
    }
    if (j >= limit && j < src.length) return { tail: null, read: j - i };
    if (depth !== 0) return { tail: null, read: j - i };
    dest = src.slice(start, j);
  }
  const beforeTitle = j;
  if (!skipSpace()) return { tail: null, read: j - i };
  let title = null;
  const open = src[j];
  if (j > beforeTitle && (open === '"' || open === "'" || open === '(')) {
    const close = open === '(' ? ')' : open;
    const limit = Math.min(src.length, j + MAX_TITLE);
    let k = j + 1;
    while (k < limit && src[k] !== close) {
      if (src[k] === '\\') k++;
      k++;
    }
    if (src[k] !== close) return { tail: null, read: k - i };
    title = unescape(src.slice(j + 1, k));
    j = k + 1;
    if (!skipSpace()) return { tail: null, read: j - i };
  }
  if (src[j] !== ')') return { tail: null, read: j - i };
  return { tail: { href: unescape(dest), title, end: j + 1 }, read: j - i };
}

function unescape(s) {
  if (s.indexOf('\\') < 0) return s;
  let out = '';
  for (let i = 0; i < s.length; i++) {
    if (s[i] === '\\' && i + 1 < s.length && isPunct(s[i + 1]) && s.charCodeAt(i + 1) < 128) {
      out += s[i + 1];
      i++;
    } else {
      out += s[i];
    }
  }
  return out;
}

/**
 * The URL a link may point to (http, https, mailto), normalised, or null. Parsed by
 * `URL`, so `java\tscript:`, entity tricks and relative paths are all refused.
 */
export function safeHref(raw) {
  const text = String(raw ?? '').trim();
  // Control characters and spaces are never part of a link we make.
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c <= 32 || c === 127) return null;
  }
  let url;
  try {
    url = new URL(text);
  } catch {
    return null;
  }
  if (url.protocol === 'http:' || url.protocol === 'https:') {
    return url.hostname ? url.href : null;
  }
  if (url.protocol === 'mailto:') return url.href;
  return null;
}

const AUTOLINK_URI = /^[A-Za-z][A-Za-z0-9+.-]{1,31}:[^\s<>]*$/;
const AUTOLINK_EMAIL = /^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;

/** `<...>` at `i`: {href, text, end} for an autolink, else null. */
function autolinkAt(src, i) {
  const limit = Math.min(src.length, i + MAX_AUTOLINK);
  let k = i + 1;
  while (k < limit && src[k] !== '>' && src[k] !== '<' && src[k] !== '\n' && src[k] !== ' ') k++;
  if (src[k] !== '>') return null;
  const inner = src.slice(i + 1, k);
  let href = null;
  if (AUTOLINK_URI.test(inner)) href = safeHref(inner);
  else if (AUTOLINK_EMAIL.test(inner)) href = safeHref('mailto:' + inner);
  if (!href) return null;
  return { href, text: inner, end: k + 1 };
}

/**
 * A bare `http://`, `https://` or `www.` URL at `i` (GFM): {href, text, end} or null.
 * `budget.left` is lowered by the characters read: a rejected candidate is read to the
 * end of its word, and a word of a million characters holding a candidate every ten
 * would otherwise be read a hundred thousand times.
 */
function bareUrlAt(src, i, budget) {
  const prev = src[i - 1];
  if (i > 0 && !isSpace(prev) && '(*_~"\''.indexOf(prev) < 0) return null;
  let scheme = '';
  const head = src.slice(i, i + 8).toLowerCase();
  if (head.startsWith('https://')) scheme = '';
  else if (head.startsWith('http://')) scheme = '';
  else if (head.startsWith('www.')) scheme = 'http://';
  else return null;
  let k = i;
  let open = 0;
  let close = 0;
  while (k < src.length && !isSpace(src[k]) && src[k] !== '<') {
    if (src[k] === '(') open++;
    else if (src[k] === ')') close++;
    k++;
  }
  budget.left -= k - i;
  // Trailing punctuation ends a sentence, not the URL; an unbalanced `)` too.
  let end = k;
  for (;;) {
    const c = src[end - 1];
    if ('?!.,:*_~\'";'.indexOf(c) >= 0) {
      end--;
    } else if (c === ')' && close > open) {
      close--;
      end--;
    } else {
      break;
    }
  }
  const text = src.slice(i, end);
  const href = safeHref(scheme + text);
  if (!href || text.length <= (scheme ? 4 : 8)) return null;
  return { href, text, end };
}

/** Characters that may start an inline construct; anything else is plain text. */
const INLINE_SPECIAL = new Set(['\\', '\n', '[', '!', '<', 'h', 'H', 'w', 'W', '*', '_', '~']);

/**
 * Parses inline Markdown. Links are not parsed inside a link's text (`links` false),
 * which also bounds the recursion to one level.
 */
export function parseInline(src, links = true) {
  const spans = codeSpans(src);
  const brackets = links ? matchBrackets(src, spans) : null;
  const budget = { left: 8 * src.length + 65536 };
  // A doubly linked list of nodes, so emphasis can wrap a stretch in O(1).
  const head = { prev: null, next: null };
  let tail = head;
  const append = (node) => {
    node.prev = tail;
    node.next = null;
    tail.next = node;
    tail = node;
    return node;
  };
  // Pending text as slices of `src` (joined once): growing one string a character at a
  // time and trimming it at each line end would be quadratic on a huge paragraph.
  let parts = [];
  const flushText = () => {
    if (parts.length) {
      append({ type: 'text', text: parts.join('') });
      parts = [];
    }
  };
  const delims = []; // in order; each {node, char, count, orig, canOpen, canClose}
  let s = 0; // next code span
  let i = 0;
  while (i < src.length) {
    const c = src[i];
    // A link or URL jumped over may have held code spans (or begun one).
    while (s < spans.length && spans[s][0] < i) s++;
    if (s < spans.length && i === spans[s][0]) {
      flushText();
      append({ type: 'codespan', text: codeSpanText(src.slice(spans[s][2], spans[s][3])) });
      i = spans[s][1];
      s++;
      continue;
    }
    if (c === '\\') {
      const n = src[i + 1];
      if (n === '\n') {
        flushText();
        append({ type: 'break' });
        i += 2;
        continue;
      }
      if (n !== undefined && n.charCodeAt(0) < 128 && isPunct(n)) {
        parts.push(n);
        i += 2;
        continue;
      }
      parts.push(c);
      i++;
      continue;
    }
    if (c === '\n') {
      // Spaces before a line end are dropped; two or more make a hard break.
      let spaces = 0;
      while (i - 1 - spaces >= 0 && src[i - 1 - spaces] === ' ') spaces++;
      const last = parts.length ? parts[parts.length - 1] : '';
      if (spaces && last.endsWith(' ')) parts[parts.length - 1] = last.trimEnd();
      if (spaces >= 2) {
        flushText();
        append({ type: 'break' });
      } else {
        parts.push('\n');
      }
      i++;
      while (src[i] === ' ') i++;
      continue;
    }
    if (links && (c === '[' || (c === '!' && src[i + 1] === '['))) {
      const open = c === '!' ? i + 1 : i;
      const close = brackets.get(open);
      const tailOf = close !== undefined && budget.left > 0 ? linkTail(src, close + 1, budget) : null;
      if (tailOf) {
        flushText();
        const inner = parseInline(src.slice(open + 1, close), false);
        const href = safeHref(tailOf.href);
        if (href) {
          // An image is shown as a link to it: the CSP loads no other origin's images.
          const children = inner.length ? inner : [{ type: 'text', text: tailOf.href }];
          const link = { type: 'link', href, title: tailOf.title, children };
          append(link);
        } else {
          // Not a link we make: its text, then where it pointed, as text.
          for (const node of inner) append(node);
          append({ type: 'text', text: ` (${tailOf.href})` });
        }
        i = tailOf.end;
        continue;
      }
    }
    if (links && c === '<') {
      const auto = autolinkAt(src, i);
      if (auto) {
        flushText();
        append({ type: 'link', href: auto.href, title: null, children: [{ type: 'text', text: auto.text }] });
        i = auto.end;
        continue;
      }
    }
    if (links && budget.left > 0 && (c === 'h' || c === 'H' || c === 'w' || c === 'W')) {
      const bare = bareUrlAt(src, i, budget);
      if (bare) {
        flushText();
        append({ type: 'link', href: bare.href, title: null, children: [{ type: 'text', text: bare.text }] });
        i = bare.end;
        continue;
      }
    }
    if (c === '*' || c === '_' || c === '~') {
      let j = i;
      while (j < src.length && src[j] === c) j++;
      const count = j - i;
      const before = i > 0 ? src[i - 1] : undefined;
      const after = src[j];
      const left = !isSpace(after) && (!isPunct(after) || isSpace(before) || isPunct(before));
      const right = !isSpace(before) && (!isPunct(before) || isSpace(after) || isPunct(after));
      let canOpen = left;
      let canClose = right;
      if (c === '_') {
        canOpen = left && (!right || isPunct(before));
        canClose = right && (!left || isPunct(after));
      }
      flushText();
      const node = append({ type: 'text', text: src.slice(i, j) });
      if ((c !== '~' || count === 2) && (canOpen || canClose)) {
        delims.push({ node, char: c, count, orig: count, canOpen, canClose });
      }
      i = j;
      continue;
    }
    // A run of plain characters, up to the next one that may start something.
    let j = i + 1;
    const stop = s < spans.length ? spans[s][0] : src.length;
    while (j < src.length && j < stop && !INLINE_SPECIAL.has(src[j])) j++;
    parts.push(src.slice(i, j));
    i = j;
  }
  flushText();
  processEmphasis(delims);
  return toArray(head.next);
}

/** The CommonMark delimiter algorithm over `delims` (in order), rewriting the list. */
function processEmphasis(delims) {
  // Delimiters as a linked list too, so removal is O(1).
  for (let k = 0; k < delims.length; k++) {
    delims[k].before = delims[k - 1] || null;
    delims[k].after = delims[k + 1] || null;
    delims[k].removed = false;
  }
  const unlink = (d) => {
    d.removed = true;
    if (d.before) d.before.after = d.after;
    if (d.after) d.after.before = d.before;
  };
  const bottoms = new Map(); // char|canOpen|orig%3 → the delimiter below which to stop
  let current = delims[0] || null;
  while (current) {
    if (!current.canClose) {
      current = current.after;
      continue;
    }
    const key = `${current.char}${current.canOpen ? 1 : 0}${current.orig % 3}`;
    const bottom = bottoms.get(key) || null;
    let opener = current.before;
    let found = null;
    while (opener && opener !== bottom) {
      if (opener.char === current.char && opener.canOpen) {
        const odd = current.char !== '~' && (opener.canClose || current.canOpen) &&
          (opener.orig + current.orig) % 3 === 0 && !(opener.orig % 3 === 0 && current.orig % 3 === 0);
        if (!odd) {
          found = opener;
          break;
        }
      }
      opener = opener.before;
    }
    if (!found) {
      bottoms.set(key, current.before);
      const next = current.after;
      if (!current.canOpen) unlink(current);
      current = next;
      continue;
    }
    const use = current.char === '~' ? 2 : current.count >= 2 && found.count >= 2 ? 2 : 1;
    const type = current.char === '~' ? 'del' : use === 2 ? 'strong' : 'em';
    found.count -= use;
    current.count -= use;
    found.node.text = found.node.text.slice(use);
    current.node.text = current.node.text.slice(use);
    // Wrap the nodes strictly between the two runs.
    const wrap = { type, first: null, prev: found.node, next: current.node };
    const first = found.node.next;
    const last = current.node.prev;
    if (first !== current.node) {
      first.prev = null;
      last.next = null;
      wrap.first = first;
    }
    found.node.next = wrap;
    current.node.prev = wrap;
    // Delimiters between them can no longer match anything.
    for (let d = found.after; d && d !== current; d = d.after) d.removed = true;
    found.after = current;
    current.before = found;
    if (found.count === 0) {
      removeNode(found.node);
      unlink(found);
    }
    if (current.count === 0) {
      removeNode(current.node);
      const next = current.after;
      unlink(current);
      current = next;
    }
  }
}

function removeNode(node) {
  if (node.prev) node.prev.next = node.next;
  if (node.next) node.next.prev = node.prev;
}

/** Emphasis nested deeper than this keeps its text but not its wrappers. */
const MAX_INLINE_DEPTH = 32;

/**
 * Linked nodes → plain arrays, merging adjacent text. Iterative (an explicit stack), so
 * `*a *b *c ...*` nested a hundred thousand times deep cannot overflow the call stack.
 */
function toArray(first) {
  const root = [];
  const stack = [{ out: root, node: first, depth: 0 }];
  while (stack.length) {
    const frame = stack[stack.length - 1];
    const node = frame.node;
    if (!node) {
      stack.pop();
      continue;
    }
    frame.node = node.next;
    if ('first' in node) {
      // A wrapper made by `processEmphasis`.
      if (frame.depth < MAX_INLINE_DEPTH) {
        const plain = { type: node.type, children: [] };
        frame.out.push(plain);
        stack.push({ out: plain.children, node: node.first, depth: frame.depth + 1 });
      } else {
        stack.push({ out: frame.out, node: node.first, depth: frame.depth });
      }
      continue;
    }
    if (node.type === 'text') {
      if (node.text === '') continue;
      const prev = frame.out[frame.out.length - 1];
      if (prev && prev.type === 'text') prev.text += node.text;
      else frame.out.push({ type: 'text', text: node.text });
      continue;
    }
    const plain = { ...node };
    delete plain.prev;
    delete plain.next;
    frame.out.push(plain);
  }
  return root;
}
