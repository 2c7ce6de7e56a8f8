// The review queue: pending proposals, the blast-radius preview of each, and the human decision.

import { ApiError, get, id, post, session, shownAs } from "./api.js";
import { $, clear, debounce, h, tag, toast, when } from "./dom.js";
import * as keys from "./keys.js";

let info = {};
let items = [];
let selected = null;
let seen = new Set();
let loaded = false;

export function init(consoleInfo) {
  info = consoleInfo;
  reload();
}

export function shown() {}

export function reset() { reload(); }

export function sessionChanged() {
  if (selected) renderDecision(selected);
}

const reloadSoon = debounce(() => reload(), 50);

export function events(batch) {
  for (const event of batch) {
    if (event.type === "review_proposed") reloadSoon();
    if (event.type === "review_approved" || event.type === "review_rejected") {
      if (selected && selected.id === event.review) {
        toast(`${event.review} was ${event.type.slice(7)} by ${event.by}`);
      }
      reloadSoon();
    }
  }
}

async function reload() {
  items = await get("api/reviews");
  const badge = $("#queue-count");
  badge.textContent = String(items.length);
  badge.classList.toggle("zero", items.length === 0);
  $("#queue-empty").hidden = items.length > 0;
  const sod = $("#sod");
  sod.hidden = !info.distinct_approver;
  sod.textContent = "Separation of duties is on: whoever proposed a retraction or an override cannot approve it.";
  const list = $("#queue");
  clear(list, items.map((item) => {
    const fresh = loaded && !seen.has(item.id);
    const button = h("button", {
      type: "button", "data-review": item.id, onclick: () => select(item.id),
      "aria-current": selected && selected.id === item.id ? "true" : "false",
    },
    h("div", { class: "card-title" }, title(item)),
    h("div", {}, item.reason),
    h("div", { class: "card-meta" },
      `${item.id} · proposed by ${item.proposed_by}${item.monitor ? ` (monitor ${item.monitor})` : ""} · ${when(item.proposed_at)} · ` +
      (item.kind === "override" ? `run ${item.run}` : `${item.at_risk.length} dependents would go out`)));
    return h("li", { class: fresh ? "arrived" : "" }, button);
  }));
  seen = new Set(items.map((item) => item.id));
  loaded = true;
  if (selected && !items.some((item) => item.id === selected.id)) {
    const decided = await get(`api/reviews/${id(selected.id)}`);
    selected = null;
    clear($("#review-detail"), h("p", { class: "muted" },
      `${decided.id} was ${decided.status} by ${decided.decided_by}` + (decided.note ? `: ${decided.note}` : ".")));
  } else if (!selected && items.length) {
    await select(items[0].id, false);
  }
}

// A retraction by provenance covers every source its query matched: say how many, and the query.
function describe(query) {
  return Object.entries(query || {}).filter(([, v]) => v !== null && v !== undefined)
    .map(([k, v]) => `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`).join(", ");
}

function plural(n, noun) { return `${n} ${noun}${n === 1 ? "" : "s"}`; }

function title(item) {
  if (item.kind === "override") return `Override: let ${callText(item.call) || item.action} run once`;
  if (item.kind === "provenance") {
    return `Retract ${plural(item.claims.length, "source")} (${describe(item.query)})`;
  }
  const by = item.contradiction ? ` (contradicted by ${item.contradiction.new.id})` : "";
  return `Retract ${item.claim}${by}`;
}

async function select(reviewId, focus = true) {
  const detail = $("#review-detail");
  for (const b of document.querySelectorAll("#queue button")) {
    b.setAttribute("aria-current", String(b.dataset.review === reviewId));
  }
  clear(detail, h("p", { class: "muted" }, "Computing the blast radius…"));
  let preview;
  try {
    preview = await get(`api/reviews/${id(reviewId)}/preview`);
  } catch (error) {
    clear(detail, h("p", { class: "error" }, error.message));
    return;
  }
  selected = preview.review;
  renderPreview(detail, preview);
  renderDecision(selected);
  if (focus) detail.querySelector("h2")?.focus();
}

// An override lets one vetoed call run once despite its retracted premises; a retraction takes
// claims OUT.
function callText(call) {
  return call ? `${call.name}(${JSON.stringify(call.args)})` : "";
}


function nodeLine(node, extra) {
  return h("li", {}, h("span", { class: "mono" }, node.id), " ", tag(node.state, node.status), " ",
    node.text, extra ? h("div", { class: "card-meta" }, extra) : null);
}

function renderOverride(detail, preview) {
  const item = preview.review;
  clear(detail,
    h("h2", { tabindex: "-1" }, `${title(item)}?`),
    h("dl", { class: "kv" },
      h("dt", {}, "review"), h("dd", { class: "mono" }, item.id),
      h("dt", {}, "call"), h("dd", { class: "mono", id: "override-call" }, callText(item.call)),
      h("dt", {}, "action"), h("dd", { class: "mono" }, item.action ?? ""),
      h("dt", {}, "run"), h("dd", { class: "mono" }, item.run ?? ""),
      h("dt", {}, "proposed by"), h("dd", { id: "proposer" }, item.proposed_by),
      h("dt", {}, "when"), h("dd", {}, when(item.proposed_at)),
      h("dt", {}, "reason"), h("dd", {}, item.reason)),
    h("div", { class: "preview" },
      h("section", {},
        h("h3", {}, `Runs once despite these retracted premises (${preview.overridden.length})`),
        h("ul", { id: "preview-overridden" }, preview.overridden.map((n) => nodeLine(n))),
        h("p", { class: "muted" }, "Nothing changes state: the premises stay retracted, and every other call resting on them stays vetoed."))),
    h("div", { class: "decide", id: "decide" }));
}

