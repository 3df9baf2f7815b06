/*
 * config_listen.c - the "listen" section of the config: one listener per
 * element, its protocol, address or unix socket, the sandbox it serves
 * and how it answers a refused CONNECT; then the checks that no socket is
 * named twice and that a refusal inside the tunnel has a CA to do it.
 *
 * What it is not: binding.  moatd opens the sockets; here a listener is
 * only checked and copied into struct moat_config.
 */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "policy/policy_int.h"
#include "policy/config_int.h"

static const char *const	config_protos[] = {
	[MOAT_PROTO_HTTP] = "http",
	[MOAT_PROTO_SOCKS5] = "socks5",
	[MOAT_PROTO_MIXED] = "http+socks5",
	[MOAT_PROTO_TRANSPARENT] = "transparent",
	[MOAT_PROTO_DNS] = "dns",
};

#define CONFIG_NPROTOS	(sizeof(config_protos) / sizeof(config_protos[0]))

static void	config_listener(struct config_ctx *x, json_t *v, size_t pos,
		    struct moat_listen *l);

/* ------------------------------------------------------------------ */
/* listen                                                               */
/* ------------------------------------------------------------------ */

void
config_listen(struct config_ctx *x, json_t *v, size_t pos)
{
	size_t	n, i, ci, old;

	/* "listen": [] is legal: a moatd that serves only sandboxes
	 * registered at run time (moatd --admin-fd, "admin"). */
	if (!config_want(x, v, pos, JSON_ARRAY, "an array"))
		return;
	if ((n = json_array_size(v)) == 0)
		return;
	if ((x->c->listen = calloc(n, sizeof(*x->c->listen))) == NULL) {
		config_oom(x);
		return;
	}
	x->c->nlisten = n;
	for (i = 0; i < n; i++) {
		x->c->listen[i].mode = -1;
		x->c->listen[i].audit_only = -1;
	}
	for (i = 0, ci = pos + 1; i < n; i++, ci = jsonpos_next(x->jp, ci)) {
		old = config_push_index(x, i);
		config_listener(x, json_array_get(v, i), ci,
		    &x->c->listen[i]);
		config_pop(x, old);
	}
}

enum {
	LSN_PROTO = 0, LSN_ADDRESS, LSN_MODE, LSN_SANDBOX, LSN_AUTH,
	LSN_CONNECTIONS, LSN_CONNECT_REFUSAL, LSN_AUDIT_ONLY, LSN__COUNT
};

static const char *const	config_refusals[] = {
	[MOAT_REFUSAL_STATUS] = "status",
	[MOAT_REFUSAL_IN_TUNNEL] = "in-tunnel",
};

#define CONFIG_NREFUSALS	(sizeof(config_refusals) / \
				sizeof(config_refusals[0]))

/* "connect_refusal": "status" or "in-tunnel", on a listener that has
 * CONNECT (http, http+socks5); whether a CA is there is checked once the
 * whole config is read (config_check_refusals). */
static void
config_listener_refusal(struct config_ctx *x, json_t *v, size_t pos,
    bool proto_ok, struct moat_listen *l)
{
	const char	*s;

	if (!config_want(x, v, pos, JSON_STRING, "a string"))
		return;
	s = json_string_value(v);
	if (policy_connect_refusal_parse(s, &l->connect_refusal) == -1) {
		config_err(x, pos, "unknown value %s (\"status\": the 403 "
		    "answers the CONNECT; \"in-tunnel\": moatd opens the "
		    "tunnel and answers the 403 inside it)", config_q(x, s,
		    json_string_length(v)));
		return;
	}
	if (proto_ok && l->proto != MOAT_PROTO_HTTP &&
	    l->proto != MOAT_PROTO_MIXED) {
		config_err(x, pos, "a %s listener has no CONNECT: "
		    "\"connect_refusal\" applies to http and http+socks5 "
		    "listeners", config_protos[l->proto]);
		l->connect_refusal = MOAT_REFUSAL_STATUS;
		return;
	}
	l->refusal_line = (int)x->jp->v[pos].vline;
	l->refusal_column = (int)x->jp->v[pos].vcol;
}

