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
