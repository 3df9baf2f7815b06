#!/usr/bin/env python3
"""fair.py - a connection flood from one sandbox, timed requests from another.

What it is: the load of t_fair.sh.

  fair.py flood --proxy HOST:PORT --count N [--again M] [--rate R]
      [--burst-s S] [--hold-s S]
      Opens N connections to the proxy as fast as it can (non-blocking),
      writes on each the start of a request head and then one more byte
      every 0.5 s, never the end of it (a "trickled" head).  Each one the
      proxy closes is replaced by a new one, M times in all, at most R a
      second after the first N (0: as fast as it can): a sustained flood.  Writes "ready" on --ready-fd when the first N are connected
      (or after --burst-s seconds), stops --hold-s seconds after the start,
      closes everything and prints KEY=VALUE lines:
        connected=   connections the kernel completed
        failed=      connects that failed or did not complete in time
        refused=     connections moatd closed (or answered)
        refused_503= ... of which it answered 503 with X-Moat-Reason: limit
        open=        connections still open at the end
        opened=      connects tried
        burst_ms=    how long the first N took
        last_refused_ms= when the last refusal came
  fair.py quiet --proxy HOST:PORT --url URL --count N [--timeout S]
      [--deadline S]
      N requests one after the other, each on a new connection (with
      "Connection: close"), each bounded by --timeout, all by --deadline;
      prints ok=, failed=, codes= (status counts), and the latencies of
      the answered ones: median_ms=, p99_ms=, max_ms= (and p99_us=).

  fair.py register --admin PATH --name NAME --listen IP:PORT
      --limits JSON [--hold-s S]
      Registers sandbox NAME with moatd's admin socket PATH: an allow-all
      policy, "limits": JSON, one http listener bound here at IP:PORT.
      Prints "admin_result=ok" (then writes "ready" on --ready-fd and
      holds the admin connection, and so the sandbox, --hold-s seconds) or
      "admin_result=refused admin_error=TEXT".

Bounded in count and time, stops by itself.  Python standard library only.
"""

import argparse
import errno
import json
import os
import resource
import select
import socket
import struct
import sys
import time


def addr_of(proxy):
    host, _, port = proxy.rpartition(":")
    fam = socket.AF_INET6 if host.startswith("[") else socket.AF_INET
    return fam, (host.strip("[]"), int(port))


def ready(fd):
    os.write(fd, b"ready\n")
    if fd > 2:
        os.close(fd)


