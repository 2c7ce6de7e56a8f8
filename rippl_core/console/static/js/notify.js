// Webhook deliveries (rippl serve --notify): the page header says when one is failing (its last
// error and the next retry) or missed events, polled from api/notifications.

import { get } from "./api.js";
import { $ } from "./dom.js";

const POLL_MS = 2000;

export async function watch() {
  const el = $("#notify");
  const refresh = async () => {
    let hooks = [];
    try { hooks = await get("api/notifications"); } catch { hooks = []; }
    if (!hooks.length) { el.hidden = true; return; }
    const failing = hooks.filter((w) => w.failing || w.missed);
    el.hidden = false;
    el.className = `notify ${failing.length ? "bad" : "ok"}`;
    el.textContent = failing.length
      ? failing.map((w) => `webhook ${w.url} failing: ${w.last_error}`
          + (w.next_retry_in ? ` (retry in ${w.next_retry_in.toFixed(1)} s, ${w.pending} pending)` : "")
          + (w.missed ? `; ${w.missed} events missed` : "")).join(" · ")
      : `webhooks: ${hooks.reduce((n, w) => n + w.delivered, 0)} delivered`;
    el.title = hooks.map((w) => `${w.url}: ${w.delivered} delivered, ${w.failed_attempts} failed attempts, position ${w.position}`).join("\n");
  };
  await refresh();
  setInterval(refresh, POLL_MS);
}