// Both sides of a contradiction a detector found: each claim, its value and its sources.
function contradiction(found) {
  const by = found.detector === "model" ? `the model ${found.model || ""}` : "the key detector";
  const side = (label, c) => h("li", {}, `${label}: `, h("span", { class: "mono" }, c.id), ` ${c.text}`,
    c.value != null ? ` [${c.key} = ${c.value}]` : "",
    h("div", { class: "card-meta" }, `sources: ${c.sources.map((s) => s.title || s.id).join("; ") || "none"}`));
  return h("div", {}, `found by ${by}${found.key ? ` on key ${found.key}` : ""}`,
    h("ul", {}, side("old (proposed for retraction)", found.old), side("new", found.new)));
}

function renderPreview(detail, preview) {
  const item = preview.review;
  if (item.kind === "override") return renderOverride(detail, preview);
  const outMore = preview.out_count - preview.out.length;
  const keptMore = preview.survives_count - preview.survives.length;
  const many = item.kind === "provenance";
  clear(detail,
    h("h2", { tabindex: "-1" }, `${title(item)}?`),
    h("dl", { class: "kv" },
      h("dt", {}, "review"), h("dd", { class: "mono" }, item.id),
      h("dt", {}, "proposed by"), h("dd", { id: "proposer" }, item.proposed_by),
      item.monitor ? [h("dt", {}, "monitor"), h("dd", { id: "monitor" }, item.monitor)] : null,
      many ? [h("dt", {}, "query"), h("dd", { id: "query", class: "mono" }, describe(item.query)),
        h("dt", {}, "covers"), h("dd", { id: "covers" },
          `${plural(item.claims.length, "source")} supporting ${plural(item.matched.length, "claim")}`)] : null,
      h("dt", {}, "when"), h("dd", {}, when(item.proposed_at)),
      h("dt", {}, "reason"), h("dd", {}, item.reason),
      item.contradiction
        ? [h("dt", {}, "contradiction"), h("dd", { id: "contradiction" }, contradiction(item.contradiction))]
        : item.evidence ? [h("dt", {}, "evidence"), h("dd", {}, item.evidence)] : null,
      h("dt", {}, "downstream"), h("dd", {}, `${preview.downstream} nodes rest on ${many ? "them" : "it"}`)),
    h("div", { class: "preview" },
      h("section", {},
        h("h3", {}, `Would go OUT (${preview.out_count})`),
        h("ul", { id: "preview-out" }, preview.out.map((n) => nodeLine(n))),
        outMore > 0 ? h("p", { class: "muted" }, `and ${outMore} more`) : null),
      h("section", {},
        h("h3", {}, many ? `Survives through another source (${preview.survives_count})`
          : `Survives through another justification (${preview.survives_count})`),
        h("ul", { id: "preview-survives" }, preview.survives.map((s) =>
          nodeLine(s.node, s.through.length ? `still holds through ${s.through.join(" + ")}` : null))),
        keptMore > 0 ? h("p", { class: "muted" }, `and ${keptMore} more`) : null,
        preview.survives_count === 0 ? h("p", { class: "muted" }, "Nothing downstream survives.") : null)),
    h("div", { class: "decide", id: "decide" }));
}

function renderDecision(item) {
  const box = $("#decide");
  if (!box) return;
  if (!session.reviewer) {
    clear(box, h("p", { class: "note" }, session.who
      ? `You are signed in as a ${session.role}: only a reviewer approves or rejects.`
      : info.reviewers ? "Sign in as a reviewer to approve or reject."
        : "This console is read-only: no reviewers are configured."));
    return;
  }
  if (session.public_key && !keys.held_key()) {
    clear(box, h("p", { class: "note" }, "You have a reviewer key: load it to decide (it signs your decisions)."));
    return;
  }
  const ownProposal = info.distinct_approver && item.proposed_by === session.reviewer;
  const note = h("textarea", { id: "decision-note", required: true,
    placeholder: "Why? (recorded in the receipt)" });
  const message = h("p", { class: "error", role: "alert" });
  const decide = async (verb) => {
    if (!note.value.trim()) { message.textContent = "Say why: the note goes into the receipt."; note.focus(); return; }
    for (const b of box.querySelectorAll("button")) b.disabled = true;
    try {
      const body = { note: note.value };
      if (keys.held_key()) body.signature = await keys.sign(keys.decisionStatement(item, verb, note.value));
      const receipt = await post(`api/reviews/${id(item.id)}/${verb}`, body);
      const signed = receipt.body.statement ? ", signed with their key" : "";
      toast(`${verb === "approve" ? "Approved" : "Rejected"}: receipt ${receipt.id} names ${receipt.actor}${signed}`);
    } catch (error) {
      message.textContent = error instanceof ApiError ? error.message : String(error);
      for (const b of box.querySelectorAll("button")) b.disabled = false;
    }
  };
  clear(box,
    h("label", { for: "decision-note" }, `Your decision, as ${shownAs()}` + (keys.held_key() ? " (signed with your key)" : "")),
    note,
    ownProposal ? h("p", { class: "note" }, `You proposed this; another reviewer must approve it (separation of duties).`) : null,
    h("div", { class: "row" },
      h("button", { type: "button", class: "approve", id: "approve", disabled: ownProposal,
        onclick: () => decide("approve") }, item.kind === "override" ? "Approve override" : "Approve retraction"),
      h("button", { type: "button", class: "reject", id: "reject", onclick: () => decide("reject") }, "Reject")),
    message);
}