def flood(args):
    fam, addr = addr_of(args.proxy)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, args.count + 64) if hard != resource.RLIM_INFINITY \
        else args.count + 64
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    head = b"GET http://origin.test/flood HTTP/1.1\r\nHost: origin.test\r\n" \
        b"X-Pad: "
    t0 = time.monotonic()
    ep = select.epoll()
    pending = {}        # fd -> socket, connect in progress
    live = {}           # fd -> socket, connected and trickling
    failed = connected = 0
    opened = 0

    class Gone:
        """Connections moatd closed or answered: counted and closed."""
        refused = refused_503 = 0
        last_ms = -1

        def gone(self, fd):
            self.last_ms = int((time.monotonic() - t0) * 1000)
            s = live.pop(fd)
            try:
                data = s.recv(4096)
            except OSError:
                data = b""
            if b" 503 " in data.split(b"\r\n", 1)[0] and \
                    b"X-Moat-Reason: limit" in data:
                self.refused_503 += 1
            self.refused += 1
            ep.unregister(fd)
            s.close()
    st = Gone()
    budget = args.count + args.again
    burst_ms = -1
    next_drip = t0 + 0.5
    while time.monotonic() - t0 < args.hold_s:
        # Keep --count connections going: the burst, then one new one
        # for each refused, while --again lasts.
        # After the burst, at most --rate new ones a second.
        cap = budget if burst_ms < 0 or args.rate == 0 else min(budget,
            args.count + int(args.rate * (time.monotonic() - t0 -
                                          burst_ms / 1000.0)))
        while opened < cap and len(pending) < 256 and \
                len(pending) + len(live) < args.count:
            s = socket.socket(fam, socket.SOCK_STREAM | socket.SOCK_NONBLOCK)
            opened += 1
            rc = s.connect_ex(addr)
            if rc not in (0, errno.EINPROGRESS):
                failed += 1
                s.close()
                continue
            pending[s.fileno()] = s
            ep.register(s.fileno(), select.EPOLLOUT)
        for fd, _ in ep.poll(0.05):
            if fd in live:
                st.gone(fd)
                continue
            s = pending.pop(fd, None)
            if s is None:
                continue
            ep.unregister(fd)
            if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) != 0:
                failed += 1
                s.close()
                continue
            connected += 1
            try:
                s.send(head)
            except OSError:
                pass
            live[fd] = s
            ep.register(fd, select.EPOLLIN | select.EPOLLRDHUP)
        now = time.monotonic()
        if burst_ms < 0 and ((opened >= args.count and not pending) or
                             now - t0 >= args.burst_s):
            burst_ms = int((now - t0) * 1000)
            ready(args.ready_fd)
        if now >= next_drip:
            next_drip += 0.5
            for s in live.values():
                try:
                    s.send(b"a")
                except OSError:
                    pass
    # Settle: no new connections; the refusals of the last ones (and
    # connects still under way) come in before anything is counted, or a
    # loaded machine would count them as held.  Until a second passes
    # without an event, at most 5 s.
    quiet_since = end = time.monotonic()
    while time.monotonic() - quiet_since < 1.0 and \
            time.monotonic() - end < 5.0:
        for fd, _ in ep.poll(0.1):
            quiet_since = time.monotonic()
            if fd in live:
                st.gone(fd)
                continue
            s = pending.pop(fd, None)
            if s is None:
                continue
            ep.unregister(fd)
            if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) != 0:
                failed += 1
                s.close()
                continue
            connected += 1
            live[fd] = s
            ep.register(fd, select.EPOLLIN | select.EPOLLRDHUP)
    for s in pending.values():
        failed += 1
        s.close()
    pending.clear()
    print("connected=%d" % connected)
    print("failed=%d" % failed)
    print("refused=%d" % st.refused)
    print("refused_503=%d" % st.refused_503)
    print("open=%d" % len(live))
    print("opened=%d" % opened)
    print("last_refused_ms=%d" % st.last_ms)
    print("burst_ms=%d" % burst_ms)
    sys.stdout.flush()
    for s in live.values():
        s.close()
    return 0


def one(fam, addr, req, timeout):
    """One request; returns (status or None, milliseconds)."""
    t = time.monotonic()
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.settimeout(timeout)
    data = b""
    try:
        s.connect(addr)
        s.sendall(req)
        while True:
            left = timeout - (time.monotonic() - t)
            if left <= 0:
                break
            s.settimeout(left)
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    except OSError:
        pass
    finally:
        s.close()
    ms = (time.monotonic() - t) * 1000
    line = data.split(b"\r\n", 1)[0].split()
    if len(line) >= 2 and line[0].startswith(b"HTTP/") and \
            line[1].isdigit() and b"\r\n\r\n" in data:
        return int(line[1]), ms
    return None, ms


def quiet(args):
    fam, addr = addr_of(args.proxy)
    host = args.url.split("/")[2]
    codes = {}
    lat = []
    failed = 0
    t0 = time.monotonic()
    for i in range(args.count):
        if time.monotonic() - t0 > args.deadline:
            failed += args.count - i
            break
        req = ("GET %s%d HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n"
               % (args.url, i, host)).encode()
        st, ms = one(fam, addr, req, args.timeout)
        codes[st] = codes.get(st, 0) + 1
        if st == 200:
            lat.append(ms)
        else:
            failed += 1
    lat.sort()

    def pct(p):
        if not lat:
            return -1
        return lat[min(len(lat) - 1, int(p * len(lat)))]
    print("ok=%d" % len(lat))
    print("failed=%d" % failed)
    print("codes=%s" % ",".join("%s:%d" % (k, v) for k, v in
                                 sorted(codes.items(), key=str)))
    print("median_ms=%.2f" % pct(0.5))
    print("p99_ms=%.2f" % pct(0.99))
    print("p99_us=%d" % int(pct(0.99) * 1000))
    print("max_ms=%.2f" % (lat[-1] if lat else -1))
    return 0


