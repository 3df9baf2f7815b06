/*
 * test_drops.c - a sandbox's drop records (proxy/drops.c): the NFLOG
 * records moat's rules write, as the kernel frames them, parsed and
 * turned into audit lines; the summary line of what was not written one
 * by one; malformed and foreign records.
 *
 * Each record is built here with libmnl the way nfnetlink_log builds it
 * (nfgenmsg, then NFULA_PACKET_HDR, NFULA_PREFIX, NFULA_SEQ, NFULA_PAYLOAD
 * holding the packet's first bytes), and each line is checked as the
 * audit log would hold it (audit_format_line(), parsed back).
 */
#include "config.h"

#include <sys/socket.h>
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_log.h>
#include <netinet/in.h>

#include <stdio.h>
#include <string.h>

#include <CUnit/CUnit.h>
#include <jansson.h>
#include <libmnl/libmnl.h>

#include "proxy/audit.h"
#include "proxy/drops.h"
#include "tests/unit/unit.h"

#define REC_MAX		1024

/* A record of packet pkt (len bytes) as nfnetlink_log frames it. */
static struct nlmsghdr *
mkrec(char *buf, uint8_t nfproto, uint16_t hwproto, const char *prefix,
    const uint8_t *pkt, size_t len, long seq)
{
	struct nlmsghdr			*nlh;
	struct nfgenmsg			*g;
	struct nfulnl_msg_packet_hdr	 ph;

	memset(buf, 0, REC_MAX);
	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = (NFNL_SUBSYS_ULOG << 8) | NFULNL_MSG_PACKET;
	g = mnl_nlmsg_put_extra_header(nlh, sizeof(*g));
	g->nfgen_family = nfproto;
	g->version = NFNETLINK_V0;
	g->res_id = htons(DROPS_NFLOG_GROUP);
	memset(&ph, 0, sizeof(ph));
	ph.hw_protocol = htons(hwproto);
	ph.hook = nfproto == NFPROTO_NETDEV ? 1 : NF_INET_LOCAL_OUT;
	mnl_attr_put(nlh, NFULA_PACKET_HDR, sizeof(ph), &ph);
	if (prefix != NULL)
		mnl_attr_put_strz(nlh, NFULA_PREFIX, prefix);
	if (seq >= 0)
		mnl_attr_put_u32(nlh, NFULA_SEQ, htonl((uint32_t)seq));
	if (pkt != NULL)
		mnl_attr_put(nlh, NFULA_PAYLOAD, len, pkt);
	return nlh;
}

/* An IPv4 header of protocol proto from src to dst, then l4 (n bytes). */
static size_t
ip4(uint8_t *b, uint8_t proto, const char *src, const char *dst,
    const uint8_t *l4, size_t n)
{
	memset(b, 0, 20);
	b[0] = 0x45;
	b[2] = (uint8_t)((20 + n) >> 8);
	b[3] = (uint8_t)(20 + n);
	b[8] = 64;
	b[9] = proto;
	inet_pton(AF_INET, src, b + 12);
	inet_pton(AF_INET, dst, b + 16);
	memcpy(b + 20, l4, n);
	return 20 + n;
}

/* An IPv6 header, next header nh, then rest (n bytes). */
static size_t
ip6(uint8_t *b, uint8_t nh, const char *src, const char *dst,
    const uint8_t *rest, size_t n)
{
	memset(b, 0, 40);
	b[0] = 0x60;
	b[4] = (uint8_t)(n >> 8);
	b[5] = (uint8_t)n;
	b[6] = nh;
	b[7] = 64;
	inet_pton(AF_INET6, src, b + 8);
	inet_pton(AF_INET6, dst, b + 24);
	memcpy(b + 40, rest, n);
	return 40 + n;
}

/* The audit line of a parsed record, parsed back; json_decref() it. */
static json_t *
line_of(const struct drops_pkt *p, const char *sandbox)
{
	struct audit_rec	 r;
	struct drops_text	 t;
	char			 buf[4096];
	size_t			 n;

	drops_audit_rec(p, sandbox, &r, &t);
	n = audit_format_line(&r, buf, sizeof(buf));
	CU_ASSERT_FATAL(n > 0);
	return json_loadb(buf, n, JSON_REJECT_DUPLICATES, NULL);
}

