/*
 * log.h - moatd's diagnostic log (not the audit log: see audit.h).
 *
 * Lines go to stderr, one write(2) each, so lines from several threads never
 * interleave: "moatd[PID]: LEVEL: message".  log_warn() appends
 * strerror(errno) and keeps errno.  fatal*() log and exit(1); they are for
 * start-up and broken internal invariants only, never for what a client or
 * upstream sent.  Peer-controlled text must go through log_escape() first.
 */
#ifndef MOAT_LOG_H
#define MOAT_LOG_H

#include <stdarg.h>
#include <stddef.h>

enum log_level {
	LOG_LVL_ERROR = 0,
	LOG_LVL_WARN,
	LOG_LVL_INFO,
	LOG_LVL_DEBUG
};

/* Sets the program name shown on each line and the most verbose level
 * printed (default LOG_LVL_INFO).  Call before threads start. */
void	log_init(const char *progname, enum log_level max);
/* Returns nonzero when debug lines are printed (to skip building them). */
int	log_debug_enabled(void);

void	log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void	log_warnx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void	log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void	log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void	fatal(const char *fmt, ...)
	    __attribute__((format(printf, 1, 2), noreturn));
void	fatalx(const char *fmt, ...)
	    __attribute__((format(printf, 1, 2), noreturn));

/*
 * Copies at most inlen bytes of untrusted text into out (size outlen,
 * always NUL-terminated), replacing bytes outside printable ASCII, '"'
 * and '\\' with \xNN escapes, and marking truncation with "...".
 * Returns out.
 */
char	*log_escape(const char *in, size_t inlen, char *out, size_t outlen);

#endif /* MOAT_LOG_H */
