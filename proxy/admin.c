/*
 * admin.c - the admin socket of moatd: `moat run`, `moat attach` and
 * sandbox platforms register sandboxes here, each with its own policy and
 * the listening sockets it holds inside its network namespace.
 *
 * Protocol: admin_proto.h.  Everything a client sends is untrusted input
 * even though only root (or moatd's own user) may connect: messages are
 * length-checked, JSON is loaded strictly, the embedded config goes
 * through the same validation as moatd's own, and descriptors are checked
 * for their type and state before any worker sees them.  A protocol error
 * ends the connection, and with it the connection's sandboxes.
 *
 * Not here: serving the sandboxes' connections (workers), validation of
 * the policy itself (policy/).
 */
#include "config.h"

#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#ifdef HAVE_MALLOC_TRIM
#include <malloc.h>
#endif
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <jansson.h>

#include "certs/certs.h"
#include "certs/ssldl.h"

#include "policy/policy.h"
#include "policy/jsonload.h"
#include "policyio/policyio.h"
#include "proxy/admin.h"
#include "proxy/adminrep.h"
#include "proto/admin_proto.h"
#include "proxy/audit.h"
#include "proxy/drops.h"
#include "proxy/listener.h"
#include "proxy/log.h"
#include "proxy/sandbox.h"
#include "proxy/secrets.h"
#include "proxy/tls.h"
#include "proxy/util.h"
#include "proxy/watch.h"
#include "proxy/worker.h"

#define ADMIN_QUEUED_FDS_MAX	(ADMIN_FDS_MAX * 2)
#define ADMIN_OUT_MAX		(4u * ADMIN_MSG_MAX) /* answers not yet read */
/*
 * Watched lines are framed into a connection's out buffer only while it
 * holds less than this: a watcher that does not read leaves the rest in
 * its watch (bounded too, and counted past that), never here, so its
 * answers still fit under ADMIN_OUT_MAX and its sandbox stays.
 */
#define ADMIN_WATCH_OUT_MAX	(256u << 10)
#define ADMIN_WATCH_MAX		16	/* watches per connection */
#define ADMIN_WATCH_NAME_MAX	256	/* a watched name, bytes */
#define ADMIN_TRUST_EXTRA_MAX	16	/* "trust_extra" files */
#define ADMIN_TRUST_NAME_MAX	512	/* the name of one, bytes */
/* What a register answer may spend on its trust bundle and store (a
 * sandbox's own CA files merged): the rest of a message is for the
 * placeholders and what else it says. */
#define ADMIN_TRUST_ANSWER_MAX	(ADMIN_MSG_MAX - (96u << 10))
#define ADMIN_TRIM_DELAY_MS	1000	/* memory given back this long after
					   a sandbox left */

#ifndef SO_NETNS_COOKIE
#define SO_NETNS_COOKIE		71
#endif

struct admin_sb {
	struct sandbox		*sb;		/* a reference */
	struct drops		*drops;		/* its drop log's reader, or NULL */
	/* The network namespaces its held sockets live in (cookies). */
	uint64_t		 netns[ADMIN_FDS_MAX];
	size_t			 nnetns;
	/* Its listeners (references), for the op list. */
	struct listener		*ls[ADMIN_FDS_MAX];
	size_t			 nls;
	LIST_ENTRY(admin_sb)	 link;
};

struct admin_conn {
	int			 fd;
	struct event		*ev;
	struct event		*wev;		/* while out is not empty */
	struct evbuffer		*in;
	struct evbuffer		*out;		/* answers a slow reader has
						   not taken yet */
	int			 fds[ADMIN_QUEUED_FDS_MAX];
	size_t			 nfds;
	int			 trusted_fd;	/* --admin-fd: the parent */
	uint64_t		 peer_netns;	/* the client's socket's network
						   namespace (cookie), 0 unknown */
	long			 peer_pid;	/* SO_PEERCRED, or -1 */
	void			(*gone)(void *);
	void			*gone_arg;
	struct watch		*watches[ADMIN_WATCH_MAX];
	size_t			 nwatches;
	LIST_HEAD(, admin_sb)	 sbs;
	LIST_ENTRY(admin_conn)	 link;
};

static struct admin_ctx		*A_ctx;
static int			 A_lfd = -1;
static char			*A_path;
static struct event		*A_lev;
static struct event		*A_trim;	/* admin_trim_cb, once armed */
/*
 * The trust members of a register answer that brings no CA files of its
 * own, as JSON text (",\"trust_pem\":...,\"trust_bundle\":..."), made
 * once per interception context, without and with "trust_store": the
 * bundle is some 200 KiB, and checking and escaping it anew for every
 * answer cost about 16 million instructions (2 ms) a registration.
 */
struct admin_trust_text {
	struct tls	*tls;		/* whose (a reference), or NULL */
	char		*text;		/* NULL: not made */
	size_t		 len;
};
static struct admin_trust_text	 A_trust[2];	/* [with the store] */
static LIST_HEAD(, admin_conn)	 A_conns = LIST_HEAD_INITIALIZER(A_conns);
static uint64_t			 A_start_ms;	/* first served, for stats */
static uint64_t			 A_reloads;	/* done (admin_reload) */

static void	admin_accept_cb(evutil_socket_t fd, short what, void *arg);
static struct admin_conn *admin_conn_new(int fd);
static void	admin_conn_free(struct admin_conn *ac);
static int	admin_geoip(json_t *doc, const struct moat_config *cfg);
static void	admin_read_cb(evutil_socket_t fd, short what, void *arg);
static void	admin_write_cb(evutil_socket_t fd, short what, void *arg);
static int	admin_flush(struct admin_conn *ac);
static int	admin_message(struct admin_conn *ac, const char *buf,
		    size_t len);
static int	admin_register(struct admin_conn *ac, json_t *req);
static int	admin_trust_check(struct admin_conn *ac, json_t *req);
static int	admin_trust(struct admin_conn *ac, json_t *req, json_t *ans,
		    const char **text, size_t *len);
static int	admin_trust_into(struct admin_conn *ac, json_t *req,
		    json_t *ans, bool *whole);
static void	admin_trust_forget(void);
static int	admin_unregister(struct admin_conn *ac, json_t *req);
static int	admin_watch(struct admin_conn *ac, json_t *req);
static int	admin_unwatch(struct admin_conn *ac, json_t *req);
static int	admin_list(struct admin_conn *ac, json_t *req);
static int	admin_stats(struct admin_conn *ac, json_t *req);
static int	admin_op_guard(struct admin_conn *ac, const char *op);
static void	admin_watch_ready(void *arg);
static void	admin_drops_drain(const char *name);
static void	admin_watch_pump(struct admin_conn *ac, struct watch *only);
static void	admin_sandbox_gone(struct admin_conn *ac, struct admin_sb *s);
static int	admin_answer(struct admin_conn *ac, json_t *ans);
static int	admin_answer_with(struct admin_conn *ac, json_t *ans,
		    const char *more, size_t morelen);
static int	admin_fail(struct admin_conn *ac, const char *fmt, ...)
		    __attribute__((format(printf, 2, 3)));
