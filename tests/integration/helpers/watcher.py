#!/usr/bin/env python3
"""watcher.py - a client of moatd's admin op "watch" (proto/admin_proto.h).

    watcher.py ADMIN_SOCKET NAME once
        hello, watch NAME; prints "watch_result=ok" or
        "watch_result=refused watch_error=TEXT"; exits.

    watcher.py ADMIN_SOCKET NAME stall GOFILE
        hello, watch NAME with "all": true, says "ready" on fd 3, then
        reads nothing (the slow watcher) until GOFILE exists (at most
        300 s).  Then sends unwatch and reads every message up to its
        answer (at most 60 s), and prints "audit_lines=N dropped=M
        unwatch=ok" ("unwatch=TEXT" if it got no answer).

Python standard library only; bounded in time everywhere.
"""
import json
import os
import socket
import struct
import sys
import time


def send(s, obj):
    body = json.dumps(obj).encode()
    s.sendall(struct.pack(">I", len(body)) + body)


def recv(s):
    def exact(n):
        b = b""
        while len(b) < n:
            got = s.recv(n - len(b))
            if not got:
                raise EOFError("moatd closed the admin connection")
            b += got
        return b
    n = struct.unpack(">I", exact(4))[0]
    return json.loads(exact(n))


def answer(s):
    """The next answer (a message with "ok"), skipping a watch's."""
    while True:
        m = recv(s)
        if "ok" in m:
            return m


def main():
    path, name, mode = sys.argv[1], sys.argv[2], sys.argv[3]
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(path)
    send(s, {"op": "hello", "version": 1})
    hello = answer(s)
    if not hello.get("watch"):
        print("watch_result=unsupported")
        return 0
    send(s, {"op": "watch", "sandbox": name, "all": mode == "stall"})
    try:
        a = answer(s)
    except EOFError as e:
        print("watch_result=refused watch_error=%s" % e)
        return 0
    if not a.get("ok"):
        print("watch_result=refused watch_error=%s" % a.get("error"))
        return 0
    if mode == "once":
        print("watch_result=ok")
        return 0
    gofile = sys.argv[4]
    # The smallest receive buffer: moatd meets a full socket soon.
    os.write(3, b"ready\n")
    os.close(3)
    end = time.monotonic() + 300
    while not os.path.exists(gofile) and time.monotonic() < end:
        time.sleep(0.1)
    send(s, {"op": "unwatch", "sandbox": name})
    lines = dropped = 0
    result = "timeout"
    s.settimeout(60)
    end = time.monotonic() + 60
    try:
        while time.monotonic() < end:
            m = recv(s)
            if "ok" in m:
                result = "ok" if m["ok"] else "error:%s" % m.get("error")
                break
            if "audit" in m:
                lines += 1
            elif "dropped" in m:
                dropped += m["dropped"]
    except (OSError, EOFError) as e:
        result = "error:%s" % e
    print("audit_lines=%d dropped=%d unwatch=%s" % (lines, dropped, result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
