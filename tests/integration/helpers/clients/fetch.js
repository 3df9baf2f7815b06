// fetch.js - Node's HTTP clients as a workload uses them, for
// t_clients.sh.
//
//   node fetch.js KIND OUTDIR TAG URL AUTH [TAG URL AUTH...]
//
// KIND is "fetch" (the global fetch, undici inside Node) or "https" (the
// https module), used with default settings: neither reads the proxy
// variables before Node 24 (22.21 with NODE_USE_ENV_PROXY=1), unless a
// preloaded module set a global dispatcher.  For each TAG, a GET of URL,
// with "Authorization: AUTH" unless AUTH is "-"; prints TAG.status=CODE
// and TAG.reason=X-MOAT-REASON, or TAG.status=ERROR and TAG.error=TEXT,
// and writes the body to OUTDIR/TAG.body.  The first line is
// version=node VERSION.
"use strict";
const fs = require("fs");
const https = require("https");
const path = require("path");

function out(k, v) {
  console.log(k + "=" + String(v).replace(/\n/g, " ").slice(0, 300));
}

async function viaFetch(url, headers) {
  const r = await fetch(url, { headers, signal: AbortSignal.timeout(15000) });
  return [r.status, r.headers.get("x-moat-reason") || "",
          Buffer.from(await r.arrayBuffer())];
}

function viaHttps(url, headers) {
  return new Promise((resolve, reject) => {
    const q = https.get(url, { headers, timeout: 15000 }, (r) => {
      const parts = [];
      r.on("data", (d) => parts.push(d));
      r.on("end", () => resolve([r.statusCode,
        r.headers["x-moat-reason"] || "", Buffer.concat(parts)]));
      r.on("error", reject);
    });
    q.on("timeout", () => q.destroy(new Error("timeout")));
    q.on("error", reject);
  });
}

async function main() {
  const [kind, outdir, ...rest] = process.argv.slice(2);
  const get = { fetch: viaFetch, https: viaHttps }[kind];
  if (!get || rest.length % 3) {
    console.error("usage: fetch.js fetch|https OUTDIR TAG URL AUTH...");
    process.exit(2);
  }
  out("version", "node " + process.versions.node);
  for (let i = 0; i < rest.length; i += 3) {
    const [tag, url, auth] = rest.slice(i, i + 3);
    const headers = auth === "-" ? {} : { Authorization: auth };
    try {
      const [status, reason, body] = await get(url, headers);
      fs.writeFileSync(path.join(outdir, tag + ".body"), body);
      out(tag + ".status", status);
      out(tag + ".reason", reason);
    } catch (e) {
      const c = e.cause ? " (" + (e.cause.code || e.cause.message) + ")" : "";
      out(tag + ".status", "ERROR");
      out(tag + ".error", (e.code || e.message) + c);
    }
  }
}

main();