static void	admin_audit(const struct sandbox *sb, const char *what);
static int	admin_sandbox_name_ok(const char *name);
static struct sandbox *admin_find(const char *name);
static int	admin_netns(int fd, uint64_t *cookie);
static const char *admin_guarded(uint64_t cookie);
static int	admin_refuse(struct admin_conn *ac, const char *name,
		    const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int	admin_refuse_watch(struct admin_conn *ac, const char *name,
		    const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int	admin_vrefuse(struct admin_conn *ac, const char *op,
		    const char *name, const char *fmt, va_list ap)
		    __attribute__((format(printf, 4, 0)));
static void	admin_publish(const char *path);
static void	admin_prune(void);
static char	*A_entry;	/* our entry in MOAT_ADMIN_REGISTRY */

int
admin_bind(const char *path, int mode, char *err, size_t errlen)
{
	int	fd;

	if ((fd = util_bind_unix(path, mode, 64, "admin", err, errlen)) == -1)
		return -1;
	admin_publish(path);
	return fd;
}

/*
 * Removes the registry's entries whose socket path is gone (a moatd that
 * was killed), so that they do not pile up.  A live moatd's path exists:
 * it binds before it publishes.
 */
static void
admin_prune(void)
{
	struct dirent	*de;
	struct stat	 st;
	char		 path[PATH_MAX + 1];
	ssize_t		 n;
	DIR		*d;
	int		 f;

	if ((d = opendir(MOAT_ADMIN_REGISTRY)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.' || strchr(de->d_name, '.') != NULL)
			continue;
		if ((f = openat(dirfd(d), de->d_name, O_RDONLY | O_NOFOLLOW |
		    O_NONBLOCK | O_CLOEXEC)) == -1)
			continue;
		n = read(f, path, sizeof(path) - 1);
		close(f);
		if (n < 2 || path[n - 1] != '\n')
			continue;
		path[n - 1] = '\0';
		if (lstat(path, &st) == -1 && errno == ENOENT)
			(void)unlinkat(dirfd(d), de->d_name, 0);
	}
	closedir(d);
}

/*
 * Writes the admin socket's path into the registry every `moat run` reads
 * (MOAT_ADMIN_REGISTRY, admin_proto.h), so that each sandbox it makes
 * hides this socket too, not only the one it registers with: a workload
 * must never reach an admin socket.  The entry is named by a hash of the
 * path (a restart replaces its own entry; moat run skips entries whose
 * path is no longer a socket) and written whole (rename).  Done before
 * privileges are dropped; a moatd that may not write the registry (not
 * root) says so and relies on its socket's mode and the register checks.
 */
static void
admin_publish(const char *path)
{
	char		 real[PATH_MAX], tmp[PATH_MAX], *entry = NULL;
	const char	*p;
	uint64_t	 h = 0xcbf29ce484222325ULL;	/* FNV-1a */
	size_t		 len;
	int		 fd = -1;

	if (realpath(path, real) == NULL)
		return;
	for (p = real; *p != '\0'; p++)
		h = (h ^ (unsigned char)*p) * 0x100000001b3ULL;
	/* Readable by every user's moat run, whatever our umask. */
	if (mkdir(MOAT_ADMIN_RUNDIR, 0755) == 0)
		(void)chmod(MOAT_ADMIN_RUNDIR, 0755);
	if (mkdir(MOAT_ADMIN_REGISTRY, 0755) == 0)
		(void)chmod(MOAT_ADMIN_REGISTRY, 0755);
	len = strlen(real);
	real[len] = '\n';
	if (asprintf(&entry, "%s/%016llx", MOAT_ADMIN_REGISTRY,
	    (unsigned long long)h) == -1) {
		entry = NULL;
		goto fail;
	}
	snprintf(tmp, sizeof(tmp), "%s.%ld", entry, (long)getpid());
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
	    O_CLOEXEC, 0644)) == -1 || write(fd, real, len + 1) !=
	    (ssize_t)len + 1 || fchmod(fd, 0644) == -1 || close(fd) == -1) {
		if (fd != -1) {
			close(fd);
			(void)unlink(tmp);
		}
		goto fail;
	}
	if (rename(tmp, entry) == -1) {
		(void)unlink(tmp);
		goto fail;
	}
	admin_prune();
	free(A_entry);
	A_entry = entry;
	return;
 fail:
	log_info("admin: cannot list the admin socket in %s (%s): sandboxes "
	    "of moat run will not hide it; the socket's mode and the "
	    "register checks still guard it", MOAT_ADMIN_REGISTRY,
	    strerror(errno));
	free(entry);
}

int
admin_serve(struct admin_ctx *ctx, int lfd, const char *path)
{
	A_ctx = ctx;
	if (A_start_ms == 0)
		A_start_ms = util_now_ms();
	A_lfd = lfd;
	A_path = path ? strdup(path) : NULL;
	A_lev = event_new(ctx->base, lfd, EV_READ | EV_PERSIST,
	    admin_accept_cb, NULL);
	if (A_lev == NULL || event_add(A_lev, NULL) == -1)
		return -1;
	return 0;
}

int
admin_adopt(struct admin_ctx *ctx, int fd, void (*gone)(void *), void *arg)
{
	struct admin_conn	*ac;

	A_ctx = ctx;
	if (A_start_ms == 0)
		A_start_ms = util_now_ms();
	if (util_set_nonblock(fd) == -1 || util_set_cloexec(fd) == -1 ||
	    (ac = admin_conn_new(fd)) == NULL)
		return -1;
	ac->trusted_fd = 1;
	ac->gone = gone;
	ac->gone_arg = arg;
	return 0;
}

static void
admin_accept_cb(evutil_socket_t lfd, short what, void *arg)
{
	struct ucred	cred;
	socklen_t	len = sizeof(cred);
	int		fd;

	if ((fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) ==
	    -1) {
		if (errno != EAGAIN && errno != EINTR)
			log_warn("admin: accept");
		return;
	}
	/* The socket's mode is the first fence; the peer's uid the second. */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == -1 ||
	    (cred.uid != 0 && cred.uid != geteuid())) {
		log_warnx("admin: refused a client with uid %ld (only root and "
		    "moatd's own user may register sandboxes)",
		    len == sizeof(cred) ? (long)cred.uid : -1L);
		close(fd);
		return;
	}
	if (admin_conn_new(fd) == NULL) {
		log_warnx("admin: out of memory, client dropped");
		close(fd);
	}
}

/* Who is at the other end (the op list names it): a pid, or -1. */
static void
admin_peer_pid(struct admin_conn *ac)
{
	struct ucred	cred;
	socklen_t	len = sizeof(cred);

	ac->peer_pid = getsockopt(ac->fd, SOL_SOCKET, SO_PEERCRED, &cred,
	    &len) == 0 && len == sizeof(cred) && cred.pid > 0 ?
	    (long)cred.pid : -1;
}

static struct admin_conn *
admin_conn_new(int fd)
{
	struct admin_conn	*ac;

	if ((ac = calloc(1, sizeof(*ac))) == NULL)
		return NULL;
	ac->fd = fd;
	/*
	 * A Unix stream connection's accepted socket is made in the
	 * connecting socket's network namespace: its cookie says where the
	 * client is, with no race against the client's pid.
	 */
	if (admin_netns(fd, &ac->peer_netns) == -1)
		ac->peer_netns = 0;
	admin_peer_pid(ac);
	LIST_INIT(&ac->sbs);
	ac->in = evbuffer_new();
	ac->out = evbuffer_new();
	ac->ev = event_new(A_ctx->base, fd, EV_READ | EV_PERSIST,
	    admin_read_cb, ac);
	ac->wev = event_new(A_ctx->base, fd, EV_WRITE | EV_PERSIST,
	    admin_write_cb, ac);
	if (ac->in == NULL || ac->out == NULL || ac->ev == NULL ||
	    ac->wev == NULL || event_add(ac->ev, NULL) == -1) {
		if (ac->in != NULL)
			evbuffer_free(ac->in);
		if (ac->out != NULL)
			evbuffer_free(ac->out);
		if (ac->ev != NULL)
			event_free(ac->ev);
		if (ac->wev != NULL)
			event_free(ac->wev);
		free(ac);
		return NULL;
	}
	LIST_INSERT_HEAD(&A_conns, ac, link);
	return ac;
}

static void
admin_conn_free(struct admin_conn *ac)
{
	struct admin_sb	*s;
	size_t		 i;
	void		(*gone)(void *) = ac->gone;
	void		*arg = ac->gone_arg;

	while ((s = LIST_FIRST(&ac->sbs)) != NULL)
		admin_sandbox_gone(ac, s);
	for (i = 0; i < ac->nwatches; i++)
		watch_free(ac->watches[i]);
	for (i = 0; i < ac->nfds; i++)
		close(ac->fds[i]);
	LIST_REMOVE(ac, link);
	event_free(ac->ev);
	event_free(ac->wev);
	evbuffer_free(ac->in);
	evbuffer_free(ac->out);
	close(ac->fd);
	free(ac);
	if (gone != NULL)
		gone(arg);
}

/*
 * Reads what arrived, with any descriptors, and handles every complete
 * message.  Descriptors are queued in order; each message takes the ones
 * it announces from the front of the queue.
 */
static void
admin_read_cb(evutil_socket_t fd, short what, void *arg)
{
	struct admin_conn	*ac = arg;
	union {
		struct cmsghdr	hdr;
		char		buf[CMSG_SPACE(sizeof(int) * ADMIN_FDS_MAX)];
	} cm;
	struct msghdr		 msg;
	struct cmsghdr		*c;
	struct iovec		 iov;
	char			 buf[8192];
	uint8_t			 hdr[4];
	ssize_t			 n;
	size_t			 i, k, mlen;

	memset(&msg, 0, sizeof(msg));
	iov.iov_base = buf;
	iov.iov_len = sizeof(buf);
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = cm.buf;
	msg.msg_controllen = sizeof(cm.buf);
	n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	for (c = CMSG_FIRSTHDR(&msg); n > 0 && c != NULL;
	    c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < k; i++) {
			int rfd;

			memcpy(&rfd, CMSG_DATA(c) + i * sizeof(int),
			    sizeof(int));
			if (ac->nfds < ADMIN_QUEUED_FDS_MAX)
				ac->fds[ac->nfds++] = rfd;
			else {
				close(rfd);
				n = -2;		/* too many: protocol error */
			}
		}
	}
	if (n > 0 && (msg.msg_flags & MSG_CTRUNC))
		n = -2;
	if (n <= 0) {
		if (n == -2)
			(void)admin_fail(ac, "too many descriptors (at most %d "
			    "per message)", ADMIN_FDS_MAX);
		admin_conn_free(ac);
		return;
	}
	evbuffer_add(ac->in, buf, (size_t)n);
	for (;;) {
		if (evbuffer_copyout(ac->in, hdr, 4) != 4)
			return;
		mlen = (size_t)hdr[0] << 24 | (size_t)hdr[1] << 16 |
		    (size_t)hdr[2] << 8 | hdr[3];
		if (mlen == 0 || mlen > ADMIN_MSG_MAX) {
			(void)admin_fail(ac, "message length %zu out of range "
			    "(1..%u)", mlen, ADMIN_MSG_MAX);
			admin_conn_free(ac);
			return;
		}
		if (evbuffer_get_length(ac->in) < mlen + 4)
			return;
		evbuffer_drain(ac->in, 4);
		{
			char *m = (char *)evbuffer_pullup(ac->in, mlen);
			int rc = m ? admin_message(ac, m, mlen) : -1;

			evbuffer_drain(ac->in, mlen);
			if (rc == -1) {
				admin_conn_free(ac);
				return;
			}
		}
	}
}

