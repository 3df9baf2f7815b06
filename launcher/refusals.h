/*
 * refusals.h - what `moat run` and `moat attach` say about their
 * sandbox's traffic, from moatd's watch (admin_client_watch()): one
 * short line per refusal and per would-deny of audit mode on stderr
 * (with -v, per allowed request, tunnel and DNS query too), at most
 * REFUSALS_RATE lines a second and then one line a second that counts
 * the rest, and at exit one summary line when anything was refused or
 * would have been.
 *
 * Everything in a line that came from the sandbox (names, paths, methods)
 * is escaped: no control byte of the workload's choosing reaches the
 * user's terminal.  libc and jansson only, so that the unit tests link
 * it alone.
 */
#ifndef MOAT_REFUSALS_H
#define MOAT_REFUSALS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#define REFUSALS_RATE		10	/* lines a second, at most */
#define REFUSALS_WINDOW_MS	1000	/* ... counted over this */
#define REFUSALS_LINE_MAX	320	/* one line, bytes (with escapes) */
#define REFUSALS_WHAT_MAX	48	/* the target in a line, columns */
#define REFUSALS_TARGET_MAX	64	/* the explain hint's target */
#define REFUSALS_COLUMNS	120	/* a line, columns, if the target's
					   name leaves room */
#define REFUSALS_REASONS_MAX	32	/* reasons counted one by one */

/* What term() says about the terminal the lines go to. */
#define REFUSALS_TERM_RAW	1	/* raw mode: lines end in "\r\n" */
#define REFUSALS_TERM_MIDLINE	2	/* the workload's output stopped
					   mid-line: start a line first */

struct refusals_opts {
	int		 fd;		/* where lines go (stderr) */
	bool		 all;		/* -v: allowed traffic too */
	bool		 hint;		/* end each refusal with the `moat
					   explain` command that tells more */
	const char	*config;	/* the hint's -c FILE, or NULL */
	const char	*details;	/* the summary's end: where every
					   decision is, or NULL */
	int		(*term)(void *arg); /* REFUSALS_TERM_*, or NULL */
	void		*term_arg;
};

struct refusals;

/* A printer with o's options (copied; details too, the other strings
 * are borrowed).  NULL if out of memory.  refusals_free() is NULL-safe. */
struct refusals	*refusals_new(const struct refusals_opts *o);
void		 refusals_free(struct refusals *rf);

/*
 * One watch message ({"audit": RECORD} or {"dropped": N}) arrived at
 * now_ms (a monotonic clock): counted, and printed unless over the rate.
 */
void		 refusals_message(struct refusals *rf, json_t *msg,
		    uint64_t now_ms);
/* Milliseconds until the "N more" line is due, or -1 when none waits. */
int		 refusals_timeout(const struct refusals *rf,
		    uint64_t now_ms);
/* Prints the "N more" line if it is due. */
void		 refusals_tick(struct refusals *rf, uint64_t now_ms);
/* At exit: the "N more" line if one waits, then the summary if anything
 * was refused. */
void		 refusals_finish(struct refusals *rf);

/* Refusals counted so far (a "connection" or "drop" line counts its
 * "refused"). */
uint64_t	 refusals_count(const struct refusals *rf);
/* Would-denies (audit mode: allowed, "would_deny" set) counted so far. */
uint64_t	 refusals_would_count(const struct refusals *rf);

/*
 * The line of one audit record, without its end of line, into buf:
 * "moat: HH:MM:SS denied WHAT (REASON, rule NAME) -> moat explain ...",
 * or for a would-deny of audit mode "moat: HH:MM:SS would refuse WHAT
 * (audit-only: REASON, rule NAME) -> ...".  Returns its length, or 0
 * when the record is not one to show (an allowed one without o->all, a
 * tunnel's close, a registration).
 */
size_t		 refusals_format(const json_t *rec,
		    const struct refusals_opts *o, char *buf, size_t len);
/* The summary line, without its end of line ("moat: N refusals (...),
 * M would-denies (audit-only: ...)"); 0 when nothing was refused or
 * would have been. */
size_t		 refusals_summary(const struct refusals *rf, char *buf,
		    size_t len);

#endif /* MOAT_REFUSALS_H */