static const char *
jstr(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static long long
jint(const json_t *o, const char *k)
{
	const json_t	*v = json_object_get(o, k);

	return json_is_integer(v) ? (long long)json_integer_value(v) : -1;
}

static void
test_udp4(void)
{
	static const uint8_t	 udp[] = { 0x13, 0x88, 0x00, 0x7b, 0, 9, 0,
	    0, 'x' };
	char			 buf[REC_MAX];
	uint8_t			 pkt[64];
	struct drops_pkt	 p;
	json_t			*o;
	size_t			 n;

	n = ip4(pkt, IPPROTO_UDP, "10.0.0.2", "198.51.100.9", udp,
	    sizeof(udp));
	CU_ASSERT_EQUAL(drops_parse(mkrec(buf, NFPROTO_IPV4, ETH_P_IP,
	    "moat:udp", pkt, n, 7), &p), 1);
	CU_ASSERT_EQUAL(p.kind, DROPS_UDP);
	CU_ASSERT_EQUAL(p.family, AF_INET);
	CU_ASSERT_EQUAL(p.proto, IPPROTO_UDP);
	CU_ASSERT_EQUAL(p.sport, 5000);
	CU_ASSERT_EQUAL(p.dport, 123);
	CU_ASSERT(p.has_seq && p.seq == 7);
	o = line_of(&p, "job-1");
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT_STRING_EQUAL(jstr(o, "event"), "drop");
	CU_ASSERT_STRING_EQUAL(jstr(o, "sandbox"), "job-1");
	CU_ASSERT_STRING_EQUAL(jstr(o, "proto"), "udp");
	CU_ASSERT_STRING_EQUAL(jstr(o, "client"), "10.0.0.2:5000");
	CU_ASSERT_STRING_EQUAL(jstr(o, "ip"), "198.51.100.9");
	CU_ASSERT_EQUAL(jint(o, "port"), 123);
	CU_ASSERT_STRING_EQUAL(jstr(o, "verdict"), "deny");
	CU_ASSERT_STRING_EQUAL(jstr(o, "reason"), "dropped-packet");
	CU_ASSERT(json_is_null(json_object_get(o, "rule")));
	CU_ASSERT_PTR_NULL(json_object_get(o, "host"));
	CU_ASSERT_PTR_NULL(json_object_get(o, "refused"));
	CU_ASSERT_EQUAL(strncmp(jstr(o, "detail"), "udp: ", 5), 0);
	json_decref(o);
}

/* IPv6 with a hop-by-hop and a destination options header first. */
static void
test_udp6_ext(void)
{
	uint8_t			 rest[64], pkt[128];
	char			 buf[REC_MAX];
	struct drops_pkt	 p;
	json_t			*o;
	size_t			 n;

	memset(rest, 0, sizeof(rest));
	rest[0] = IPPROTO_DSTOPTS;	/* hop-by-hop: 8 bytes */
	rest[1] = 0;
	rest[8] = IPPROTO_UDP;		/* destination options: 16 bytes */
	rest[9] = 1;
	rest[24] = 0x9c;		/* UDP 40000 -> 853 */
	rest[25] = 0x40;
	rest[26] = 0x03;
	rest[27] = 0x55;
	n = ip6(pkt, IPPROTO_HOPOPTS, "fd00::2", "2001:db8::53", rest, 32);
	CU_ASSERT_EQUAL(drops_parse(mkrec(buf, NFPROTO_IPV6, ETH_P_IPV6,
	    "moat:udp", pkt, n, 0), &p), 1);
	CU_ASSERT_EQUAL(p.family, AF_INET6);
	CU_ASSERT_EQUAL(p.proto, IPPROTO_UDP);
	CU_ASSERT_EQUAL(p.dport, 853);
	o = line_of(&p, "s");
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT_STRING_EQUAL(jstr(o, "ip"), "2001:db8::53");
	CU_ASSERT_STRING_EQUAL(jstr(o, "client"), "[fd00::2]:40000");
	CU_ASSERT_EQUAL(jint(o, "port"), 853);
	json_decref(o);
	/* Cut inside the extension headers: the address, no port. */
	CU_ASSERT_EQUAL(drops_parse(mkrec(buf, NFPROTO_IPV6, ETH_P_IPV6,
	    "moat:udp", pkt, 44, 1), &p), 1);
	CU_ASSERT_STRING_EQUAL(p.dst, "2001:db8::53");
	CU_ASSERT_EQUAL(p.dport, -1);
	o = line_of(&p, "s");
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT_PTR_NULL(json_object_get(o, "port"));
	json_decref(o);
}

static void
test_icmp(void)
{
	static const uint8_t	 echo4[] = { 8, 0, 0xf7, 0xff, 0, 1, 0, 1 };
	static const uint8_t	 echo6[] = { 128, 0, 0, 0, 0, 1, 0, 1 };
	char			 buf[REC_MAX];
	uint8_t			 pkt[64];
	struct drops_pkt	 p;
	json_t			*o;
	size_t			 n;

	n = ip4(pkt, IPPROTO_ICMP, "10.0.0.2", "203.0.113.10", echo4,
	    sizeof(echo4));
	CU_ASSERT_EQUAL(drops_parse(mkrec(buf, NFPROTO_IPV4, ETH_P_IP,
	    "moat:icmp", pkt, n, 2), &p), 1);
	CU_ASSERT_EQUAL(p.icmp_type, 8);
	o = line_of(&p, "s");
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT_STRING_EQUAL(jstr(o, "proto"), "icmp");
	CU_ASSERT_STRING_EQUAL(jstr(o, "client"), "10.0.0.2");
	CU_ASSERT_PTR_NULL(json_object_get(o, "port"));
	CU_ASSERT_STRING_EQUAL(jstr(o, "detail"), "icmp: ICMP type 8 code 0 "
	    "does not leave the sandbox (an echo request: ping)");
	json_decref(o);
	n = ip6(pkt, IPPROTO_ICMPV6, "fd00::2", "2001:db8::10", echo6,
	    sizeof(echo6));
	CU_ASSERT_EQUAL(drops_parse(mkrec(buf, NFPROTO_IPV6, ETH_P_IPV6,
	    "moat:icmp", pkt, n, 3), &p), 1);
	o = line_of(&p, "s");
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT_STRING_EQUAL(jstr(o, "proto"), "icmpv6");
	CU_ASSERT_STRING_EQUAL(jstr(o, "detail"), "icmp: ICMPv6 type 128 code "
	    "0 does not leave the sandbox (an echo request: ping)");
	json_decref(o);
}

/* Other protocols: named or numbered; ports where the protocol has them. */
static void
test_other_proto(void)
{
	static const uint8_t	 sctp[] = { 0x13, 0x88, 0x0b, 0x59, 0, 0, 0,
	    0, 0, 0, 0, 0 };
	static const struct {
		uint8_t		 proto;
		const char	*name;
		long long	 port;
	} v[] = {
		{ IPPROTO_SCTP, "sctp", 2905 },
		{ IPPROTO_GRE, "gre", -1 },
		{ IPPROTO_ESP, "esp", -1 },
		{ 253, "ip-253", -1 },
	};
	char			 buf[REC_MAX];
	uint8_t			 pkt[64];
	struct drops_pkt	 p;
	json_t			*o;
	size_t			 i, n;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		n = ip4(pkt, v[i].proto, "10.0.0.2", "203.0.113.10", sctp,
		    sizeof(sctp));
		CU_ASSERT_EQUAL(drops_parse(mkrec(buf, NFPROTO_IPV4, ETH_P_IP,
		    "moat:other-proto", pkt, n, (long)i), &p), 1);
		CU_ASSERT_EQUAL(p.kind, DROPS_OTHER_PROTO);
		o = line_of(&p, "s");
		CU_ASSERT_PTR_NOT_NULL_FATAL(o);
		CU_ASSERT_STRING_EQUAL(jstr(o, "proto"), v[i].name);
		CU_ASSERT_EQUAL(jint(o, "port"), v[i].port);
		CU_ASSERT_STRING_EQUAL(jstr(o, "ip"), "203.0.113.10");
		CU_ASSERT_EQUAL(strncmp(jstr(o, "detail"), "other-proto: ",
		    13), 0);
		json_decref(o);
	}
}

