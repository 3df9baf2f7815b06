#!/usr/bin/env python3
"""denyloop.py - many HTTP requests, one after the other, on kept-alive
connections (a new one whenever the server closes): a workload that
loops on something refused.

    denyloop.py [--proxy] [--pathlen L] HOST PORT NAME COUNT

Each request is GET /r<i>/<L bytes> with Host: NAME, to HOST:PORT; with
--proxy in absolute form (http://NAME/r<i>/...), as to a proxy.  Stops
after COUNT requests answered or closed without an answer (status
"closed"), or after 120 s.  Prints "sent=N done=M statuses=S:K,..
elapsed=SECONDS".  Python standard library only.
"""
import socket
import sys
import time

DEADLINE_S = 120
TIMEOUT_S = 10


def response(f):
    """Reads one response; returns its status (0: the connection ended)."""
    line = f.readline()
    if not line:
        return 0
    parts = line.split()
    status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0
    length, close = 0, False
    while True:
        h = f.readline()
        if not h or h in (b"\r\n", b"\n"):
            break
        k, _, v = h.partition(b":")
        k = k.strip().lower()
        if k == b"content-length":
            length = int(v.strip())
        elif k == b"connection" and v.strip().lower() == b"close":
            close = True
    if length:
        f.read(length)
    return -status if close else status


def main():
    args = sys.argv[1:]
    proxy = "--proxy" in args
    if proxy:
        args.remove("--proxy")
    pathlen = 8
    if args[0] == "--pathlen":
        pathlen = int(args[1])
        args = args[2:]
    host, port, name, count = args[0], int(args[1]), args[2], int(args[3])
    pad = "p" * pathlen
    statuses = {}
    sent = done = 0
    start = time.monotonic()
    s = f = None
    while done < count and time.monotonic() - start < DEADLINE_S:
        if s is None:
            try:
                s = socket.create_connection((host, port), TIMEOUT_S)
            except OSError as e:
                statuses[type(e).__name__] = statuses.get(
                    type(e).__name__, 0) + 1
                done += 1
                time.sleep(0.01)
                continue
            s.settimeout(TIMEOUT_S)
            f = s.makefile("rb")
        target = "/r%d/%s" % (sent, pad)
        if proxy:
            target = "http://%s%s" % (name, target)
        try:
            s.sendall(("GET %s HTTP/1.1\r\nHost: %s\r\n\r\n" %
                       (target, name)).encode())
            sent += 1
            st = response(f)
        except OSError:
            st = 0
        # Closed without an answer (a refused transparent connection):
        # counted as such.
        done += 1
        key = abs(st) if st != 0 else "closed"
        statuses[key] = statuses.get(key, 0) + 1
        if st <= 0:
            f.close()
            s.close()
            s = f = None
    print("sent=%d done=%d statuses=%s elapsed=%.2f" % (
        sent, done, ",".join("%s:%d" % kv for kv in sorted(
            statuses.items(), key=str)), time.monotonic() - start))


if __name__ == "__main__":
    main()
