#!/usr/bin/env python3
"""nfttables.py - the nftables tables of this network namespace, one
"table FAMILY NAME" line each, as `nft list tables` prints them.

Read straight from netlink (a table dump only): nft 1.0.6 (Debian 12)
never returns from `nft list tables` in a namespace that holds a netdev
chain hooked by interface-name prefix, such as moat's egress table, since
it loads every chain to list the tables.  Python standard library only.
"""
import socket
import struct
import sys

NETLINK_NETFILTER = 12
NFNL_SUBSYS_NFTABLES = 10
NFT_MSG_NEWTABLE = 0
NFT_MSG_GETTABLE = 1
NLMSG_ERROR = 2
NLMSG_DONE = 3
NLM_F_REQUEST = 0x1
NLM_F_DUMP = 0x300
NFTA_TABLE_NAME = 1
FAMILIES = {1: "inet", 2: "ip", 3: "arp", 5: "netdev", 7: "bridge",
            10: "ip6"}


def attrs(buf):
    while len(buf) >= 4:
        alen, atype = struct.unpack("=HH", buf[:4])
        if alen < 4:
            break
        yield atype & 0x3fff, buf[4:alen]
        buf = buf[(alen + 3) & ~3:]


def main():
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
    s.settimeout(5)
    s.bind((0, 0))
    mtype = (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_GETTABLE
    req = struct.pack("=IHHII", 20, mtype, NLM_F_REQUEST | NLM_F_DUMP, 1, 0)
    req += struct.pack("=BBH", 0, 0, 0)
    s.send(req)
    while True:
        data = s.recv(65536)
        while len(data) >= 16:
            mlen, mtype, _flags, _seq, _pid = struct.unpack("=IHHII",
                                                            data[:16])
            if mlen < 16:
                return 1
            msg, data = data[16:mlen], data[(mlen + 3) & ~3:]
            if mtype == NLMSG_DONE:
                return 0
            if mtype == NLMSG_ERROR:
                err = struct.unpack("=i", msg[:4])[0]
                if err:
                    sys.stderr.write("netlink error %d\n" % -err)
                    return 1
                continue
            if mtype & 0xff != NFT_MSG_NEWTABLE:
                continue
            fam = FAMILIES.get(msg[0], str(msg[0]))
            for t, v in attrs(msg[4:]):
                if t == NFTA_TABLE_NAME:
                    print("table %s %s" % (fam, v.rstrip(b"\0").decode()))


if __name__ == "__main__":
    sys.exit(main())
