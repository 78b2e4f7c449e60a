package handlers

// clientJS is $.js: an ES module with no dependencies, for Node 18+ and
// browsers. /*VERBS*/{} is replaced by the caller's verbs (sdk.go); body kinds
// are verbs.BodyFields (0), BodyWhole (1), BodyRaw (2).
const clientJS = `// Subako's typed client $, cut to the verbs of the token that fetched it.
// Types: GET /api/v1/$.d.ts. Use:
//   import { subako } from "./$.js";
//   const $ = subako({ url: "https://subako.example.com", token: process.env.SUBAKO_TOKEN });
//   const sessions = await $.Session.list({});
// A refused call throws SubakoError {status, code, message, field, missing_permission}.
const verbs = /*VERBS*/{};

export class SubakoError extends Error {
  constructor(status, problem) {
    const p = problem && typeof problem === "object" ? problem : {};
    super(p.detail || p.title || "Subako answered " + status);
    this.name = "SubakoError";
    this.status = status;
    this.code = typeof p.code === "string" ? p.code : "http_" + status;
    if (p.field) this.field = p.field;
    if (p.missing_permission) this.missing_permission = p.missing_permission;
    if (Array.isArray(p.errors)) this.errors = p.errors;
  }
}

// base is Subako's address: url (with or without /api/v1), else where this
// file was served from.
function base(url) {
  if (url === undefined || url === null || url === "") {
    const here = new URL(import.meta.url);
    if (here.protocol !== "http:" && here.protocol !== "https:") {
      throw new TypeError("subako: give url, Subako's address (this file was not loaded from it)");
    }
    return here.href.replace(/\/api\/v1\/\$\.js([?#].*)?$/, "");
  }
  return String(url).replace(/\/+$/, "").replace(/\/api\/v1$/, "");
}

function refuse(field, detail) {
  return new SubakoError(422, { code: "invalid_input", field, detail });
}

// fill puts the input's fields into the route's :params (and * as "path"),
// encoded, and takes them out of rest.
function fill(path, rest) {
  return path.split("/").map((seg) => {
    if (seg !== "*" && !seg.startsWith(":")) return seg;
    const name = seg === "*" ? "path" : seg.slice(1);
    const v = rest[name];
    if (v === undefined || v === null || v === "") throw refuse(name, name + " is required");
    delete rest[name];
    if (seg === "*") return String(v).split("/").map(encodeURIComponent).join("/");
    return encodeURIComponent(String(v));
  }).join("/");
}

function query(rest) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(rest)) {
    if (v === undefined || v === null) continue;
    for (const one of Array.isArray(v) ? v : [v]) {
      q.append(k, typeof one === "object" ? JSON.stringify(one) : String(one));
    }
  }
  const s = q.toString();
  return s ? "?" + s : "";
}

async function call(opts, name, input) {
  const [method, path, kind, rawType] = verbs[name];
  if (input !== undefined && (input === null || typeof input !== "object" || Array.isArray(input))) {
    throw refuse("input", name + " takes an object");
  }
  const rest = { ...input };
  let url = opts.base + "/api/v1" + fill(path, rest);
  const headers = { accept: "application/json" };
  if (opts.token) headers.authorization = "Bearer " + opts.token;
  let body;
  if (kind === 2) {
    body = rest.body;
    delete rest.body;
    if (body === undefined) throw refuse("body", name + " sends input.body (a Blob, Uint8Array, ArrayBuffer or string) as is");
    headers["content-type"] = rawType;
    url += query(rest);
  } else if (method === "GET" || method === "DELETE") {
    url += query(rest);
  } else if (kind === 1) {
    const extra = Object.keys(rest).filter((k) => k !== "body");
    if (extra.length) throw refuse(extra[0], name + " takes its input as body (and the path's ids)");
    body = JSON.stringify(rest.body);
    headers["content-type"] = "application/json";
  } else {
    body = JSON.stringify(rest);
    headers["content-type"] = "application/json";
  }
  const res = await opts.fetch(url, { method, headers, body });
  if (!res.ok) {
    let problem;
    try { problem = await res.json(); } catch { problem = undefined; }
    throw new SubakoError(res.status, problem);
  }
  if (res.status === 204) return undefined;
  if (/[/+]json\b/.test(res.headers.get("content-type") || "")) return res.json();
  return new Uint8Array(await res.arrayBuffer());
}

// subako returns $: $.Noun.verb(input) for each verb above. url is Subako's
// address, token an API token (sbk_…, or a session's sbs_…), fetch one to use
// instead of the global one.
export function subako({ url, token, fetch } = {}) {
  if (typeof (fetch || globalThis.fetch) !== "function") {
    throw new TypeError("subako: no fetch (Node 18+ and browsers have one; else pass fetch)");
  }
  // The global fetch is called on globalThis: some browsers refuse it detached.
  const opts = { base: base(url), token, fetch: fetch ? (...a) => fetch(...a) : (...a) => globalThis.fetch(...a) };
  const $ = {};
  for (const name of Object.keys(verbs)) {
    const dot = name.indexOf(".");
    const noun = name.slice(0, dot);
    if (!Object.hasOwn($, noun)) $[noun] = {};
    $[noun][name.slice(dot + 1)] = (input) => call(opts, name, input);
  }
  return $;
}

export default subako;
`