/* A later fragment has no transport header: no port, no invented one. */
static void
test_fragment(void)
{
	static const uint8_t	 data[] = { 0x13, 0x88, 0x00, 0x7b };
	char			 buf[REC_MAX];
	uint8_t			 pkt[64];
	struct drops_pkt	 p;
	size_t			 n;

	n = ip4(pkt, IPPROTO_UDP, "10.0.0.2", "198.51.100.9", data,
	    sizeof(data));
	pkt[6] = 0x00;
	pkt[7] = 0x10;			/* offset 128 bytes */
	CU_ASSERT_EQUAL(drops_parse(mkrec(buf, NFPROTO_IPV4, ETH_P_IP,
	    "moat:udp", pkt, n, 0), &p), 1);
	CU_ASSERT_EQUAL(p.proto, IPPROTO_UDP);
	CU_ASSERT_EQUAL(p.dport, -1);
	CU_ASSERT_EQUAL(p.sport, -1);
	/* ... and a capture cut inside the UDP header. */
	n = ip4(pkt, IPPROTO_UDP, "10.0.0.2", "198.51.100.9", data,
	    sizeof(data));
	CU_ASSERT_EQUAL(drops_parse(mkrec(buf, NFPROTO_IPV4, ETH_P_IP,
	    "moat:udp", pkt, 22, 0), &p), 1);
	CU_ASSERT_EQUAL(p.dport, -1);
	CU_ASSERT_STRING_EQUAL(p.dst, "198.51.100.9");
}

