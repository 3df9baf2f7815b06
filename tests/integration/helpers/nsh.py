#!/usr/bin/env python3
"""nsh.py - speaks the moat-netns protocol (proto/helper_proto.h) to a
moat-netns it starts, for the integration tests: a well-formed session, or
one malformed request, and reports what happened as KEY=VALUE lines.

usage: nsh.py HELPER SCRIPT [--netns PATH] [--userns PATH] [--hold FIFO]

SCRIPT is a comma-separated list of steps:
  hello              HELLO version 2
  join               JOIN with --netns (and --userns if given)
  joinself           JOIN of --netns, flagged as moat-netns's own namespace
  joinown            JOIN of the namespace this runs in, flagged so
  heldpod:UID        HELD of an attached namespace with UID exempt
  held[:DNS:TP[:P..]]  HELD (defaults 53, 15001, ports 3128 1080)
  heldattach         HELD with the attach flag
  helddrops          HELD with the drop log's flag
  veth[:DNS:TP[:P..]]  VETH
  drops              DROPS: reports fd=yes when the NFLOG socket came
  sock:FAM:TYPE:PORT FAM 4|6, TYPE tcp|udp: SOCKET; reports the bound address
  release, teardown
  raw:HEX            send these bytes as one record
  rawfds:HEX:N       ... with N copies of /dev/null as descriptors
  eof                close the channel (the helper must clean up)
  wait               block until FIFO (--hold) is written to, then go on
Every reply is reported as step<i>=ok|error:<errno>:<text>; the helper's
exit status as status=N (or status=running).  Nothing is sent anywhere but
to the helper; every wait is bounded.
"""
import os
import socket
import struct
import subprocess
import sys

HDR = struct.Struct("=HHI")
REPLY = struct.Struct("=HHiI16s160s")
OP = {"hello": 0, "join": 1, "held": 2, "veth": 3, "socket": 4,
      "release": 5, "teardown": 6, "reply": 7, "drops": 8}
VERSION = 2
SETUP_ATTACH, SETUP_DROPS, SETUP_EXEMPT = 1, 2, 4
JOIN_SELF = 2
TIMEOUT = 15


def msg(op, body=b"", nfds=0):
    return HDR.pack(op, nfds, len(body)) + body


def setup_body(args, flags=0, uid=0):
    nums = [int(x) for x in args] if args else [53, 15001, 3128, 1080]
    dns, tp, ports = nums[0], nums[1], nums[2:]
    slots = ports + [0] * (8 - len(ports))
    # struct nsh_setup, exempt_uid last.
    return struct.pack("=HHH8HHII", dns, tp, len(ports), *slots, 0, flags,
                       uid)


def recv_reply(sock):
    sock.settimeout(TIMEOUT)
    try:
        data, fds, flags, _ = socket.recv_fds(sock, 1024, 4)
    except socket.timeout:
        return ("timeout", None)
    except ConnectionResetError:
        return ("eof", None)
    if not data:
        return ("eof", None)
    op, nfds, ln = HDR.unpack_from(data)
    if op != OP["reply"] or ln != REPLY.size:
        for fd in fds:
            os.close(fd)
        return ("badreply", None)
    rop, _, err, index, ifname, text = REPLY.unpack_from(data, HDR.size)
    ifname = ifname.split(b"\0")[0].decode()
    text = text.split(b"\0")[0].decode()
    if err:
        return ("error:%d:%s" % (err, text), None)
    extra = {"index": index, "ifname": ifname}
    return ("ok", (fds, extra))


def main():
    helper, script = sys.argv[1], sys.argv[2]
    opts = dict(zip(sys.argv[3::2], sys.argv[4::2]))
    parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    # The helper's channel is its fd 3.
    saved = None
    if child.fileno() != 3:
        try:
            saved = os.dup(3)
        except OSError:
            pass
        os.dup2(child.fileno(), 3, inheritable=True)
    proc = subprocess.Popen([helper, "serve"], pass_fds=[3],
                            stdin=subprocess.DEVNULL)
    if saved is not None:
        os.dup2(saved, 3)
        os.close(saved)
    elif child.fileno() != 3:
        os.close(3)
    child.close()
    out = []
    for i, step in enumerate(script.split(",")):
        name, _, arg = step.partition(":")
        args = arg.split(":") if arg else []
        fds = []
        if name == "hello":
            data = msg(0, struct.pack("=II", VERSION, 0))
        elif name == "join":
            fds = [os.open(opts["--netns"], os.O_RDONLY)]
            flags = 0
            if "--userns" in opts:
                fds.insert(0, os.open(opts["--userns"], os.O_RDONLY))
                flags = 1
            data = msg(1, struct.pack("=II", flags, 0), len(fds))
        elif name in ("joinself", "joinown"):
            fds = [os.open(opts["--netns"] if name == "joinself" else
                           "/proc/self/ns/net", os.O_RDONLY)]
            data = msg(1, struct.pack("=II", JOIN_SELF, 0), 1)
        elif name == "heldpod":
            data = msg(OP["held"], setup_body(None, SETUP_ATTACH |
                                              SETUP_EXEMPT, int(args[0])))
        elif name in ("held", "heldattach", "helddrops", "veth",
                      "vethattach", "vethdrops"):
            flags = SETUP_ATTACH if name.endswith("attach") else \
                SETUP_DROPS if name.endswith("drops") else 0
            op = OP["veth"] if name.startswith("veth") else OP["held"]
            data = msg(op, setup_body(args, flags))
        elif name == "sock":
            fam = 0 if args[0] == "4" else 1
            typ = 0 if args[1] == "tcp" else 1
            data = msg(4, struct.pack("=BBHI", fam, typ, int(args[2]), 0))
        elif name in ("release", "teardown", "drops"):
            data = msg(OP[name])
        elif name == "raw":
            data = bytes.fromhex(args[0])
        elif name == "rawfds":
            data = bytes.fromhex(args[0])
            fds = [os.open("/dev/null", os.O_RDONLY)
                   for _ in range(int(args[1]))]
        elif name == "eof":
            parent.close()
            out.append("step%d=eof" % i)
            break
        elif name == "wait":
            with open(opts["--hold"]) as f:
                f.read(1)
            out.append("step%d=waited" % i)
            continue
        else:
            sys.exit("nsh.py: unknown step %s" % step)
        try:
            socket.send_fds(parent, [data], fds) if fds else \
                parent.send(data)
        except OSError as e:
            out.append("step%d=senderror:%s" % (i, e.strerror))
            break
        finally:
            for fd in fds:
                os.close(fd)
        res, extra = recv_reply(parent)
        if res == "ok" and extra:
            got, info = extra
            if name == "veth":
                out.append("index=%d" % info["index"])
                out.append("ifname=%s" % info["ifname"])
            for fd in got:
                s = socket.socket(fileno=fd)
                if s.family == socket.AF_NETLINK:
                    out.append("drops%d=netlink" % i)
                    s.detach()
                    os.close(fd)
                    continue
                la = s.getsockname()
                typ = "tcp" if s.type == socket.SOCK_STREAM else "udp"
                out.append("sock%d=%s %s %d" % (i, typ, la[0], la[1]))
                s.detach()
                os.close(fd)
        out.append("step%d=%s" % (i, res))
        if res != "ok":
            break
    try:
        parent.close()
    except OSError:
        pass
    try:
        proc.wait(TIMEOUT)
        out.append("status=%d" % proc.returncode)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        out.append("status=running")
    print("\n".join(out))


if __name__ == "__main__":
    main()
