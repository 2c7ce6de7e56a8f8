// The JSON API, relative to the page (so the console works when mounted under a prefix). Changes
// carry the session's CSRF token; errors become ApiError with the server's message.

export class ApiError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

// who is signed in: `reviewer` (who decides, else null), `who`, `role` (reviewer, proposer or
// reader), `name` (the identity provider's display name), `csrf`, `public_key`
export const session = { reviewer: null, csrf: null, who: null, role: null, name: null, public_key: null };

// `meta`, if given, receives what the response's headers add: `total` (X-Total-Count) for a page.
async function call(method, path, body, meta) {
  const headers = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (method !== "GET" && session.csrf) headers["X-CSRF-Token"] = session.csrf;
  const response = await fetch(path, {
    method, headers, credentials: "same-origin",
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  const data = text ? JSON.parse(text) : null;
  if (!response.ok) {
    const detail = data && data.detail;
    const message = typeof detail === "string" ? detail
      : Array.isArray(detail) ? detail.map((d) => d.msg).join("; ") : response.statusText;
    throw new ApiError(response.status, message);
  }
  if (meta && response.headers.has("X-Total-Count")) meta.total = Number(response.headers.get("X-Total-Count"));
  return data;
}

export function query(params) {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value === undefined || value === null || value === "") continue;
    for (const v of Array.isArray(value) ? value : [value]) search.append(key, v);
  }
  const text = search.toString();
  return text ? `?${text}` : "";
}

export const id = (value) => encodeURIComponent(value);
export const get = (path, meta) => call("GET", path, undefined, meta);
export const post = (path, body = {}) => call("POST", path, body);
export const del = (path) => call("DELETE", path, {});

export async function loadSession() {
  Object.assign(session, await get("api/session"));
  return session;
}

export async function signIn(token) {
  Object.assign(session, await post("api/session", { token }));
  return session;
}

export async function signOut() {
  Object.assign(session, await del("api/session"));
  return session;
}

// Who is signed in, as the page shows them.
export function shownAs() { return session.name || session.who || session.reviewer; }
