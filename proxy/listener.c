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
#include <netinet/tcp.h>
#include <arpa/inet.h>

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "certs/ssldl.h"
#include "policy/policy.h"
#include "proxy/listener.h"
#include "proxy/sandbox.h"
#include "proxy/secret.h"
#include "proxy/upstream.h"
#include "proxy/util.h"

#define LISTEN_BACKLOG	4096

static int	listener_bind_tcp(const struct moat_listen *ml, int type,
		    char *err, size_t errlen);
static struct sandbox *listener_sandbox(struct listener *head,
		    const char *name);
static int	listener_claim(const struct moat_listen *ml, int udp, char *err,
		    size_t errlen);
static int	listener_bind_unix(const struct moat_listen *ml, char *err,
		    size_t errlen);
static void	listener_free(struct listener *l);
static int	listener_read_auth(const struct moat_config *cfg, size_t i,
		    struct listener *l, char *err, size_t errlen);

static int
listener_bind_tcp(const struct moat_listen *ml, int type, char *err,
    size_t errlen)
{
	struct sockaddr_storage	ss;
	socklen_t		slen;
	int			fd, one = 1;

	slen = upstream_sockaddr(&ml->host.addr, ml->port, &ss);
	fd = socket(ss.ss_family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
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
	/* Accepted sockets inherit TCP_NODELAY and keepalive: set once
	 * per listener instead of once per connection. */
	if (type == SOCK_STREAM) {
		(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one,
		    sizeof(one));
		(void)util_tcp_keepalive(fd);
	}
	if (bind(fd, (struct sockaddr *)&ss, slen) == -1) {
		snprintf(err, errlen, "%s: cannot bind: %s%s", ml->address,
		    strerror(errno), errno == EADDRINUSE ? " (another process "
		    "listens there)" : errno == EACCES ? " (ports below 1024 "
		    "need root)" : "");
		close(fd);
		return -1;
	}
	if (type == SOCK_STREAM && listen(fd, LISTEN_BACKLOG) == -1) {
		snprintf(err, errlen, "%s: listen: %s", ml->address,
		    strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * Claims a TCP or UDP address for this moatd alone, before its workers
 * bind it with SO_REUSEPORT (which would let any process of the same user
 * share the port, and the kernel would hand it a share of the traffic):
 *
 * 1. a lock, an abstract Unix socket named after the address, held for
 *    moatd's life: of two moatds starting at once on one address in one
 *    network namespace, the second fails here;
 * 2. a probe, a socket bound to the address without SO_REUSEPORT: it
 *    fails if anyone at all serves the address already (another moatd, or
 *    any program with or without SO_REUSEPORT, on this address or on the
 *    wildcard one).
 *
 * Returns the lock (closed with the listener), or -1 with a message.
 */
static int
listener_claim(const struct moat_listen *ml, int udp, char *err,
    size_t errlen)
{
	struct sockaddr_storage	 ss;
	struct sockaddr_un	 sun;
	char			 a[INET6_ADDRSTRLEN];
	const void		*ip;
	socklen_t		 slen, nlen;
	int			 lock, probe, one = 1, r, saved;

	slen = upstream_sockaddr(&ml->host.addr, ml->port, &ss);
	ip = ss.ss_family == AF_INET ?
	    (const void *)&((struct sockaddr_in *)&ss)->sin_addr :
	    (const void *)&((struct sockaddr_in6 *)&ss)->sin6_addr;
	if (inet_ntop(ss.ss_family, ip, a, sizeof(a)) == NULL)
		a[0] = '\0';
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	r = snprintf(sun.sun_path + 1, sizeof(sun.sun_path) - 1,
	    "moatd-listen/%s/[%s]:%u", udp ? "udp" : "tcp", a, ml->port);
	nlen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
	    (size_t)r);
	if ((lock = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) == -1) {
		snprintf(err, errlen, "%s: socket: %s", ml->address,
		    strerror(errno));
		return -1;
	}
	if (bind(lock, (struct sockaddr *)&sun, nlen) == -1) {
		saved = errno;
		close(lock);
		snprintf(err, errlen, "%s: %s", ml->address, saved ==
		    EADDRINUSE ? "another moatd serves this address already; "
		    "stop it, or give this one another address" :
		    strerror(saved));
		return -1;
	}
	probe = socket(ss.ss_family, (udp ? SOCK_DGRAM : SOCK_STREAM) |
	    SOCK_CLOEXEC, 0);
	/* TCP: SO_REUSEADDR only passes over TIME_WAIT, never a listener;
	 * on UDP it would share the port, so not there. */
	if (probe == -1 || (!udp && setsockopt(probe, SOL_SOCKET,
	    SO_REUSEADDR, &one, sizeof(one)) == -1) ||
	    (ss.ss_family == AF_INET6 && setsockopt(probe, IPPROTO_IPV6,
	    IPV6_V6ONLY, &one, sizeof(one)) == -1) ||
	    bind(probe, (struct sockaddr *)&ss, slen) == -1) {
		saved = errno;
		util_close(probe);
		close(lock);
		snprintf(err, errlen, "%s: cannot bind: %s%s", ml->address,
		    strerror(saved), saved == EADDRINUSE ? " (another process "
		    "serves this address already; moatd does not share it)" :
		    saved == EACCES ? " (ports below 1024 need root)" : "");
		return -1;
	}
	close(probe);
	return lock;
}

/* Binds a Unix socket listener (util_bind_unix says how). */
static int
listener_bind_unix(const struct moat_listen *ml, char *err, size_t errlen)
{
	return util_bind_unix(ml->path, ml->mode, LISTEN_BACKLOG, ml->address,
	    err, errlen);
}

/* The sandbox named name of an earlier listener, or a new one. */
static struct sandbox *
listener_sandbox(struct listener *head, const char *name)
{
	struct listener	*l;

	for (l = head; l != NULL; l = l->next)
		if (l->sb != NULL && strcmp(l->sb->name, name) == 0)
			return sandbox_ref(l->sb);
	return sandbox_new(name, NULL);
}

struct listener *
listener_bind_all(const struct moat_config *cfg, size_t nworkers, char *err,
    size_t errlen)
{
	struct listener	*head = NULL, **tail = &head, *l;
	size_t		 i, j;
	int		 pass, npass;

	err[0] = '\0';
	for (i = 0; i < cfg->nlisten; i++) {
		const struct moat_listen *ml = &cfg->listen[i];

		/* "dns" serves UDP and TCP: two listeners, one address. */
		npass = ml->proto == MOAT_PROTO_DNS ? 2 : 1;
		for (pass = 0; pass < npass; pass++) {
			if ((l = calloc(1, sizeof(*l))) == NULL)
				goto nomem;
			l->lockfd = -1;
			*tail = l;
			tail = &l->next;
			atomic_init(&l->refcnt, 1);
			l->proto = ml->proto;
			l->udp = ml->proto == MOAT_PROTO_DNS && pass == 0;
			l->address = strdup(ml->address);
			l->sb = listener_sandbox(head,
			    ml->sandbox ? ml->sandbox : "default");
			l->nfds = ml->is_unix ? 1 : nworkers;
			l->inherits = !ml->is_unix && !l->udp;
			l->connections = ml->connections;
			l->connect_refusal = ml->connect_refusal;
			l->index = i;
			l->fds = calloc(l->nfds, sizeof(*l->fds));
			if (l->address == NULL || l->sb == NULL ||
			    l->fds == NULL)
				goto nomem;
			l->sandbox = l->sb->name;
			for (j = 0; j < l->nfds; j++)
				l->fds[j] = -1;
			if (!ml->is_unix && (l->lockfd = listener_claim(ml,
			    l->udp, err, errlen)) == -1)
				goto fail;
			for (j = 0; j < l->nfds; j++) {
				l->fds[j] = ml->is_unix ?
				    listener_bind_unix(ml, err, errlen) :
				    listener_bind_tcp(ml, l->udp ? SOCK_DGRAM :
				    SOCK_STREAM, err, errlen);
				if (l->fds[j] == -1)
					goto fail;
			}
			if (ml->is_unix &&
			    (l->unix_path = strdup(ml->path)) == NULL)
				goto nomem;
			if (listener_read_auth(cfg, i, l, err, errlen) == -1)
				goto fail;
		}
	}
	return head;
 nomem:
	snprintf(err, errlen, "out of memory");
 fail:
	listener_free_all(head);
	return NULL;
}

/* Reads the tokens of listen[i].auth into l. */
static int
listener_read_auth(const struct moat_config *cfg, size_t i, struct listener *l,
    char *err, size_t errlen)
{
	const struct moat_listen	*ml = &cfg->listen[i];
	size_t				 j;
	char				 e[256];

	if (ml->nauth == 0)
		return 0;
	/* Logins come base64'd (Basic): OpenSSL decodes them. */
	if (ssldl_load(e, sizeof(e)) == -1) {
		snprintf(err, errlen, "%s:%d:%d: listen[%zu].auth: %s",
		    cfg->file, ml->auth[0].line, ml->auth[0].column, i, e);
		return -1;
	}
	if ((l->auth = calloc(ml->nauth, sizeof(*l->auth))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (j = 0; j < ml->nauth; j++) {
		l->nauth = j + 1;
		if ((l->auth[j].user = strdup(ml->auth[j].name)) == NULL) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		l->auth[j].token = secret_read(&ml->auth[j],
		    &l->auth[j].token_len, e, sizeof(e));
		if (l->auth[j].token == NULL) {
			snprintf(err, errlen, "%s:%d:%d: listen[%zu].auth: %s",
			    cfg->file, ml->auth[j].line, ml->auth[j].column, i,
			    e);
			return -1;
		}
	}
	return 0;
}

struct listener *
listener_from_fd(const char *proto, int fd, struct sandbox *sb, char *err,
    size_t errlen)
{
	static const struct {
		const char		*name;
		enum moat_listen_proto	 proto;
		int			 udp;
	} protos[] = {
		{ "http", MOAT_PROTO_HTTP, 0 },
		{ "socks5", MOAT_PROTO_SOCKS5, 0 },
		{ "http+socks5", MOAT_PROTO_MIXED, 0 },
		{ "transparent", MOAT_PROTO_TRANSPARENT, 0 },
		{ "dns-udp", MOAT_PROTO_DNS, 1 },
		{ "dns-tcp", MOAT_PROTO_DNS, 0 },
	};
	struct listener		*l = NULL;
	struct sockaddr_storage	 ss;
	socklen_t		 slen = sizeof(ss), olen;
	char			 host[INET6_ADDRSTRLEN], text[INET6_ADDRSTRLEN + 16];
	int			 type = 0, acc = 0;
	size_t			 i;

	for (i = 0; i < sizeof(protos) / sizeof(protos[0]); i++)
		if (strcmp(proto, protos[i].name) == 0)
			break;
	if (i == sizeof(protos) / sizeof(protos[0])) {
		snprintf(err, errlen, "unknown listener proto \"%.32s\"", proto);
		goto fail;
	}
	olen = sizeof(type);
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &olen) == -1 ||
	    getsockname(fd, (struct sockaddr *)&ss, &slen) == -1) {
		snprintf(err, errlen, "%s: not a socket: %s", proto,
		    strerror(errno));
		goto fail;
	}
	if (type != (protos[i].udp ? SOCK_DGRAM : SOCK_STREAM)) {
		snprintf(err, errlen, "%s: wrong socket type (want %s)", proto,
		    protos[i].udp ? "UDP" : "a stream");
		goto fail;
	}
	if (!protos[i].udp) {
		olen = sizeof(acc);
		if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &olen) ==
		    -1 || !acc) {
			snprintf(err, errlen, "%s: the socket is not listening",
			    proto);
			goto fail;
		}
	}
	if (ss.ss_family == AF_INET || ss.ss_family == AF_INET6) {
		const void *a = ss.ss_family == AF_INET ?
		    (const void *)&((struct sockaddr_in *)&ss)->sin_addr :
		    (const void *)&((struct sockaddr_in6 *)&ss)->sin6_addr;
		unsigned port = ntohs(ss.ss_family == AF_INET ?
		    ((struct sockaddr_in *)&ss)->sin_port :
		    ((struct sockaddr_in6 *)&ss)->sin6_port);

		inet_ntop(ss.ss_family, a, host, sizeof(host));
		snprintf(text, sizeof(text), ss.ss_family == AF_INET ?
		    "%s:%u" : "[%s]:%u", host, port);
	} else if (ss.ss_family == AF_UNIX && !protos[i].udp &&
	    protos[i].proto != MOAT_PROTO_TRANSPARENT) {
		snprintf(text, sizeof(text), "unix");
	} else {
		snprintf(err, errlen, "%s: unsupported address family %d",
		    proto, ss.ss_family);
		goto fail;
	}
	if (util_set_nonblock(fd) == -1 || util_set_cloexec(fd) == -1) {
		snprintf(err, errlen, "%s: fcntl: %s", proto, strerror(errno));
		goto fail;
	}
	if ((l = calloc(1, sizeof(*l))) != NULL)
		l->lockfd = -1;		/* no claim: the sandbox bound it */
	if (l == NULL || (l->fds = calloc(1, sizeof(*l->fds))) == NULL ||
	    (l->address = strdup(text)) == NULL) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	atomic_init(&l->refcnt, 1);
	l->proto = protos[i].proto;
	l->udp = protos[i].udp;
	l->sb = sandbox_ref(sb);
	l->sandbox = sb->name;
	l->fds[0] = fd;
	l->nfds = 1;
	l->held = 1;
	return l;
 fail:
	if (l != NULL) {
		free(l->fds);
		free(l->address);
		free(l);
	}
	close(fd);
	return NULL;
}

struct listener *
listener_ref(struct listener *l)
{
	atomic_fetch_add(&l->refcnt, 1);
	return l;
}

void
listener_unref(struct listener *l)
{
	if (l != NULL && atomic_fetch_sub(&l->refcnt, 1) == 1)
		listener_free(l);
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
	util_close(l->lockfd);
	if (l->unix_path != NULL)
		unlink(l->unix_path);
	for (i = 0; i < l->nauth; i++) {
		free(l->auth[i].user);
		secret_free(l->auth[i].token, l->auth[i].token_len);
	}
	free(l->auth);
	free(l->fds);
	free(l->address);
	sandbox_unref(l->sb);
	free(l->unix_path);
	free(l);
}

void
listener_free_all(struct listener *l)
{
	struct listener	*n;

	for (; l != NULL; l = n) {
		n = l->next;
		listener_unref(l);
	}
}

bool
listener_audit_only(const struct listener *l, const struct sandbox *sb,
    const struct moat_config *cfg)
{
	const struct moat_listen	*ml;

	/* The listener by its place, if the config still has it there
	 * (changes to "listen" need a restart: moatd.c). */
	if (l != NULL && !l->held && cfg != NULL && l->index < cfg->nlisten) {
		ml = &cfg->listen[l->index];
		if (ml->audit_only != -1 && ml->proto == l->proto &&
		    strcmp(ml->address, l->address) == 0)
			return ml->audit_only == 1;
	}
	if (sb != NULL && sb->cfg != NULL && sb->cfg->audit_only != -1)
		return sb->cfg->audit_only == 1;
	return cfg != NULL && cfg->audit_only == 1;
}
