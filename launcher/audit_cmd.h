/*
 * audit_cmd.h - `moat audit`: moatd's audit files read back (summary,
 * suggest, replay, verify).
 *
 * What it is: a reader of the JSON lines moatd writes (README, "The audit
 * log"), streaming and in bounded memory: files are read line by line
 * (plain, gzip-compressed, or standard input), each line is scanned into
 * a struct audit_ln, and each command folds the lines into tables whose
 * size is capped.  libc, jansson and the policy library; zlib (for .gz
 * files) and libmd (SHA-256, for verify) are loaded with dlopen() when a
 * command needs them, so that `moat run` pays nothing for them.
 *
 * What it is not: a log shipper, nor a JSON library: the scanner takes the
 * flat objects moatd writes (strings, integers, null, booleans, and a flat
 * array of strings for "injected") and hands anything else to jansson.
 *
 * Errors: a function that can fail writes one sentence (no program prefix,
 * no newline) into err[errlen] and returns -1.
 */
#ifndef MOAT_AUDIT_CMD_H
#define MOAT_AUDIT_CMD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "proto/chainfmt.h"

struct moat_config;

#define AUDIT_LN_MAX_BYTES	65536	/* longest line read: moatd's are at
					   most 24 KiB, plus the chain */
#define AUDIT_LN_INJECTED_MAX	64	/* names in one "injected" */
#define AUDIT_HASH_HEX		CHAINFMT_HEX	/* a SHA-256 in hex */
#define AUDIT_ERR_MAX		512
#define AUDIT_TS_LEN		24	/* "2026-11-29T13:42:38.789Z" */
#define AUDIT_SANDBOXES_MAX	64	/* --sandbox given this often */
#define AUDIT_BAD_SHOWN		10	/* bad lines named one by one */

#define AUDIT_EXIT_OK		0
#define AUDIT_EXIT_CHANGED	1	/* replay: allowed became refused;
					   verify: tampered */
#define AUDIT_EXIT_ERROR	2

/* One line, scanned.  Strings are NULL when absent or null; integers -1. */
struct audit_ln {
	const char	*ts, *event, *sandbox, *proto, *client, *host, *sni;
	const char	*ip, *verdict, *reason, *rule, *method, *path;
	const char	*detail, *end, *qtype, *answer, *would_deny;
	const char	*prev, *hash;
	int64_t		 id, port, status, bytes_up, bytes_down;
	int64_t		 duration_ms, refused, dropped, seq;
	const char	*injected[AUDIT_LN_INJECTED_MAX];
	size_t		 ninjected;
	bool		 has_injected;
};

/* --- audit_in.c: files, line by line -------------------------------- */

/*
 * A file being read: plain, or gzip (by its first two bytes, whatever its
 * name; several members one after another are read as one), or "-" for
 * standard input.  The reader holds at most AUDIT_LN_MAX_BYTES of a line
 * plus one read's worth of bytes.
 */
struct audit_in;

/* Opens path ("-": standard input).  NULL and err on failure. */
struct audit_in	*audit_in_open(const char *path, char *err, size_t errlen);
/*
 * The next line: 1 and *line (NUL-terminated, without its newline,
 * writable, valid until the next call) and *len; 0 at the end; -1 on a
 * read or decompression error (the file cannot be read on); -2 for a line
 * longer than AUDIT_LN_MAX_BYTES or a last line without a newline (the
 * line is skipped, err says which; reading may go on).
 */
int		 audit_in_line(struct audit_in *in, char **line, size_t *len,
		    char *err, size_t errlen);
/* The number of the line audit_in_line() returned last (1-based). */
uint64_t	 audit_in_lineno(const struct audit_in *in);
const char	*audit_in_name(const struct audit_in *in);
void		 audit_in_close(struct audit_in *in);	/* NULL-safe */

/* --- audit_scan.c: one line into a struct audit_ln ------------------ */

struct audit_scan;

struct audit_scan	*audit_scan_new(void);	/* NULL: out of memory */
void			 audit_scan_free(struct audit_scan *s);
/*
 * Scans line (len bytes; not changed) into *l.  The strings of *l are
 * valid until the next call on s.  The fast path takes the flat objects
 * moatd writes; any other JSON object (nested values, non-ASCII bytes) is
 * loaded with jansson.  Unknown keys are skipped; a known key given twice
 * or with the wrong type, or text that is not one JSON object, is an
 * error: -1 and *err (static).  jansson_only: always jansson (tests).
 */
