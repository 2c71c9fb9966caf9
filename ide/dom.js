// dom.js — the one way this IDE builds DOM: h() for HTML, svg() for SVG, clear().
// The server's CSP requires Trusted Types, so markup strings (innerHTML and friends)
// would throw; every node is created here from a tag, attributes and children.

const SVG_NS = 'http://www.w3.org/2000/svg';

// Attributes that would run or load code are refused outright: nothing in the IDE
// needs them, and a value from the API must never become one.
function unsafeAttribute(name, value) {
  if (/^on/i.test(name)) return true;
  if (/^(href|src|xlink:href|action|formaction)$/i.test(name)) {
    return /^\s*(javascript|data|vbscript):/i.test(String(value));
  }
  return false;
}

function apply(el, attrs) {
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name === 'on') {
      for (const [type, fn] of Object.entries(value)) el.addEventListener(type, fn);
    } else if (name === 'style' && typeof value === 'object') {
      // CSSOM assignment is allowed by the CSP; a style="" attribute is not.
      for (const [prop, v] of Object.entries(value)) el.style.setProperty(prop, v);
    } else if (name === 'ref' && typeof value === 'function') {
      value(el);
    } else if (name === 'value' && 'value' in el) {
      el.value = value;
    } else if (name === 'checked' && 'checked' in el) {
      el.checked = Boolean(value);
    } else {
      if (unsafeAttribute(name, value)) throw new Error(`refused attribute ${name}`);
      el.setAttribute(name, value === true ? '' : String(value));
    }
  }
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else if (child instanceof Node) el.appendChild(child);
    else el.appendChild(document.createTextNode(String(child)));
  }
  return el;
}

// h('button', {class: 'x', 'data-test': 'y', on: {click: fn}}, 'label', child, [more])
export function h(tag, attrs = {}, ...children) {
  return append(apply(document.createElement(tag), attrs), children);
}

// svg('rect', {x: 0, y: 0, width: 10, height: 10}) — the same in the SVG namespace.
export function svg(tag, attrs = {}, ...children) {
  return append(apply(document.createElementNS(SVG_NS, tag), attrs), children);
}

export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
}

// Line icons on a 24×24 grid, drawn with currentColor (no icon font, no external file).
const ICONS = {
  graph: ['M5 6h4v4H5z', 'M15 4h4v4h-4z', 'M15 16h4v4h-4z', 'M9 8l6-2', 'M9 8l6 10'],
  list: ['M4 6h2', 'M9 6h11', 'M6 12h2', 'M11 12h9', 'M6 18h2', 'M11 18h9'],
  inbox: ['M3 13l3-8h12l3 8v6H3z', 'M3 13h5l1 3h6l1-3h5'],
  terminal: ['M3 5h18v14H3z', 'M7 10l3 2-3 2', 'M12 15h5'],
  sliders: ['M4 7h9', 'M17 7h3', 'M15 5v4', 'M4 17h3', 'M11 17h9', 'M9 15v4', 'M4 12h13', 'M19 10v4'],
  folder: ['M3 6h6l2 2h10v11H3z'],
  chat: ['M4 5h16v11H9l-5 4z'],
  play: ['M7 5l12 7-12 7z'],
  pause: ['M7 5h3v14H7z', 'M14 5h3v14h-3z'],
  stop: ['M6 6h12v12H6z'],
  'zoom-in': ['M11 4a7 7 0 1 0 0 14a7 7 0 1 0 0-14', 'M16 16l4 4', 'M8 11h6', 'M11 8v6'],
  'zoom-out': ['M11 4a7 7 0 1 0 0 14a7 7 0 1 0 0-14', 'M16 16l4 4', 'M8 11h6'],
  fit: ['M4 9V4h5', 'M15 4h5v5', 'M20 15v5h-5', 'M9 20H4v-5'],
  close: ['M6 6l12 12', 'M18 6L6 18'],
  clock: ['M12 3a9 9 0 1 0 0 18a9 9 0 1 0 0-18', 'M12 7v5l3 2'],
  check: ['M5 12l5 5 9-10'],
  chevron: ['M8 10l4 4 4-4'],
  globe: ['M12 3a9 9 0 1 0 0 18a9 9 0 1 0 0-18', 'M3 12h18', 'M12 3c3 3 3 15 0 18', 'M12 3c-3 3-3 15 0 18'],
  expand: ['M7 9l5-5 5 5', 'M7 15l5 5 5-5'],
  collapse: ['M7 4l5 5 5-5', 'M7 20l5-5 5 5'],
};

export function icon(name, attrs = {}) {
  return svg(
    'svg',
    {
      class: `icon icon-${name}`,
      viewBox: '0 0 24 24',
      width: '18',
      height: '18',
      'aria-hidden': 'true',
      focusable: 'false',
      ...attrs,
    },
    ...(ICONS[name] || []).map((d) => svg('path', { d })),
  );
}
