// Small DOM helpers: elements are built with text nodes only (never innerHTML), so data from the
// graph can never become markup.

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") el.className = value;
    else if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else if (key in el && typeof value !== "string") el[key] = value;
    else el.setAttribute(key, value === true ? "" : value);
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

export function clear(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

export const $ = (selector) => document.querySelector(selector);

const STATUS = {
  Source: { IN: "Active", AT_RISK: "Proposed Retraction", OUT: "Retracted" },
  Claim: { IN: "Verified", AT_RISK: "Proposed Retraction", OUT: "Retracted" },
  Decision: { IN: "Holding", AT_RISK: "Premise At Risk", OUT: "Premise Retracted" },
  Action: { IN: "Pending", AT_RISK: "Blocked", OUT: "Premise Retracted" },
};

export function publicStatus(kind, state, executed = false) {
  if (kind === "Action" && state === "IN" && executed) return "Executed";
  return (STATUS[kind] || {})[state] || state;
}

export function tag(state, text) {
  return h("span", { class: `tag ${state}` }, text);
}

export function when(iso) {
  if (!iso) return "now";
  const d = new Date(iso);
  return d.toISOString().replace("T", " ").slice(0, 16) + " UTC";
}

let toastTimer = 0;
export function toast(message) {
  const el = $("#toast");
  el.textContent = message;
  el.classList.add("show");
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => el.classList.remove("show"), 3500);
}

export function debounce(fn, ms) {
  let timer = 0;
  return (...args) => { clearTimeout(timer); timer = setTimeout(() => fn(...args), ms); };
}