int	audit_scan_line(struct audit_scan *s, const char *line, size_t len,
	    struct audit_ln *l, bool jansson_only, const char **err);

/* --- audit_tab.c: counters by key, capped --------------------------- */

/*
 * A hash table from byte-string keys to fixed-size values (zeroed when
 * created), holding at most cap entries: past it audit_tab_get() refuses
 * new keys, and the caller counts what it could not itemise.
 */
struct audit_tab;
struct audit_tab_ent {
	const char	*key;
	size_t		 klen;
	void		*val;
};

struct audit_tab	*audit_tab_new(size_t valsize, size_t cap);
void			 audit_tab_free(struct audit_tab *t);
/*
 * The value of key, created if absent.  NULL when the table is full or
 * memory ran out (*full says which, may be NULL).  Valid until the next
 * audit_tab_get() on t.
 */
void	*audit_tab_get(struct audit_tab *t, const char *key, size_t klen,
	    bool *full);
/* The value of key, or NULL: never creates one. */
void	*audit_tab_find(const struct audit_tab *t, const char *key,
	    size_t klen);
size_t	 audit_tab_count(const struct audit_tab *t);
/* Every entry, in no order: an array the caller free()s; NULL if empty
 * or out of memory (*n 0). */
struct audit_tab_ent	*audit_tab_list(const struct audit_tab *t, size_t *n);

/* Builds a key of parts separated by NUL bytes into buf.  Returns its
 * length, or 0 if it does not fit. */
size_t	audit_tab_key(char *buf, size_t cap, const char *const *parts,
	    size_t nparts);

/* --- audit_cmd.c: options, files, filters --------------------------- */

struct audit_opts {
	char		**files;	/* "-" for standard input */
	size_t		  nfiles;
	const char	 *sandboxes[AUDIT_SANDBOXES_MAX];
	size_t		  nsandboxes;
	char		  since[AUDIT_TS_LEN + 1];	/* "" or a ts */
	char		  until[AUDIT_TS_LEN + 1];
	bool		  json;
	size_t		  top;		/* rows per list */
	size_t		  group;	/* suggest: siblings for a wildcard */
	const char	 *policy;	/* replay --policy FILE */
	const char	 *allow_private[AUDIT_SANDBOXES_MAX];
	size_t		  nallow_private;
	const char	 *start_hash;	/* verify --start */
	const char	 *end_hash;	/* verify --end */
	/* Loads a config or policy file as `moat check FILE` does,
	 * printing its diagnostics; NULL on error. */
	struct moat_config	*(*load)(const char *file);
};

/* What the reader tells a command's fold about where it is. */
struct audit_where {
	const char	*file;
	uint64_t	 lineno;
};

/* A command's fold over the lines that pass the filters. */
typedef int	(*audit_fold_fn)(void *arg, const struct audit_ln *l,
		    const struct audit_where *w);

/*
 * Reads every file of o in order, scans each line and hands those that
 * pass --sandbox, --since and --until to fold.  Lines that cannot be read
 * or scanned are named on stderr (FILE:LINE: why; the first
 * AUDIT_BAD_SHOWN, then counted) and skipped.  Returns the number of such
 * lines and files, or -1 when fold returned -1 (out of memory).
 */
long	audit_cmd_read(const struct audit_opts *o, audit_fold_fn fold,
	    void *arg);

/* `moat audit ...`: argv[0] is "moat audit". */
int	audit_cmd_main(int argc, char *argv[],
	    struct moat_config *(*load)(const char *file));

/*
 * Parses a --since/--until value into the audit ts form (out has
 * AUDIT_TS_LEN + 1 bytes): "2026-11-29", "2026-11-29T13:42",
 * "2026-11-29T13:42:38" (with ".mmm" and "Z" optional; UTC), or a time
 * before now_s: "90s", "30m", "12h", "7d".  Returns 0 or -1.
 */
int	audit_cmd_time(const char *arg, int64_t now_s, char *out);

/* Writes s to f with every byte that is not printable ASCII as \xNN. */
void	audit_cmd_puts(FILE *f, const char *s);

/* --- audit_summary.c ------------------------------------------------ */

struct audit_summary;

