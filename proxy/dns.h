/*
 * dns.h - moatd's DNS listener: the resolver a sandbox is given.
 *
 * It answers A and AAAA for names the sandbox's policy allows, with the
 * addresses moatd resolved itself and will dial (remembered for the
 * transparent listener's attribution), and NXDOMAIN for every other name.
 * A denied name is never sent to any upstream server, so DNS cannot carry
 * data out of the sandbox.  Other query types of an allowed name get an
 * empty answer (NODATA); zone transfers, other opcodes and classes get
 * NOTIMP or REFUSED.  Each query is an audit line ("event": "dns").
 */
#ifndef MOAT_DNS_H
#define MOAT_DNS_H

struct conn;
struct listener;
struct sandbox;
struct worker;

#define DNS_UDP_BATCH		32	/* datagrams read per wakeup */
#define DNS_TCP_PENDING_MAX	16	/* queries of one TCP client in flight */
#define DNS_ANSWER_TTL_MAX_S	300	/* TTL moatd gives its answers, at most */

/* Reads and answers the queries waiting on a UDP listening socket. */
void	dns_udp_input(struct worker *w, struct listener *l, int fd);
/* DNS over TCP (RFC 7766) is a protocol of conn.c: dns_conn_ops
 * (conn.h). */
/* Drops the pending queries of sb (NULL: all) without answering them. */
void	dns_abort_all(struct worker *w, struct sandbox *sb);

#endif /* MOAT_DNS_H */
