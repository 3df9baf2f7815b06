/*
 * util.h - small helpers shared by moatd's modules: monotonic and wall
 * clocks, file descriptor flags, checked allocation, threads and event
 * bases.
 */
#ifndef MOAT_UTIL_H
#define MOAT_UTIL_H

#include <sys/time.h>

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

struct event_base;

/* evbuffer_add() of a string literal, its length counted by the compiler
 * (LIT_LEN, config.h). */
#define EVBUFFER_ADD_LIT(b, s)	evbuffer_add((b), "" s "", LIT_LEN(s))

/*
 * For a large buffer on a hot path that is written before it is read:
 * exempt from -ftrivial-auto-var-init=zero (configure's hardening), which
 * would clear it on every call.  Compilers without the attribute have no
 * such option either.
 */
#if defined(__has_attribute)
#if __has_attribute(uninitialized)
#define UTIL_NOINIT	__attribute__((uninitialized))
#endif
#endif
#ifndef UTIL_NOINIT
#define UTIL_NOINIT
#endif

/* Clears n bytes at p (a secret) so that the compiler cannot drop it. */
void		util_wipe(void *p, size_t n);

/* Milliseconds on CLOCK_MONOTONIC.  Never fails on Linux. */
uint64_t	util_now_ms(void);
/* ms milliseconds as a struct timeval (for event_add and friends). */
struct timeval	util_ms_tv(uint64_t ms);
/*
 * Formats the wall clock as RFC 3339 UTC with milliseconds
 * ("2026-11-29T11:30:20.123Z") into buf (at least 25 bytes).  Returns buf.
 */
char		*util_wallclock(char *buf, size_t len);

/* Sets O_NONBLOCK / FD_CLOEXEC.  Return 0, or -1 with errno. */
int		util_set_nonblock(int fd);
/*
 * Writes in[0..len) percent-encoded into out (room for 3 * len bytes, no
 * NUL): every byte but ALPHA, DIGIT, "-", ".", "_" and "~" as "%XX"
 * (upper-case hex), so the result is safe anywhere in a request target.
 * Returns the length written.
 */
size_t		util_pct_encode(const uint8_t *in, size_t len, char *out);
int		util_set_cloexec(int fd);
/* Closes fd if it is >= 0, keeping errno.  Returns -1 for assignment. */
int		util_close(int fd);

/*
 * TCP keepalive on fd: a peer that vanished without a word (a host gone,
 * a black-holed path, a NAT that forgot the flow) is found after
 * UTIL_KEEPALIVE_IDLE_S of silence plus UTIL_KEEPALIVE_CNT unanswered
 * probes UTIL_KEEPALIVE_INTVL_S apart (2 minutes), instead of never.  On
 * a listening socket, accepted sockets inherit it.  Returns 0, or -1 with
 * errno.
 */
#define UTIL_KEEPALIVE_IDLE_S	60
#define UTIL_KEEPALIVE_INTVL_S	10
#define UTIL_KEEPALIVE_CNT	6
int		util_tcp_keepalive(int fd);

/*
 * Parses an octal mode string of 3 or 4 digits ("0660").  Returns the mode,
 * or -1.
 */
int		util_parse_mode(const char *s);

/* Constant-time comparison of two byte strings; 1 if equal. */
int		util_timingsafe_eq(const void *a, size_t alen, const void *b,
		    size_t blen);

/*
 * Starts a thread that takes no signal (signals are the main thread's).
 * Returns 0, or -1 with errno.
 */
int		util_thread_start(pthread_t *t, void *(*fn)(void *), void *arg);
/*
 * An event base with flags (EVENT_BASE_FLAG_*), which no EVENT_NO*
 * variable in moatd's environment steers (EVENT_BASE_FLAG_IGNORE_ENV;
 * each lookup also cost four id system calls).  NULL if it fails.
 */
struct event_base *util_base_new(int flags);

/* Binds and listens on a Unix socket path, replacing a stale one. */
int	util_bind_unix(const char *path, int mode, int backlog,
	    const char *what, char *err, size_t errlen);

#endif /* MOAT_UTIL_H */