/* netdev egress: the frame with its Ethernet header; ARP is no IP. */
static void
test_egress(void)
{
	static const uint8_t	 udp[] = { 0x9c, 0x40, 0x27, 0x0f, 0, 8, 0,
	    0 };
	char			 buf[REC_MAX];
	uint8_t			 frame[128];
	struct drops_pkt	 p;
	json_t			*o;
	size_t			 n;

	memset(frame, 0xff, 12);
	frame[12] = 0x08;
	frame[13] = 0x00;
	n = 14 + ip4(frame + 14, IPPROTO_UDP, "192.0.2.2", "203.0.113.10",
	    udp, sizeof(udp));
	CU_ASSERT_EQUAL(drops_parse(mkrec(buf, NFPROTO_NETDEV, ETH_P_IP,
	    "moat:egress", frame, n, 0), &p), 1);
	CU_ASSERT_EQUAL(p.kind, DROPS_EGRESS);
	CU_ASSERT_EQUAL(p.dport, 9999);
	o = line_of(&p, "s");
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT_STRING_EQUAL(jstr(o, "proto"), "udp");
	CU_ASSERT_STRING_EQUAL(jstr(o, "ip"), "203.0.113.10");
	CU_ASSERT_EQUAL(strncmp(jstr(o, "detail"), "egress: ", 8), 0);
	json_decref(o);
	frame[12] = 0x08;
	frame[13] = 0x06;
	memset(frame + 14, 0, 28);
	CU_ASSERT_EQUAL(drops_parse(mkrec(buf, NFPROTO_NETDEV, ETH_P_ARP,
	    "moat:egress", frame, 42, 1), &p), 1);
	CU_ASSERT_EQUAL(p.family, 0);
	o = line_of(&p, "s");
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT_STRING_EQUAL(jstr(o, "proto"), "arp");
	CU_ASSERT(json_is_null(json_object_get(o, "ip")));
	CU_ASSERT_PTR_NULL(json_object_get(o, "client"));
	json_decref(o);
}