static int
admin_message(struct admin_conn *ac, const char *buf, size_t len)
{
	json_error_t	 e;
	json_t		*req, *ans;
	const char	*op;
	int		 rc;

	req = policy_json_loadb(buf, len, JSON_REJECT_DUPLICATES, &e);
	if (req == NULL || !json_is_object(req)) {
		json_decref(req);
		return admin_fail(ac, "not a JSON object: %s", req ? "" :
		    e.text);
	}
	op = json_string_value(json_object_get(req, "op"));
	if (op == NULL)
		rc = admin_fail(ac, "no \"op\"");
	else if (strcmp(op, "hello") == 0) {
		json_int_t v = json_integer_value(json_object_get(req,
		    "version"));

		if (v != ADMIN_PROTO_VERSION)
			rc = admin_fail(ac, "protocol version %lld is not "
			    "supported (this moatd speaks %d)", (long long)v,
			    ADMIN_PROTO_VERSION);
		else {
			ans = json_pack("{s:b, s:i, s:s, s:b, s:b, s:b, s:b}",
			    "ok", 1, "version", ADMIN_PROTO_VERSION, "moatd",
			    PACKAGE_VERSION, "watch", 1, "drops", 1, "list", 1,
			    "stats", 1);
			rc = admin_answer(ac, ans);
		}
	} else if (strcmp(op, "register") == 0)
		rc = admin_register(ac, req);
	else if (strcmp(op, "unregister") == 0)
		rc = admin_unregister(ac, req);
	else if (strcmp(op, "watch") == 0)
		rc = admin_watch(ac, req);
	else if (strcmp(op, "unwatch") == 0)
		rc = admin_unwatch(ac, req);
	else if (strcmp(op, "list") == 0)
		rc = admin_list(ac, req);
	else if (strcmp(op, "stats") == 0)
		rc = admin_stats(ac, req);
	else
		rc = admin_fail(ac, "unknown op \"%.32s\"", op);
	/* Descriptors no message asked for are a protocol error. */
	if (rc == 0 && ac->nfds > 0)
		rc = admin_fail(ac, "%zu descriptors arrived that no message "
		    "announced", ac->nfds);
	json_decref(req);
	return rc;
}

static int
admin_sandbox_name_ok(const char *name)
{
	size_t	i, n = strlen(name);

	if (n == 0 || n > ADMIN_NAME_MAX)
		return 0;
	for (i = 0; i < n; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
			return 0;
	}
	return 1;
}

static struct sandbox *
admin_find(const char *name)
{
	struct admin_conn	*ac;
	struct admin_sb		*s;

	LIST_FOREACH(ac, &A_conns, link)
		LIST_FOREACH(s, &ac->sbs, link)
			if (strcmp(s->sb->name, name) == 0)
				return s->sb;
	return NULL;
}

/* The cookie of the network namespace socket fd lives in.  0 or -1. */
static int
admin_netns(int fd, uint64_t *cookie)
{
	socklen_t	len = sizeof(*cookie);

	if (getsockopt(fd, SOL_SOCKET, SO_NETNS_COOKIE, cookie, &len) == -1 ||
	    len != sizeof(*cookie) || *cookie == 0)
		return -1;
	return 0;
}

/* The live sandbox whose held sockets are in network namespace cookie. */
static const char *
admin_guarded(uint64_t cookie)
{
	struct admin_conn	*ac;
	struct admin_sb		*s;
	size_t			 i;

	LIST_FOREACH(ac, &A_conns, link)
		LIST_FOREACH(s, &ac->sbs, link)
			for (i = 0; i < s->nnetns; i++)
				if (s->netns[i] == cookie)
					return s->sb->name;
	return NULL;
}

/* Whether name is the sandbox of one of the config's listeners. */
static int
admin_config_name(const char *name)
{
	const struct moat_config	*cfg = *A_ctx->cfg;
	size_t				 i;

	for (i = 0; cfg != NULL && i < cfg->nlisten; i++)
		if (cfg->listen[i].sandbox != NULL &&
		    strcmp(cfg->listen[i].sandbox, name) == 0)
			return 1;
	return 0;
}

/*
 * A register (or watch) refused for the guard's reasons: a log line, an
 * audit line (reason sandbox-refused, the name asked for), the error in
 * the answer.
 */
static int
admin_vrefuse(struct admin_conn *ac, const char *op, const char *name,
    const char *fmt, va_list ap)
{
	struct audit_rec	r;
	char			msg[512], detail[600];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	snprintf(detail, sizeof(detail), "%s%s%s", strcmp(op, "register") == 0 ?
	    "" : op, strcmp(op, "register") == 0 ? "" : ": ", msg);
	audit_rec_init(&r);
	r.event = "sandbox";
	r.sandbox = name;
	r.proto = "admin";
	r.verdict = POLICY_DENY;
	r.reason = POLICY_R_SANDBOX_REFUSED;
	r.detail = detail;
	audit_emit(&r);
	return admin_fail(ac, "%s refused: %s", op, msg);
}

static int
admin_refuse(struct admin_conn *ac, const char *name, const char *fmt, ...)
{
	va_list	ap;
	int	rc;

	va_start(ap, fmt);
	rc = admin_vrefuse(ac, "register", name, fmt, ap);
	va_end(ap);
	return rc;
}

static int
admin_refuse_watch(struct admin_conn *ac, const char *name, const char *fmt,
    ...)
{
	va_list	ap;
	int	rc;

	va_start(ap, fmt);
	rc = admin_vrefuse(ac, "watch", name, fmt, ap);
	va_end(ap);
	return rc;
}

/* The daemon's "geoip" into a sandbox's config document, if it has one. */
static int
admin_geoip(json_t *doc, const struct moat_config *cfg)
{
	json_t	*g;

	if (cfg->geoip_country_db == NULL && cfg->geoip_asn_db == NULL)
		return 0;
	if ((g = json_object()) == NULL ||
	    (cfg->geoip_country_db != NULL && json_object_set_new(g,
	    "country_db", json_string(cfg->geoip_country_db)) == -1) ||
	    (cfg->geoip_asn_db != NULL && json_object_set_new(g, "asn_db",
	    json_string(cfg->geoip_asn_db)) == -1)) {
		json_decref(g);
		return -1;
	}
	return json_object_set_new(doc, "geoip", g);
}

/*
 * Builds a config from the client's "config" object (only "policy",
 * "secrets", "limits.sandbox_connections" and "audit_only" belong to a
 * sandbox: the rest is the daemon's) and validates it exactly like
 * moatd's own.  Its connection limit only ever lowers the daemon's
 * (worker.c).
 */
static struct moat_config *
admin_config(struct admin_conn *ac, const char *name, json_t *cfg)
{
	struct policy_diags	 d;
	struct moat_config	*c;
	const char		*key;
	json_t			*v, *doc;
	char			*text, where[ADMIN_NAME_MAX + 16], line[512];
	size_t			 i;

	if (!json_is_object(cfg)) {
		admin_fail(ac, "\"config\" must be an object");
		return NULL;
	}
	json_object_foreach(cfg, key, v) {
		if (strcmp(key, "policy") != 0 && strcmp(key, "secrets") != 0 &&
		    strcmp(key, "limits") != 0 &&
		    strcmp(key, "audit_only") != 0) {
			admin_fail(ac, "config key \"%.32s\" cannot be set per "
			    "sandbox (only \"policy\", \"secrets\", "
			    "\"audit_only\" and \"limits\": "
			    "{\"sandbox_connections\": N})", key);
			return NULL;
		}
	}
	/* Not an object: the validation below says so, with its line. */
	json_object_foreach(json_object_get(cfg, "limits"), key, v) {
		if (strcmp(key, "sandbox_connections") != 0) {
			admin_fail(ac, "config key \"limits.%.32s\" cannot be "
			    "set per sandbox (only \"limits\": "
			    "{\"sandbox_connections\": N})", key);
			return NULL;
		}
	}
	doc = json_deep_copy(cfg);
	/*
	 * Rules that must see inside TLS are valid when moatd has a CA: the
	 * daemon's (a sandbox cannot bring its own).
	 */
	if (doc != NULL && *A_ctx->tls != NULL && (*A_ctx->cfg)->tls.ca_cert !=
	    NULL && json_object_set_new(doc, "tls", json_pack("{s:s, s:s}",
	    "ca_cert", (*A_ctx->cfg)->tls.ca_cert, "ca_key",
	    (*A_ctx->cfg)->tls.ca_key)) == -1) {
		json_decref(doc);
		doc = NULL;
	}
	/* Rules by country or AS number use the daemon's databases. */
	if (doc != NULL && admin_geoip(doc, *A_ctx->cfg) == -1) {
		json_decref(doc);
		doc = NULL;
	}
	if (doc == NULL || json_object_set_new(doc, "listen",
	    json_array()) == -1 || (text = json_dumps(doc, JSON_INDENT(2) |
	    JSON_SORT_KEYS)) == NULL) {
		json_decref(doc);
		admin_fail(ac, "out of memory");
		return NULL;
	}
	json_decref(doc);
	snprintf(where, sizeof(where), "sandbox %s", name);
	policy_diags_init(&d);
	c = policy_config_load_opts(where, text, strlen(text),
	    &policyio_load_opts, &d);
	free(text);
	if (c == NULL) {
		char msg[2048];
		size_t o = 0;

		msg[0] = '\0';
		for (i = 0; i < d.n && o < sizeof(msg) - 1; i++) {
			if (d.v[i].level != POLICY_DIAG_ERROR)
				continue;
			policy_diag_format(&d, i, line, sizeof(line));
			o += (size_t)snprintf(msg + o, sizeof(msg) - o, "%s%s",
			    o ? "; " : "", line);
		}
		admin_fail(ac, "%s", msg);
	}
	policy_diags_clear(&d);
	return c;
}