struct audit_summary	*audit_summary_new(void);
void			 audit_summary_free(struct audit_summary *sm);
/* Folds one line in (an audit_fold_fn).  0, or -1 out of memory. */
int	audit_summary_fold(void *sm, const struct audit_ln *l,
	    const struct audit_where *w);
/* The summary as JSON (a new reference), top rows per list. */
json_t	*audit_summary_json(const struct audit_summary *sm, size_t top);
/* The summary as text on f. */
void	audit_summary_text(const struct audit_summary *sm, size_t top,
	    FILE *f);
int	audit_summary_main(const struct audit_opts *o);

/* --- audit_replay.c ------------------------------------------------- */

/* A recorded decision, judged again. */
enum audit_judged {
	AUDIT_J_SKIP = 0,	/* not a decision the policy makes */
	AUDIT_J_SAME,
	AUDIT_J_TO_DENY,	/* allowed (or would-denied) -> refused */
	AUDIT_J_TO_ALLOW,	/* refused -> allowed */
	AUDIT_J_REASON		/* refused before and after, for another
				   reason */
};

struct audit_judgement {
	enum audit_judged	 what;
	bool			 was_allowed;	/* recorded allow (a would-deny
						   counts as allowed) */
	bool			 now_allowed;
	const char		*reason;	/* now: policy_reason_str() */
	const char		*rule;		/* now: borrowed from c, or NULL */
	const char		*skip;		/* AUDIT_J_SKIP: why, static */
};

/*
 * Judges l again under c, as moatd would decide on it: the name (port 0
 * for DNS queries), then the address dialled (ip, or each address of a
 * DNS answer); a request with its method and path; needs-inspection,
 * needs-tls and the git preset as `moat explain` applies them.  Fills *j;
 * returns j->what.
 */
enum audit_judged	audit_replay_judge(const struct moat_config *c,
			    const struct audit_ln *l,
			    struct audit_judgement *j);
int	audit_replay_main(const struct audit_opts *o);

/* --- audit_suggest.c ------------------------------------------------ */

#define AUDIT_GROUP_DEFAULT	3	/* siblings that make "*.parent" */

struct audit_suggest;

struct audit_suggest	*audit_suggest_new(void);
void			 audit_suggest_free(struct audit_suggest *sg);
int	audit_suggest_fold(void *sg, const struct audit_ln *l,
	    const struct audit_where *w);
/*
 * The suggested {"policy": ...} (a new reference), siblings grouped under
 * "*.parent" when at least group of them (0: never), allow_private from
 * the caller (ap[0..nap)).  NULL and err on failure (memory).
 */
json_t	*audit_suggest_policy(const struct audit_suggest *sg, size_t group,
	    const char *const *ap, size_t nap, char *err, size_t errlen);
/*
 * Loads the suggestion (as a policy for a running moatd: its CA serves
 * the rules with methods) and judges every distinct decision sg recorded
 * as allowed against it.  Returns the number that it would refuse (each
 * named on f), or -1 when it does not load (the diagnostics on f).
 */
long	audit_suggest_check(const struct audit_suggest *sg,
	    const json_t *policy, FILE *f);
int	audit_suggest_main(const struct audit_opts *o);

/* --- audit_verify.c ------------------------------------------------- */

struct audit_verify;

/* A verifier writing its findings to f; start_hash/end_hash may be NULL. */
struct audit_verify	*audit_verify_new(FILE *f, const char *start_hash,
			    const char *end_hash, char *err, size_t errlen);
void			 audit_verify_free(struct audit_verify *v);
/* One raw line (as read, without its newline) at w. */
void	audit_verify_line(struct audit_verify *v, const char *line,
	    size_t len, const struct audit_where *w);
/*
 * The end of the input: the findings still pending, the summary.
 * Returns AUDIT_EXIT_OK (intact), AUDIT_EXIT_CHANGED (tampered) or
 * AUDIT_EXIT_ERROR (nothing chained was read).
 */
int	audit_verify_end(struct audit_verify *v);
int	audit_verify_main(const struct audit_opts *o);

/* SHA-256 of the chain (libmd, loaded on first use): hex into out (65
 * bytes).  Returns 0, or -1 and err when libmd cannot be loaded. */
int	audit_verify_sha256(const void *const *parts, const size_t *lens,
	    size_t nparts, char *out, char *err, size_t errlen);

#endif /* MOAT_AUDIT_CMD_H */
