#!/usr/bin/env python3
"""unixget.py - what a workload does with a host relay on a Unix socket:

    unixget.py PATH HOST [TAG]
                           GET http://HOST/ through the stream socket PATH
                           (with TAG, the keys below start with "TAG_")
    unixget.py dgram PATH  socket(AF_UNIX, SOCK_DGRAM), sendto(PATH)
    unixget.py netlink     connect() a NETLINK_ROUTE socket to group 1
                           (needs CAP_NET_ADMIN over the network,
                           which the workload lacks): "netlink=ERRNAME"
    unixget.py nested BAD  install a seccomp filter of its own whose
                           listener answers every connect() "continue",
                           then GET through BAD: "nested=EPERM" (no
                           listener allowed) or "nested=ok|ERRNAME"
    unixget.py peer PATH   listen on PATH, connect to it (through moat
                           run's supervisor, when PATH is allowed), take
                           the peer's pidfd (SO_PEERPIDFD) and try to take
                           descriptors 0-63 from it: "peer_pidfd=ok|ERR
                           peer_fds=N" (N taken)
    unixget.py swap DIR BAD N
                           listen on DIR/own, and keep renaming over
                           DIR/swap.sock, in turn, a link to that socket
                           and a symbolic link to BAD, while connecting N
                           times to DIR/swap.sock (allowed): "swap_own=N
                           swap_bad=N swap_eperm=N"
    unixget.py race GOOD BAD N
                           N connects while a second thread keeps
                           rewriting the address buffer between the
                           paths GOOD and BAD (a check-then-use hole in
                           the supervisor would let some reach BAD)
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
import time


def ename(e):
    return errno.errorcode.get(e.errno, str(e.errno))


def get(path, host, tag=""):
    pre = tag + "_" if tag else ""
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
        print("%sunix_result=%s" % (pre, ename(e)))
        return
    head = data.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
    status = head[0].split(" ")[1] if head and " " in head[0] else "none"
    origin = "none"
    for h in head[1:]:
        k, _, v = h.partition(":")
        if k.strip().lower() == "x-origin-name":
            origin = v.strip()
    print("%sunix_result=ok\n%sunix_status=%s\n%sunix_origin=%s" %
          (pre, pre, status, pre, origin))


def dgram(path):
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        s.sendto(b"x", path)
        print("dgram_result=ok")
    except OSError as e:
        print("dgram_result=%s" % ename(e))


def netlink():
    try:
        s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
        s.connect((0, 1))
        print("netlink=ok")
    except OSError as e:
        print("netlink=%s" % ename(e))


def nested(bad):
    import struct
    import threading
    import fcntl
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    nr_connect = 42 if platform.machine() == "x86_64" else 203
    nr_seccomp = 317 if platform.machine() == "x86_64" else 277
    insns = [(0x20, 0, 0, 0), (0x15, 0, 1, nr_connect),
             (0x06, 0, 0, 0x7fc00000), (0x06, 0, 0, 0x7fff0000)]
    code = b"".join(struct.pack("HBBI", *i) for i in insns)
    cbuf = ctypes.create_string_buffer(code)
    prog = struct.pack("HxxxxxxQ", len(insns), ctypes.addressof(cbuf))
    pbuf = ctypes.create_string_buffer(prog)
    fd = []
    ready = threading.Event()

    def serve():
        ready.wait()
        req = ctypes.create_string_buffer(80)
        while True:
            ctypes.memset(req, 0, 80)
            try:
                fcntl.ioctl(fd[0], 0xC0502100, req)
            except OSError:
                return
            nid = struct.unpack_from("Q", req.raw, 0)[0]
            # id, val, error, flags: SECCOMP_USER_NOTIF_FLAG_CONTINUE
            resp = bytearray(struct.pack("QqiI", nid, 0, 0, 1))
            try:
                fcntl.ioctl(fd[0], 0xC0182101, resp)
            except OSError:
                pass
    t = threading.Thread(target=serve, daemon=True)
    t.start()
    r = libc.syscall(ctypes.c_long(nr_seccomp), 1, 8, pbuf)
    if r < 0:
        print("nested=%s" % errno.errorcode.get(ctypes.get_errno(), "?"))
        return
    fd.append(r)
    ready.set()
    get(bad, "other.test", "nested")


def peer(path):
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    nr_getfd = 438
    try:
        os.unlink(path)
    except OSError:
        pass
    try:
        srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        srv.bind(path)
        srv.listen(1)
        cli = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        cli.connect(path)
        a, _ = srv.accept()
        raw = a.getsockopt(socket.SOL_SOCKET, 77, 4)    # SO_PEERPIDFD
        pidfd = int.from_bytes(raw, sys.byteorder, signed=True)
    except OSError as e:
        print("peer_pidfd=%s\npeer_fds=0" % ename(e))
        return
    print("peer_pidfd=ok")
    n = 0
    for fd in range(64):
        r = libc.syscall(ctypes.c_long(nr_getfd), pidfd, fd, 0)
        if r >= 0:
            n += 1
            os.close(r)
    print("peer_fds=%d" % n)
    os.unlink(path)


def swap(d, bad, n):
    import threading
    own = os.path.join(d, "own")
    target = os.path.join(d, "swap.sock")
    for p in (own, target):
        try:
            os.unlink(p)
        except OSError:
            pass
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(own)
    srv.listen(64)
    stop = []

    def accept():
        srv.settimeout(0.2)
        while not stop:
            try:
                c, _ = srv.accept()
                c.close()
            except OSError:
                pass

    def flip():
        i = 0
        while not stop:
            tmp = os.path.join(d, "tmp%d" % (i & 1))
            try:
                os.unlink(tmp)
            except OSError:
                pass
            if i & 1:
                os.symlink(bad, tmp)
            else:
                os.link(own, tmp)
            os.rename(tmp, target)
            i += 1
    ta = threading.Thread(target=accept)
    tf = threading.Thread(target=flip)
    ta.start()
    tf.start()
    seen = {}
    # At least n connects; then on (up to 10 n, 20 s) until both names
    # were seen, as in race(): on a loaded machine the flipping thread
    # may not run for a while, and a swap never seen proves nothing.
    deadline = time.monotonic() + 20
    for i in range(n * 10):
        if i >= n and (time.monotonic() > deadline or (
                seen.get("own") and seen.get("EPERM"))):
            break
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(5)
        try:
            s.connect(target)
            k = s.getpeername()
            k = "own" if k == own else "bad" if k == bad else "other"
        except OSError as e:
            k = ename(e)
        seen[k] = seen.get(k, 0) + 1
        s.close()
    stop.append(1)
    ta.join()
    tf.join()
    print("swap_own=%d\nswap_bad=%d\nswap_eperm=%d" %
          (seen.get("own", 0), seen.get("bad", 0), seen.get("EPERM", 0)))
    other = sorted("%s:%d" % (k, v) for k, v in seen.items()
                   if k not in ("own", "bad", "EPERM"))
    print("swap_other=%s" % (",".join(other) or "none"))


def race(good, bad, n):
    """connect(2) by ctypes on one buffer another thread rewrites."""
    import threading
    libc = ctypes.CDLL(None, use_errno=True)
    size = 110
    buf = ctypes.create_string_buffer(size)
    spell = []
    for p in (good, bad):
        b = bytearray(size)
        b[0:2] = socket.AF_UNIX.to_bytes(2, sys.byteorder)
        b[2:2 + len(p)] = p.encode()
        spell.append(bytes(b))
    stop = []

    def flip():
        i = 0
        while not stop:
            ctypes.memmove(buf, spell[i & 1], size)
            i += 1
    t = threading.Thread(target=flip)
    t.start()
    peers = {}
    # At least n connects; then on (up to 10 n, 20 s) until both
    # spellings were seen: on a loaded machine the flipping thread may
    # not run for a while, and a race that never flipped proves nothing.
    deadline = time.monotonic() + 20
    for i in range(n * 10):
        if i >= n and (time.monotonic() > deadline or (
                peers.get(good) and peers.get("EPERM"))):
            break
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        r = libc.connect(s.fileno(), buf, size)
        if r == 0:
            peer = s.getpeername()
            peers[peer] = peers.get(peer, 0) + 1
        else:
            k = errno.errorcode.get(ctypes.get_errno(), "?")
            peers[k] = peers.get(k, 0) + 1
        s.close()
    stop.append(1)
    t.join()
    print("race_good=%d" % peers.get(good, 0))
    print("race_bad=%d" % peers.get(bad, 0))
    print("race_eperm=%d" % peers.get("EPERM", 0))
    other = sorted("%s:%d" % (k, v) for k, v in peers.items()
                   if k not in (good, bad, "EPERM"))
    print("race_other=%s" % (",".join(other) or "none"))


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
    elif sys.argv[1] == "dgram":
        dgram(sys.argv[2])
    elif sys.argv[1] == "netlink":
        netlink()
    elif sys.argv[1] == "nested":
        nested(sys.argv[2])
    elif sys.argv[1] == "peer":
        peer(sys.argv[2])
    elif sys.argv[1] == "swap":
        swap(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    elif sys.argv[1] == "race":
        race(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    else:
        get(sys.argv[1], sys.argv[2], *sys.argv[3:4])
