#!/usr/bin/env python3
"""clientcheck.py - judges t_clients.sh's matrix: what each client said
inside the sandbox, what the origins received, what moatd audited.

  clientcheck.py --rows ROWS --out DIR --audit FILE --origin FILE
                 --git FILE --said FILE --real VALUE --tsv FILE

ROWS is a TSV: id, kind (http, pip, npm, git), client label, notes, the
reason the client is skipped (empty: it ran).  DIR holds ID.out (KEY=VALUE
lines: ph, API_KEY in the sandbox; what the client's script printed:
version, MODE.status, MODE.reason, MODE.got, MODE.error; rc, its exit) and ID/ (the bodies it received).  The client ID
reached, in mode M (tun, insp, inj), the host ID.M.test (git:
git.M.test:8443).  --said is what moat run printed on stderr.

For each client and mode, one line on stdout: "PASS<TAB>ID<TAB>what"
or "FAIL<TAB>ID<TAB>what: problems", or "SKIP<TAB>ID<TAB>why" once for
a skipped client;
and one TSV row per client and mode in --tsv (header first): id, client,
version, mode (tunnelled, intercepted, injected), result (pass, fail,
skip), via (how the client reached moatd, from the audit's open lines:
CONNECT, transparent, SOCKS5), notes, detail.
"""

import argparse
import base64
import json
import os
import sys

MODES = (("tun", "tunnelled"), ("insp", "intercepted"), ("inj", "injected"))
PROTO = {"connect": "CONNECT", "transparent": "transparent",
         "socks5": "SOCKS5", "http": "plain HTTP"}
PIP_FILES = ("/simple/moat-test-pkg/",
             "/files/moat_test_pkg-1.0-py3-none-any.whl")
GOT = {"pip": "VALUE = 'moat'", "npm": 'module.exports = "moat";',
       "git": "moat-clients-git"}


def jsonl(path):
    recs = []
    if os.path.exists(path):
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                line = line.strip()
                if line:
                    recs.append(json.loads(line))
    return recs


def kv(path):
    d = {}
    if os.path.exists(path):
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                k, sep, v = line.rstrip("\n").partition("=")
                if sep and k not in d:
                    d[k] = v
    return d


def b64(s):
    return base64.b64encode(s.encode()).decode()


def carries(auth, ph):
    """Whether an Authorization value holds the placeholder, as it is or
    inside Basic credentials."""
    if ph in auth:
        return True
    kind, _, cred = auth.partition(" ")
    if kind.lower() == "basic":
        try:
            return ph in base64.b64decode(cred.strip() + "==").decode("latin-1")
        except ValueError:
            return False
    return False


def bare(host):
    """'git.tun.test:8443' -> 'git.tun.test' (origin.py's Host)."""
    return (host or "").rsplit(":", 1)[0] if ":" in (host or "") else host


