/*
 * util.c - clocks, descriptor flags, small parsers.
 */
#include "config.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "proxy/util.h"

uint64_t
util_now_ms(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

struct timeval
util_ms_tv(uint64_t ms)
{
	struct timeval	tv;

	tv.tv_sec = (time_t)(ms / 1000);
	tv.tv_usec = (suseconds_t)(ms % 1000) * 1000;
	return tv;
}

char *
util_wallclock(char *buf, size_t len)
{
	struct timespec	ts;
	struct tm	tm;
	char		tmp[32];

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(tmp, sizeof(tmp), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, len, "%s.%03ldZ", tmp, ts.tv_nsec / 1000000);
	return buf;
}

int
util_set_nonblock(int fd)
{
	int	fl;

	if ((fl = fcntl(fd, F_GETFL)) == -1)
		return -1;
	if (fl & O_NONBLOCK)
		return 0;
	return fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

int
util_set_cloexec(int fd)
{
	int	fl;

	if ((fl = fcntl(fd, F_GETFD)) == -1)
		return -1;
	return fcntl(fd, F_SETFD, fl | FD_CLOEXEC);
}

int
util_close(int fd)
{
	int	saved = errno;

	if (fd >= 0)
		close(fd);
	errno = saved;
	return -1;
}

void
util_wipe(void *p, size_t n)
{
	if (p == NULL || n == 0)
		return;
#ifdef HAVE_EXPLICIT_BZERO
	explicit_bzero(p, n);
#else
	{
		volatile unsigned char *v = p;

		while (n-- > 0)
			*v++ = 0;
	}
#endif
}

int
util_tcp_keepalive(int fd)
{
	int	one = 1, idle = UTIL_KEEPALIVE_IDLE_S;
	int	intvl = UTIL_KEEPALIVE_INTVL_S, cnt = UTIL_KEEPALIVE_CNT;

	if (setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle,
	    sizeof(idle)) == -1 ||
	    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl,
	    sizeof(intvl)) == -1 ||
	    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt)) == -1 ||
	    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one)) == -1)
		return -1;
	return 0;
}

int
util_parse_mode(const char *s)
{
	size_t	n = strlen(s), i;
	int	mode = 0;

	if (n < 3 || n > 4)
		return -1;
	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '7')
			return -1;
		mode = mode * 8 + (s[i] - '0');
	}
	return mode;
}

int
util_timingsafe_eq(const void *a, size_t alen, const void *b, size_t blen)
{
	const unsigned char	*pa = a, *pb = b;
	unsigned char		 diff = 0;
	size_t			 i;

	if (alen != blen)
		return 0;
	for (i = 0; i < alen; i++)
		diff |= pa[i] ^ pb[i];
	return diff == 0;
}

int
util_thread_start(pthread_t *t, void *(*fn)(void *), void *arg)
{
	sigset_t	all, old;
	int		rc;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	rc = pthread_create(t, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		errno = rc;
		return -1;
	}
	return 0;
}

struct event_base *
util_base_new(int flags)
{
	struct event_config	*ec;
	struct event_base	*b;

	if ((ec = event_config_new()) == NULL)
		return NULL;
	event_config_set_flag(ec, flags | EVENT_BASE_FLAG_IGNORE_ENV);
	b = event_base_new_with_config(ec);
	event_config_free(ec);
	return b;
}

size_t
util_pct_encode(const uint8_t *in, size_t len, char *out)
{
	static const char	hex[] = "0123456789ABCDEF";
	size_t			i, n = 0;
	uint8_t			b;

	for (i = 0; i < len; i++) {
		b = in[i];
		if ((b >= 'A' && b <= 'Z') || (b >= 'a' && b <= 'z') ||
		    (b >= '0' && b <= '9') || b == '-' || b == '.' ||
		    b == '_' || b == '~') {
			out[n++] = (char)b;
			continue;
		}
		out[n++] = '%';
		out[n++] = hex[b >> 4];
		out[n++] = hex[b & 0x0f];
	}
	return n;
}

/*
 * Binds and listens on the Unix socket path for what ("admin",
 * "metrics", a listener's address: the first word of every message).  A
 * socket file left by a dead moatd is replaced; one that someone still
 * listens on, or a file that is not a socket, is an error.  The socket is
 * created with a private umask and then given mode, so it is never
 * reachable with looser permissions.  The descriptor, or -1 with err set.
 */
int
util_bind_unix(const char *path, int mode, int backlog, const char *what,
    char *err, size_t errlen)
{
	struct sockaddr_un	sun;
	struct stat		st;
	mode_t			old;
	int			fd, probe;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sun.sun_path)) {
		snprintf(err, errlen, "%s: %s: path too long", what, path);
		return -1;
	}
	memcpy(sun.sun_path, path, strlen(path));
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			snprintf(err, errlen, "%s: %s exists and is not a "
			    "socket; remove it or choose another path", what,
			    path);
			return -1;
		}
		probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (probe != -1 && connect(probe, (struct sockaddr *)&sun,
		    sizeof(sun)) == 0) {
			close(probe);
			snprintf(err, errlen, "%s: another process listens on "
			    "%s", what, path);
			return -1;
		}
		util_close(probe);
		if (unlink(path) == -1) {
			snprintf(err, errlen, "%s: cannot remove the stale "
			    "socket %s: %s", what, path, strerror(errno));
			return -1;
		}
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1) {
		snprintf(err, errlen, "%s: socket: %s", what, strerror(errno));
		return -1;
	}
	old = umask(0177);
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		umask(old);
		snprintf(err, errlen, "%s: cannot bind %s: %s", what, path,
		    strerror(errno));
		close(fd);
		return -1;
	}
	umask(old);
	if (chmod(path, (mode_t)mode) == -1 || listen(fd, backlog) == -1) {
		snprintf(err, errlen, "%s: %s: %s", what, path,
		    strerror(errno));
		(void)unlink(path);
		close(fd);
		return -1;
	}
	return fd;
}
