/*
 * chainfmt.c - the audit line's hash-chain tail, parsed (chainfmt.h).
 */
#include "config.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "proto/chainfmt.h"

bool
chainfmt_hex(const char *s, size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') ||
		    (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

bool
chainfmt_parse(const char *line, size_t len, struct chainfmt_tail *t)
{
	size_t		 ht = sizeof(CHAINFMT_HASH_TAIL) - 1;
	size_t		 pt = sizeof(CHAINFMT_PREV_TAIL) - 1;
	size_t		 st = sizeof(CHAINFMT_SEQ_TAIL) - 1, e, d;
	const char	*p;

	if (len < ht + CHAINFMT_HEX + 2 + pt + CHAINFMT_HEX + 1 + st + 2)
		return false;
	e = len - 2 - CHAINFMT_HEX - ht;	/* where ,"hash" begins */
	if (memcmp(line + len - 2, "\"}", 2) != 0 ||
	    memcmp(line + e, CHAINFMT_HASH_TAIL, ht) != 0 ||
	    !chainfmt_hex(line + e + ht, CHAINFMT_HEX))
		return false;
	p = line + e - 1 - CHAINFMT_HEX - pt;	/* ,"prev" */
	if (line[e - 1] != '"' || memcmp(p, CHAINFMT_PREV_TAIL, pt) != 0 ||
	    !chainfmt_hex(p + pt, CHAINFMT_HEX))
		return false;
	for (d = 0; p - d > line && p[-1 - (ptrdiff_t)d] >= '0' &&
	    p[-1 - (ptrdiff_t)d] <= '9' && d < 19; d++)
		;
	if (d == 0 || (size_t)(p - line) < st + d ||
	    memcmp(p - d - st, CHAINFMT_SEQ_TAIL, st) != 0)
		return false;
	t->seq = strtoll(p - d, NULL, 10);
	memcpy(t->hash, line + e + ht, CHAINFMT_HEX);
	t->hash[CHAINFMT_HEX] = '\0';
	memcpy(t->prev, p + pt, CHAINFMT_HEX);
	t->prev[CHAINFMT_HEX] = '\0';
	t->body = e;
	return true;
}