class Judge:
    def __init__(self, a):
        self.a = a
        self.audit = jsonl(a.audit)
        self.origin = [r for r in jsonl(a.origin) if r.get("event") == "request"]
        self.git = [r for r in jsonl(a.git) if r.get("event") == "request"]
        with open(a.said, encoding="utf-8", errors="replace") as f:
            self.said = f.read().split("\n")

    def origin_reqs(self, kind, host):
        """(path, authorization) of each request the origin got for host."""
        if kind == "git":
            return [(r["target"], r.get("auth", "")) for r in self.git
                    if r.get("host") == host + ":8443"]
        out = []
        for r in self.origin:
            if bare(r.get("host")) == host:
                auth = ",".join(v for n, v in r["headers"]
                                if n.lower() == "authorization")
                out.append((r["path"], auth))
        return out

    def expected(self, kind, cid, m):
        """The host, the paths the origin must get, the Authorization an
        injected request must arrive with."""
        real = self.a.real
        if kind == "http":
            return ("%s.%s.test" % (cid, m), ["/c/%s/%s" % (cid, m)],
                    "Bearer " + real)
        if kind == "pip":
            return ("pip.%s.test" % m, list(PIP_FILES),
                    "Basic " + b64("__token__:" + real))
        if kind == "npm":
            h = "npm.%s.test" % m
            base = "/npm/%s/moat-test-pkg" % h
            return (h, [base, base + "/-/moat-test-pkg-1.0.0.tgz"],
                    "Bearer " + real)
        return ("git.%s.test" % m,
                ["/repo.git/info/refs?service=git-upload-pack",
                 "/repo.git/git-upload-pack"],
                "Basic " + b64("x-access-token:" + real))

    def mode(self, kind, cid, m, res, ph):
        """The problems of client cid in mode m (empty: it passed), and
        how it reached moatd."""
        bad = []
        host, paths, auth = self.expected(kind, cid, m)
        st = res.get(m + ".status", "")
        if kind == "http":
            if st != "200":
                bad.append("status %s %s" % (st or "none",
                                             res.get(m + ".error", "")))
        else:
            got = res.get(m + ".got", "")
            if st != "0" or got != GOT[kind]:
                bad.append("exit %s, got '%s'" % (st or "none", got))
        reqs = self.origin_reqs(kind, host)
        for p in paths:
            if not any(rp == p for rp, _ in reqs):
                bad.append("the origin never got %s%s" % (host, p))
        if ph and any(carries(a, ph) for _, a in reqs):
            bad.append("a placeholder reached the origin")
        opens = [r for r in self.audit if r.get("event") == "open" and
                 r.get("host") == host and r.get("verdict") == "allow"]
        inreqs = [r for r in self.audit if r.get("event") == "request" and
                  r.get("host") == host]
        via = sorted({PROTO.get(r.get("proto"), r.get("proto"))
                      for r in opens})
        if not opens:
            bad.append("no allowed tunnel to %s in the audit" % host)
        inspected = [r for r in opens
                     if "inspected" in (r.get("detail") or "")]
        if m == "tun":
            if inspected or inreqs:
                bad.append("moatd inspected the tunnel (%d requests "
                           "audited)" % len(inreqs))
        else:
            if len(inspected) != len(opens):
                bad.append("a tunnel to %s was not inspected" % host)
            seen = {r.get("path") for r in inreqs if r.get("verdict") == "allow"}
            for p in paths:
                if p not in seen:
                    bad.append("moatd audited no request for %s" % p)
        if m == "inj":
            for p in paths:
                if not any(rp == p and a == auth for rp, a in reqs):
                    bad.append("%s did not arrive with the real value" % p)
            if not any(r.get("injected") == ["API_KEY"] for r in inreqs):
                bad.append("the audit names no injected API_KEY")
            if kind == "http":
                body = self.body(cid, "inj")
                if not ph or ph.encode() not in body:
                    bad.append("the echo did not come back as the placeholder")
        if m == "insp" and kind == "http":
            # A path the rule does not allow: moat's 403 reaches the client.
            dst, drs = res.get("deny.status"), res.get("deny.reason")
            if (dst, drs) != ("403", "path"):
                bad.append("a refused path got %s '%s', not 403 path %s" % (
                    dst, drs, res.get("deny.error", "")))
            if any(rp.startswith("/denied/") for rp, _ in reqs):
                bad.append("the refused path reached the origin")
            line = "denied GET https://%s/denied/%s (path, rule insp)" % (
                host, cid)
            if not any(line in l for l in self.said):
                bad.append("moat run did not say '%s'" % line)
        return bad, via

    def body(self, cid, tag):
        try:
            with open(os.path.join(self.a.out, cid, tag + ".body"), "rb") as f:
                return f.read()
        except OSError:
            return b""

    def leaked(self, cid):
        """The files of cid's output that hold the real value."""
        real = self.a.real.encode()
        out = []
        files = [os.path.join(self.a.out, cid + ".out")]
        for d, _, names in os.walk(os.path.join(self.a.out, cid)):
            files += [os.path.join(d, n) for n in names]
        for f in files:
            try:
                with open(f, "rb") as fh:
                    if real in fh.read():
                        out.append(os.path.relpath(f, self.a.out))
            except OSError:
                pass
        return out


def main():
    ap = argparse.ArgumentParser()
    for k in ("rows", "out", "audit", "origin", "git", "said", "real",
              "tsv"):
        ap.add_argument("--" + k, required=True)
    a = ap.parse_args()
    j = Judge(a)
    rows = []
    with open(a.rows) as f:
        for line in f:
            if line.strip():
                rows.append((line.rstrip("\n").split("\t") + [""] * 5)[:5])
    with open(a.tsv, "w") as t:
        t.write("id\tclient\tversion\tmode\tresult\tvia\tnotes\tdetail\n")
        for cid, kind, label, notes, skip in rows:
            if skip:
                print("SKIP\t%s\t%s: %s" % (cid, label, skip))
                for _, name in MODES:
                    t.write("\t".join((cid, label, "", name, "skip", "",
                                       notes, skip)) + "\n")
                continue
            res = kv(os.path.join(a.out, cid + ".out"))
            ph = res.get("ph", "")
            ver = res.get("version", "")
            leaks = j.leaked(cid)
            for m, name in MODES:
                bad, via = j.mode(kind, cid, m, res, ph)
                if not ph.startswith("moat-ph-"):
                    bad.append("API_KEY in the sandbox is '%s', not a "
                               "placeholder" % ph)
                if leaks:
                    bad.append("the real value reached the sandbox: "
                               + " ".join(leaks))
                if res.get("rc", "0") != "0":
                    bad.append("its script exited %s" % res.get("rc"))
                what = "%s (%s) %s" % (label, ver or "version unknown", name)
                how = "via " + "+".join(via) if via else "nowhere"
                if bad:
                    print("FAIL\t%s\t%s, %s: %s" % (cid, what, how,
                                                    "; ".join(bad)))
                else:
                    print("PASS\t%s\t%s, %s" % (cid, what, how))
                t.write("\t".join((cid, label, ver, name,
                                   "fail" if bad else "pass",
                                   "+".join(via), notes,
                                   "; ".join(bad).replace("\t", " ")))
                        + "\n")


if __name__ == "__main__":
    main()
