// Receipts: the tamper-evident chain, its verification, and the JSON Lines export.

import { get } from "./api.js";
import { $, clear, debounce, h, when } from "./dom.js";

let visible = false;
let stale = true;

export function init() {
  $("#verify-btn").addEventListener("click", () => load());
}

export function shown() {
  visible = true;
  if (stale) load();
}

export function reset() { stale = true; if (isShown()) load(); }

export function sessionChanged() {}

const loadSoon = debounce(() => load(), 200);

export function events(batch) {
  const receipted = batch.some((e) => e.type === "review_approved" || e.type === "review_rejected" || e.type === "key_registered" || e.type === "key_revoked"
    || e.type === "compensation_resolved" || e.cause === "retract" || e.cause === "reinstate");
  if (!receipted) return;
  stale = true;
  if (isShown()) loadSoon();
}

function isShown() { return visible && !$("#view-receipts").hidden; }

async function load() {
  stale = false;
  const status = $("#verify");
  status.textContent = "Verifying…";
  status.className = "verify";
  const [chain, check] = await Promise.all([get("api/receipts"), get("api/receipts/verify")]);
  status.textContent = check.ok
    ? `Chain intact: ${check.count} receipts verified, Merkle root ${(check.root || "").slice(0, 16)}…`
    : `Chain broken: ${check.problems.join("; ")}`;
  status.className = `verify ${check.ok ? "ok" : "bad"}`;
  const body = $("#receipts tbody");
  clear(body, [...chain].reverse().map((r) => {
    const row = h("tr", { tabindex: "0", "aria-selected": "false" },
      h("td", {}, String(r.seq)), h("td", {}, r.kind), h("td", { class: "mono" }, r.claim || r.body.reviewer || "—"),
      h("td", { class: "mono" }, r.review || "—"), h("td", {}, actor(r)), h("td", {}, when(r.at)),
      h("td", {}, String((r.body.affected || []).length)),
      h("td", { class: "mono", title: r.hash }, r.hash.slice(0, 12)),
      h("td", { class: "mono", title: r.prev_hash }, r.prev_hash.slice(0, 12)));
    const open = () => {
      for (const other of body.children) other.setAttribute("aria-selected", "false");
      row.setAttribute("aria-selected", "true");
      clear($("#receipt-detail"), h("h2", {}, `Receipt ${r.id}`),
        h("p", {}, `${r.kind} of ${r.claim || r.body.reviewer} by ${actor(r)}` + (r.body.statement ? " (signed by the reviewer's key)" : r.signature ? " (signed)" : " (unsigned)")),
        h("pre", {}, JSON.stringify(r.body, null, 2)),
        h("p", { id: "receipt-proof", class: "muted" }, "Proving inclusion…"));
      get(`api/receipts/${encodeURIComponent(r.id)}/proof`).then((proof) => {
        $("#receipt-proof").textContent = `In the log's Merkle tree: leaf ${proof.index} of ${proof.tree_size}, `
          + `audit path of ${proof.proof.length} hashes to root ${proof.root.slice(0, 16)}… (RFC 9162)`;
      }).catch((error) => { $("#receipt-proof").textContent = `No inclusion proof: ${error.message}`; });
    };
    row.addEventListener("click", open);
    row.addEventListener("keydown", (event) => { if (event.key === "Enter" || event.key === " ") { event.preventDefault(); open(); } });
    return row;
  }));
}

// Who a receipt names: their identity, and the display name an identity provider gave them.
function actor(r) { return r.body.actor_name ? `${r.body.actor_name} (${r.actor})` : r.actor; }
