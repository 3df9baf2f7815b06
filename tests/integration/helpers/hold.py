#!/usr/bin/env python3
"""hold.py - open N proxy connections and hold them open.

What it is: the load for connection-limit and drain tests.  It opens --count
connections to an HTTP proxy, on each sends CONNECT --target and waits for
the answer, writes one line per connection to --out ("N STATUS" where STATUS
is the CONNECT status code or "closed"/"error:..."), writes "ready" on
--ready-fd once every connection has its answer, then holds them all open
until --lifetime ends or it is killed.

Python standard library only.
"""

import argparse
import os
import re
import socket
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--proxy", required=True, help="proxy HOST:PORT")
    ap.add_argument("--target", required=True, help="CONNECT HOST:PORT")
    ap.add_argument("--count", type=int, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--lifetime", type=float, default=30.0)
    ap.add_argument("--ready-fd", type=int, default=1)
    args = ap.parse_args()
    if not 0 < args.count <= 1000:
        ap.error("--count must be 1..1000")
    host, _, port = args.proxy.rpartition(":")
    fam = socket.AF_INET6 if host.startswith("[") else socket.AF_INET
    socks = []
    lines = []
    for i in range(args.count):
        s = socket.socket(fam, socket.SOCK_STREAM)
        s.settimeout(3)
        try:
            s.connect((host.strip("[]"), int(port)))
            s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n"
                       % (args.target, args.target)).encode())
            data = b""
            while b"\r\n\r\n" not in data and len(data) < 65536:
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
            m = re.match(rb"HTTP/1\.[01] (\d{3})", data)
            lines.append("%d %s" % (i, m.group(1).decode() if m else
                                    "closed"))
        except OSError as e:
            lines.append("%d error:%s" % (i, str(e).replace(" ", "_")))
        socks.append(s)
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.write(args.ready_fd, b"ready\n")
    if args.ready_fd > 2:
        os.close(args.ready_fd)
    time.sleep(args.lifetime)


if __name__ == "__main__":
    main()
