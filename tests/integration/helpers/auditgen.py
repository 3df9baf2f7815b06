#!/usr/bin/env python3
"""auditgen.py - writes N realistic moatd audit lines (README, "The audit
log"), for `moat audit` tests and its speed figure.

Usage: auditgen.py [--lines N] [--seed S] [--sandboxes K] > FILE

The mix: requests inside inspected tunnels (https) and plain HTTP, opaque
CONNECT tunnels with their close lines, DNS queries, refusals (no-rule,
denied-by-rule, port, secret-leak, timeout), would-denies of audit mode,
injected secrets, siblings under a few parents.  Lines are formatted the
way proxy/audit.c formats them (key order, no spaces).  Deterministic for
a seed; at most 10,000,000 lines.
"""
import argparse
import json
import random
import sys
import zlib

MAX_LINES = 10_000_000

PARENTS = ["githubusercontent.com", "cdn.example.net", "s3.example.org"]
HOSTS = (["api.openai.com", "pypi.org", "files.pythonhosted.org",
          "github.com", "api.github.com", "registry.npmjs.org",
          "status.example.com", "example.co.uk"] +
         ["%s.%s" % (c, p) for p in PARENTS for c in
          ("a", "b", "c", "d", "e")] +
         ["svc%d.internal.example.com" % i for i in range(40)])
DENIED = ["pastebin.com", "paste.pastebin.com", "evil.example",
          "transfer.sh", "169.254.169.254"]
PATHS = ["/v1/chat/completions", "/simple/requests/", "/v1/items/42",
         "/repos/x/y/pulls?page=2", "/packages/ab/cd/x.whl", "/v1/health"]
METHODS = ["GET", "GET", "GET", "POST", "HEAD", "PUT", "DELETE"]
SECRETS = ["OPENAI_API_KEY", "GITHUB_TOKEN", "NPM_TOKEN"]


def esc(s):
    return json.dumps(s, ensure_ascii=True)


def line(fields):
    out = []
    for k, v in fields:
        if v is None and k not in ("ip", "rule"):
            continue
        if isinstance(v, list):
            out.append('"%s":[%s]' % (k, ",".join(esc(x) for x in v)))
        elif v is None:
            out.append('"%s":null' % k)
        elif isinstance(v, int):
            out.append('"%s":%d' % (k, v))
        else:
            out.append('"%s":%s' % (k, esc(v)))
    return "{" + ",".join(out) + "}\n"


def ts(i):
    s = 1764423758 + i // 200
    h, rem = divmod(s % 86400, 3600)
    m, sec = divmod(rem, 60)
    return "2026-11-29T%02d:%02d:%02d.%03dZ" % (h, m, sec, i % 1000)


def ip_of(host, rnd):
    return "203.0.113.%d" % (zlib.crc32(host.encode()) % 200 + 10)


def gen(n, seed, nsbx, out):
    rnd = random.Random(seed)
    sandboxes = ["agent-%d" % i for i in range(nsbx)]
    buf = []
    for i in range(n):
        sbx = rnd.choice(sandboxes)
        client = "10.1.%d.2:%d" % (sandboxes.index(sbx) % 250,
                                     30000 + rnd.randrange(30000))
        r = rnd.random()
        host = rnd.choice(HOSTS)
        base = [("ts", ts(i))]
        if r < 0.45:
            https = rnd.random() < 0.8
            port = 443 if https else 80
            method = rnd.choice(METHODS)
            inj = [rnd.choice(SECRETS)] if rnd.random() < 0.3 else None
            would = rnd.random() < 0.02
            f = base + [("event", "request"), ("id", i),
                        ("sandbox", sbx),
                        ("proto", "https" if https else "http"),
                        ("client", client), ("host", host),
                        ("port", port), ("ip", ip_of(host, rnd)),
                        ("verdict", "allow"), ("reason", "allowed"),
                        ("rule", None if would else "rule-%d" %
                         (HOSTS.index(host) % 7)),
                        ("would_deny", "no-rule" if would else None),
                        ("method", method), ("path", rnd.choice(PATHS)),
                        ("status", 200), ("bytes_up", rnd.randrange(2000)),
                        ("bytes_down", rnd.randrange(200000)),
                        ("duration_ms", rnd.randrange(900)),
                        ("injected", inj)]
        elif r < 0.60:
            f = base + [("event", "open"), ("id", i), ("sandbox", sbx),
                        ("proto", "connect"), ("client", client),
                        ("host", host), ("port", 443),
                        ("ip", ip_of(host, rnd)), ("verdict", "allow"),
                        ("reason", "allowed"), ("rule", "tunnels")]
        elif r < 0.70:
            f = base + [("event", "close"), ("id", i), ("sandbox", sbx),
                        ("proto", "connect"), ("client", client),
                        ("host", host), ("port", 443),
                        ("ip", ip_of(host, rnd)), ("verdict", "allow"),
                        ("reason", "allowed"), ("rule", "tunnels"),
                        ("bytes_up", rnd.randrange(100000)),
                        ("bytes_down", rnd.randrange(10000000)),
                        ("duration_ms", rnd.randrange(60000)),
                        ("end", "eof")]
        elif r < 0.88:
            f = base + [("event", "dns"), ("id", i), ("sandbox", sbx),
                        ("proto", "dns"), ("client", client),
                        ("host", host), ("ip", None),
                        ("verdict", "allow"), ("reason", "allowed"),
                        ("rule", "tunnels"), ("qtype", "A"),
                        ("answer", ip_of(host, rnd))]
        else:
            bad = rnd.choice(DENIED)
            reason = rnd.choice(["no-rule", "denied-by-rule", "port",
                                 "secret-leak", "timeout", "metadata"])
            if bad.startswith("169."):
                reason = "metadata"
            elif reason == "metadata":
                reason = "no-rule"
            f = base + [("event", "request"), ("id", i), ("sandbox", sbx),
                        ("proto", "http"), ("client", client),
                        ("host", bad), ("port", 80), ("ip", None),
                        ("verdict", "deny"), ("reason", reason),
                        ("rule", "no-paste" if reason == "denied-by-rule"
                         else None),
                        ("method", "POST"), ("path", "/upload?x=\u00e9\t1"),
                        ("status", 403), ("bytes_up", 0),
                        ("bytes_down", 0), ("duration_ms", 0),
                        ("detail", "no rule allows this target")]
        buf.append(line(f))
        if len(buf) >= 4096:
            out.write("".join(buf))
            buf = []
    out.write("".join(buf))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--sandboxes", type=int, default=8)
    a = ap.parse_args()
    if not 0 < a.lines <= MAX_LINES or not 0 < a.sandboxes <= 250:
        ap.error("--lines 1..%d, --sandboxes 1..250" % MAX_LINES)
    gen(a.lines, a.seed, a.sandboxes, sys.stdout)


if __name__ == "__main__":
    main()