/* Each kind's record names it first in its detail. */
static void
test_kinds(void)
{
	static const uint8_t	 syn[] = { 0x9c, 0x40, 0x1e, 0x61, 0, 0, 0,
	    0, 0, 0, 0, 0, 0x50, 0x02, 0, 0, 0, 0, 0, 0 };
	char			 buf[REC_MAX], prefix[32], want[40];
	uint8_t			 pkt[64];
	struct drops_pkt	 p;
	json_t			*o;
	unsigned		 k;
	size_t			 n;

	n = ip4(pkt, IPPROTO_TCP, "127.0.0.1", "127.0.0.1", syn, sizeof(syn));
	for (k = 0; k < DROPS_KIND__COUNT; k++) {
		snprintf(prefix, sizeof(prefix), "moat:%s", drops_kind_name(k));
		CU_ASSERT_EQUAL(drops_parse(mkrec(buf, NFPROTO_IPV4, ETH_P_IP,
		    prefix, pkt, n, k), &p), 1);
		CU_ASSERT_EQUAL(p.kind, k);
		o = line_of(&p, "s");
		CU_ASSERT_PTR_NOT_NULL_FATAL(o);
		snprintf(want, sizeof(want), "%s: ", drops_kind_name(k));
		CU_ASSERT_EQUAL(strncmp(jstr(o, "detail"), want,
		    strlen(want)), 0);
		CU_ASSERT_EQUAL(jint(o, "port"), 7777);
		json_decref(o);
	}
	CU_ASSERT_PTR_NULL(drops_kind_name(DROPS_KIND__COUNT));
}

/* What is not one of moat's records, and what is malformed. */
static void
test_foreign_and_bad(void)
{
	static const uint8_t	 udp[] = { 0x13, 0x88, 0x00, 0x7b };
	char			 buf[REC_MAX];
	uint8_t			 pkt[64];
	struct drops_pkt	 p;
	struct nlmsghdr		*nlh;
	struct nlattr		*a;
	json_t			*o;
	size_t			 n;

	n = ip4(pkt, IPPROTO_UDP, "10.0.0.2", "198.51.100.9", udp,
	    sizeof(udp));
	/* Another prefix, an unknown kind, none: not ours. */
	CU_ASSERT_EQUAL(drops_parse(mkrec(buf, NFPROTO_IPV4, ETH_P_IP,
	    "IN=eth0", pkt, n, 0), &p), 0);
	CU_ASSERT_EQUAL(drops_parse(mkrec(buf, NFPROTO_IPV4, ETH_P_IP,
	    "moat:nope", pkt, n, 0), &p), 0);
	CU_ASSERT_EQUAL(drops_parse(mkrec(buf, NFPROTO_IPV4, ETH_P_IP,
	    "moat:", pkt, n, 0), &p), 0);
	CU_ASSERT_EQUAL(drops_parse(mkrec(buf, NFPROTO_IPV4, ETH_P_IP,
	    NULL, pkt, n, 0), &p), 0);
	/* Another message type: the end of a batch, a config answer. */
	nlh = mkrec(buf, NFPROTO_IPV4, ETH_P_IP, "moat:udp", pkt, n, 0);
	nlh->nlmsg_type = NLMSG_DONE;
	CU_ASSERT_EQUAL(drops_parse(nlh, &p), 0);
	nlh->nlmsg_type = (NFNL_SUBSYS_ULOG << 8) | NFULNL_MSG_CONFIG;
	CU_ASSERT_EQUAL(drops_parse(nlh, &p), 0);
	/* A prefix that is not NUL-terminated inside its attribute. */
	nlh = mkrec(buf, NFPROTO_IPV4, ETH_P_IP, NULL, NULL, 0, -1);
	mnl_attr_put(nlh, NFULA_PREFIX, 8, "moat:udp");
	CU_ASSERT_EQUAL(drops_parse(nlh, &p), -1);
	/* A record without its packet header. */
	memset(buf, 0, sizeof(buf));
	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = (NFNL_SUBSYS_ULOG << 8) | NFULNL_MSG_PACKET;
	mnl_nlmsg_put_extra_header(nlh, sizeof(struct nfgenmsg));
	mnl_attr_put_strz(nlh, NFULA_PREFIX, "moat:udp");
	CU_ASSERT_EQUAL(drops_parse(nlh, &p), -1);
	/* An attribute that runs past the message. */
	nlh = mkrec(buf, NFPROTO_IPV4, ETH_P_IP, "moat:udp", pkt, n, 0);
	a = (struct nlattr *)((char *)nlh + nlh->nlmsg_len -
	    MNL_ALIGN(n) - sizeof(*a));
	a->nla_len = 0x7ff0;
	CU_ASSERT_EQUAL(drops_parse(nlh, &p), -1);
	/* Shorter than its own header. */
	nlh = mkrec(buf, NFPROTO_IPV4, ETH_P_IP, "moat:udp", pkt, n, 0);
	nlh->nlmsg_len = NLMSG_LENGTH(2);
	CU_ASSERT_EQUAL(drops_parse(nlh, &p), -1);
	/* No packet, or bytes that are no IP: the kind, nothing else. */
	CU_ASSERT_EQUAL(drops_parse(mkrec(buf, NFPROTO_IPV4, ETH_P_IP,
	    "moat:udp", NULL, 0, 0), &p), 1);
	CU_ASSERT_EQUAL(p.family, 0);
	o = line_of(&p, "s");
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT_STRING_EQUAL(jstr(o, "proto"), "ip");
	CU_ASSERT(json_is_null(json_object_get(o, "ip")));
	json_decref(o);
	memset(pkt, 0x00, sizeof(pkt));
	CU_ASSERT_EQUAL(drops_parse(mkrec(buf, NFPROTO_IPV4, ETH_P_IP,
	    "moat:udp", pkt, 30, 0), &p), 1);
	CU_ASSERT_EQUAL(p.family, 0);
	CU_ASSERT_EQUAL(p.dport, -1);
}

