/*
 * chainfmt.h - the tail audit.hash_chain puts on an audit line, which
 * moatd writes (proxy/auditchain.c: and reads back from its file's last
 * line at start) and `moat audit verify` checks (launcher/audit_verify.c):
 *
 *   {...,"seq":N,"prev":"<64 hex>","hash":"<64 hex>"}
 *
 * hash = SHA-256 over prev and the line up to ,"hash" (the body).  Pure:
 * libc only.
 */
#ifndef MOAT_PROTO_CHAINFMT_H
#define MOAT_PROTO_CHAINFMT_H

#include <stdbool.h>
#include <stddef.h>

#define CHAINFMT_HEX		64	/* a SHA-256 in lower-case hex */
#define CHAINFMT_SEQ_TAIL	",\"seq\":"
#define CHAINFMT_PREV_TAIL	",\"prev\":\""	/* then 64 hex, then " */
#define CHAINFMT_HASH_TAIL	",\"hash\":\""	/* then 64 hex, then "} */

struct chainfmt_tail {
	long long	seq;
	char		prev[CHAINFMT_HEX + 1];
	char		hash[CHAINFMT_HEX + 1];
	size_t		body;		/* bytes before ,"hash" */
};

/* n bytes of s are lower-case hex digits. */
bool	chainfmt_hex(const char *s, size_t n);
/* line (len bytes, no newline) ends in a chain tail: its parts in *t. */
bool	chainfmt_parse(const char *line, size_t len, struct chainfmt_tail *t);

#endif