/* Appends path to the answer's "hide" list, made absolute if it exists. */
static int
admin_hide_path(json_t *hide, const char *path)
{
	char	real[PATH_MAX];

	if (path == NULL)
		return 0;
	if (realpath(path, real) != NULL)
		path = real;
	else if (path[0] != '/')
		return 0;	/* not there, and no way to name it */
	return json_array_append_new(hide, json_string(path));
}

/*
 * "hide": the files a sandbox must not read although its user could
 * (moat run is not a filesystem sandbox): moatd's CA key and the secret
 * files of the daemon and of the sandbox.  moat run mounts /dev/null over
 * each inside the sandbox.
 */
static int
admin_hide(json_t *ans, const struct sandbox *sb)
{
	const struct moat_config	*cfgs[2] = { *A_ctx->cfg, sb->cfg };
	json_t				*hide;
	size_t				 i, k;

	if ((hide = json_array()) == NULL ||
	    json_object_set_new(ans, "hide", hide) == -1)
		return -1;
	if (*A_ctx->tls != NULL &&
	    admin_hide_path(hide, (*A_ctx->cfg)->tls.ca_key) == -1)
		return -1;
	for (k = 0; k < 2; k++)
		for (i = 0; cfgs[k] != NULL && i < cfgs[k]->nsecrets; i++)
			if (admin_hide_path(hide, cfgs[k]->secrets[i].file) ==
			    -1)
				return -1;
	return 0;
}

/*
 * A register's "trust_extra" and "trust_store", checked before anything
 * is made: at most ADMIN_TRUST_EXTRA_MAX objects {"name": TEXT, "pem":
 * TEXT}, a boolean.  0, or -1 once the failure is answered.
 */
static int
admin_trust_check(struct admin_conn *ac, json_t *req)
{
	json_t	*ex = json_object_get(req, "trust_extra");
	json_t	*st = json_object_get(req, "trust_store"), *e, *n, *p;
	size_t	 i;

	if (st != NULL && !json_is_boolean(st))
		return admin_fail(ac, "\"trust_store\" must be true or false");
	if (ex == NULL)
		return 0;
	if (!json_is_array(ex) || json_array_size(ex) > ADMIN_TRUST_EXTRA_MAX)
		return admin_fail(ac, "\"trust_extra\" must list at most %d "
		    "files", ADMIN_TRUST_EXTRA_MAX);
	json_array_foreach(ex, i, e) {
		n = json_object_get(e, "name");
		p = json_object_get(e, "pem");
		if (!json_is_object(e) || json_object_size(e) != 2 ||
		    !json_is_string(n) || !json_is_string(p) ||
		    json_string_length(n) == 0 ||
		    json_string_length(n) > ADMIN_TRUST_NAME_MAX ||
		    strlen(json_string_value(n)) != json_string_length(n))
			return admin_fail(ac, "trust_extra[%zu]: want {\"name\": "
			    "TEXT (1-%d bytes), \"pem\": TEXT}", i,
			    ADMIN_TRUST_NAME_MAX);
	}
	return 0;
}

/* Sets ans's key to the base64 text of len bytes of data.  0 or -1. */
static int
admin_set_base64(json_t *ans, const char *key, const unsigned char *data,
    size_t len)
{
	unsigned char	*b64;
	int		 n, rc;

	if (len > INT_MAX / 2 || (b64 = malloc((len + 2) / 3 * 4 + 1)) ==
	    NULL)
		return -1;
	n = EVP_EncodeBlock(b64, data, (int)len);
	rc = n < 0 ? -1 : json_object_set_new(ans, key, json_stringn(
	    (const char *)b64, (size_t)n));
	free(b64);
	return rc;
}

/*
 * The bundle of a sandbox that brings its user's CA files ("trust_extra":
 * merged, each certificate once, a file that is no bundle left out and
 * said in "trust_warnings") and, with store not NULL, its trust store;
 * or moatd's own.  *own is set when they must be freed.  NULL with err
 * set.
 */
static const char *
admin_trust_bundle(json_t *req, json_t *warnings, size_t *len,
    const unsigned char **store, size_t *slen, bool *own, char *err,
    size_t errlen)
{
	struct certs_extra	 ex[ADMIN_TRUST_EXTRA_MAX];
	json_t			*jex = json_object_get(req, "trust_extra"), *e;
	const char		*pem, *b;
	unsigned char		*st = NULL;
	char			*nb;
	size_t			 n = 0, plen, i;

	*own = false;
	if (json_array_size(jex) == 0) {
		if ((b = tls_trust_bundle(*A_ctx->tls, len, err, errlen)) !=
		    NULL && store != NULL)
			*store = tls_trust_store(*A_ctx->tls, slen, err,
			    errlen);
		return b;
	}
	memset(ex, 0, sizeof(ex));
	json_array_foreach(jex, i, e) {
		ex[n].name = json_string_value(json_object_get(e, "name"));
		ex[n].pem = json_string_value(json_object_get(e, "pem"));
		ex[n].len = json_string_length(json_object_get(e, "pem"));
		n++;
	}
	pem = tls_trust_pem(*A_ctx->tls, &plen);
	if ((nb = certs_bundle_from_pem(pem, plen, NULL, ex, n, len,
	    store != NULL ? &st : NULL, slen, err, errlen)) == NULL)
		return NULL;
	for (i = 0; i < n; i++)
		if (ex[i].why[0] != '\0' && json_array_append_new(warnings,
		    json_sprintf("%s: not merged into the trust bundle: %s",
		    ex[i].name, ex[i].why)) == -1) {
			free(nb);
			free(st);
			snprintf(err, errlen, "out of memory");
			return NULL;
		}
	if (store != NULL)
		*store = st;
	*own = true;
	return nb;
}

/*
 * What a sandbox must trust: "trust_pem" (moatd's CA and
 * tls.extra_ca_files), "trust_bundle" (those, the system's roots and the
 * sandbox's "trust_extra"), with "trust_store" true the bundle as a
 * PKCS12 trust store ("trust_store", base64), and "trust_warnings" for
 * what was left out.  For a sandbox with CA files of its own they go
 * into the answer ans; for one without, whose are moatd's alone, *text
 * is their JSON text (A_trust, *len bytes) to go into the answer's text.
 * 0, or -1 once the failure (memory) is answered.
 */
static int
admin_trust(struct admin_conn *ac, json_t *req, json_t *ans,
    const char **text, size_t *len)
{
	struct admin_trust_text	*t;
	json_t			*o;
	char			*s;
	bool			 whole;

	*text = NULL;
	*len = 0;
	if (json_array_size(json_object_get(req, "trust_extra")) > 0)
		return admin_trust_into(ac, req, ans, &whole);
	t = &A_trust[json_is_true(json_object_get(req, "trust_store"))];
	if (t->text == NULL || t->tls != *A_ctx->tls) {
		if ((o = json_object()) == NULL)
			return admin_fail(ac, "out of memory");
		if (admin_trust_into(ac, req, o, &whole) == -1) {
			json_decref(o);
			return -1;
		}
		s = json_dumps(o, JSON_COMPACT);
		json_decref(o);
		if (s == NULL || s[0] != '{' || strlen(s) < 3) {
			free(s);
			return admin_fail(ac, "out of memory");
		}
		/* "{...}" becomes ",..." to go before an answer's "}". */
		s[0] = ',';
		free(t->text);
		tls_unref(t->tls);
		t->text = s;
		t->len = strlen(s) - 1;
		/* What could not be built is tried again next time. */
		t->tls = whole ? tls_ref(*A_ctx->tls) : NULL;
	}
	*text = t->text;
	*len = t->len;
	return 0;
}

/* Forgets the texts (a reload: a context of its own makes its own). */
static void
admin_trust_forget(void)
{
	size_t	i;

	for (i = 0; i < sizeof(A_trust) / sizeof(A_trust[0]); i++) {
		free(A_trust[i].text);
		tls_unref(A_trust[i].tls);
		memset(&A_trust[i], 0, sizeof(A_trust[i]));
	}
}

/*
 * admin_trust() into the object ans, for this request; *whole false if a
 * bundle or store could not be built (its error is in ans).  0, or -1
 * once the failure (memory) is answered.
 */