static void
test_summary(void)
{
	uint64_t		 by[DROPS_KIND__COUNT];
	struct audit_rec	 r;
	struct drops_text	 t;
	char			 buf[4096];
	json_t			*o;
	size_t			 n;

	memset(by, 0, sizeof(by));
	by[DROPS_UDP] = 987;
	by[DROPS_ICMP] = 3;
	drops_summary_rec("job-1", 990, by, 0, &r, &t);
	n = audit_format_line(&r, buf, sizeof(buf));
	CU_ASSERT_FATAL(n > 0);
	o = json_loadb(buf, n, 0, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT_STRING_EQUAL(jstr(o, "event"), "drop");
	CU_ASSERT_STRING_EQUAL(jstr(o, "reason"), "dropped-packet");
	CU_ASSERT_EQUAL(jint(o, "refused"), 990);
	CU_ASSERT(json_is_null(json_object_get(o, "ip")));
	CU_ASSERT_STRING_EQUAL(jstr(o, "detail"), "990 more dropped packets "
	    "(udp 987, icmp 3): at most 10 lines a second tell of them one by "
	    "one; the sandbox's nftables counters count every drop");
	json_decref(o);
	/* Lost records count too, though no kind has them. */
	drops_summary_rec("job-1", 1, by, 5, &r, &t);
	CU_ASSERT_EQUAL(r.refused, 6);
	CU_ASSERT_PTR_NOT_NULL(strstr(r.detail, "1 more dropped packet ("));
	CU_ASSERT_PTR_NOT_NULL(strstr(r.detail, "; 5 drop records lost"));
	memset(by, 0, sizeof(by));
	drops_summary_rec("job-1", 0, by, 1, &r, &t);
	CU_ASSERT_EQUAL(r.refused, 1);
	CU_ASSERT_STRING_EQUAL(r.detail, "1 drop record lost (moatd read too "
	    "slowly); the sandbox's nftables counters count every drop");
}

void
test_drops_register(void)
{
	CU_pSuite	s;

	if ((s = CU_add_suite("drops", NULL, NULL)) == NULL)
		return;
	CU_add_test(s, "UDP over IPv4", test_udp4);
	CU_add_test(s, "UDP over IPv6 extension headers", test_udp6_ext);
	CU_add_test(s, "ICMP and ICMPv6", test_icmp);
	CU_add_test(s, "other protocols", test_other_proto);
	CU_add_test(s, "fragments and short captures", test_fragment);
	CU_add_test(s, "egress frames", test_egress);
	CU_add_test(s, "every kind", test_kinds);
	CU_add_test(s, "foreign and malformed records", test_foreign_and_bad);
	CU_add_test(s, "the summary line", test_summary);
}
