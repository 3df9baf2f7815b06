/*
 * attach_listen.c - the sockets `moat attach --listen` serves: a Unix
 * socket in the file system, or a TCP port on loopback, in the namespace
 * moat attach runs in, for a program that relays its sandbox's traffic
 * itself (srt, a platform's own proxy) instead of a network namespace
 * that moat programs.
 *
 * Who may connect is who reaches the socket: a Unix socket is created
 * with no permission for anyone but its owner (umask 0177), then given
 * --owner and --listen-mode (default 0600) before it listens, so it is
 * never reachable with looser permissions; the directories above it
 * must let its users through.  A loopback port is reachable by every
 * process of the host's namespace that may connect to loopback; moatd
 * judges all of them by the registration's policy.
 *
 * What it is not: the registration (attach.c) or moatd's listeners
 * (proxy/listener.c).  Like moat run's held sockets, these are handed to
 * moatd and closed here: if moatd goes, nothing listens.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "launcher/launcher.h"

#define ATTACH_LISTEN_BACKLOG	512

/* A loopback address: 127.0.0.0/8 or ::1. */
static bool
attach_listen_loopback(const struct sockaddr_storage *ss)
{
	const struct sockaddr_in	*sin = (const void *)ss;
	const struct sockaddr_in6	*sin6 = (const void *)ss;

	if (ss->ss_family == AF_INET)
		return (ntohl(sin->sin_addr.s_addr) >> 24) == 127;
	return IN6_IS_ADDR_LOOPBACK(&sin6->sin6_addr);
}

/* "PORT" (1-65535) into *port, or -1. */
static int
attach_listen_port(const char *s, uint16_t *port)
{
	unsigned long	 v;
	char		*end;

	if (s[0] < '0' || s[0] > '9' || strlen(s) > 5)
		return -1;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno != 0 || *end != '\0' || v == 0 || v > 65535)
		return -1;
	*port = (uint16_t)v;
	return 0;
}