def admin_msg(s, obj, fds=()):
    body = json.dumps(obj).encode()
    anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
            struct.pack("%di" % len(fds), *fds))] if fds else []
    s.sendmsg([struct.pack(">I", len(body))], anc)
    s.sendall(body)
    hdr = b""
    while len(hdr) < 4:
        b = s.recv(4 - len(hdr))
        if not b:
            raise EOFError("moatd closed the admin connection")
        hdr += b
    n = struct.unpack(">I", hdr)[0]
    body = b""
    while len(body) < n:
        b = s.recv(n - len(body))
        if not b:
            raise EOFError("moatd closed the admin connection")
        body += b
    return json.loads(body)


def register(args):
    fam, addr = addr_of(args.listen)
    lst = socket.socket(fam, socket.SOCK_STREAM)
    lst.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lst.bind(addr)
    lst.listen(4096)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    try:
        s.connect(args.admin)
        a = admin_msg(s, {"op": "hello", "version": 1})
        if a.get("ok"):
            a = admin_msg(s, {
                "op": "register", "sandbox": args.name,
                "config": {"policy": {"default": "deny", "rules": [
                    {"name": "all", "action": "allow", "hosts": ["*"],
                     "ports": [80, 8080]}],
                    "allow_private": ["203.0.113.0/24"]},
                    "limits": json.loads(args.limits)},
                "listeners": [{"proto": "http", "fd": 0}]}, [lst.fileno()])
    except (OSError, EOFError, ValueError) as e:
        a = {"error": str(e)}
    lst.close()
    if not a.get("ok"):
        print("admin_result=refused admin_error=%s" % a.get("error"))
        return 0
    print("admin_result=ok")
    sys.stdout.flush()
    ready(args.ready_fd)
    time.sleep(args.hold_s)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("flood")
    f.add_argument("--proxy", required=True)
    f.add_argument("--count", type=int, required=True)
    f.add_argument("--burst-s", type=float, default=5.0)
    f.add_argument("--hold-s", type=float, default=10.0)
    f.add_argument("--again", type=int, default=0)
    f.add_argument("--rate", type=int, default=0)
    f.add_argument("--ready-fd", type=int, default=1)
    q = sub.add_parser("quiet")
    q.add_argument("--proxy", required=True)
    q.add_argument("--url", required=True)
    q.add_argument("--count", type=int, required=True)
    q.add_argument("--timeout", type=float, default=3.0)
    q.add_argument("--deadline", type=float, default=60.0)
    r = sub.add_parser("register")
    r.add_argument("--admin", required=True)
    r.add_argument("--name", required=True)
    r.add_argument("--listen", required=True)
    r.add_argument("--limits", required=True)
    r.add_argument("--hold-s", type=float, default=30.0)
    r.add_argument("--ready-fd", type=int, default=1)
    args = ap.parse_args()
    if args.cmd == "register":
        if not 0 < args.hold_s <= 120:
            ap.error("--hold-s 0..120")
        return register(args)
    if args.cmd == "flood":
        if not 0 < args.count <= 5000 or not 0 < args.hold_s <= 60 or \
                not 0 < args.burst_s <= args.hold_s or \
                not 0 <= args.again <= 100000 or args.rate < 0:
            ap.error("--count 1..5000, --burst-s <= --hold-s <= 60, "
                     "--again 0..100000, --rate >= 0")
        return flood(args)
    if not 0 < args.count <= 1000 or not 0 < args.deadline <= 120:
        ap.error("--count 1..1000, --deadline <= 120")
    return quiet(args)


if __name__ == "__main__":
    sys.exit(main())
