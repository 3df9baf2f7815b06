/*
 * admin_client.c - the client of moatd's admin protocol
 * (proto/admin_proto.h): framing, descriptors by SCM_RIGHTS, JSON with
 * jansson.
 *
 * What it is: hello, register, unregister, watch, unwatch, list, stats,
 * each a request
 * and its answer, each bounded in time (MOAT_STEP_TIMEOUT_MS) and size
 * (ADMIN_MSG_MAX); and the messages of a watch, which arrive unasked,
 * before an answer or between requests (admin_client_pump()), and go to
 * the handler admin_client_on_watch() set.
 *
 * What it is not: trusting of moatd either: an answer that is not one
 * JSON object with a boolean "ok", or that carries descriptors, is a
 * protocol error.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <arpa/inet.h>

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "launcher/launcher.h"
#include "policy/jsonload.h"
#include "proto/admin_proto.h"

#define ADMIN_CLIENT_CHUNK	65536	/* bytes per read */
#define ADMIN_CLIENT_PUMP_ROUNDS 16	/* reads per admin_client_pump() */

struct admin_client {
	int	  fd;
	/* Bytes read that are not a whole message yet. */
	uint8_t	 *in;
	size_t	  inlen, incap;
	bool	  can_watch;	/* hello said moatd streams a watch */
	bool	  can_drops;	/* ... and reads a sandbox's drop log */
	bool	  can_status;	/* ... knows the ops list and stats */
	char	  version[32];	/* hello's "moatd" */
	bool	  eof;		/* moatd closed the connection */
	int	  wait_ms;	/* how long the answer awaited may take */
	void	(*on_watch)(void *, json_t *);
	void	 *watch_arg;
};

static int	admin_client_send(struct admin_client *ac, json_t *msg,
		    const int *fds, size_t nfds, char *err, size_t errlen);
static int	admin_client_fill(struct admin_client *ac, long long deadline,
		    char *err, size_t errlen);
static int	admin_client_next(struct admin_client *ac, json_t **msg,
		    char *err, size_t errlen);
static bool	admin_client_is_watch(json_t *msg);
static json_t	*admin_client_recv(struct admin_client *ac, char *err,
		    size_t errlen);
static json_t	*admin_client_answer(struct admin_client *ac, char *err,
		    size_t errlen);
static int	admin_client_call(struct admin_client *ac, json_t *req,
		    const int *fds, size_t nfds, json_t **answer, char *err,
		    size_t errlen);
static long long admin_client_now_ms(void);

static long long
admin_client_now_ms(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct admin_client *
admin_client_connect(const char *path, char *err, size_t errlen)
{
	struct sockaddr_un	 sun;
	struct admin_client	*ac;
	int			 fd, saved;

	/* runconf checked it; this is the copy's bound. */
	if (path[0] == '\0' || strlen(path) >= sizeof(sun.sun_path)) {
		snprintf(err, errlen, "%s: not a Unix socket path (at most "
		    "%zu bytes)", path, sizeof(sun.sun_path) - 1);
		return NULL;
	}
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	memcpy(sun.sun_path, path, strlen(path));
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return NULL;
	}
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		saved = errno;
		snprintf(err, errlen, "cannot reach moatd's admin socket %s: "
		    "%s", path, strerror(saved));
		close(fd);
		errno = saved;	/* the caller may say what to check */
		return NULL;
	}
	if ((ac = admin_client_from_fd(fd)) == NULL)
		snprintf(err, errlen, "out of memory");
	return ac;
}

struct admin_client *
admin_client_from_fd(int fd)
{
	struct admin_client	*ac;

	if ((ac = calloc(1, sizeof(*ac))) == NULL) {
		close(fd);
		return NULL;
	}
	ac->fd = fd;
	return ac;
}

/*
 * Sends one framed message; the descriptors ride on the sendmsg() that
 * carries the length prefix, as admin_proto.h asks.
 */