static void
config_listener(struct config_ctx *x, json_t *v, size_t pos,
    struct moat_listen *l)
{
	struct config_field	 f[LSN__COUNT] = {
		[LSN_PROTO] = { "proto", NULL, 0 },
		[LSN_ADDRESS] = { "address", NULL, 0 },
		[LSN_MODE] = { "mode", NULL, 0 },
		[LSN_SANDBOX] = { "sandbox", NULL, 0 },
		[LSN_AUTH] = { "auth", NULL, 0 },
		[LSN_CONNECTIONS] = { "connections", NULL, 0 },
		[LSN_CONNECT_REFUSAL] = { "connect_refusal", NULL, 0 },
		[LSN_AUDIT_ONLY] = { "audit_only", NULL, 0 },
	};
	const char		*s;
	size_t			 n, i, old;
	long long		 num;
	bool			 proto_ok = false, addr_ok = false;

	l->line = (int)x->jp->v[pos].vline;
	l->column = (int)x->jp->v[pos].vcol;
	if (!config_fields(x, v, pos, f, LSN__COUNT))
		return;
	if (f[LSN_PROTO].v == NULL)
		config_err(x, pos, "missing \"proto\" (http, socks5, "
		    "http+socks5, transparent or dns)");
	else {
		old = config_push_key(x, "proto");
		if (config_want(x, f[LSN_PROTO].v, f[LSN_PROTO].pos,
		    JSON_STRING, "a string")) {
			s = json_string_value(f[LSN_PROTO].v);
			for (i = 0; i < CONFIG_NPROTOS; i++)
				if (strcmp(s, config_protos[i]) == 0)
					break;
			if (i < CONFIG_NPROTOS) {
				l->proto = (enum moat_listen_proto)i;
				proto_ok = true;
			} else
				config_err(x, f[LSN_PROTO].pos, "unknown "
				    "protocol %s (http, socks5, http+socks5, "
				    "transparent or dns)", config_q(x, s,
				    json_string_length(f[LSN_PROTO].v)));
		}
		config_pop(x, old);
	}
	if (f[LSN_ADDRESS].v == NULL)
		config_err(x, pos, "missing \"address\" (IP:PORT, "
		    "[IPv6]:PORT or unix:/PATH)");
	else {
		old = config_push_key(x, "address");
		addr_ok = config_bind(x, f[LSN_ADDRESS].v,
		    f[LSN_ADDRESS].pos, false, l);
		config_pop(x, old);
	}
	if (proto_ok && addr_ok && l->is_unix &&
	    (l->proto == MOAT_PROTO_TRANSPARENT ||
	    l->proto == MOAT_PROTO_DNS))
		config_err(x, f[LSN_ADDRESS].pos, "a %s listener cannot be a "
		    "unix socket: give it IP:PORT", config_protos[l->proto]);
	if (addr_ok && l->is_unix)
		l->mode = (int)config_default("listen", "mode")->def;
	if (f[LSN_MODE].v != NULL) {
		old = config_push_key(x, "mode");
		if (addr_ok && !l->is_unix)
			config_err(x, f[LSN_MODE].pos, "a mode applies to "
			    "unix socket listeners only");
		else
			(void)config_mode(x, f[LSN_MODE].v, f[LSN_MODE].pos,
			    &l->mode);
		config_pop(x, old);
	}
	if (f[LSN_SANDBOX].v != NULL) {
		old = config_push_key(x, "sandbox");
		if (config_want(x, f[LSN_SANDBOX].v, f[LSN_SANDBOX].pos,
		    JSON_STRING, "a string")) {
			s = json_string_value(f[LSN_SANDBOX].v);
			n = json_string_length(f[LSN_SANDBOX].v);
			if (!config_ident(s, n, CONFIG_IDENT_MAX, "._-"))
				config_err(x, f[LSN_SANDBOX].pos, "%s is not "
				    "a sandbox name (1-64 of A-Z a-z 0-9 . _ "
				    "-)", config_q(x, s, n));
			else
				l->sandbox = config_strdup(x, s);
		}
		config_pop(x, old);
	}
	if (l->sandbox == NULL)
		l->sandbox = config_strdup(x,
		    config_default("listen", "sandbox")->sdef);
	if (f[LSN_AUTH].v != NULL) {
		old = config_push_key(x, "auth");
		if (proto_ok && (l->proto == MOAT_PROTO_TRANSPARENT ||
		    l->proto == MOAT_PROTO_DNS))
			config_err(x, f[LSN_AUTH].pos, "a %s listener has no "
			    "way to log in: remove \"auth\"",
			    config_protos[l->proto]);
		else
			config_refs(x, f[LSN_AUTH].v, f[LSN_AUTH].pos, false,
			    &l->auth, &l->nauth);
		config_pop(x, old);
	}
	if (f[LSN_CONNECTIONS].v != NULL) {
		old = config_push_key(x, "connections");
		if (config_number(x, f[LSN_CONNECTIONS].v,
		    f[LSN_CONNECTIONS].pos, config_default("listen",
		    "connections"), &num))
			l->connections = (size_t)num;
		config_pop(x, old);
	}
	if (f[LSN_CONNECT_REFUSAL].v != NULL) {
		old = config_push_key(x, "connect_refusal");
		config_listener_refusal(x, f[LSN_CONNECT_REFUSAL].v,
		    f[LSN_CONNECT_REFUSAL].pos, proto_ok, l);
		config_pop(x, old);
	}
	if (f[LSN_AUDIT_ONLY].v != NULL) {
		old = config_push_key(x, "audit_only");
		config_audit_only(x, f[LSN_AUDIT_ONLY].v,
		    f[LSN_AUDIT_ONLY].pos, &l->audit_only);
		config_pop(x, old);
	}
}

