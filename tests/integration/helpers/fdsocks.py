#!/usr/bin/env python3
"""fdsocks.py PID - the sockets a process holds, one line each:
"tcp|udp ADDRESS PORT listen|-" (inet sockets only), taken with
pidfd_getfd(2) (needs ptrace rights over PID: root).  Used to show that
moatd holds a sandbox's listening sockets while it is registered and
has closed them after.  Python standard library only.
"""
import ctypes
import os
import socket
import sys

SYS_pidfd_getfd = 438


def main():
    pid = int(sys.argv[1])
    libc = ctypes.CDLL(None, use_errno=True)
    pfd = os.pidfd_open(pid)
    for name in sorted(os.listdir("/proc/%d/fd" % pid), key=int):
        try:
            if not os.readlink("/proc/%d/fd/%s" % (pid, name)).startswith(
                    "socket:"):
                continue
        except OSError:
            continue
        fd = libc.syscall(SYS_pidfd_getfd, pfd, int(name), 0)
        if fd < 0:
            continue
        try:
            s = socket.socket(fileno=fd)
        except OSError:
            os.close(fd)
            continue
        try:
            if s.family in (socket.AF_INET, socket.AF_INET6):
                addr = s.getsockname()
                lis = s.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)
                print("%s %s %d %s" % (
                    "tcp" if s.type == socket.SOCK_STREAM else "udp",
                    addr[0], addr[1], "listen" if lis else "-"))
        finally:
            s.close()
    os.close(pfd)


if __name__ == "__main__":
    main()
