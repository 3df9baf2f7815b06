#!/usr/bin/env python3
"""fdload.py - run a proxy out of file descriptors and report what works.

What it is: the client side of t_fds.sh.  Against moatd started with a
small descriptor limit it:

  1. opens --tunnels CONNECT tunnels to --target that move no data yet;
  2. opens two clients that will need an upstream socket later: an HTTP
     one (nothing sent yet) and a SOCKS5 one (greeting done);
  3. opens idle connections, a batch at a time, until moatd closes some
     of them at once: it is out of descriptors and refusing new clients;
  4. sends the HTTP client's CONNECT to --ip-target and reads moatd's
     answer; exhausts again; sends the SOCKS5 client's CONNECT request to
     --ip-target and reads the reply code;
  5. exhausts again, then makes every tunnel move data at once: a GET of
     /bytes/--bytes with "Connection: close", read to EOF;
  6. closes the idle connections and tries a new tunnel (with the same
     GET) until it works or --recover-s pass.

Report (KEY=VALUE lines on stdout): tunnels_open, held, refused (idle
clients moatd closed in step 3), refuse_ms_max (connect to EOF of the
slowest refused client, an upper bound), refused_again_1/2 (step 4 and 5
found moatd still refusing),
http_status, http_reason (X-Moat-Reason), socks_rep, then per tunnel i
t<i>_port (its local port, the audit line's client), t<i>_sent,
t<i>_received, t<i>_body (body bytes), t<i>_eof; tunnels_ok,
refused_total and connect_failed (in all steps), pump_at_ms (when step
5 began: the origin ends connections idle for 30 s), then after_ok and
after_ms.

Every loop is bounded in count and in time.  Python standard library only.
"""

import argparse
import re
import selectors
import socket
import struct
import sys
import time

BATCH = 8               # idle connections opened between checks
SETTLE_S = 0.4          # how long a batch is watched for closes
IO_TIMEOUT_S = 10       # one read or connect, at most


def now():
    return time.monotonic()


def connect(addr):
    s = socket.create_connection(addr, timeout=IO_TIMEOUT_S)
    s.settimeout(IO_TIMEOUT_S)
    return s


def read_head(s):
    data = b""
    while b"\r\n\r\n" not in data and len(data) < 65536:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    return data


def closed(s):
    """True if the peer closed s (EOF or reset), without blocking.  (A
    socket with a timeout would wait for it even with MSG_DONTWAIT.)"""
    t = s.gettimeout()
    s.setblocking(False)
    try:
        return s.recv(1, socket.MSG_PEEK) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True
    finally:
        s.settimeout(t)


class Filler:
    """Idle connections to the proxy, opened until it refuses some."""

    def __init__(self, addr, max_conns, deadline):
        self.addr = addr
        self.max = max_conns
        self.deadline = deadline
        self.open = []          # (socket, connect time)
        self.refused = 0
        self.failed = 0
        self.refuse_ms_max = 0

    def reap(self):
        keep = []
        got = 0
        t = now()
        for s, t0 in self.open:
            if closed(s):
                got += 1
                self.refuse_ms_max = max(self.refuse_ms_max,
                                         int((t - t0) * 1000))
                s.close()
            else:
                keep.append((s, t0))
        self.open = keep
        self.refused += got
        return got

    def exhaust(self):
        """Opens batches until a close is seen.  True if one was."""
        while len(self.open) < self.max and now() < self.deadline:
            for _ in range(BATCH):
                try:
                    s = connect(self.addr)
                except OSError:
                    self.failed += 1    # not even connected
                    continue
                self.open.append((s, now()))
            sel = selectors.DefaultSelector()
            for s, _ in self.open:
                sel.register(s, selectors.EVENT_READ)
            end = now() + SETTLE_S
            while now() < end:
                if sel.select(max(0.0, end - now())):
                    break
            sel.close()
            time.sleep(0.05)   # the rest of a batch closes together
            if self.reap() > 0:
                return True
        return False

    def close_all(self):
        for s, _ in self.open:
            s.close()
        self.open = []


def get_request(target, n):
    return ("GET /bytes/%d HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n"
            % (n, target)).encode()


def open_tunnel(proxy, target):
    s = connect(proxy)
    s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n"
               % (target, target)).encode())
    head = read_head(s)
    m = re.match(rb"HTTP/1\.[01] (\d{3})", head)
    if not m or m.group(1) != b"200":
        s.close()
        return None
    return s


def pump_all(tunnels, req, deadline):
    """Sends req on every tunnel, then reads each to EOF, together."""
    res = []
    sel = selectors.DefaultSelector()
    for i, s in enumerate(tunnels):
        r = {"sent": 0, "data": b"", "eof": 0}
        res.append(r)
        try:
            s.sendall(req)
            r["sent"] = len(req)
            s.setblocking(False)
            sel.register(s, selectors.EVENT_READ, i)
        except OSError:
            pass
    while sel.get_map() and now() < deadline:
        for key, _ in sel.select(0.5):
            s, r = key.fileobj, res[key.data]
            try:
                chunk = s.recv(65536)
            except BlockingIOError:
                continue
            except OSError:
                chunk = b""
            if chunk:
                r["data"] += chunk
                continue
            r["eof"] = 1
            sel.unregister(s)
    sel.close()
    return res