/*
 * "IP:PORT", "[V6]:PORT" or "unix:/PATH" (only the last if unix_only).
 * Nothing resolves at bind time, so host names are refused.
 */
bool
config_bind(struct config_ctx *x, json_t *v, size_t pos, bool unix_only,
    struct moat_listen *l)
{
	const char	*s, *close, *colon, *path;
	size_t		 n, i, plen, alen;
	bool		 br = false;

	if (!config_want(x, v, pos, JSON_STRING, "a string"))
		return false;
	s = json_string_value(v);
	n = json_string_length(v);
	if (n >= LIT_LEN("unix:") && MEMCMP_LIT(s, "unix:") == 0) {
		path = s + LIT_LEN("unix:");
		plen = n - LIT_LEN("unix:");
		if (plen == 0 || path[0] != '/') {
			config_err(x, pos, "%s: a unix socket path must be "
			    "absolute (unix:/PATH)", config_q(x, s, n));
			return false;
		}
		if (plen > CONFIG_UNIX_PATH_MAX) {
			config_err(x, pos, "unix socket path is %zu bytes "
			    "long; the most a socket can have is %d", plen,
			    CONFIG_UNIX_PATH_MAX);
			return false;
		}
		for (i = 0; i < plen; i++)
			if ((unsigned char)path[i] < 0x20 || path[i] == 0x7f) {
				config_err(x, pos, "control byte in unix "
				    "socket path %s", config_q(x, s, n));
				return false;
			}
		l->is_unix = true;
		l->address = config_strdup(x, s);
		l->path = config_strdup(x, path);
		if (l->address == NULL || l->path == NULL) {
			/* Both or neither: config_check_addresses() reads
			 * the path of every listener with an address. */
			free(l->address);
			free(l->path);
			l->address = l->path = NULL;
			return false;
		}
		return true;
	}
	if (unix_only) {
		config_err(x, pos, "%s is not unix:/PATH", config_q(x, s, n));
		return false;
	}
	if (n > 0 && s[0] == '[') {
		close = memchr(s, ']', n);
		colon = close != NULL && close + 1 < s + n && close[1] == ':' ?
		    close + 1 : NULL;
		br = true;
	} else {
		colon = memchr(s, ':', n);
		if (colon != NULL && memchr(colon + 1, ':',
		    n - (size_t)(colon + 1 - s)) != NULL)
			colon = NULL;
	}
	alen = colon != NULL ? (size_t)(colon - s) : 0;
	if (colon == NULL || addr_parse_strict(s, alen, br,
	    &l->host.addr) == -1 || (!br && l->host.addr.family != AF_INET)) {
		config_err(x, pos, "%s is not IP:PORT, [IPv6]:PORT or "
		    "unix:/PATH (host names are not allowed: nothing is "
		    "resolved at bind time)", config_q(x, s, n));
		return false;
	}
	if (host_port_parse(colon + 1, n - alen - 1, &l->port) == -1) {
		config_err(x, pos, "%s: bad port (1-65535)",
		    config_q(x, s, n));
		return false;
	}
	l->host.kind = POLICY_HOST_ADDR;
	policy_addr_format(&l->host.addr, l->host.name, sizeof(l->host.name));
	l->address = config_strdup(x, s);
	return l->address != NULL;
}

