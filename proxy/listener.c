/*
 * listener.c - bind the listening sockets of moatd.
 *
 * Runs once, in the main thread, before privileges are dropped: that is
 * the only moment moatd may need root (ports below 1024, socket paths in
 * /run).  Reloads keep these sockets.
 */
#include "config.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <netinet/in.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "policy/policy.h"
#include "proxy/listener.h"
#include "proxy/secret.h"
#include "proxy/upstream.h"
#include "proxy/util.h"

#define LISTEN_BACKLOG	4096

static int	listener_bind_tcp(const struct moat_listen *ml, char *err,
		    size_t errlen);
static int	listener_bind_unix(const struct moat_listen *ml, char *err,
		    size_t errlen);
static void	listener_free(struct listener *l);

static int
listener_bind_tcp(const struct moat_listen *ml, char *err, size_t errlen)
{
	struct sockaddr_storage	ss;
	socklen_t		slen;
	int			fd, one = 1;

	slen = upstream_sockaddr(&ml->host.addr, ml->port, &ss);
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0);
	if (fd == -1) {
		snprintf(err, errlen, "%s: socket: %s", ml->address,
		    strerror(errno));
		return -1;
	}
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == -1 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) == -1 ||
	    (ss.ss_family == AF_INET6 && setsockopt(fd, IPPROTO_IPV6,
	    IPV6_V6ONLY, &one, sizeof(one)) == -1)) {
		snprintf(err, errlen, "%s: setsockopt: %s", ml->address,
		    strerror(errno));
		close(fd);
		return -1;
	}
	if (bind(fd, (struct sockaddr *)&ss, slen) == -1) {
		snprintf(err, errlen, "%s: cannot bind: %s%s", ml->address,
		    strerror(errno), errno == EADDRINUSE ? " (another process "
		    "listens there)" : errno == EACCES ? " (ports below 1024 "
		    "need root)" : "");
		close(fd);
		return -1;
	}
	if (listen(fd, LISTEN_BACKLOG) == -1) {
		snprintf(err, errlen, "%s: listen: %s", ml->address,
		    strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * Binds a Unix socket.  A socket file left by a dead moatd is replaced;
 * one that someone still listens on, or a file that is not a socket, is
 * an error.  The socket is created with a private umask and then given
 * its configured mode, so it is never reachable with looser permissions.
 */
static int
listener_bind_unix(const struct moat_listen *ml, char *err, size_t errlen)
{
	struct sockaddr_un	sun;
	struct stat		st;
	mode_t			old;
	int			fd, probe;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(ml->path) >= sizeof(sun.sun_path)) {
		snprintf(err, errlen, "%s: path too long", ml->address);
		return -1;
	}
	memcpy(sun.sun_path, ml->path, strlen(ml->path));
	if (lstat(ml->path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			snprintf(err, errlen, "%s: %s exists and is not a "
			    "socket; remove it or choose another path",
			    ml->address, ml->path);
			return -1;
		}
		probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (probe != -1 && connect(probe, (struct sockaddr *)&sun,
		    sizeof(sun)) == 0) {
			close(probe);
			snprintf(err, errlen, "%s: another process listens on "
			    "%s", ml->address, ml->path);
			return -1;
		}
		util_close(probe);
		if (unlink(ml->path) == -1) {
			snprintf(err, errlen, "%s: cannot remove the stale "
			    "socket %s: %s", ml->address, ml->path,
			    strerror(errno));
			return -1;
		}
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1) {
		snprintf(err, errlen, "%s: socket: %s", ml->address,
		    strerror(errno));
		return -1;
	}
	old = umask(0177);
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		umask(old);
		snprintf(err, errlen, "%s: cannot bind: %s", ml->address,
		    strerror(errno));
		close(fd);
		return -1;
	}
	umask(old);
	if (chmod(ml->path, (mode_t)ml->mode) == -1 ||
	    listen(fd, LISTEN_BACKLOG) == -1) {
		snprintf(err, errlen, "%s: %s", ml->address, strerror(errno));
		unlink(ml->path);
		close(fd);
		return -1;
	}
	return fd;
}