static int
admin_trust_into(struct admin_conn *ac, json_t *req, json_t *ans,
    bool *whole)
{
	json_t			*warn;
	const char		*pem, *bundle = NULL;
	const unsigned char	*store = NULL;
	char			 err[512];
	size_t			 len, blen = 0, slen = 0;
	bool			 own = false, want;
	int			 rc = -1;

	want = json_is_true(json_object_get(req, "trust_store"));
	if ((warn = json_array()) == NULL)
		return admin_fail(ac, "out of memory");
	/* The CA alone, and the bundle a sandbox mounts: built here, so
	 * that moat itself needs no OpenSSL. */
	pem = tls_trust_pem(*A_ctx->tls, &len);
	if (json_object_set_new(ans, "trust_pem", json_stringn(pem, len)) ==
	    -1)
		goto oom;
	err[0] = '\0';
	bundle = admin_trust_bundle(req, warn, &blen, want ? &store : NULL,
	    &slen, &own, err, sizeof(err));
	/* The user's files must not make the answer too large to send. */
	if (own && blen + (slen + 2) / 3 * 4 > ADMIN_TRUST_ANSWER_MAX) {
		free((char *)bundle);
		free((unsigned char *)store);
		own = false;
		store = NULL;
		json_array_clear(warn);
		if (json_array_append_new(warn, json_sprintf("the CA files "
		    "named (%zu of them) make the trust bundle too large to "
		    "send (%zu bytes); none of them is merged",
		    json_array_size(json_object_get(req, "trust_extra")),
		    blen)) == -1)
			goto oom;
		bundle = admin_trust_bundle(NULL, warn, &blen, want ? &store :
		    NULL, &slen, &own, err, sizeof(err));
	}
	if (bundle == NULL ? json_object_set_new(ans, "trust_bundle_error",
	    json_string(err)) == -1 : json_object_set_new(ans,
	    "trust_bundle", json_stringn(bundle, blen)) == -1)
		goto oom;
	if (bundle != NULL && want && (store == NULL ? json_object_set_new(ans,
	    "trust_store_error", json_string(err)) == -1 :
	    admin_set_base64(ans, "trust_store", store, slen) == -1))
		goto oom;
	if (json_array_size(warn) > 0 && json_object_set(ans,
	    "trust_warnings", warn) == -1)
		goto oom;
	*whole = bundle != NULL && (!want || store != NULL);
	rc = 0;
	goto out;
 oom:
	admin_fail(ac, "out of memory");
 out:
	if (own) {
		free((char *)bundle);
		free((unsigned char *)store);
	}
	json_decref(warn);
	return rc;
}

/*
 * The start of a register answer: the sandbox's own secrets read now
 * (a failure refuses the registration), its placeholders made now and
 * listed by variable name, and what it must trust when moatd intercepts
 * (in the answer, or as the text *trust of *tlen bytes to put in it:
 * admin_trust()).  Returns the answer ({"ok": true, ...}) or NULL after
 * admin_fail().
 */
static json_t *
admin_secrets(struct admin_conn *ac, struct sandbox *sb, json_t *req,
    const char **trust, size_t *tlen)
{
	struct secrets_view	 v;
	json_t			*ans, *ph;
	char			 err[512];
	size_t			 i;

	*trust = NULL;
	*tlen = 0;
	if ((ans = json_pack("{s:b, s:{}}", "ok", 1, "placeholders")) ==
	    NULL) {
		admin_fail(ac, "out of memory");
		return NULL;
	}
	if (sb->cfg->nsecrets > 0) {
		if ((sb->own_secrets = secrets_load(sb->cfg, false, err,
		    sizeof(err))) == NULL) {
			json_decref(ans);
			admin_fail(ac, "%s", err);
			return NULL;
		}
		if (secrets_view(sb, NULL, &v) == -1) {
			json_decref(ans);
			admin_fail(ac, "cannot make placeholders: out of "
			    "memory");
			return NULL;
		}
		ph = json_object_get(ans, "placeholders");
		for (i = 0; i < secrets_count(v.vals); i++)
			if (json_object_set_new(ph, secrets_env(v.vals, i),
			    json_string(v.ph[i])) == -1) {
				secrets_view_done(&v);
				json_decref(ans);
				admin_fail(ac, "out of memory");
				return NULL;
			}
		secrets_view_done(&v);
	}
	if (admin_hide(ans, sb) == -1) {
		json_decref(ans);
		admin_fail(ac, "out of memory");
		return NULL;
	}
	if (*A_ctx->tls != NULL && admin_trust(ac, req, ans, trust,
	    tlen) == -1) {
		json_decref(ans);
		return NULL;
	}
	return ans;
}

/*
 * A registered listener's "connect_refusal" (e, listeners[i] of proto
 * proto): "status" (the default) or "in-tunnel", which only an http
 * listener of a moatd with a CA can do.  0, or -1 after failing ac.
 */
static int
admin_refusal(struct admin_conn *ac, json_t *e, size_t i, const char *proto,
    enum moat_connect_refusal *out)
{
	json_t		*v = json_object_get(e, "connect_refusal");

	*out = MOAT_REFUSAL_STATUS;
	if (v == NULL)
		return 0;
	if (!json_is_string(v) ||
	    policy_connect_refusal_parse(json_string_value(v), out) == -1)
		return admin_fail(ac, "listeners[%zu].connect_refusal: want "
		    "\"status\" or \"in-tunnel\"", i);
	if (*out == MOAT_REFUSAL_STATUS)
		return 0;
	if (strcmp(proto, "http") != 0 && strcmp(proto, "http+socks5") != 0)
		return admin_fail(ac, "listeners[%zu].connect_refusal: a %.32s "
		    "listener has no CONNECT", i, proto);
	if (*A_ctx->tls == NULL)
		return admin_fail(ac, "listeners[%zu].connect_refusal: "
		    "\"in-tunnel\" needs a CA, and this moatd has none "
		    "(tls.ca_cert)", i);
	return 0;
}

