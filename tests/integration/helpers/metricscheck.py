#!/usr/bin/env python3
"""metricscheck.py - moatd's /metrics against its audit log, for the tests.

  metricscheck.py AUDIT SCRAPE          the counts of SCRAPE (a text
      exposition, as GET /metrics answered) that the audit log AUDIT
      determines are the ones it determines: moat_decisions_total by
      sandbox, verdict, reason and rule (request, open and dns lines; a
      connection line counts its "refused"), moat_bytes_total by sandbox,
      rule and direction (request lines, close lines but an inspected
      tunnel's), moat_secrets_injected_total by secret.  Prints each
      difference; exit 0 when there is none, 1 otherwise.
  metricscheck.py --value SCRAPE SERIES the value of one sample (SERIES
      as written: name{labels}), or "none".
  metricscheck.py --sum SCRAPE NAME     the sum of every sample of NAME.

Python standard library only.
"""

import json
import re
import sys

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?')


def unescape(v):
    return re.sub(r'\\(.)', lambda m: "\n" if m.group(1) == "n"
                  else m.group(1), v)


def samples(path):
    """(name, raw series text, labels dict, value) of each sample."""
    out = []
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            m = SAMPLE.match(line)
            if not m:
                raise SystemExit("metricscheck: not a sample: %r" % line)
            labels = {}
            if m.group(3):
                for lm in LABEL.finditer(m.group(3)):
                    labels[lm.group(1)] = unescape(lm.group(2))
            series = line.rsplit(" ", 1)[0]
            out.append((m.group(1), series, labels, float(m.group(4))))
    return out


def from_audit(path):
    dec, byt, inj = {}, {}, {}
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            ev = r.get("event")
            sb, rule = r.get("sandbox", ""), r.get("rule") or ""
            if ev in ("request", "open", "dns", "connection"):
                k = (sb, r["verdict"], r["reason"], rule)
                n = r.get("refused", 1) if ev == "connection" else 1
                dec[k] = dec.get(k, 0) + n
            if ev == "request" or (ev == "close" and
                                   r.get("detail") != "inspected"):
                for d in ("up", "down"):
                    b = r.get("bytes_" + d, 0)
                    if b:
                        k = (sb, rule, d)
                        byt[k] = byt.get(k, 0) + b
            if ev == "request":
                for s in r.get("injected", []):
                    inj[s] = inj.get(s, 0) + 1
    return dec, byt, inj


def main(argv):
    if len(argv) == 4 and argv[1] == "--value":
        for _, series, _, v in samples(argv[2]):
            if series == argv[3]:
                print("%d" % v if v == int(v) else v)
                return 0
        print("none")
        return 0
    if len(argv) == 4 and argv[1] == "--sum":
        print("%d" % sum(v for n, _, _, v in samples(argv[2])
                         if n == argv[3]))
        return 0
    if len(argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    want_dec, want_byt, want_inj = from_audit(argv[1])
    got_dec, got_byt, got_inj = {}, {}, {}
    for name, _, lb, v in samples(argv[2]):
        if v == 0:
            continue
        if name == "moat_decisions_total":
            got_dec[(lb["sandbox"], lb["verdict"], lb["reason"],
                     lb["rule"])] = int(v)
        elif name == "moat_bytes_total":
            got_byt[(lb["sandbox"], lb["rule"], lb["direction"])] = int(v)
        elif name == "moat_secrets_injected_total":
            got_inj[lb["secret"]] = int(v)
    bad = 0
    for what, want, got in (("decisions", want_dec, got_dec),
                            ("bytes", want_byt, got_byt),
                            ("injected", want_inj, got_inj)):
        for k in sorted(set(want) | set(got), key=str):
            if want.get(k, 0) != got.get(k, 0):
                print("%s %s: audit %d, metrics %d" %
                      (what, k, want.get(k, 0), got.get(k, 0)))
                bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
