#!/usr/bin/env python3
"""admincli.py - a minimal client of moatd's admin protocol
(proto/admin_proto.h), as a workload that reached an admin socket would
be: hello, then register a sandbox NAME with an allow-all policy and one
listening TCP socket made here (in this process's network namespace),
passed with SCM_RIGHTS.

    admincli.py ADMIN_SOCKET_PATH NAME [PID]
    admincli.py ADMIN_SOCKET_PATH --op OP


With PID, the listening socket is made in PID's network namespace
(setns there and back) while the admin connection is made here.  With
PID "twice", a second sandbox NAME-2 is registered on the same connection
after the first (sockets made here both times), and "admin_result2=..."
says how that went.  With --op, hello and then {"op": OP} alone (list,
stats): "admin_result=ok" and "admin_answer=JSON" (compact, one line).

Prints one line: "admin_result=ok" (moatd took the sandbox),
"admin_result=refused admin_error=TEXT", or "admin_result=ERRNAME" when
the socket cannot be reached (ENOENT, ECONNREFUSED, ...).  Exit 0.
"""
import ctypes
import errno
import json
import os
import socket
import struct
import sys


def send(s, obj, fds=()):
    body = json.dumps(obj).encode()
    hdr = struct.pack(">I", len(body))
    anc = []
    if fds:
        anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                struct.pack("%di" % len(fds), *fds))]
    s.sendmsg([hdr], anc)
    s.sendall(body)


def recv(s):
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


def socket_in(pid):
    """A listening socket made in pid's network namespace."""
    libc = ctypes.CDLL(None, use_errno=True)
    here = os.open("/proc/self/ns/net", os.O_RDONLY)
    there = os.open("/proc/%s/ns/net" % pid, os.O_RDONLY)
    if libc.setns(there, 0x40000000) != 0:
        raise OSError(ctypes.get_errno(), "setns")
    lst = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lst.bind(("127.0.0.1", 0))
    lst.listen(8)
    if libc.setns(here, 0x40000000) != 0:
        raise OSError(ctypes.get_errno(), "setns back")
    os.close(here)
    os.close(there)
    return lst


def op_only(s, op):
    try:
        send(s, {"op": "hello", "version": 1})
        recv(s)
        send(s, {"op": op})
        a = recv(s)
    except (OSError, EOFError, ValueError) as e:
        print("admin_result=refused admin_error=%s" % e)
        return 0
    if a.get("ok"):
        print("admin_result=ok")
        print("admin_answer=%s" % json.dumps(a, separators=(",", ":")))
    else:
        print("admin_result=refused admin_error=%s" % a.get("error"))
    return 0


def main():
    path, name = sys.argv[1], sys.argv[2]
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    try:
        s.connect(path)
    except OSError as e:
        print("admin_result=%s" % errno.errorcode.get(e.errno, str(e.errno)))
        return 0
    if name == "--op":
        return op_only(s, sys.argv[3])
    twice = len(sys.argv) > 3 and sys.argv[3] == "twice"
    if len(sys.argv) > 3 and not twice:
        lst = socket_in(sys.argv[3])
    else:
        lst = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        lst.bind(("127.0.0.1", 0))
        lst.listen(8)
    try:
        send(s, {"op": "hello", "version": 1})
        a = recv(s)
        if not a.get("ok"):
            print("admin_result=refused admin_error=%s" % a.get("error"))
            return 0
        send(s, {"op": "register", "sandbox": name,
                 "config": {"policy": {"default": "deny", "rules": [
                     {"name": "all", "action": "allow", "hosts": ["*"]}]}},
                 "listeners": [{"proto": "http", "fd": 0}]},
             [lst.fileno()])
        a = recv(s)
    except (OSError, EOFError, ValueError) as e:
        print("admin_result=refused admin_error=%s" % e)
        return 0
    if a.get("ok"):
        print("admin_result=ok")
    else:
        print("admin_result=refused admin_error=%s" % a.get("error"))
        return 0
    if twice:
        lst2 = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        lst2.bind(("127.0.0.1", 0))
        lst2.listen(8)
        try:
            send(s, {"op": "register", "sandbox": name + "-2",
                     "config": {"policy": {"default": "deny"}},
                     "listeners": [{"proto": "http", "fd": 0}]},
                 [lst2.fileno()])
            a = recv(s)
        except (OSError, EOFError, ValueError) as e:
            a = {"error": str(e)}
        if a.get("ok"):
            print("admin_result2=ok")
        else:
            print("admin_result2=refused admin_error2=%s" % a.get("error"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