static int
admin_client_send(struct admin_client *ac, json_t *msg, const int *fds,
    size_t nfds, char *err, size_t errlen)
{
	union {
		struct cmsghdr	hdr;
		char		buf[CMSG_SPACE(sizeof(int) * ADMIN_FDS_MAX)];
	} cmsgbuf;
	struct msghdr	 mh;
	struct cmsghdr	*cmsg;
	struct iovec	 iov[2];
	uint32_t	 be;
	char		*text;
	size_t		 len, off = 0, total;
	ssize_t		 r;
	int		 first = 1;

	if (nfds > ADMIN_FDS_MAX) {
		snprintf(err, errlen, "more than %d descriptors",
		    ADMIN_FDS_MAX);
		return -1;
	}
	if ((text = json_dumps(msg, JSON_COMPACT)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	len = strlen(text);
	if (len == 0 || len > ADMIN_MSG_MAX) {
		snprintf(err, errlen, "message of %zu bytes (at most %u)", len,
		    ADMIN_MSG_MAX);
		free(text);
		return -1;
	}
	be = htonl((uint32_t)len);
	total = sizeof(be) + len;
	while (off < total) {
		memset(&mh, 0, sizeof(mh));
		if (off < sizeof(be)) {
			iov[0].iov_base = (char *)&be + off;
			iov[0].iov_len = sizeof(be) - off;
			iov[1].iov_base = text;
			iov[1].iov_len = len;
			mh.msg_iovlen = 2;
		} else {
			iov[0].iov_base = text + (off - sizeof(be));
			iov[0].iov_len = total - off;
			mh.msg_iovlen = 1;
		}
		mh.msg_iov = iov;
		if (first && nfds > 0) {
			memset(&cmsgbuf, 0, sizeof(cmsgbuf));
			mh.msg_control = cmsgbuf.buf;
			mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
			cmsg = CMSG_FIRSTHDR(&mh);
			cmsg->cmsg_level = SOL_SOCKET;
			cmsg->cmsg_type = SCM_RIGHTS;
			cmsg->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
			memcpy(CMSG_DATA(cmsg), fds, sizeof(int) * nfds);
		}
		r = sendmsg(ac->fd, &mh, MSG_NOSIGNAL);
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1) {
			snprintf(err, errlen, "writing to moatd: %s",
			    strerror(errno));
			free(text);
			return -1;
		}
		/* Descriptors went with the first byte: never send twice. */
		first = 0;
		off += (size_t)r;
	}
	free(text);
	return 0;
}

/*
 * Reads what moatd sent into the input buffer: waits for it until
 * deadline (ms, monotonic; 0: does not wait).  1 when bytes came, 0 when
 * none did (no wait), -1 with err (time out, end, error, descriptors).
 */
static int
admin_client_fill(struct admin_client *ac, long long deadline, char *err,
    size_t errlen)
{
	union {
		struct cmsghdr	hdr;
		char		buf[CMSG_SPACE(sizeof(int) * ADMIN_FDS_MAX)];
	} cmsgbuf;
	struct pollfd	 pfd;
	struct msghdr	 mh;
	struct cmsghdr	*cmsg;
	struct iovec	 iov;
	size_t		 i, n, nc;
	ssize_t		 r;
	long long	 left;
	uint8_t		*ni;
	int		 one;

	for (;;) {
		if (deadline != 0) {
			if ((left = deadline - admin_client_now_ms()) < 0)
				left = 0;
			pfd.fd = ac->fd;
			pfd.events = POLLIN;
			r = poll(&pfd, 1, (int)left);
			if (r == -1 && errno == EINTR)
				continue;
			if (r <= 0) {
				snprintf(err, errlen, "moatd did not answer in "
				    "%d ms", ac->wait_ms);
				return -1;
			}
		}
		if (ac->incap - ac->inlen < ADMIN_CLIENT_CHUNK) {
			nc = ac->inlen + ADMIN_CLIENT_CHUNK;
			if ((ni = realloc(ac->in, nc)) == NULL) {
				snprintf(err, errlen, "out of memory");
				return -1;
			}
			ac->in = ni;
			ac->incap = nc;
		}
		memset(&mh, 0, sizeof(mh));
		iov.iov_base = ac->in + ac->inlen;
		iov.iov_len = ADMIN_CLIENT_CHUNK;
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		mh.msg_control = cmsgbuf.buf;
		mh.msg_controllen = sizeof(cmsgbuf.buf);
		r = recvmsg(ac->fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1 && errno == EAGAIN) {
			if (deadline == 0)
				return 0;
			continue;
		}
		if (r == -1 && errno == ECONNRESET)
			r = 0;
		if (r == -1) {
			snprintf(err, errlen, "reading from moatd: %s",
			    strerror(errno));
			return -1;
		}
		for (cmsg = CMSG_FIRSTHDR(&mh); cmsg != NULL;
		    cmsg = CMSG_NXTHDR(&mh, cmsg)) {
			if (cmsg->cmsg_level != SOL_SOCKET ||
			    cmsg->cmsg_type != SCM_RIGHTS)
				continue;
			n = (cmsg->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			for (i = 0; i < n; i++) {
				memcpy(&one, CMSG_DATA(cmsg) + i * sizeof(int),
				    sizeof(int));
				close(one);
			}
			snprintf(err, errlen, "moatd sent descriptors in an "
			    "answer");
			return -1;
		}
		if (r == 0) {
			ac->eof = true;
			snprintf(err, errlen, "moatd closed the admin "
			    "connection (it accepts only root and its own "
			    "user)");
			return -1;
		}
		ac->inlen += (size_t)r;
		return 1;
	}
}

/*
 * Takes one whole message off the input buffer: 1 with *msg (a JSON
 * object), 0 when none is whole yet, -1 with err (a length out of range,
 * not a JSON object).
 */
static int
admin_client_next(struct admin_client *ac, json_t **msg, char *err,
    size_t errlen)
{
	json_error_t	je;
	uint32_t	len;

	*msg = NULL;
	if (ac->inlen < 4)
		return 0;
	len = (uint32_t)ac->in[0] << 24 | (uint32_t)ac->in[1] << 16 |
	    (uint32_t)ac->in[2] << 8 | ac->in[3];
	if (len == 0 || len > ADMIN_MSG_MAX) {
		snprintf(err, errlen, "moatd sent a message of %u bytes", len);
		return -1;
	}
	if (ac->inlen - 4 < len)
		return 0;
	*msg = policy_json_loadb((const char *)ac->in + 4, len,
	    JSON_REJECT_DUPLICATES, &je);
	memmove(ac->in, ac->in + 4 + len, ac->inlen - 4 - len);
	ac->inlen -= 4 + len;
	if (*msg == NULL || !json_is_object(*msg)) {
		snprintf(err, errlen, "moatd sent no JSON object%s%s",
		    *msg == NULL ? ": " : "", *msg == NULL ? je.text : "");
		json_decref(*msg);
		*msg = NULL;
		return -1;
	}
	return 1;
}

/* A message of a watch ({"audit": ...}, {"dropped": N}): no "ok". */
static bool
admin_client_is_watch(json_t *msg)
{
	return json_object_get(msg, "ok") == NULL &&
	    (json_is_object(json_object_get(msg, "audit")) ||
	    json_is_integer(json_object_get(msg, "dropped")));
}

/*
 * One framed answer: a JSON object with a boolean "ok".  Messages of a
 * watch that come first go to its handler.
 */
static json_t *
admin_client_recv(struct admin_client *ac, char *err, size_t errlen)
{
	json_t		*ans;
	long long	 deadline;
	int		 n;

	if (ac->wait_ms == 0)
		ac->wait_ms = MOAT_STEP_TIMEOUT_MS;
	deadline = admin_client_now_ms() + ac->wait_ms;
	for (;;) {
		if ((n = admin_client_next(ac, &ans, err, errlen)) == -1)
			return NULL;
		if (n == 0) {
			if (admin_client_fill(ac, deadline, err, errlen) == -1)
				return NULL;
			continue;
		}
		if (admin_client_is_watch(ans)) {
			if (ac->on_watch != NULL)
				ac->on_watch(ac->watch_arg, ans);
			json_decref(ans);
			continue;
		}
		if (!json_is_boolean(json_object_get(ans, "ok"))) {
			snprintf(err, errlen, "moatd's answer is not "
			    "{\"ok\": ...}");
			json_decref(ans);
			return NULL;
		}
		return ans;
	}
}

/* Reads one answer; "ok": false becomes err.  The answer, or NULL. */
static json_t *
admin_client_answer(struct admin_client *ac, char *err, size_t errlen)
{
	json_t		*ans;
	const char	*e;

	if ((ans = admin_client_recv(ac, err, errlen)) == NULL)
		return NULL;
	if (!json_is_true(json_object_get(ans, "ok"))) {
		e = json_string_value(json_object_get(ans, "error"));
		snprintf(err, errlen, "moatd: %s", e != NULL ? e :
		    "refused (no reason given)");
		json_decref(ans);
		return NULL;
	}
	return ans;
}

/* Sends req (consumed), reads the answer; "ok": false becomes err. */
static int
admin_client_call(struct admin_client *ac, json_t *req, const int *fds,
    size_t nfds, json_t **answer, char *err, size_t errlen)
{
	json_t	*ans;

	if (answer != NULL)
		*answer = NULL;
	if (req == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (admin_client_send(ac, req, fds, nfds, err, errlen) == -1) {
		json_decref(req);
		return -1;
	}
	json_decref(req);
	if ((ans = admin_client_answer(ac, err, errlen)) == NULL)
		return -1;
	if (answer != NULL)
		*answer = ans;
	else
		json_decref(ans);
	return 0;
}

int
admin_client_hello_send(struct admin_client *ac, char *err, size_t errlen)
{
	json_t	*req;
	int	 rc;

	if ((req = json_pack("{s:s, s:i}", "op", "hello", "version",
	    ADMIN_PROTO_VERSION)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	rc = admin_client_send(ac, req, NULL, 0, err, errlen);
	json_decref(req);
	return rc;
}

int
admin_client_hello_recv(struct admin_client *ac, char *err, size_t errlen)
{
	json_t	*ans, *v;

	if ((ans = admin_client_answer(ac, err, errlen)) == NULL)
		return -1;
	ac->can_watch = json_is_true(json_object_get(ans, "watch"));
	ac->can_drops = json_is_true(json_object_get(ans, "drops"));
	ac->can_status = json_is_true(json_object_get(ans, "list")) &&
	    json_is_true(json_object_get(ans, "stats"));
	snprintf(ac->version, sizeof(ac->version), "%s",
	    json_is_string(json_object_get(ans, "moatd")) ?
	    json_string_value(json_object_get(ans, "moatd")) : "?");
	v = json_object_get(ans, "version");
	if (!json_is_integer(v) || json_integer_value(v) !=
	    ADMIN_PROTO_VERSION) {
		snprintf(err, errlen, "moatd speaks admin protocol version "
		    "%lld, not %d", json_is_integer(v) ?
		    (long long)json_integer_value(v) : -1LL,
		    ADMIN_PROTO_VERSION);
		json_decref(ans);
		return -1;
	}
	json_decref(ans);
	return 0;
}

int
admin_client_hello(struct admin_client *ac, char *err, size_t errlen)
{
	if (admin_client_hello_send(ac, err, errlen) == -1)
		return -1;
	return admin_client_hello_recv(ac, err, errlen);
}

int
admin_client_register(struct admin_client *ac, const char *name,
    json_t *config, json_t *more, const char *const *protos, const int *fds,
    size_t n, const char *connect_refusal, int drops, json_t **answer,
    char *err, size_t errlen)
{
	json_t	*lst, *req, *ans, *e;
	int	 all[ADMIN_FDS_MAX];
	size_t	 i, nall = n;

	if (drops != -1 && !ac->can_drops)
		drops = -1;
	if (n == 0 || n + (drops != -1) > ADMIN_FDS_MAX) {
		snprintf(err, errlen, "%zu listeners (1-%d)", n,
		    ADMIN_FDS_MAX - (drops != -1));
		return -1;
	}
	memcpy(all, fds, n * sizeof(int));
	if (drops != -1)
		all[nall++] = drops;
	if ((lst = json_array()) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (i = 0; i < n; i++) {
		e = json_pack("{s:s, s:i}", "proto", protos[i], "fd",
		    (json_int_t)i);
		if (e != NULL && connect_refusal != NULL &&
		    (strcmp(protos[i], "http") == 0 ||
		    strcmp(protos[i], "http+socks5") == 0) &&
		    json_object_set_new(e, "connect_refusal",
		    json_string(connect_refusal)) == -1) {
			json_decref(e);
			e = NULL;
		}
		if (json_array_append_new(lst, e) == -1) {
			json_decref(lst);
			snprintf(err, errlen, "out of memory");
			return -1;
		}
	}
	req = json_pack("{s:s, s:s, s:O, s:o}", "op", "register", "sandbox",
	    name, "config", config, "listeners", lst);
	if (req != NULL && more != NULL && json_object_update_missing(req,
	    more) == -1) {
		json_decref(req);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	/* The drop log: the descriptor after the listeners'. */
	if (req != NULL && drops != -1 && json_object_set_new(req, "drops",
	    json_integer((json_int_t)n)) == -1) {
		json_decref(req);
		req = NULL;
	}
	if (admin_client_call(ac, req, all, nall, &ans, err, errlen) == -1)
		return -1;
	if (!json_is_string(json_object_get(ans, "sandbox")) ||
	    strcmp(json_string_value(json_object_get(ans, "sandbox")),
	    name) != 0) {
		snprintf(err, errlen, "moatd registered another name");
		json_decref(ans);
		return -1;
	}
	if (answer != NULL)
		*answer = ans;
	else
		json_decref(ans);
	return 0;
}

int
admin_client_unregister(struct admin_client *ac, const char *name, char *err,
    size_t errlen)
{
	return admin_client_call(ac, json_pack("{s:s, s:s}", "op",
	    "unregister", "sandbox", name), NULL, 0, NULL, err, errlen);
}

bool
admin_client_can_watch(const struct admin_client *ac)
{
	return ac->can_watch;
}

bool
admin_client_can_drops(const struct admin_client *ac)
{
	return ac->can_drops;
}

void
admin_client_on_watch(struct admin_client *ac, void (*fn)(void *, json_t *),
    void *arg)
{
	ac->on_watch = fn;
	ac->watch_arg = arg;
}

int
admin_client_watch(struct admin_client *ac, const char *name, bool all,
    char *err, size_t errlen)
{
	return admin_client_call(ac, json_pack("{s:s, s:s, s:b}", "op",
	    "watch", "sandbox", name, "all", all), NULL, 0, NULL, err,
	    errlen);
}

int
admin_client_unwatch(struct admin_client *ac, const char *name, int wait_ms,
    char *err, size_t errlen)
{
	int	rc;

	ac->wait_ms = wait_ms;
	rc = admin_client_call(ac, json_pack("{s:s, s:s}", "op", "unwatch",
	    "sandbox", name), NULL, 0, NULL, err, errlen);
	ac->wait_ms = MOAT_STEP_TIMEOUT_MS;
	return rc;
}

int
admin_client_pump(struct admin_client *ac, char *err, size_t errlen)
{
	json_t	*msg;
	int	 n, got, rounds = 0;

	/* Bounded: under a flood of lines the caller's loop still turns. */
	do {
		if ((got = admin_client_fill(ac, 0, err, errlen)) == -1) {
			if (ac->eof)
				snprintf(err, errlen, "moatd closed the admin "
				    "connection");
			return -1;
		}
		while ((n = admin_client_next(ac, &msg, err, errlen)) == 1) {
			if (!admin_client_is_watch(msg)) {
				json_decref(msg);
				snprintf(err, errlen, "moatd broke the admin "
				    "protocol (a message no one asked for)");
				return -1;
			}
			if (ac->on_watch != NULL)
				ac->on_watch(ac->watch_arg, msg);
			json_decref(msg);
		}
		if (n == -1)
			return -1;
	} while (got == 1 && ++rounds < ADMIN_CLIENT_PUMP_ROUNDS);
	return 0;
}

int
admin_client_fd(const struct admin_client *ac)
{
	return ac->fd;
}

void
admin_client_close(struct admin_client *ac)
{
	if (ac == NULL)
		return;
	if (ac->fd != -1)
		close(ac->fd);
	free(ac->in);
	free(ac);
}

bool
admin_client_can_status(const struct admin_client *ac)
{
	return ac->can_status;
}

const char *
admin_client_version(const struct admin_client *ac)
{
	return ac->version[0] != '\0' ? ac->version : "?";
}

int
admin_client_request(struct admin_client *ac, json_t *req, json_t **answer,
    char *err, size_t errlen)
{
	return admin_client_call(ac, req, NULL, 0, answer, err, errlen);
}
