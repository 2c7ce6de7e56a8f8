// The live stream (Server-Sent Events). The browser resumes with Last-Event-ID by itself; a
// `reset` means events were missed, so every view reloads. Listeners get each commit's events.

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
  source.addEventListener("reset", () => { for (const fn of resetters) fn(); });
  source.addEventListener("events", (message) => {
    const { events, seq } = JSON.parse(message.data);
    for (const fn of listeners) {
      try { fn(events, seq); } catch (error) { console.warn("event listener failed", error); }
    }
  });
  return source;
}
