// The reviewer's own Ed25519 key, held in this page only (never sent, never stored): loaded from
// the key file `rippl keys new` wrote (64 hex characters), kept as a non-extractable WebCrypto key,
// and used to sign the statements the server records in receipts. A browser without WebCrypto
// Ed25519 cannot sign: the reviewer then decides with `rippl review approve REV --key FILE`.

import { get, post, session } from "./api.js";

const PKCS8_PREFIX = "302e020100300506032b657004220420"; // an Ed25519 private key, RFC 8410
let held = null; // { key: CryptoKey, publicKey: hex }

const hex = (bytes) => Array.from(new Uint8Array(bytes), (b) => b.toString(16).padStart(2, "0")).join("");
const unhex = (text) => Uint8Array.from(text.match(/../g), (b) => parseInt(b, 16));
const unbase64url = (text) => Uint8Array.from(atob(text.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0));

export function held_key() { return held; }
export function forget() { held = null; }

export async function supported() {
  try {
    await crypto.subtle.generateKey({ name: "Ed25519" }, false, ["sign", "verify"]);
    return true;
  } catch { return false; }
}

// Load a private key given as 64 hex characters; returns its public key (hex).
export async function load(text) {
  const raw = text.trim().toLowerCase();
  if (!/^[0-9a-f]{64}$/.test(raw)) throw new Error("a reviewer key is 64 hex characters (the file `rippl keys new` wrote)");
  if (!(await supported())) throw new Error("this browser cannot sign with Ed25519 (WebCrypto); decide with `rippl review approve REVIEW --by NAME --key FILE` instead");
  const der = unhex(PKCS8_PREFIX + raw);
  const extractable = await crypto.subtle.importKey("pkcs8", der, { name: "Ed25519" }, true, ["sign"]);
  const jwk = await crypto.subtle.exportKey("jwk", extractable);
  const key = await crypto.subtle.importKey("pkcs8", der, { name: "Ed25519" }, false, ["sign"]);
  held = { key, publicKey: hex(unbase64url(jwk.x)) };
  return held.publicKey;
}

// The canonical JSON a statement is signed as: sorted keys, no spaces (as the server checks it).
export function canonical(statement) {
  return JSON.stringify(statement, Object.keys(statement).sort());
}

export async function sign(statement) {
  if (!held) throw new Error("load your reviewer key first");
  const signature = await crypto.subtle.sign({ name: "Ed25519" }, held.key, new TextEncoder().encode(canonical(statement)));
  return hex(signature);
}

// Register the held key in the log unless it already is (a receipt signed with it).
export async function ensureRegistered() {
  const registered = await get("api/keys");
  if (registered[session.reviewer] === held.publicKey) return false;
  const statement = { kind: "key_registered", public_key: held.publicKey, reviewer: session.reviewer };
  await post("api/keys", { public_key: held.publicKey, signature: await sign(statement) });
  return true;
}

export function decisionStatement(item, verb, note) {
  const what = item.kind === "override" ? "override" : "retraction";
  return { claim: item.claim, kind: `${what}_${verb === "approve" ? "approved" : "rejected"}`,
    note, proposed_by: item.proposed_by, review: item.id, reviewer: session.reviewer };
}
