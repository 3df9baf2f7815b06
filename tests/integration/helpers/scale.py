#!/usr/bin/env python3
"""scale.py - many sandboxes on one moatd: register them, use them,
unregister them, and say what each cost.

    scale.py --admin SOCKET --moatd-pid PID --origin IP:PORT --count N
             [--requests R] [--conns each|one] [--listen-ip IP]
             [--pad P] [--callgrind OUTDIR] [--check] [--timeout S]

Run where moatd's admin socket and the origin can be reached (the
integration test's moat namespace, or the namespace scripts/scale.sh
makes).  For each sandbox K (0..N-1) it makes a listening TCP socket on
--listen-ip (port chosen by the kernel) and registers sandbox "scale-K"
with a policy of its own, passing the socket with SCM_RIGHTS as moat
attach does, then closes its copy (moatd holds the only one):

    allow "own-K": the origin's address on its port, paths /K/*
    deny  "deny-K": host deny-K.test

so a request of sandbox K for /K/... is served (200), one for another
sandbox's path is refused (403, reason path), and deny-K.test is refused
(403, denied-by-rule) without being resolved.  With --pad P the deny rule
names P more hosts (pad-I.deny-K.test), so that each sandbox holds more
memory than the noise of moatd's own (the integration test's check that
unregistering gives it back).

What it measures, in order:
  1. the cost of a decision with one sandbox registered: R requests
     through its listener, alternately served and refused (with
     --callgrind, moatd runs under callgrind with instrumentation off:
     callgrind_control turns it on for the requests and the dump says
     how many instructions they took; else their median latency); then
     that sandbox is unregistered;
  2. moatd's memory with no sandbox (VmRSS, and Pss and Private_Dirty of
     smaps_rollup), warmed up by that sandbox, once moatd gave memory
     back (a second after a sandbox leaves) and it stops moving;
  3. register latency of sandboxes 0..N-1 (from the request sent to the
     answer read), and memory with N sandboxes: per idle sandbox =
     (with N - without) / N;
  4. the same decision cost with N sandboxes (sandbox 0's listener);
  5. with --check: every sandbox served on its own path, refused on its
     neighbour's and on its deny rule (three requests each);
  6. unregister latency of all N (unregister, answer), and memory after
     it was given back.
With a CA in moatd's config, "trust_answers" counts the register answers
that carried its certificate and a trust bundle with more in it.

Prints KEY=VALUE lines (and the figures on stderr as it goes).  Every
step is bounded: --timeout seconds per admin answer and per request.
Exit 0 when everything was measured (with --check: and every check
held), 1 otherwise.
"""
import argparse
import errno
import glob
import json
import os
import resource
import socket
import statistics
import struct
import subprocess
import sys
import time

# moatd gives memory back a second after a sandbox left (admin.c).
TRIM_WAIT_S = 1.5


def log(*a):
    print(*a, file=sys.stderr, flush=True)


class Admin:
    """One admin connection (proto/admin_proto.h)."""

    def __init__(self, path, timeout):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.settimeout(timeout)
        self.s.connect(path)
        a = self.call({"op": "hello", "version": 1})
        if not a.get("ok"):
            raise RuntimeError("hello refused: %s" % a.get("error"))

    def send(self, obj, fds=()):
        body = json.dumps(obj).encode()
        anc = []
        if fds:
            anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                    struct.pack("%di" % len(fds), *fds))]
        self.s.sendmsg([struct.pack(">I", len(body))], anc)
        self.s.sendall(body)

    def recv_exact(self, n):
        buf = b""
        while len(buf) < n:
            b = self.s.recv(n - len(buf))
            if not b:
                raise EOFError("moatd closed the admin connection")
            buf += b
        return buf

    def recv(self):
        n = struct.unpack(">I", self.recv_exact(4))[0]
        return json.loads(self.recv_exact(n))

    def call(self, obj, fds=()):
        self.send(obj, fds)
        while True:
            a = self.recv()
            if "ok" in a:		# not a watch's line
                return a

    def close(self):
        self.s.close()


def policy_of(k, origin_ip, origin_port, pad=0):
    return {"policy": {
        "default": "deny",
        "allow_private": [origin_ip + ("/32" if ":" not in origin_ip
                                       else "/128")],
        "rules": [
            {"name": "own-%d" % k, "action": "allow", "hosts": [origin_ip],
             "ports": [origin_port], "paths": ["/%d/*" % k]},
            {"name": "deny-%d" % k, "action": "deny",
             "hosts": ["deny-%d.test" % k] +
             ["pad-%d.deny-%d.test" % (i, k) for i in range(pad)]},
        ]}}


def listener(ip):
    fam = socket.AF_INET6 if ":" in ip else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.bind((ip, 0))
    s.listen(64)
    return s