static int
admin_register(struct admin_conn *ac, json_t *req)
{
	struct moat_config	*cfg = NULL;
	struct sandbox		*sb = NULL;
	struct listener		*ls[ADMIN_FDS_MAX];
	struct admin_sb		*s = NULL;
	json_t			*lst, *e, *ans = NULL, *jd;
	const char		*name, *proto, *other, *trust;
	uint64_t		 netns[ADMIN_FDS_MAX], own;
	enum moat_connect_refusal refusal[ADMIN_FDS_MAX];
	char			 err[256];
	size_t			 nl = 0, i, j, need, nls, tlen;
	int			 used[ADMIN_FDS_MAX], idx, rc = -1, drops = -1;

	name = json_string_value(json_object_get(req, "sandbox"));
	lst = json_object_get(req, "listeners");
	jd = json_object_get(req, "drops");
	if (name == NULL || !admin_sandbox_name_ok(name))
		return admin_fail(ac, "\"sandbox\" must be 1-%d of A-Z a-z 0-9 "
		    ". _ -", ADMIN_NAME_MAX);
	if (admin_find(name) != NULL)
		return admin_fail(ac, "a sandbox named %s is already "
		    "registered", name);
	if (admin_config_name(name))
		return admin_refuse(ac, name, "%s is the sandbox name of one of "
		    "moatd's configured listeners", name);
	/*
	 * No sandbox may register another: a client inside the network
	 * namespace of a live sandbox (its workload reached this socket)
	 * is refused, and so is a socket that lives there.
	 */
	if (!ac->trusted_fd && ac->peer_netns == 0)
		return admin_refuse(ac, name, "cannot tell the client's network "
		    "namespace (SO_NETNS_COOKIE)");
	if (ac->peer_netns != 0 && (other = admin_guarded(ac->peer_netns)) !=
	    NULL)
		return admin_refuse(ac, name, "the client is inside the network "
		    "namespace of sandbox %s", other);
	if (!json_is_array(lst) || json_array_size(lst) == 0 ||
	    json_array_size(lst) > ADMIN_FDS_MAX - (jd != NULL))
		return admin_fail(ac, "\"listeners\" must list 1-%d sockets",
		    ADMIN_FDS_MAX - (jd != NULL));
	if (admin_trust_check(ac, req) == -1)
		return -1;
	nls = need = json_array_size(lst);
	/* The drop log, if any: the descriptor after the listeners'. */
	if (jd != NULL && (!json_is_integer(jd) ||
	    json_integer_value(jd) != (json_int_t)nls))
		return admin_fail(ac, "\"drops\" must be %zu: the descriptor "
		    "after the listeners'", nls);
	if (jd != NULL)
		need++;
	if (ac->nfds < need)
		return admin_fail(ac, "%zu listeners announced, %zu descriptors "
		    "received", need, ac->nfds);
	memset(used, 0, sizeof(used));
	json_array_foreach(lst, i, e) {
		proto = json_string_value(json_object_get(e, "proto"));
		idx = (int)json_integer_value(json_object_get(e, "fd"));
		if (proto == NULL || !json_is_integer(json_object_get(e,
		    "fd")) || idx < 0 || (size_t)idx >= nls || used[idx] ||
		    json_object_size(e) != 2 + (json_object_get(e,
		    "connect_refusal") != NULL))
			return admin_fail(ac, "listeners[%zu]: want {\"proto\": "
			    "NAME, \"fd\": 0..%zu} and optionally "
			    "\"connect_refusal\", each descriptor once", i,
			    nls - 1);
		if (admin_refusal(ac, e, i, proto, &refusal[i]) == -1)
			return -1;
		used[idx] = 1;
	}
	for (i = 0; i < need; i++) {
		if (admin_netns(ac->fds[i], &netns[i]) == -1) {
			if (errno == ENOTSOCK)
				admin_fail(ac, "descriptor %zu is not a socket",
				    i);
			else
				admin_refuse(ac, name, "descriptor %zu: cannot "
				    "tell its network namespace: %s", i,
				    strerror(errno));
			goto closefds;
		}
		if ((other = admin_guarded(netns[i])) != NULL) {
			admin_refuse(ac, name, "descriptor %zu is a socket of "
			    "the network namespace of sandbox %s", i, other);
			goto closefds;
		}
	}
	if (jd != NULL)
		drops = ac->fds[nls];
	if ((cfg = admin_config(ac, name, json_object_get(req, "config"))) ==
	    NULL)
		goto closefds;
	if ((sb = sandbox_new(name, cfg)) == NULL) {
		policy_config_unref(cfg);
		admin_fail(ac, "out of memory");
		goto closefds;
	}
	if ((ans = admin_secrets(ac, sb, req, &trust, &tlen)) == NULL)
		goto closefds;
	/* From here each descriptor belongs to its listener (or is closed). */
	json_array_foreach(lst, i, e) {
		proto = json_string_value(json_object_get(e, "proto"));
		idx = (int)json_integer_value(json_object_get(e, "fd"));
		ls[nl] = listener_from_fd(proto, ac->fds[idx], sb, err,
		    sizeof(err));
		ac->fds[idx] = -1;
		if (ls[nl] == NULL) {
			admin_fail(ac, "listeners[%zu]: %s", i, err);
			goto closefds;
		}
		ls[nl]->connect_refusal = refusal[i];
		nl++;
	}
	if ((s = calloc(1, sizeof(*s))) == NULL) {
		admin_fail(ac, "out of memory");
		goto closefds;
	}
	s->sb = sandbox_ref(sb);
	/* The drop log is read from now on; the reader owns the socket. */
	if (drops != -1) {
		ac->fds[nls] = -1;
		if ((s->drops = drops_start(A_ctx->base, sb, drops, err,
		    sizeof(err))) == NULL) {
			sandbox_unref(s->sb);
			free(s);
			s = NULL;
			admin_fail(ac, "%s", err);
			goto closefds;
		}
	}
	for (i = 0; i < nl; i++)
		s->ls[s->nls++] = listener_ref(ls[i]);
	/*
	 * Guarded from now: the namespaces of its sockets, but for the
	 * registering client's own and moatd's (a platform that binds a
	 * sandbox's sockets where it runs must still be able to register
	 * the next one).
	 */
	for (i = 0; i < need; i++) {
		if (netns[i] == ac->peer_netns || (A_lfd >= 0 &&
		    admin_netns(A_lfd, &own) == 0 && netns[i] == own))
			continue;
		for (j = 0; j < s->nnetns && s->netns[j] != netns[i]; j++)
			;
		if (j == s->nnetns)
			s->netns[s->nnetns++] = netns[i];
	}
	LIST_INSERT_HEAD(&ac->sbs, s, link);
	for (i = 0; i < nl; i++)
		for (j = 0; j < A_ctx->nworkers; j++)
			if (worker_post_listener(A_ctx->workers[j], ls[i]) ==
			    -1)
				log_warnx("admin: out of memory posting a "
				    "listener of %s", name);
	for (i = 0; i < nl; i++)
		log_info("sandbox %s: serving %s on %s%s", name,
		    ls[i]->udp ? "dns (udp)" : policy_proto_str(ls[i]->proto),
		    ls[i]->address, ls[i]->connect_refusal ==
		    MOAT_REFUSAL_IN_TUNNEL ? " (refused CONNECTs answered "
		    "inside the tunnel)" : "");
	if (s->drops != NULL)
		log_info("sandbox %s: reading its drop log", name);
	admin_audit(sb, "registered");
	if (json_object_set_new(ans, "sandbox", json_string(name)) == -1) {
		rc = admin_fail(ac, "out of memory");
		goto closefds;
	}
	rc = admin_answer_with(ac, ans, trust, tlen);
	ans = NULL;
 closefds:
	/* Take the announced descriptors off the queue, used or not. */
	for (i = 0; i < need; i++)
		util_close(ac->fds[i]);
	memmove(ac->fds, ac->fds + need, (ac->nfds - need) * sizeof(int));
	ac->nfds -= need;
	for (i = 0; i < nl; i++)
		listener_unref(ls[i]);
	sandbox_unref(sb);
	json_decref(ans);
	return rc;
}

static int
admin_unregister(struct admin_conn *ac, json_t *req)
{
	const char	*name = json_string_value(json_object_get(req,
			    "sandbox"));
	struct admin_sb	*s;

	LIST_FOREACH(s, &ac->sbs, link)
		if (name != NULL && strcmp(s->sb->name, name) == 0)
			break;
	if (s == NULL)
		return admin_fail(ac, "no sandbox %.64s was registered on this "
		    "connection", name ? name : "(none)");
	admin_sandbox_gone(ac, s);
	return admin_answer(ac, json_pack("{s:b}", "ok", 1));
}

/*
 * watch: the audit lines of sandbox NAME (its refusals; with "all" every
 * line) follow on this connection as {"audit": LINE} messages, and
 * {"dropped": N} for lines this client did not read fast enough.  NAME
 * need not be registered yet (a client watches before it registers, so
 * that no refusal falls in between); moatd's configured listeners'
 * sandboxes can be watched too.  The register guard applies: a client
 * inside a sandbox's network namespace reads no one's lines.
 */
static int
admin_watch(struct admin_conn *ac, json_t *req)
{
	json_t		*jn = json_object_get(req, "sandbox");
	json_t		*jall = json_object_get(req, "all");
	const char	*name = json_string_value(jn), *other;
	struct watch	*w;
	size_t		 i;
	int		 all;

	if (name == NULL || json_string_length(jn) == 0 ||
	    json_string_length(jn) > ADMIN_WATCH_NAME_MAX ||
	    strlen(name) != json_string_length(jn))
		return admin_fail(ac, "\"sandbox\" must be a name of 1-%d "
		    "bytes", ADMIN_WATCH_NAME_MAX);
	if (jall != NULL && !json_is_boolean(jall))
		return admin_fail(ac, "\"all\" must be true or false");
	all = json_is_true(jall);
	if (!ac->trusted_fd && ac->peer_netns == 0)
		return admin_refuse_watch(ac, name, "cannot tell the client's "
		    "network namespace (SO_NETNS_COOKIE)");
	if (ac->peer_netns != 0 && (other = admin_guarded(ac->peer_netns)) !=
	    NULL)
		return admin_refuse_watch(ac, name, "the client is inside the "
		    "network namespace of sandbox %s", other);
	for (i = 0; i < ac->nwatches; i++)
		if (strcmp(watch_name(ac->watches[i]), name) == 0) {
			watch_set_all(ac->watches[i], all);
			return admin_answer(ac, json_pack("{s:b}", "ok", 1));
		}
	if (ac->nwatches == ADMIN_WATCH_MAX)
		return admin_fail(ac, "at most %d watches per connection",
		    ADMIN_WATCH_MAX);
	if ((w = watch_new(A_ctx->base, name, all, admin_watch_ready,
	    ac)) == NULL)
		return admin_fail(ac, "cannot watch: %s", strerror(errno));
	ac->watches[ac->nwatches++] = w;
	return admin_answer(ac, json_pack("{s:b}", "ok", 1));
}

/*
 * unwatch NAME: every line the watch holds is sent (whatever the room),
 * then the answer: a client that unwatches has every line offered before.
 */
static int
admin_unwatch(struct admin_conn *ac, json_t *req)
{
	const char	*name = json_string_value(json_object_get(req,
			    "sandbox"));
	size_t		 i;

	for (i = 0; i < ac->nwatches; i++)
		if (name != NULL && strcmp(watch_name(ac->watches[i]),
		    name) == 0)
			break;
	if (i == ac->nwatches)
		return admin_fail(ac, "no watch of %.64s on this connection",
		    name != NULL ? name : "(none)");
	admin_drops_drain(name);
	admin_watch_pump(ac, ac->watches[i]);
	watch_free(ac->watches[i]);
	ac->watches[i] = ac->watches[--ac->nwatches];
	return admin_answer(ac, json_pack("{s:b}", "ok", 1));
}

/* The drop records of sandbox name that arrived, audited now. */
static void
admin_drops_drain(const char *name)
{
	struct admin_conn	*ac;
	struct admin_sb		*s;

	LIST_FOREACH(ac, &A_conns, link)
		LIST_FOREACH(s, &ac->sbs, link)
			if (strcmp(s->sb->name, name) == 0)
				drops_drain(s->drops);
}