/* 0.0.0.0 or :: */
static bool
config_addr_any(const struct policy_addr *a)
{
	static const struct in6_addr	any6 = IN6ADDR_ANY_INIT;

	return a->family == AF_INET ? a->u.v4.s_addr == htonl(INADDR_ANY) :
	    memcmp(&a->u.v6, &any6, sizeof(any6)) == 0;
}

/* 127.0.0.0/8 or ::1: the loopback interface. */
static bool
config_addr_loop(const struct policy_addr *a)
{
	return a->family == AF_INET ?
	    (ntohl(a->u.v4.s_addr) >> 24) == 127 :
	    IN6_IS_ADDR_LOOPBACK(&a->u.v6);
}

/*
 * A sandbox must never reach the metrics listener: it would read every
 * other sandbox's traffic there.  Refused: the socket of a listener or
 * of the admin socket; a TCP address on the interface of a listener (a
 * sandbox that reaches the listener reaches every port of its address:
 * the same address, loopback beside loopback, or anything beside a
 * listener on every address); every address (0.0.0.0, ::) while moatd
 * has a TCP listener or an admin socket (a registered sandbox's veth
 * leads into moatd's namespace).
 */
static void
config_check_metrics(struct config_ctx *x)
{
	static const char	 fix[] = "; put metrics on unix:/PATH, or on "
	    "an address of an interface no listener is on (in the namespace "
	    "moatd runs in)";
	struct moat_config	*c = x->c;
	struct moat_metrics	*m = &c->metrics;
	struct moat_listen	*a;
	size_t			 i;

	if (m->address == NULL)
		return;
	if (m->is_unix && c->admin_path != NULL &&
	    strcmp(m->path, c->admin_path) == 0)
		diag_add(x->d, POLICY_DIAG_ERROR, m->line, m->column,
		    "metrics.address: %s is also the admin socket: give "
		    "metrics a path of its own", m->path);
	for (i = 0; i < c->nlisten; i++) {
		a = &c->listen[i];
		if (a->address == NULL || a->is_unix != m->is_unix)
			continue;
		if (m->is_unix) {
			if (strcmp(a->path, m->path) == 0)
				diag_add(x->d, POLICY_DIAG_ERROR, m->line,
				    m->column, "metrics.address: %s is also "
				    "listen[%zu]'s socket (line %d): give "
				    "metrics a path of its own", m->path, i,
				    a->line);
			continue;
		}
		if (config_addr_any(&m->host.addr))
			diag_add(x->d, POLICY_DIAG_ERROR, m->line, m->column,
			    "metrics.address %s listens on every address, "
			    "listen[%zu]'s (%s, line %d) too, which sandboxes "
			    "reach%s", m->address, i, a->address, a->line, fix);
		else if (config_addr_any(&a->host.addr))
			diag_add(x->d, POLICY_DIAG_ERROR, m->line, m->column,
			    "metrics.address %s: listen[%zu] (%s, line %d) "
			    "listens on every address, so a sandbox that "
			    "reaches it may reach this port too%s", m->address,
			    i, a->address, a->line, fix);
		else if (a->host.addr.family == m->host.addr.family &&
		    (strcmp(a->host.name, m->host.name) == 0 ||
		    (config_addr_loop(&a->host.addr) &&
		    config_addr_loop(&m->host.addr))))
			diag_add(x->d, POLICY_DIAG_ERROR, m->line, m->column,
			    "metrics.address %s is on the interface of "
			    "listen[%zu] (%s, line %d): a sandbox that reaches "
			    "that listener reaches this port too%s",
			    m->address, i, a->address, a->line, fix);
	}
	if (!m->is_unix && config_addr_any(&m->host.addr) &&
	    c->admin_path != NULL)
		diag_add(x->d, POLICY_DIAG_ERROR, m->line, m->column,
		    "metrics.address %s listens on every address, and the "
		    "sandboxes registered on the admin socket may reach "
		    "moatd's namespace (through a veth)%s", m->address, fix);
}