def http_get(addr, url, host, timeout):
    """One request on a connection of its own: (status, X-Moat-Reason)."""
    fam = socket.AF_INET6 if ":" in addr[0] else socket.AF_INET
    with socket.socket(fam, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(addr)
        s.sendall(("GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n"
                   "\r\n" % (url, host)).encode())
        data = b""
        while True:
            b = s.recv(65536)
            if not b:
                break
            data += b
    head = data.split(b"\r\n\r\n", 1)[0].decode("latin-1")
    lines = head.split("\r\n")
    try:
        status = int(lines[0].split()[1])
    except (IndexError, ValueError):
        return 0, ""
    reason = ""
    for ln in lines[1:]:
        if ln.lower().startswith("x-moat-reason:"):
            reason = ln.split(":", 1)[1].strip()
    return status, reason


def mem(pid):
    """VmRSS, Pss, Private_Dirty of pid, KiB."""
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for ln in f:
            if ln.startswith("VmRSS:"):
                out["rss"] = int(ln.split()[1])
    try:
        with open("/proc/%d/smaps_rollup" % pid) as f:
            for ln in f:
                k = ln.split(":")[0]
                if k in ("Pss", "Private_Dirty"):
                    out[k.lower()] = int(ln.split()[1])
    except OSError:
        pass
    return out


def mem_settled(pid, limit_s=6.0):
    """mem() once RSS moved less than 64 KiB over 0.5 s (bounded)."""
    end = time.monotonic() + limit_s
    a = mem(pid)
    while time.monotonic() < end:
        time.sleep(0.5)
        b = mem(pid)
        if abs(b["rss"] - a["rss"]) < 64:
            return b
        a = b
    return a


def pct(v, p):
    if not v:
        return 0.0
    v = sorted(v)
    return v[min(len(v) - 1, int(round(p / 100.0 * (len(v) - 1))))]


class Callgrind:
    """moatd under valgrind --tool=callgrind --instr-atstart=no."""

    def __init__(self, pid, outdir):
        self.pid, self.outdir = pid, outdir

    def ctl(self, *args):
        subprocess.run(["callgrind_control"] + list(args) + [str(self.pid)],
                       check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=120)

    def start(self):
        self.ctl("-i", "on")
        self.ctl("-z")

    def stop(self):
        """Instructions since start()."""
        before = set(glob.glob(os.path.join(self.outdir, "*.%d.*" %
                                            self.pid)))
        self.ctl("--dump=scale")
        self.ctl("-i", "off")
        end = time.monotonic() + 60
        while time.monotonic() < end:
            new = set(glob.glob(os.path.join(self.outdir, "*.%d.*" %
                                             self.pid))) - before
            for path in new:
                with open(path) as f:
                    for ln in f:
                        if ln.startswith("totals:") or \
                           ln.startswith("summary:"):
                            return int(ln.split()[1])
            time.sleep(0.2)
        raise RuntimeError("no callgrind dump")


def decisions(args, addr, k, n, cg):
    """n requests of sandbox k, half served, half refused: per request
    (instructions with cg, else median latency in µs), and failures."""
    lat, bad = [], 0
    if cg:
        cg.start()
    for i in range(n):
        path = "/%d/d%d" % (k, i) if i % 2 == 0 else "/%d/d%d" % (k + 1, i)
        t0 = time.perf_counter()
        st, _ = http_get(addr, "http://%s%s" % (args.origin, path),
                         args.origin, args.timeout)
        lat.append(time.perf_counter() - t0)
        if st != (200 if i % 2 == 0 else 403):
            bad += 1
    if cg:
        return cg.stop() / n, bad
    return statistics.median(lat) * 1e6, bad


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--admin", required=True)
    ap.add_argument("--moatd-pid", type=int, required=True)
    ap.add_argument("--origin", required=True, help="IP:PORT")
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--conns", choices=("each", "one"), default="each")
    ap.add_argument("--listen-ip", default="127.0.0.1")
    ap.add_argument("--pad", type=int, default=0)
    ap.add_argument("--callgrind", metavar="OUTDIR")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--timeout", type=float, default=20.0)
    args = ap.parse_args()
    oip, oport = args.origin.rsplit(":", 1)
    oip, oport = oip.strip("[]"), int(oport)
    n = args.count
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, 2 * n + 256)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    cg = Callgrind(args.moatd_pid, args.callgrind) if args.callgrind \
        else None
    unit = "instructions" if cg else "us"
    pid = args.moatd_pid
    ok = True

    conns, addrs, reg = [], [], []
    trust = [0]
    one = Admin(args.admin, args.timeout) if args.conns == "one" else None

    def register(k, name=None):
        """Registers sandbox k: (seconds, its admin connection, address)."""
        ac = one or Admin(args.admin, args.timeout)
        ls = listener(args.listen_ip)
        t0 = time.perf_counter()
        a = ac.call({"op": "register", "sandbox": name or "scale-%d" % k,
                     "config": policy_of(k, oip, oport, args.pad),
                     "listeners": [{"proto": "http", "fd": 0}]},
                    [ls.fileno()])
        dt = time.perf_counter() - t0
        addr = ls.getsockname()[:2]
        ls.close()
        if not a.get("ok"):
            raise RuntimeError("register scale-%d: %s" % (k, a.get("error")))
        # With a CA: the CA, and a bundle of it and the system's roots.
        pem, bundle = a.get("trust_pem", ""), a.get("trust_bundle", "")
        if pem.startswith("-----BEGIN CERTIFICATE-----") and \
           bundle.count("BEGIN CERTIFICATE") > pem.count("BEGIN CERTIFICATE"):
            trust[0] += 1
        return dt, ac, addr

    def unregister(ac, name):
        t0 = time.perf_counter()
        a = ac.call({"op": "unregister", "sandbox": name})
        dt = time.perf_counter() - t0
        if not a.get("ok"):
            raise RuntimeError("unregister %s: %s" % (name, a.get("error")))
        return dt

    # One sandbox: the decision cost, and moatd warmed up (workers that
    # served connections, the audit queue, a registration undone): the
    # baseline once it is gone and moatd gave the memory back.
    _, ac, addr = register(0, "scale-warm")
    decisions(args, addr, 0, 10, None)
    d1, bad1 = decisions(args, addr, 0, args.requests, cg)
    log("decision, 1 sandbox: %.1f %s per request (%d wrong answers)" %
        (d1, unit, bad1))
    unregister(ac, "scale-warm")
    if ac is not one:
        ac.close()
    time.sleep(TRIM_WAIT_S)
    m0 = mem_settled(pid)
    log("baseline (no sandbox): %s KiB" % m0)

    t_reg = time.monotonic()
    for k in range(n):
        dt, ac, addr = register(k)
        reg.append(dt)
        addrs.append(addr)
        if ac is not one:
            conns.append(ac)
    t_reg = time.monotonic() - t_reg
    m1 = mem_settled(pid)
    log("after %d registrations (%.1f s): %s KiB" % (n, t_reg, m1))
    decisions(args, addrs[0], 0, 10, None)
    dn, badn = decisions(args, addrs[0], 0, args.requests, cg)
    log("decision, %d sandboxes: %.1f %s per request (%d wrong answers)" %
        (n, dn, unit, badn))
    if bad1 or badn:
        ok = False

    served = refused = denied = 0
    if args.check:
        for k in range(n):
            st, _ = http_get(addrs[k], "http://%s/%d/x" % (args.origin, k),
                             args.origin, args.timeout)
            served += st == 200
            st, why = http_get(addrs[k], "http://%s/%d/x" %
                               (args.origin, (k + 1) % n if n > 1 else
                                k + 1), args.origin, args.timeout)
            refused += st == 403 and why == "path"
            st, why = http_get(addrs[k], "http://deny-%d.test/" % k,
                               "deny-%d.test" % k, args.timeout)
            denied += st == 403 and why == "denied-by-rule"
        log("check: %d served, %d refused (path), %d denied (rule) of %d" %
            (served, refused, denied, n))
        ok = ok and served == refused == denied == n

    unreg = []
    for k in range(n):
        unreg.append(unregister(one or conns[k], "scale-%d" % k))
    for ac in conns:
        ac.close()
    if one:
        one.close()
    # A sandbox's listener is gone once unregistered: connecting is refused.
    gone = 0
    for a in addrs:
        try:
            socket.create_connection(a, timeout=args.timeout).close()
        except OSError as e:
            gone += e.errno == errno.ECONNREFUSED
    time.sleep(TRIM_WAIT_S)
    m2 = mem_settled(pid)
    log("after unregistering: %s KiB" % m2)

    per = {k: (m1.get(k, 0) - m0.get(k, 0)) * 1024.0 / n for k in m1}
    reg_ms = [x * 1000 for x in reg]
    unreg_ms = [x * 1000 for x in unreg]
    out = {
        "count": n,
        "conns": args.conns,
        "rss_before_kib": m0["rss"], "rss_after_kib": m1["rss"],
        "rss_unregistered_kib": m2["rss"],
        "pss_before_kib": m0.get("pss", 0), "pss_after_kib": m1.get("pss", 0),
        "pss_unregistered_kib": m2.get("pss", 0),
        "dirty_before_kib": m0.get("private_dirty", 0),
        "dirty_after_kib": m1.get("private_dirty", 0),
        "dirty_unregistered_kib": m2.get("private_dirty", 0),
        "rss_per_sandbox_bytes": int(per.get("rss", 0)),
        "pss_per_sandbox_bytes": int(per.get("pss", 0)),
        "dirty_per_sandbox_bytes": int(per.get("private_dirty", 0)),
        "register_median_ms": "%.3f" % statistics.median(reg_ms)
        if reg_ms else "0",
        "register_p99_ms": "%.3f" % pct(reg_ms, 99),
        "register_total_s": "%.2f" % t_reg,
        "unregister_median_ms": "%.3f" % statistics.median(unreg_ms),
        "unregister_p99_ms": "%.3f" % pct(unreg_ms, 99),
        "decision_unit": unit,
        "decision_1": "%.1f" % d1,
        "decision_n": "%.1f" % dn,
        "decision_wrong": bad1 + badn,
        "served": served, "refused": refused, "denied": denied,
        "listeners_gone": gone,
        "trust_answers": trust[0],
    }
    for k, v in out.items():
        print("%s=%s" % (k, v))
    return 0 if ok else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (OSError, EOFError, RuntimeError, ValueError) as e:
        log("scale.py: %s" % e)
        print("error=%s" % e)
        sys.exit(1)
