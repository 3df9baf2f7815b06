#!/usr/bin/env python3
"""partialheads.py - many clients that each leave a large request head
unfinished, for the memory tests of moatd.

Opens --count connections to an HTTP proxy and sends on each a request
head of about --bytes bytes without its last empty line, so that moatd
must keep it in memory.  Once no answer has come for 1.5 s it counts
what each got back (a status line means it was refused, with the status
code and X-Moat-Reason), prints "held=N refused=M
reasons=STATUS/REASON:COUNT,...", writes "ready" on --ready-fd, then
holds the connections until the file --release exists or --lifetime
ends, closes them all and exits.

Python standard library only.
"""

import argparse
import os
import select
import socket
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--proxy", required=True, help="proxy HOST:PORT")
    ap.add_argument("--count", type=int, required=True)
    ap.add_argument("--bytes", type=int, default=60000)
    ap.add_argument("--release", required=True)
    ap.add_argument("--lifetime", type=float, default=30.0)
    ap.add_argument("--ready-fd", type=int, default=1)
    args = ap.parse_args()
    if not 0 < args.count <= 2000 or not 0 < args.bytes <= 1 << 20:
        raise SystemExit("partialheads: --count 1..2000, --bytes 1..1 MiB")
    host, _, port = args.proxy.rpartition(":")
    end = time.monotonic() + args.lifetime
    head = (b"GET http://origin.test/partial HTTP/1.1\r\n"
            b"Host: origin.test\r\n")
    pad = args.bytes - len(head)
    filler = b"X-Pad: " + b"a" * max(pad - 9, 0) + b"\r\n"
    socks = []
    for _ in range(args.count):
        if time.monotonic() > end:
            break
        s = socket.create_connection((host, int(port)), timeout=10)
        try:
            s.sendall(head + filler)
        except OSError:
            pass
        socks.append(s)
    # Settle: refusals come in as moatd reads the heads; wait until none
    # has come for 1.5 s (at most 15 s), so that a slow moatd (a
    # sanitizer build, a loaded machine) is not taken to hold heads it
    # has not read yet.
    held = refused = 0
    reasons = {}
    ep = select.epoll()
    live = {}
    for s in socks:
        s.setblocking(False)
        live[s.fileno()] = s
        ep.register(s.fileno(), select.EPOLLIN | select.EPOLLRDHUP)
    quiet_since = start = time.monotonic()
    while live and time.monotonic() - quiet_since < 1.5 and \
            time.monotonic() - start < 15:
        for fd, _ in ep.poll(0.1):
            quiet_since = time.monotonic()
            s = live.pop(fd)
            ep.unregister(fd)
            try:
                data = s.recv(4096)
            except OSError:
                data = b""
            refused += 1
            status = data.split(b" ", 2)[1].decode() \
                if data.count(b" ") >= 2 else "closed"
            reason = "-"
            for line in data.split(b"\r\n"):
                if line.lower().startswith(b"x-moat-reason:"):
                    reason = line.split(b":", 1)[1].strip().decode()
            key = status + "/" + reason
            reasons[key] = reasons.get(key, 0) + 1
    held = len(live)
    print("held=%d refused=%d reasons=%s" % (held, refused, ",".join(
        "%s:%d" % kv for kv in sorted(reasons.items())) or "-"), flush=True)
    os.write(args.ready_fd, b"ready\n")
    while time.monotonic() < end and not os.path.exists(args.release):
        time.sleep(0.05)
    for s in socks:
        s.close()


if __name__ == "__main__":
    main()