/* The same socket twice is an error, whatever spelling. */
void
config_check_addresses(struct config_ctx *x)
{
	struct moat_config	*c = x->c;
	struct moat_listen	*a, *b;
	size_t			 i, j;
	char			 pa[CONFIG_UNIX_PATH_MAX + ADDR_TEXT_MAX];

	for (i = 0; i < c->nlisten; i++) {
		a = &c->listen[i];
		if (a->address == NULL)
			continue;
		for (j = 0; j < i; j++) {
			b = &c->listen[j];
			if (b->address == NULL || a->is_unix != b->is_unix)
				continue;
			if (a->is_unix ? strcmp(a->path, b->path) != 0 :
			    (a->port != b->port ||
			    strcmp(a->host.name, b->host.name) != 0))
				continue;
			if (a->is_unix)
				snprintf(pa, sizeof(pa), "unix:%s", a->path);
			else
				snprintf(pa, sizeof(pa), a->host.addr.family ==
				    AF_INET ? "%s:%u" : "[%s]:%u", a->host.name,
				    a->port);
			diag_add(x->d, POLICY_DIAG_ERROR, a->line, a->column,
			    "listen[%zu]: address %s is already used by "
			    "listen[%zu] (line %d)", i, pa, j, b->line);
			break;
		}
		if (a->is_unix && c->admin_path != NULL &&
		    strcmp(c->admin_path, a->path) == 0)
			diag_add(x->d, POLICY_DIAG_ERROR, a->line, a->column,
			    "listen[%zu]: %s is also the admin socket", i,
			    a->path);
	}
	config_check_metrics(x);
}

/*
 * "connect_refusal": "in-tunnel" presents a leaf for the CONNECT's host:
 * only a moatd with a CA can.  The error is at the key's value.
 */
void
config_check_refusals(struct config_ctx *x)
{
	struct moat_config	*c = x->c;
	size_t			 i;

	if (c->tls.ca_cert != NULL || x->ca_given)
		return;
	for (i = 0; i < c->nlisten; i++)
		if (c->listen[i].connect_refusal == MOAT_REFUSAL_IN_TUNNEL)
			diag_add(x->d, POLICY_DIAG_ERROR,
			    c->listen[i].refusal_line,
			    c->listen[i].refusal_column, "listen[%zu]."
			    "connect_refusal: \"in-tunnel\" answers inside "
			    "TLS with a leaf moatd signs, but no CA is "
			    "configured: set tls.ca_cert and tls.ca_key (moat "
			    "ca init DIR), or remove the key", i);
}

const char *
policy_connect_refusal_str(enum moat_connect_refusal r)
{
	if ((unsigned)r >= CONFIG_NREFUSALS)
		return "?";
	return config_refusals[r];
}

int
policy_connect_refusal_parse(const char *s, enum moat_connect_refusal *r)
{
	size_t	i;

	for (i = 0; i < CONFIG_NREFUSALS; i++)
		if (strcmp(s, config_refusals[i]) == 0) {
			*r = (enum moat_connect_refusal)i;
			return 0;
		}
	return -1;
}

const char *
policy_proto_str(enum moat_listen_proto p)
{
	if ((unsigned)p >= CONFIG_NPROTOS)
		return "?";
	return config_protos[p];
}