/* "127.0.0.1:PORT" or "[::1]:PORT" into l->ss; 0 or -1. */
static int
attach_listen_tcp(const char *arg, struct attach_listen *l)
{
	struct sockaddr_in	*sin = (void *)&l->ss;
	struct sockaddr_in6	*sin6 = (void *)&l->ss;
	char			 host[INET6_ADDRSTRLEN + 2];
	const char		*colon, *close;
	uint16_t		 port;
	size_t			 n;

	if (arg[0] == '[') {
		if ((close = strchr(arg, ']')) == NULL || close[1] != ':')
			return -1;
		n = (size_t)(close - arg - 1);
		colon = close + 1;
		arg++;
	} else {
		if ((colon = strrchr(arg, ':')) == NULL)
			return -1;
		n = (size_t)(colon - arg);
	}
	if (n == 0 || n >= sizeof(host) ||
	    attach_listen_port(colon + 1, &port) == -1)
		return -1;
	memcpy(host, arg, n);
	host[n] = '\0';
	memset(&l->ss, 0, sizeof(l->ss));
	if (inet_pton(AF_INET, host, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		l->sslen = sizeof(*sin);
	} else if (inet_pton(AF_INET6, host, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		l->sslen = sizeof(*sin6);
	} else
		return -1;
	return 0;
}

int
attach_listen_parse(const char *cmd, const char *arg, struct attach_listen *l)
{
	const struct sockaddr_un	*sun = NULL;
	const char			*path;
	size_t				 i;

	memset(l, 0, sizeof(*l));
	l->fd = -1;
	l->text = arg;
	if (STRNCMP_LIT(arg, "unix:") == 0) {
		path = arg + LIT_LEN("unix:");
		if (path[0] != '/' || strlen(path) >= sizeof(sun->sun_path)) {
			fprintf(stderr, "%s: --listen %s: a Unix socket path "
			    "must be absolute and at most %zu bytes\n", cmd,
			    arg, sizeof(sun->sun_path) - 1);
			return -1;
		}
		for (i = 0; path[i] != '\0'; i++)
			if ((unsigned char)path[i] < 0x20 || path[i] == 0x7f) {
				fprintf(stderr, "%s: --listen: a control byte "
				    "in the path\n", cmd);
				return -1;
			}
		l->is_unix = true;
		l->path = path;
		return 0;
	}
	if (attach_listen_tcp(arg, l) == -1) {
		fprintf(stderr, "%s: --listen %s: want unix:/PATH, "
		    "127.0.0.1:PORT or [::1]:PORT\n", cmd, arg);
		return -1;
	}
	if (!attach_listen_loopback(&l->ss)) {
		fprintf(stderr, "%s: --listen %s: only a loopback address "
		    "(127.0.0.0/8, ::1): moat attach --listen serves this "
		    "host; put a sandbox's own namespace behind moatd with "
		    "--netns\n", cmd, arg);
		return -1;
	}
	return 0;
}

int
attach_owner_parse(const char *cmd, const char *arg, uid_t *uid, gid_t *gid)
{
	struct passwd	*pw;
	struct group	*gr;
	char		 user[LOGIN_NAME_MAX + 1], *end;
	const char	*colon = strchr(arg, ':');
	size_t		 n = colon != NULL ? (size_t)(colon - arg) :
			    strlen(arg);
	unsigned long	 v;

	if (n == 0 || n >= sizeof(user))
		goto bad;
	memcpy(user, arg, n);
	user[n] = '\0';
	if ((pw = getpwnam(user)) != NULL) {
		*uid = pw->pw_uid;
		*gid = pw->pw_gid;
	} else {
		errno = 0;
		v = strtoul(user, &end, 10);
		if (errno != 0 || *end != '\0' || user[0] < '0' ||
		    user[0] > '9' || v >= (unsigned long)(uid_t)-1)
			goto bad;
		*uid = (uid_t)v;
		*gid = (pw = getpwuid(*uid)) != NULL ? pw->pw_gid : (gid_t)v;
	}
	if (colon == NULL)
		return 0;
	if (colon[1] == '\0')
		goto bad;
	if ((gr = getgrnam(colon + 1)) != NULL) {
		*gid = gr->gr_gid;
		return 0;
	}
	errno = 0;
	v = strtoul(colon + 1, &end, 10);
	if (errno != 0 || *end != '\0' || colon[1] < '0' || colon[1] > '9' ||
	    v >= (unsigned long)(gid_t)-1)
		goto bad;
	*gid = (gid_t)v;
	return 0;
 bad:
	fprintf(stderr, "%s: --owner %s: want USER[:GROUP] (names or "
	    "numbers)\n", cmd, arg);
	return -1;
}

int
attach_mode_parse(const char *cmd, const char *arg, int *mode)
{
	unsigned long	 v;
	char		*end;
	size_t		 n = strlen(arg), i;

	for (i = 0; i < n; i++)
		if (arg[i] < '0' || arg[i] > '7')
			break;
	if (n < 3 || n > 4 || i != n)
		goto bad;
	v = strtoul(arg, &end, 8);
	if (*end != '\0' || v > 0777)
		goto bad;
	*mode = (int)v;
	return 0;
 bad:
	fprintf(stderr, "%s: --listen-mode %s: want 3 or 4 octal digits, "
	    "permissions only (such as 0600 or 0660)\n", cmd, arg);
	return -1;
}

/*
 * A Unix socket at l->path: a stale socket (nobody listens) is replaced;
 * a socket someone listens on, or a file that is not a socket, is an
 * error.  Private until it has its owner and mode.
 */
static int
attach_listen_unix(struct attach_listen *l, int mode, uid_t uid, gid_t gid,
    char *err, size_t errlen)
{
	struct sockaddr_un	sun;
	struct stat		st;
	mode_t			old;
	int			fd, probe, rc;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	memcpy(sun.sun_path, l->path, strlen(l->path));
	if (lstat(l->path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			snprintf(err, errlen, "--listen %s: %s exists and is "
			    "not a socket; remove it or choose another path",
			    l->text, l->path);
			return -1;
		}
		probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		rc = probe == -1 ? -1 : connect(probe, (struct sockaddr *)&sun,
		    sizeof(sun));
		if (probe != -1)
			close(probe);
		if (rc == 0) {
			snprintf(err, errlen, "--listen %s: another process "
			    "listens on %s", l->text, l->path);
			return -1;
		}
		if (unlink(l->path) == -1) {
			snprintf(err, errlen, "--listen %s: cannot remove the "
			    "stale socket: %s", l->text, strerror(errno));
			return -1;
		}
	}
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1) {
		snprintf(err, errlen, "--listen %s: socket: %s", l->text,
		    strerror(errno));
		return -1;
	}
	old = umask(0177);
	rc = bind(fd, (struct sockaddr *)&sun, sizeof(sun));
	umask(old);
	if (rc == -1) {
		snprintf(err, errlen, "--listen %s: cannot bind: %s", l->text,
		    strerror(errno));
		close(fd);
		return -1;
	}
	l->fd = fd;
	if (lstat(l->path, &st) == -1) {
		snprintf(err, errlen, "--listen %s: %s", l->text,
		    strerror(errno));
		return -1;
	}
	l->made = true;
	l->dev = st.st_dev;
	l->ino = st.st_ino;
	if ((uid != (uid_t)-1 && lchown(l->path, uid, gid) == -1) ||
	    chmod(l->path, (mode_t)mode) == -1) {
		snprintf(err, errlen, "--listen %s: %s%s", l->text,
		    strerror(errno), errno == EPERM ? " (--owner needs root)" :
		    "");
		return -1;
	}
	if (listen(fd, ATTACH_LISTEN_BACKLOG) == -1) {
		snprintf(err, errlen, "--listen %s: listen: %s", l->text,
		    strerror(errno));
		return -1;
	}
	return 0;
}

/* A loopback TCP port. */
static int
attach_listen_inet(struct attach_listen *l, char *err, size_t errlen)
{
	int	one = 1;

	if ((l->fd = socket(l->ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC,
	    0)) == -1) {
		snprintf(err, errlen, "--listen %s: socket: %s", l->text,
		    strerror(errno));
		return -1;
	}
	(void)setsockopt(l->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (l->ss.ss_family == AF_INET6)
		(void)setsockopt(l->fd, IPPROTO_IPV6, IPV6_V6ONLY, &one,
		    sizeof(one));
	if (bind(l->fd, (struct sockaddr *)&l->ss, l->sslen) == -1) {
		snprintf(err, errlen, "--listen %s: cannot bind: %s%s",
		    l->text, strerror(errno), errno == EADDRINUSE ? " (another "
		    "process listens there)" : "");
		return -1;
	}
	if (listen(l->fd, ATTACH_LISTEN_BACKLOG) == -1) {
		snprintf(err, errlen, "--listen %s: listen: %s", l->text,
		    strerror(errno));
		return -1;
	}
	return 0;
}

int
attach_listen_open(struct attach_listen *l, int mode, uid_t uid, gid_t gid,
    char *err, size_t errlen)
{
	return l->is_unix ? attach_listen_unix(l, mode, uid, gid, err,
	    errlen) : attach_listen_inet(l, err, errlen);
}

void
attach_listen_close(struct attach_listen *l)
{
	if (l->fd != -1)
		close(l->fd);
	l->fd = -1;
}

void
attach_listen_remove(struct attach_listen *l)
{
	struct stat	st;

	attach_listen_close(l);
	/* Only the file this moat attach made: not one put there since. */
	if (l->made && lstat(l->path, &st) == 0 && S_ISSOCK(st.st_mode) &&
	    st.st_dev == l->dev && st.st_ino == l->ino)
		(void)unlink(l->path);
	l->made = false;
}