struct listener *
listener_bind_all(const struct moat_config *cfg, size_t nworkers, char *err,
    size_t errlen)
{
	struct listener	*head = NULL, **tail = &head, *l;
	size_t		 i, j;

	for (i = 0; i < cfg->nlisten; i++) {
		const struct moat_listen *ml = &cfg->listen[i];

		if (ml->proto == MOAT_PROTO_DNS ||
		    ml->proto == MOAT_PROTO_TRANSPARENT) {
			snprintf(err, errlen, "%s:%d:%d: listen[%zu]: proto "
			    "\"%s\" is not served by this moatd yet", cfg->file,
			    ml->line, ml->column, i, policy_proto_str(ml->proto));
			goto fail;
		}
		if ((l = calloc(1, sizeof(*l))) == NULL)
			goto nomem;
		*tail = l;
		tail = &l->next;
		l->proto = ml->proto;
		l->address = strdup(ml->address);
		l->sandbox = strdup(ml->sandbox ? ml->sandbox : "default");
		l->nfds = ml->is_unix ? 1 : nworkers;
		l->fds = calloc(l->nfds, sizeof(*l->fds));
		if (l->address == NULL || l->sandbox == NULL || l->fds == NULL)
			goto nomem;
		for (j = 0; j < l->nfds; j++)
			l->fds[j] = -1;
		for (j = 0; j < l->nfds; j++) {
			l->fds[j] = ml->is_unix ?
			    listener_bind_unix(ml, err, errlen) :
			    listener_bind_tcp(ml, err, errlen);
			if (l->fds[j] == -1)
				goto fail;
		}
		if (ml->is_unix && (l->unix_path = strdup(ml->path)) == NULL)
			goto nomem;
		if (ml->nauth > 0) {
			l->auth = calloc(ml->nauth, sizeof(*l->auth));
			if (l->auth == NULL)
				goto nomem;
			for (j = 0; j < ml->nauth; j++) {
				char e[256];

				l->auth[j].user = strdup(ml->auth[j].name);
				if (l->auth[j].user == NULL)
					goto nomem;
				l->auth[j].token = secret_read(&ml->auth[j],
				    &l->auth[j].token_len, e, sizeof(e));
				if (l->auth[j].token == NULL) {
					snprintf(err, errlen, "%s:%d:%d: "
					    "listen[%zu].auth: %s", cfg->file,
					    ml->auth[j].line, ml->auth[j].column,
					    i, e);
					l->nauth = j + 1;
					goto fail;
				}
				l->nauth = j + 1;
			}
		}
	}
	return head;
 nomem:
	snprintf(err, errlen, "out of memory");
 fail:
	listener_free_all(head);
	return NULL;
}

const struct listener_auth *
listener_auth_find(const struct listener *l, const char *user)
{
	size_t	i;

	for (i = 0; i < l->nauth; i++)
		if (strcmp(l->auth[i].user, user) == 0)
			return &l->auth[i];
	return NULL;
}

static void
listener_free(struct listener *l)
{
	size_t	i;

	for (i = 0; l->fds != NULL && i < l->nfds; i++)
		util_close(l->fds[i]);
	if (l->unix_path != NULL)
		unlink(l->unix_path);
	for (i = 0; i < l->nauth; i++) {
		free(l->auth[i].user);
		secret_free(l->auth[i].token, l->auth[i].token_len);
	}
	free(l->auth);
	free(l->fds);
	free(l->address);
	free(l->sandbox);
	free(l->unix_path);
	free(l);
}

void
listener_free_all(struct listener *l)
{
	struct listener	*n;

	for (; l != NULL; l = n) {
		n = l->next;
		listener_free(l);
	}
}