/*
 * list and stats are guarded as watch is: a client inside a live
 * sandbox's network namespace, or one whose namespace moatd cannot tell,
 * learns nothing of the others (refused, audited as sandbox-refused,
 * under the name of the sandbox it is in).
 */
static int
admin_refuse_op(struct admin_conn *ac, const char *op, const char *name,
    const char *fmt, ...)
{
	va_list	ap;
	int	rc;

	va_start(ap, fmt);
	rc = admin_vrefuse(ac, op, name, fmt, ap);
	va_end(ap);
	return rc;
}

static int
admin_op_guard(struct admin_conn *ac, const char *op)
{
	const char	*other;

	if (!ac->trusted_fd && ac->peer_netns == 0)
		return admin_refuse_op(ac, op, NULL, "cannot tell the "
		    "client's network namespace (SO_NETNS_COOKIE)");
	if (ac->peer_netns != 0 && (other = admin_guarded(ac->peer_netns)) !=
	    NULL)
		return admin_refuse_op(ac, op, other, "the client is inside "
		    "the network namespace of sandbox %s", other);
	return 0;
}

/* A request that may hold "op" and the keys in keys[] only. */
static int
admin_keys_ok(struct admin_conn *ac, json_t *req, const char *const *keys)
{
	const char	*key;
	json_t		*v;
	size_t		 i;

	json_object_foreach(req, key, v) {
		for (i = 0; keys[i] != NULL && strcmp(keys[i], key) != 0; i++)
			;
		if (strcmp(key, "op") != 0 && keys[i] == NULL)
			return admin_fail(ac, "unknown key \"%.32s\" in %s", key,
			    json_string_value(json_object_get(req, "op")));
	}
	return 0;
}

/* Its open connections at most: as worker_sandbox_limit() counts. */
static size_t
admin_sb_limit(const struct sandbox *sb, size_t listener_limit)
{
	const struct moat_limits	*own;
	size_t				 n = (*A_ctx->cfg)->limits.sandbox_connections;

	if (listener_limit != 0)
		return listener_limit;
	if (sb->cfg != NULL) {
		own = &sb->cfg->limits;
		if (own->sandbox_connections_set && own->sandbox_connections < n)
			n = own->sandbox_connections;
	}
	return n;
}

/* The admin-protocol name of a listener's kind ("dns-udp", ...). */
static const char *
admin_listener_proto(const struct listener *l)
{
	if (l->proto == MOAT_PROTO_DNS)
		return l->udp ? "dns-udp" : "dns-tcp";
	return policy_proto_str(l->proto);
}

/* What list shows of sb, its listeners at ls (n), its secrets' names. */
static void
admin_rep_fill(struct adminrep_sandbox *r, struct sandbox *sb,
    struct adminrep_listener *ls, size_t nls, const char **names)
{
	const struct moat_config	*cfg = sb->cfg != NULL ? sb->cfg :
					    *A_ctx->cfg;
	size_t				 i;

	r->name = sb->name;
	r->own_policy = sb->cfg != NULL;
	r->ls = ls;
	r->nls = nls;
	r->nsecrets = cfg->nsecrets < ADMINREP_SECRETS_MAX ? cfg->nsecrets :
	    ADMINREP_SECRETS_MAX;
	for (i = 0; i < r->nsecrets; i++)
		names[i] = cfg->secrets[i].name;
	r->secrets = names;
	sandbox_counters(sb, &r->c);
}

/*
 * Whether l is the first of moatd's configured listeners to serve its
 * sandbox (listeners naming one sandbox share its struct): each
 * configured sandbox is counted at its first listener.
 */
static bool
admin_configured_first(const struct listener *l)
{
	const struct listener	*p;

	if (l->sb == NULL)
		return false;
	for (p = A_ctx->listeners; p != l; p = p->next)
		if (p->sb == l->sb)
			return false;
	return true;
}

/*
 * list: every live sandbox (registered ones and those of moatd's
 * configured listeners) with its listeners, the names of its secrets and
 * its counters; paged by name ("after") so that an answer stays below
 * ADMIN_MSG_MAX.  Never a secret's value nor a placeholder.
 */
static int
admin_list(struct admin_conn *ac, json_t *req)
{
	static const char *const	 keys[] = { "after", NULL };
	struct adminrep_sandbox		*reps = NULL;
	struct adminrep_listener	*lsv = NULL;
	const char			**names = NULL;
	struct admin_conn		*c;
	struct admin_sb			*s;
	const struct listener		*l, *k;
	json_t				*ja = json_object_get(req, "after"), *ans;
	const char			*after = json_string_value(ja);
	size_t				 nreg = 0, nl = 0, n = 0, li = 0, i,
					 first, limit;
	int				 rc;

	if (admin_keys_ok(ac, req, keys) == -1)
		return -1;
	if (ja != NULL && (after == NULL || json_string_length(ja) >
	    ADMIN_WATCH_NAME_MAX))
		return admin_fail(ac, "\"after\" must be a sandbox name");
	if (admin_op_guard(ac, "list") == -1)
		return -1;
	LIST_FOREACH(c, &A_conns, link)
		LIST_FOREACH(s, &c->sbs, link)
			nreg++;
	for (l = A_ctx->listeners; l != NULL; l = l->next)
		nl++;
	if ((reps = calloc(nreg + nl + 1, sizeof(*reps))) == NULL ||
	    (lsv = calloc(nreg * ADMIN_FDS_MAX + nl + 1,
	    sizeof(*lsv))) == NULL || (names = calloc((nreg + nl + 1) *
	    ADMINREP_SECRETS_MAX, sizeof(*names))) == NULL) {
		rc = admin_fail(ac, "out of memory");
		goto out;
	}
	LIST_FOREACH(c, &A_conns, link)
		LIST_FOREACH(s, &c->sbs, link) {
			first = li;
			for (i = 0; i < s->nls; i++) {
				lsv[li].proto = admin_listener_proto(s->ls[i]);
				lsv[li++].address = s->ls[i]->address;
			}
			admin_rep_fill(&reps[n], s->sb, lsv + first, li - first,
			    names + n * ADMINREP_SECRETS_MAX);
			reps[n].registered = true;
			reps[n].client_pid = c->peer_pid;
			reps[n++].limit = admin_sb_limit(s->sb, 0);
		}
	for (l = A_ctx->listeners; l != NULL; l = l->next) {
		if (!admin_configured_first(l))
			continue;
		first = li;
		limit = SIZE_MAX;
		for (k = l; k != NULL; k = k->next) {
			if (k->sb != l->sb)
				continue;
			lsv[li].proto = admin_listener_proto(k);
			lsv[li++].address = k->address;
			if (admin_sb_limit(k->sb, k->connections) < limit)
				limit = admin_sb_limit(k->sb, k->connections);
		}
		admin_rep_fill(&reps[n], l->sb, lsv + first, li - first,
		    names + n * ADMINREP_SECRETS_MAX);
		reps[n].registered = false;
		reps[n].client_pid = -1;
		reps[n++].limit = limit;
	}
	if ((ans = adminrep_list(reps, n, after, ADMIN_MSG_MAX - 1024)) ==
	    NULL)
		rc = admin_fail(ac, "out of memory");
	else
		rc = admin_answer(ac, ans);
 out:
	free(names);
	free(lsv);
	free(reps);
	return rc;
}

/* stats: what moatd as a whole is doing, from what it counts anyway. */
static int
admin_stats(struct admin_conn *ac, json_t *req)
{
	static const char *const	 keys[] = { NULL };
	struct adminrep_stats		 st;
	struct admin_conn		*c;
	struct admin_sb			*s;
	const struct listener		*l;
	json_t				*ans;

	if (admin_keys_ok(ac, req, keys) == -1 ||
	    admin_op_guard(ac, "stats") == -1)
		return -1;
	memset(&st, 0, sizeof(st));
	st.version = PACKAGE_VERSION;
	st.pid = (long)getpid();
	st.config = (*A_ctx->cfg)->file;
	st.uptime_ms = util_now_ms() - A_start_ms;
	st.workers = A_ctx->nworkers;
	LIST_FOREACH(c, &A_conns, link) {
		st.admin_clients++;
		st.watches += c->nwatches;
		LIST_FOREACH(s, &c->sbs, link)
			st.registered++;
	}
	for (l = A_ctx->listeners; l != NULL; l = l->next)
		if (admin_configured_first(l))
			st.configured++;
	st.conns_open = atomic_load(&worker_conns_open);
	st.conns_limit = (*A_ctx->cfg)->limits.connections;
	audit_stats(&st.audit_queued_bytes, &st.audit_dropped);
	st.audit_ok = audit_ok() != 0;
	st.reloads = A_reloads;
	st.reloads_refused = A_ctx->reloads_tried > A_reloads ?
	    A_ctx->reloads_tried - A_reloads : 0;
	if ((ans = adminrep_stats(&st)) == NULL)
		return admin_fail(ac, "out of memory");
	return admin_answer(ac, ans);
}

static void
admin_watch_ready(void *arg)
{
	admin_watch_pump(arg, NULL);
}

