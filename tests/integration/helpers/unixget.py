#!/usr/bin/env python3
"""unixget.py - what a workload does with a host relay on a Unix socket:

    unixget.py PATH HOST   GET http://HOST/ through the stream socket PATH
    unixget.py pair        make a stream and a datagram socketpair, an
                           x32 socket(AF_INET) and an io_uring

Prints KEY=VALUE lines: "unix_result=ok unix_status=200 unix_origin=NAME"
(the relay answered), or "unix_result=ERRNAME" (EPERM: the socket could not
even be made); "pair_stream=ok|ERRNAME pair_dgram=ok|ERRNAME", "x32_socket=ok|ERRNAME"
and "io_uring=ok|ERRNAME" (x86_64).  Exit 0.
"""
import ctypes
import errno
import os
import platform
import socket
import sys


def ename(e):
    return errno.errorcode.get(e.errno, str(e.errno))


def get(path, host):
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(5)
        s.connect(path)
        s.sendall(b"GET / HTTP/1.0\r\nHost: %s\r\n\r\n" % host.encode())
        data = b""
        while len(data) < 65536:
            b = s.recv(4096)
            if not b:
                break
            data += b
    except OSError as e:
        print("unix_result=%s" % ename(e))
        return
    head = data.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
    status = head[0].split(" ")[1] if head and " " in head[0] else "none"
    origin = "none"
    for h in head[1:]:
        k, _, v = h.partition(":")
        if k.strip().lower() == "x-origin-name":
            origin = v.strip()
    print("unix_result=ok\nunix_status=%s\nunix_origin=%s" % (status, origin))


def pair():
    for name, t in (("stream", socket.SOCK_STREAM),
                    ("dgram", socket.SOCK_DGRAM)):
        try:
            a, b = socket.socketpair(socket.AF_UNIX, t)
            a.send(b"x")
            ok = b.recv(1) == b"x"
            print("pair_%s=%s" % (name, "ok" if ok else "lost"))
        except OSError as e:
            print("pair_%s=%s" % (name, ename(e)))
    if platform.machine() != "x86_64":
        return
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    # socket(AF_INET, SOCK_STREAM, 0) by the x32 ABI's number.
    r = libc.syscall(ctypes.c_long(0x40000000 | 41), 2, 1, 0)
    print("x32_socket=%s" % ("ok" if r >= 0 else
                             errno.errorcode.get(ctypes.get_errno(), "?")))
    if r >= 0:
        os.close(r)
    params = ctypes.create_string_buffer(120)
    r = libc.syscall(ctypes.c_long(425), 1, params)   # io_uring_setup
    print("io_uring=%s" % ("ok" if r >= 0 else
                           errno.errorcode.get(ctypes.get_errno(), "?")))
    if r >= 0:
        os.close(r)


if __name__ == "__main__":
    if sys.argv[1] == "pair":
        pair()
    else:
        get(sys.argv[1], sys.argv[2])
