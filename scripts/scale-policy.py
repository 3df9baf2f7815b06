#!/usr/bin/env python3
"""scale-policy.py - how long a large policy takes to load, and what
each of its names or rules costs.

    python3 scripts/scale-policy.py [--moatd PATH] [--runs K]
                                    [--names N] [--rules M] [--keep DIR]

Writes three configs into a temporary directory (or DIR): a baseline
(one listener, one allow rule), one deny rule with N names (default
1,000,000: h0.example.com, h1.example.com, ...) and M deny rules of one
name each (default 100,000, each with its own "name"), both beside the
baseline's allow rule; then runs `moatd --check -c FILE` K times on each
(default 3), and prints, per config, the median wall time, CPU time
(user + system: less at the mercy of a shared machine's load) and peak
resident size (of /usr/bin/time) and the cost per name
or rule: (peak - the baseline's peak) / count, so the binary, its
libraries and the embedded defaults are not counted, and the text of
the config (which moatd holds while it loads) is.

Prints KEY=VALUE lines.  Each run is bounded (120 s).
"""
import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile

LISTEN = [{"proto": "http", "address": "127.0.0.1:3128"}]
ALLOW = {"name": "all", "action": "allow", "hosts": ["*"]}


def write(path, rules):
    """The config, one rule per line (one name per line in a long rule),
    as an operator or a generator would write it.  rules: an iterable of
    rules, or of (rule without hosts, iterable of names)."""
    with open(path, "w") as f:
        f.write('{"listen": %s,\n "policy": {"default": "deny", '
                '"rules": [' % json.dumps(LISTEN))
        sep = "\n"
        for r in rules:
            f.write(sep)
            sep = ",\n"
            if isinstance(r, tuple):
                head, names = r
                f.write('  %s, "hosts": [' % json.dumps(head)[:-1])
                nsep = "\n"
                for nm in names:
                    f.write('%s    "%s"' % (nsep, nm))
                    nsep = ",\n"
                f.write("\n  ]}")
            else:
                f.write("  " + json.dumps(r))
        f.write("\n ]}}\n")


def run(moatd, path):
    """(seconds, CPU seconds, peak RSS KiB) of one moatd --check, as
    /usr/bin/time
    says: a child of this process would count this process's own size
    (Linux keeps the peak of the memory a process had before exec), one
    of time(1)'s counts only its own."""
    r = subprocess.run(["/usr/bin/time", "-f", "time=%e %U %S %M", moatd,
                        "--check", "-c", path], stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, timeout=120)
    err = r.stderr.decode(errors="replace")
    if r.returncode != 0 or "time=" not in err:
        raise RuntimeError("moatd --check %s failed: %s" % (path, err[-500:]))
    t, user, sys_, kib = err[err.rindex("time="):].split()[:4]
    return float(t[5:]), float(user) + float(sys_), int(kib)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("--moatd", default=os.environ.get(
        "MOATD", os.path.join(here, "..", "build", "dev", "proxy", "moatd")))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--names", type=int, default=1000000)
    ap.add_argument("--rules", type=int, default=100000)
    ap.add_argument("--keep")
    args = ap.parse_args()
    d = args.keep or tempfile.mkdtemp(prefix="moat-scale-")
    os.makedirs(d, exist_ok=True)
    cfgs = {
        "base": (os.path.join(d, "base.json"), [ALLOW], 1),
        "names": (os.path.join(d, "names.json"),
                  [({"name": "many", "action": "deny"},
                    ("h%d.example.com" % i for i in range(args.names))),
                   ALLOW], args.names),
        "rules": (os.path.join(d, "rules.json"),
                  itertools.chain(({"name": "r%d" % i, "action": "deny",
                                    "hosts": ["h%d.example.com" % i]}
                                   for i in range(args.rules)), [ALLOW]),
                  args.rules),
    }
    for path, rules, _ in cfgs.values():
        write(path, rules)
    res = {}
    for key, (path, _, count) in cfgs.items():
        ts, cs, rs = [], [], []
        for _ in range(args.runs):
            t, cpu, r = run(args.moatd, path)
            ts.append(t)
            cs.append(cpu)
            rs.append(r)
        res[key] = (statistics.median(ts), statistics.median(rs),
                    os.path.getsize(path), count, statistics.median(cs))
    base_rss = res["base"][1]
    print("load_average=%s" % " ".join(open("/proc/loadavg").read().split()
                                       [:3]))
    print("base_s=%.3f base_peak_kib=%d" % res["base"][:2])
    for key in ("names", "rules"):
        t, r, size, count, cpu = res[key]
        print("%s_count=%d" % (key, count))
        print("%s_file_bytes=%d" % (key, size))
        print("%s_load_s=%.3f" % (key, t))
        print("%s_cpu_s=%.3f" % (key, cpu))
        print("%s_peak_kib=%d" % (key, r))
        print("%s_bytes_each=%d" % (key, (r - base_rss) * 1024 // count))
    if not args.keep:
        for path, _, _ in cfgs.values():
            os.unlink(path)
        os.rmdir(d)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (OSError, RuntimeError, subprocess.TimeoutExpired) as e:
        print("scale-policy.py: %s" % e, file=sys.stderr)
        sys.exit(1)
