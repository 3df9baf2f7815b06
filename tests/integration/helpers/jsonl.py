#!/usr/bin/env python3
"""jsonl.py - query a JSON-lines file (audit log, server logs) from shell.

  jsonl.py FILE count  [FILTER...]          number of matching lines
  jsonl.py FILE get FIELD [FILTER...]       FIELD of the last matching line
  jsonl.py FILE missing F1,F2,... [FILTER...]
                                            fields absent from the last
                                            matching line (empty: none)
  jsonl.py FILE dump [FILTER...]            matching lines, as they are

FILTER is KEY=VALUE (string equality, numbers compared as text, null as
"null"), KEY!=VALUE, KEY~REGEX (search), or KEY? (key present).
Every line must be one JSON object: otherwise the line number is printed
on stderr and the exit status is 2 (an audit log with a broken line is a
failure).  A missing file counts as empty.  Exit 0 otherwise.
"""

import json
import re
import sys


def text(v):
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (dict, list)):
        return json.dumps(v, sort_keys=True)
    return str(v)


def match(rec, flt):
    for f in flt:
        if f.endswith("?"):
            if f[:-1] not in rec:
                return False
            continue
        m = re.match(r"([A-Za-z0-9_.-]+)(!=|=|~)(.*)$", f, re.S)
        if not m:
            sys.exit("jsonl.py: bad filter %r" % f)
        k, op, v = m.groups()
        if k not in rec:
            return False
        t = text(rec[k])
        if op == "=" and t != v:
            return False
        if op == "!=" and t == v:
            return False
        if op == "~" and not re.search(v, t):
            return False
    return True


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    path, cmd, rest = sys.argv[1], sys.argv[2], sys.argv[3:]
    arg = None
    if cmd in ("get", "missing"):
        if not rest:
            sys.exit(__doc__)
        arg, rest = rest[0], rest[1:]
    elif cmd not in ("count", "dump"):
        sys.exit(__doc__)
    recs = []
    bad = 0
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                except ValueError:
                    rec = None
                if not isinstance(rec, dict):
                    sys.stderr.write("%s:%d: not a JSON object: %s\n"
                                     % (path, n, line.rstrip()[:200]))
                    bad += 1
                    continue
                recs.append((rec, line))
    except FileNotFoundError:
        pass
    sel = [(r, l) for r, l in recs if match(r, rest)]
    if cmd == "count":
        print(len(sel))
    elif cmd == "get":
        if sel and arg in sel[-1][0]:
            print(text(sel[-1][0][arg]))
    elif cmd == "missing":
        if not sel:
            print("(no matching line)")
        else:
            print(",".join(k for k in arg.split(",") if k not in sel[-1][0]))
    else:
        for _, l in sel:
            sys.stdout.write(l)
    sys.exit(2 if bad else 0)


if __name__ == "__main__":
    main()