def body_len(data):
    head, sep, body = data.partition(b"\r\n\r\n")
    if not sep or not re.match(rb"HTTP/1\.[01] 200 ", head):
        return -1
    return len(body)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--proxy", required=True, help="HTTP proxy HOST:PORT")
    ap.add_argument("--socks", required=True, help="SOCKS5 proxy HOST:PORT")
    ap.add_argument("--target", required=True, help="tunnel HOST:PORT")
    ap.add_argument("--ip-target", required=True, help="IPv4:PORT")
    ap.add_argument("--tunnels", type=int, default=4)
    ap.add_argument("--bytes", type=int, default=100000)
    ap.add_argument("--max-conns", type=int, default=400)
    ap.add_argument("--time-s", type=float, default=60)
    ap.add_argument("--recover-s", type=float, default=15)
    args = ap.parse_args()
    if not 0 < args.tunnels <= 32 or not 0 < args.max_conns <= 900:
        ap.error("--tunnels 1..32, --max-conns 1..900")
    host, _, port = args.proxy.rpartition(":")
    proxy = (host, int(port))
    host, _, port = args.socks.rpartition(":")
    socks = (host, int(port))
    ip, _, iport = args.ip_target.rpartition(":")
    t_start = now()
    deadline = t_start + args.time_s
    out = {}

    # 1. tunnels that move nothing yet
    tunnels = []
    for _ in range(args.tunnels):
        s = open_tunnel(proxy, args.target)
        if s is not None:
            tunnels.append(s)
    out["tunnels_open"] = len(tunnels)

    # 2. clients that will need an upstream socket
    ph = connect(proxy)
    ps = connect(socks)
    ps.sendall(b"\x05\x01\x00")
    greet = ps.recv(2)

    # 3. out of descriptors
    fill = Filler(proxy, args.max_conns, deadline)
    fill.exhaust()
    out["held"] = len(fill.open)
    out["refused"] = fill.refused
    out["refuse_ms_max"] = fill.refuse_ms_max

    # 4. an upstream socket moatd cannot have, HTTP then SOCKS5
    try:
        ph.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n"
                    % (args.ip_target, args.ip_target)).encode())
        head = read_head(ph)
    except OSError:
        head = b""
    m = re.match(rb"HTTP/1\.[01] (\d{3})", head)
    out["http_status"] = m.group(1).decode() if m else "none"
    m = re.search(rb"\r\nX-Moat-Reason: *([^\r]*)", head, re.I)
    out["http_reason"] = m.group(1).decode() if m else ""
    ph.close()
    out["refused_again_1"] = int(fill.exhaust())
    rep = "none"
    if greet == b"\x05\x00":
        try:
            ps.sendall(b"\x05\x01\x00\x01" + socket.inet_aton(ip) +
                       struct.pack("!H", int(iport)))
            r = ps.recv(10)
            if len(r) >= 2 and r[0] == 5:
                rep = "%d" % r[1]
        except OSError:
            pass
    out["socks_rep"] = rep
    ps.close()

    # 5. the tunnels move data while descriptors are still out
    out["refused_again_2"] = int(fill.exhaust())
    out["pump_at_ms"] = int((now() - t_start) * 1000)
    res = pump_all(tunnels, get_request(args.target, args.bytes), deadline)
    ok = 0
    for i, (s, r) in enumerate(zip(tunnels, res)):
        out["t%d_port" % i] = s.getsockname()[1]
        out["t%d_sent" % i] = r["sent"]
        out["t%d_received" % i] = len(r["data"])
        out["t%d_body" % i] = body_len(r["data"])
        out["t%d_eof" % i] = r["eof"]
        if r["eof"] and body_len(r["data"]) == args.bytes:
            ok += 1
        s.close()
    out["tunnels_ok"] = ok
    out["refused_total"] = fill.refused
    out["connect_failed"] = fill.failed

    # 6. the idle clients leave: service returns
    fill.close_all()
    t0 = now()
    out["after_ok"] = 0
    while now() - t0 < args.recover_s:
        try:
            s = open_tunnel(proxy, args.target)
        except OSError:
            s = None
        if s is not None:
            r = pump_all([s], get_request(args.target, 1000),
                         now() + IO_TIMEOUT_S)[0]
            s.close()
            if r["eof"] and body_len(r["data"]) == 1000:
                out["after_ok"] = 1
                break
        time.sleep(0.2)
    out["after_ms"] = int((now() - t0) * 1000)
    for k, v in out.items():
        print("%s=%s" % (k, v))
    return 0


if __name__ == "__main__":
    sys.exit(main())
