// Parse Mermaid diagrams with Mermaid's own parser (under jsdom, offline) and report what each
// diagram holds, its entity codes decoded: flowchart vertex labels, gantt task names and title.
// stdin: a JSON list of diagram texts. stdout: a JSON list of {ok, type, labels} or {ok, error}.
import { JSDOM } from "jsdom";

const dom = new JSDOM("<!DOCTYPE html><body></body>");
globalThis.window = dom.window;
globalThis.document = dom.window.document;
const { default: mermaid } = await import("mermaid");
mermaid.initialize({ startOnLoad: false });

// Mermaid replaces `#123;` / `#name;` with placeholders before parsing and turns them back into
// HTML entities when drawing; undo both here.
const named = { quot: '"', amp: "&", lt: "<", gt: ">", nbsp: "\u00a0" };
const decode = (text) => String(text)
  .replace(/ﬂ°°(\d+)¶ß/g, (_, code) => String.fromCodePoint(Number(code)))
  .replace(/ﬂ°(\w+)¶ß/g, (_, name) => named[name] ?? `&${name};`);

let input = "";
for await (const chunk of process.stdin) input += chunk;
const out = [];
for (const text of JSON.parse(input)) {
  try {
    const diagram = await mermaid.mermaidAPI.getDiagramFromText(text);
    const db = diagram.db;
    let labels = [];
    if (typeof db.getVertices === "function") {
      const vertices = db.getVertices();
      labels = [...(vertices instanceof Map ? vertices.values() : Object.values(vertices))]
        .map((v) => decode(v.text));
    } else if (typeof db.getTasks === "function") {
      labels = [decode(db.getDiagramTitle()), ...db.getTasks().map((t) => decode(t.task))];
    }
    out.push({ ok: true, type: diagram.type, labels });
  } catch (error) {
    out.push({ ok: false, error: String(error?.message ?? error).slice(0, 500) });
  }
}
console.log(JSON.stringify(out));
