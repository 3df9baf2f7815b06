/*
 * fuzz_drops.c - fuzz target for the parser of a sandbox's drop records
 * (proxy/drops_parse.c): the NFLOG records of the packets moat's rules
 * dropped, whose packet bytes are the sandbox's own.
 *
 * The input is a buffer as one read of the drop log returns it: netlink
 * messages one after the other, walked as moatd walks them.  Properties,
 * each an abort() when broken:
 * - the parser reads only the bytes of each message (the input is an
 *   exact-size copy: AddressSanitizer sees a read past it) and returns 1,
 *   0 or -1;
 * - what it accepts is one of moat's kinds, with ports and ICMP fields in
 *   their ranges or -1, addresses NUL-terminated and empty exactly when
 *   the packet was no IP, and an IP protocol only for IP.
 */
#include "config.h"

#include <sys/socket.h>
#include <linux/netlink.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <libmnl/libmnl.h>

#include "proxy/drops_parse.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define FUZZ_CHECK(c)	do { if (!(c)) abort(); } while (0)

static void
check(const struct drops_pkt *p)
{
	FUZZ_CHECK(p->kind < DROPS_KIND__COUNT);
	FUZZ_CHECK(p->sport >= -1 && p->sport <= 65535);
	FUZZ_CHECK(p->dport >= -1 && p->dport <= 65535);
	FUZZ_CHECK(p->icmp_type >= -1 && p->icmp_type <= 255);
	FUZZ_CHECK(p->icmp_code >= -1 && p->icmp_code <= 255);
	FUZZ_CHECK(memchr(p->src, '\0', sizeof(p->src)) != NULL);
	FUZZ_CHECK(memchr(p->dst, '\0', sizeof(p->dst)) != NULL);
	FUZZ_CHECK(p->family == 0 || p->family == AF_INET ||
	    p->family == AF_INET6);
	FUZZ_CHECK((p->family == 0) == (p->dst[0] == '\0'));
	FUZZ_CHECK(p->family != 0 || (p->proto == -1 && p->dport == -1));
	FUZZ_CHECK(p->proto >= -1 && p->proto <= 255);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct nlmsghdr	*nlh;
	struct drops_pkt	 p;
	uint8_t			*buf;
	int			 left, r;

	if (size > 65536)
		return 0;
	/* Aligned as a receive buffer is, exactly as long as the input. */
	if ((buf = malloc(size ? size : 1)) == NULL)
		return 0;
	memcpy(buf, data, size);
	left = (int)size;
	for (nlh = (const struct nlmsghdr *)buf; drops_msg_ok(nlh, left);
	    nlh = mnl_nlmsg_next(nlh, &left)) {
		r = drops_parse(nlh, &p);
		FUZZ_CHECK(r == 1 || r == 0 || r == -1);
		if (r == 1)
			check(&p);
	}
	free(buf);
	return 0;
}
