/*
 * auditchain.h - the hash chain of audit lines (audit.hash_chain).
 *
 * Each line moatd writes gets `,"seq":N,"prev":"P","hash":"H"` before its
 * closing brace: N counts the lines of the chain, P is the hash of the line
 * before (64 zeros for the first line of a new chain), and H is the SHA-256
 * (lower-case hex) of the line as written without its `,"hash":"H"` member
 * and newline, so that it covers P.  A new file (start, reopen, another
 * audit.path) begins with a "chain-start" line that continues from the last
 * line of that file if it has a chained one (a restart), else from the last
 * line written before (a rotation), else starts anew.  `moat audit verify`
 * (launcher/audit_verify.c) checks it.
 *
 * Used by the audit writer thread only: no locking here.  The chain advances
 * only by what was written (auditchain_commit()), so lines that a full disk
 * held back are chained again, in order, when they are written.
 */
#ifndef MOAT_AUDITCHAIN_H
#define MOAT_AUDITCHAIN_H

#include <stddef.h>
#include <sys/types.h>

#include "proto/chainfmt.h"

#define AUDITCHAIN_HEX		CHAINFMT_HEX	/* a SHA-256 in hex */
#define AUDITCHAIN_EXTRA	180	/* bytes the chain adds to a line */
#define AUDITCHAIN_TAIL_BYTES	65536	/* read of a file's last line */

struct auditchain;

/* A chain with no line yet.  NULL if out of memory (or no SHA-256). */
struct auditchain	*auditchain_new(void);
void			 auditchain_free(struct auditchain *ch);	/* NULL-safe */

/* Where a chain-start goes on from. */
#define AUDITCHAIN_FROM_FILE	0	/* the file's own last line */
#define AUDITCHAIN_FROM_BEFORE	1	/* the last line written before */
#define AUDITCHAIN_NEW		2	/* nothing: 64 zeros */

/*
 * A new destination: fd (open for appending) at path (NULL for stderr).
 * If it is a regular file whose last line is chained, the chain goes on
 * from that line (it is read by path, so call it while the file can be
 * read: before moatd drops privileges).  Returns AUDITCHAIN_FROM_*.
 */
int	auditchain_seed(struct auditchain *ch, int fd, const char *path);
/*
 * The unchained "chain-start" line for how (AUDITCHAIN_*), ts given,
 * "\n"-ended, into line[cap]: its length, 0 if it does not fit.
 */
size_t	auditchain_start_line(int how, const char *ts, char *line,
	    size_t cap);

/*
 * Chains len bytes of whole lines (each ending in "}\n", as audit.c
 * formats them) into *out (grown as needed, *cap its size), from the last
 * line committed.  Returns the length written to *out, or -1 (memory).
 * A line not in that form is copied as it is.
 */
ssize_t	auditchain_apply(struct auditchain *ch, const char *buf, size_t len,
	    char **out, size_t *cap);

/* The first done bytes of what auditchain_apply() wrote into out were
 * written: the chain goes on from the last whole line of them. */
void	auditchain_commit(struct auditchain *ch, const char *out, size_t done);

/* The last committed line's seq (-1: none) and hash (hex, or zeros). */
long long	 auditchain_seq(const struct auditchain *ch);
const char	*auditchain_hash(const struct auditchain *ch);

#endif /* MOAT_AUDITCHAIN_H */
