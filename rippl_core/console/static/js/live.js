// The live stream (Server-Sent Events). The browser resumes with Last-Event-ID by itself; a
// `reset` means events were missed, so every view reloads. Listeners get each frame's events.

const listeners = new Set();
const resetters = new Set();
let source = null;
let status = () => {};

export function onEvents(fn) { listeners.add(fn); }
export function onReset(fn) { resetters.add(fn); }

export function connect(setStatus) {
  status = setStatus;
  source = new EventSource("api/events");
  source.addEventListener("open", () => status(true));
  source.addEventListener("error", () => status(false));
  source.addEventListener("hello", () => status(true));
  source.addEventListener("reset", () => {
    inbox.length = 0;  // every view reloads: what was still waiting is older than that
    for (const fn of resetters) fn();
  });
  source.addEventListener("events", (message) => {
    inbox.push(message.data);
    if (!draining) { draining = true; setTimeout(drain, 0); }
  });
  return source;
}

// The browser may deliver many frames (of up to 500 events) in one task when they arrive in one
// chunk: they are parsed and handed to the views one frame a task, in order, after that task.
const inbox = [];
let draining = false;

function drain() {
  if (!inbox.length) { draining = false; return; }  // a reset emptied it
  const { events, seq } = JSON.parse(inbox.shift());
  for (const fn of listeners) {
    try { fn(events, seq); } catch (error) { console.warn("event listener failed", error); }
  }
  if (inbox.length) setTimeout(drain, 0); else draining = false;
}
