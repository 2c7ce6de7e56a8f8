// The console's entry point: views as tabs, the reviewer session, the live stream.

import { get, loadSession, session, shownAs, signIn, signOut } from "./api.js";
import { $, toast } from "./dom.js";
import * as keys from "./keys.js";
import { connect, onEvents, onReset } from "./live.js";
import * as queue from "./queue.js";
import * as explorer from "./explorer.js";
import * as receipts from "./receipts.js";
import * as beliefs from "./beliefs.js";
import * as compensations from "./compensations.js";
import * as notify from "./notify.js";
import * as runs from "./runs.js";

const VIEWS = { queue, explorer, receipts, beliefs, compensations, runs };
export const info = { graph: "", distinct_approver: false, reviewers: false, sign_in: "token", graph_limit: 2500 };
let current = null;

function show(wanted, focus = false) {
  // a view may be deep-linked to an item of it: #runs/<run id>
  const [view] = wanted.split("/");
  const name = VIEWS[view] ? view : "queue";
  for (const key of Object.keys(VIEWS)) {
    const selected = key === name;
    $(`#view-${key}`).hidden = !selected;
    const tab = $(`#tab-${key}`);
    tab.setAttribute("aria-selected", String(selected));
    tab.tabIndex = selected ? 0 : -1;
  }
  if (focus) $(`#tab-${name}`).focus();
  const target = VIEWS[view] ? wanted : name;
  if (current !== target) {
    current = target;
    if (location.hash !== `#${target}`) history.replaceState(null, "", `#${target}`);
    VIEWS[name].shown();
  }
}

const byProvider = () => info.sign_in === "provider";

function renderSession() {
  const signedIn = Boolean(session.who || session.reviewer);
  $("#who").textContent = signedIn ? `${session.role || "reviewer"}: ${shownAs()}` : "read-only";
  $("#sign-in").hidden = signedIn || !info.reviewers;
  $("#sign-out").hidden = !signedIn;
  // signed in with the identity provider, a reviewer loads their key here (it signs decisions)
  $("#load-key").hidden = !(byProvider() && session.reviewer && !keys.held_key());
  queue.sessionChanged();
  explorer.sessionChanged();
  compensations.sessionChanged();
}

// Hold the reviewer's key (registering it in the log if it is not yet); without one, refuse when
// they have a key: their decisions must be signed with it.
async function loadKey(keyText) {
  if (keyText) {
    const publicKey = await keys.load(keyText);
    if (session.public_key && session.public_key !== publicKey) {
      keys.forget();
      throw new Error(byProvider() ? "that key is not the one the log registered for you"
        : "that key is not the one the reviewers file names for you");
    }
    if (await keys.ensureRegistered()) toast(`Registered your key ${publicKey.slice(0, 12)}…`);
  } else if (session.public_key) {
    throw new Error("you have a reviewer key: load it to decide (it signs your decisions)");
  }
}

async function exchange(token, keyText = "") {
  try {
    if (!byProvider()) await signIn(token);
    await loadKey(keyText);
    toast((byProvider() ? "Your key signs your decisions" : `Signed in as ${session.reviewer}`)
      + (keys.held_key() && !byProvider() ? " with your key" : ""));
    return true;
  } catch (error) {
    $("#sign-in-error").textContent = error.message;
    return false;
  } finally {
    renderSession();
  }
}

function setupSession() {
  const dialog = $("#sign-in-dialog");
  const open = (forKey) => {
    $("#sign-in-error").textContent = "";
    $("#token-field").hidden = forKey;
    $("#token").required = !forKey;
    $("#sign-in-title").textContent = forKey ? "Load your reviewer key" : "Sign in as a reviewer";
    dialog.showModal();
    (forKey ? $("#reviewer-key") : $("#token")).focus();
  };
  $("#sign-in").addEventListener("click", () => {
    if (byProvider()) location.assign(`api/oidc/login?next=${encodeURIComponent(location.hash)}`);
    else open(false);
  });
  $("#load-key").addEventListener("click", () => open(true));
  $("#sign-in-cancel").addEventListener("click", () => dialog.close());
  $("#sign-in-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const signedIn = await exchange($("#token").value.trim(), $("#reviewer-key").value);
    $("#reviewer-key").value = "";
    if (signedIn) {
      $("#token").value = "";
      dialog.close();
    }
  });
  $("#sign-out").addEventListener("click", async () => {
    keys.forget();
    await signOut();
    renderSession();
    toast("Signed out");
  });
}

function setupTabs() {
  const names = Object.keys(VIEWS);
  for (const name of names) {
    const tab = $(`#tab-${name}`);
    tab.addEventListener("click", () => show(name));
    tab.addEventListener("keydown", (event) => {
      const step = { ArrowRight: 1, ArrowLeft: -1 }[event.key];
      if (step) show(names[(names.indexOf(name) + step + names.length) % names.length], true);
    });
  }
  document.addEventListener("keydown", (event) => {
    const typing = /^(INPUT|TEXTAREA|SELECT)$/.test(document.activeElement?.tagName || "");
    if (typing || event.ctrlKey || event.metaKey || event.altKey) return;
    const index = "12345".indexOf(event.key);
    if (index >= 0) show(names[index], true);
  });
  window.addEventListener("hashchange", () => show(location.hash.slice(1)));
}

async function start() {
  setupTabs();
  setupSession();
  Object.assign(info, await get("api/info"));
  $("#graph-name").textContent = info.graph;
  // A one-off sign-in link carries the token in the fragment (never sent to the server): use it
  // once, then drop it from the address bar and the history.
  const fragment = new URLSearchParams(location.hash.slice(1));
  const token = fragment.get("token");
  if (token) history.replaceState(null, "", location.pathname + location.search);
  await loadSession();
  if (token && !session.reviewer && !byProvider()) await exchange(token);
  renderSession();
  for (const view of Object.values(VIEWS)) view.init(info);
  onEvents((events, seq) => {
    for (const view of Object.values(VIEWS)) {
      try { view.events(events, seq); } catch (error) { console.error("a view failed on live events", error); }
    }
  });
  onReset(() => { for (const view of Object.values(VIEWS)) view.reset(); });
  connect((on) => {
    const el = $("#live");
    el.textContent = on ? "live" : "reconnecting…";
    el.className = `live ${on ? "on" : "off"}`;
  });
  show(location.hash.slice(1) || "queue");
  notify.watch();
}

window.rippl = { views: VIEWS, session };
start().catch((error) => {
  $("#live").textContent = `error: ${error.message}`;
  console.error(error);
});