/* Frames one message (text, len bytes, between pre and post) into out. */
static int
admin_frame(struct admin_conn *ac, const char *pre, const char *text,
    size_t len, const char *post)
{
	size_t	n = strlen(pre) + len + strlen(post);
	uint8_t	hdr[4];

	hdr[0] = (uint8_t)(n >> 24);
	hdr[1] = (uint8_t)(n >> 16);
	hdr[2] = (uint8_t)(n >> 8);
	hdr[3] = (uint8_t)n;
	/* Room for all of it first: a message is never framed in part. */
	if (evbuffer_expand(ac->out, 4 + n) == -1 ||
	    evbuffer_add(ac->out, hdr, 4) == -1 ||
	    evbuffer_add(ac->out, pre, strlen(pre)) == -1 ||
	    evbuffer_add(ac->out, text, len) == -1 ||
	    evbuffer_add(ac->out, post, strlen(post)) == -1)
		return -1;
	return 0;
}

/*
 * Moves the lines the connection's watches hold (only's, whatever the
 * room, when only is not NULL) into its out buffer, each line one
 * message, and a drop count after them, and writes what the socket
 * takes.  Without room (a client that does not read) they stay in their
 * watch.  A write error is left to the read event, which sees the end.
 */
static void
admin_watch_pump(struct admin_conn *ac, struct watch *only)
{
	const char	*buf, *nl;
	char		 msg[48];
	uint64_t	 dropped;
	size_t		 i, len, off;
	int		 any = 0;

	for (i = 0; i < ac->nwatches; i++) {
		if (only != NULL ? ac->watches[i] != only :
		    evbuffer_get_length(ac->out) >= ADMIN_WATCH_OUT_MAX)
			continue;
		buf = watch_take(ac->watches[i], &len, &dropped);
		for (off = 0; off < len; off = (size_t)(nl - buf) + 1) {
			if ((nl = memchr(buf + off, '\n', len - off)) == NULL)
				break;		/* cannot be: lines are whole */
			if (admin_frame(ac, "{\"audit\":", buf + off,
			    (size_t)(nl - buf) - off, "}") == -1)
				dropped++;
			any = 1;
		}
		if (dropped > 0) {
			snprintf(msg, sizeof(msg), "%llu",
			    (unsigned long long)dropped);
			(void)admin_frame(ac, "{\"dropped\":", msg,
			    strlen(msg), "}");
			any = 1;
		}
	}
	if (any)
		(void)admin_flush(ac);
}

/*
 * What an unregistered sandbox held (its policy, listeners, the workers'
 * watches of them) is freed by the main thread and the workers, but the
 * allocator keeps the pages for reuse, and a platform that had a
 * thousand sandboxes would keep their size forever.  A second after a
 * sandbox left (at most once a second, whatever the churn), glibc's
 * malloc_trim() gives the free pages of every arena back.
 */
static void
admin_trim_cb(evutil_socket_t fd, short what, void *arg)
{
#ifdef HAVE_MALLOC_TRIM
	(void)malloc_trim(0);
#endif
}

static void
admin_trim_later(void)
{
	struct timeval	tv = util_ms_tv(ADMIN_TRIM_DELAY_MS);

	if (A_trim == NULL && (A_trim = evtimer_new(A_ctx->base,
	    admin_trim_cb, NULL)) == NULL)
		return;
	if (!evtimer_pending(A_trim, NULL))
		evtimer_add(A_trim, &tv);
}

/* Every worker drops the sandbox's listeners and ends its connections. */
static void
admin_sandbox_gone(struct admin_conn *ac, struct admin_sb *s)
{
	size_t	i;

	atomic_store(&s->sb->dead, 1);
	for (i = 0; i < A_ctx->nworkers; i++)
		if (worker_post_sandbox_gone(A_ctx->workers[i], s->sb) == -1)
			log_warnx("admin: out of memory ending sandbox %s",
			    s->sb->name);
	/* Its drop log's last records and summary come before the end. */
	drops_stop(s->drops);
	s->drops = NULL;
	log_info("sandbox %s: unregistered", s->sb->name);
	admin_audit(s->sb, "unregistered");
	LIST_REMOVE(s, link);
	for (i = 0; i < s->nls; i++)
		listener_unref(s->ls[i]);
	sandbox_unref(s->sb);
	free(s);
	admin_trim_later();
}

static void
admin_audit(const struct sandbox *sb, const char *what)
{
	struct audit_rec	r;

	audit_rec_init(&r);
	r.event = "sandbox";
	r.sandbox = sb->name;
	r.proto = "admin";
	r.verdict = POLICY_ALLOW;
	r.reason = POLICY_R_ALLOWED;
	r.detail = what;
	audit_emit(&r);
}

/* Sends ans (consumed) framed.  Returns 0, or -1 if it could not. */
static int
admin_answer(struct admin_conn *ac, json_t *ans)
{
	return admin_answer_with(ac, ans, NULL, 0);
}

/*
 * The same with the JSON text of more members (",\"k\":v...", morelen
 * bytes) put before the answer's closing brace.
 */
static int
admin_answer_with(struct admin_conn *ac, json_t *ans, const char *more,
    size_t morelen)
{
	char	*text;
	size_t	 len, n;
	uint8_t	 hdr[4];
	int	 rc = 0;

	if (ans == NULL || (text = json_dumps(ans, JSON_COMPACT)) == NULL) {
		json_decref(ans);
		return -1;
	}
	json_decref(ans);
	len = strlen(text);
	if (more == NULL || len < 2 || text[len - 1] != '}')
		morelen = 0;
	n = len + morelen;
	hdr[0] = (uint8_t)(n >> 24);
	hdr[1] = (uint8_t)(n >> 16);
	hdr[2] = (uint8_t)(n >> 8);
	hdr[3] = (uint8_t)n;
	/*
	 * An answer with a trust bundle is larger than a socket buffer:
	 * what the client has not read yet waits here (bounded), and goes
	 * out as the socket drains.  A client that reads nothing is gone.
	 */
	if (n > ADMIN_MSG_MAX || evbuffer_get_length(ac->out) + 4 + n >
	    ADMIN_OUT_MAX || evbuffer_expand(ac->out, 4 + n) == -1 ||
	    evbuffer_add(ac->out, hdr, 4) == -1 ||
	    evbuffer_add(ac->out, text, len - (morelen > 0)) == -1 ||
	    (morelen > 0 && (evbuffer_add(ac->out, more, morelen) == -1 ||
	    evbuffer_add(ac->out, "}", 1) == -1)))
		rc = -1;
	free(text);
	return rc == 0 ? admin_flush(ac) : rc;
}

/* Writes what the socket takes; the rest when it is writable.  0 or -1. */
static int
admin_flush(struct admin_conn *ac)
{
	int	n;

	while (evbuffer_get_length(ac->out) > 0) {
		n = evbuffer_write(ac->out, ac->fd);
		if (n > 0)
			continue;
		if (n == -1 && (errno == EAGAIN || errno == EINTR))
			return event_add(ac->wev, NULL);
		return -1;
	}
	return event_del(ac->wev);
}

static void
admin_write_cb(evutil_socket_t fd, short what, void *arg)
{
	struct admin_conn	*ac = arg;

	if (admin_flush(ac) == -1) {
		log_warnx("admin: a client stopped reading its answers: "
		    "dropped");
		admin_conn_free(ac);
		return;
	}
	/* Room again: the lines that waited in the watches. */
	if (ac->nwatches > 0 &&
	    evbuffer_get_length(ac->out) < ADMIN_WATCH_OUT_MAX)
		admin_watch_pump(ac, NULL);
}

static int
admin_fail(struct admin_conn *ac, const char *fmt, ...)
{
	va_list	ap;
	char	msg[2048];

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_warnx("admin: %s", msg);
	(void)admin_answer(ac, json_pack("{s:b, s:s}", "ok", 0, "error", msg));
	return -1;
}

void
admin_reload(void)
{
	struct admin_conn	*ac;
	struct admin_sb		*s;
	char			 err[512];

	/* The old context's trust text goes (the new one's is made when
	 * the next sandbox registers). */
	admin_trust_forget();
	A_reloads++;
	LIST_FOREACH(ac, &A_conns, link)
		LIST_FOREACH(s, &ac->sbs, link)
			if (secrets_sandbox_reload(s->sb, err,
			    sizeof(err)) == -1)
				log_warnx("reload: %s; sandbox %s keeps the "
				    "secrets it had", err, s->sb->name);
}

void
admin_shutdown(void)
{
	struct admin_conn	*ac;

	while ((ac = LIST_FIRST(&A_conns)) != NULL) {
		ac->gone = NULL;
		admin_conn_free(ac);
	}
	drops_shutdown();
	watch_shutdown();
	admin_trust_forget();
	if (A_trim != NULL) {
		event_free(A_trim);
		A_trim = NULL;
	}
	if (A_lev != NULL) {
		event_free(A_lev);
		A_lev = NULL;
	}
	if (A_lfd >= 0) {
		close(A_lfd);
		A_lfd = -1;
	}
	if (A_path != NULL) {
		(void)unlink(A_path);
		free(A_path);
		A_path = NULL;
	}
	if (A_entry != NULL) {
		(void)unlink(A_entry);	/* may fail once privileges are gone:
					   moat run skips a path that is not
					   a socket */
		free(A_entry);
		A_entry = NULL;
	}
}
