/*
 * runconf.c - what `moat run` and `moat attach` share: their common
 * options, the config they register with moatd (a "policy" built from
 * --policy, --allow and --allow-private), and the listening sockets a
 * sandbox gets.
 *
 * What it is not: the validator.  The config is checked by the policy
 * library exactly as moatd will check it (policy_config_load), so a
 * mistake is reported before any namespace exists.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>

#include <sched.h>
#include <signal.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <resolv.h>

#include "certs/certs_paths.h"
#include "launcher/launcher.h"
#include "launcher/refusals.h"
#include "policy/policy.h"
#include "policy/jsonload.h"
#include "policyio/policyio.h"
#include "proto/admin_proto.h"

/* --policy FILE, bytes */
#define RUNCONF_FILE_MAX	(16u * 1024 * 1024)
#define RUNCONF_DIAG_MAX	1024	/* one diagnostic line */
#define RUNCONF_NAME_MAX	64	/* ADMIN_NAME_MAX */
#define RUNCONF_ALLOW_MAX	1024	/* --allow / --allow-private each */
#define RUNCONF_HTTP_PORT	3128
#define RUNCONF_SOCKS_PORT	1080
#define RUNCONF_DNS_PORT	53
#define RUNCONF_TRANSPARENT_PORT 15001
#define RUNCONF_GENERATED	"(the config moat builds)"
/* The CA files the caller named, merged into the sandbox's bundle: what
 * a register request may carry of them, at most half of ADMIN_MSG_MAX
 * less the policy. */
#define RUNCONF_TRUST_MAX	(512u << 10)

static int	runconf_port(const char *cmd, const char *opt, const char *arg,
		    uint16_t *port);
static int	runconf_push(const char ***v, size_t *n, const char *arg);
static char	*runconf_read(const char *cmd, const char *path, size_t *len);
static char	*runconf_slurp(const char *path, size_t max, size_t *len,
		    char *err, size_t errlen);
static int	runconf_validate(const char *cmd, const char *name,
		    const char *text, size_t len, bool warnings,
		    const struct policy_unused_key *unused);
static json_t	*runconf_file_policy(struct runconf *rc, json_t **secrets,
		    json_t **tls);
static json_t	*runconf_default_policy(const char *cmd);
static int	runconf_allow_rule(const char *cmd, const char *arg,
		    size_t index, json_t **rule);
static int	runconf_name_ok(const char *s);

void
runconf_init(struct runconf *rc, const char *cmd)
{
	memset(rc, 0, sizeof(*rc));
	rc->cmd = cmd;
	rc->mode = RUNCONF_HELD;
	rc->http_port = RUNCONF_HTTP_PORT;
	rc->socks_port = RUNCONF_SOCKS_PORT;
	rc->dns_port = RUNCONF_DNS_PORT;
	rc->transparent_port = RUNCONF_TRANSPARENT_PORT;
	rc->audit_only = -1;
}

void
runconf_free(struct runconf *rc)
{
	free(rc->allow);
	free(rc->allow_private);
	rc->allow = rc->allow_private = NULL;
	rc->nallow = rc->nallow_private = 0;
	json_decref(rc->config);
	rc->config = NULL;
	json_decref(rc->tls);
	rc->tls = NULL;
	json_decref(rc->geoip);
	rc->geoip = NULL;
	json_decref(rc->trust);
	rc->trust = NULL;
	json_decref(rc->trust_warn);
	rc->trust_warn = NULL;
}

static int
runconf_port(const char *cmd, const char *opt, const char *arg,
    uint16_t *port)
{
	unsigned long	 v;
	char		*end;

	if (arg[0] < '0' || arg[0] > '9' || strlen(arg) > 5)
		goto bad;
	errno = 0;
	v = strtoul(arg, &end, 10);
	if (errno != 0 || *end != '\0' || v == 0 || v > 65535)
		goto bad;
	*port = (uint16_t)v;
	return 0;
 bad:
	fprintf(stderr, "%s: --%s %s: not a port (1-65535)\n", cmd, opt, arg);
	return -1;
}

static int
runconf_push(const char ***v, size_t *n, const char *arg)
{
	const char	**nv;

	if (*n >= RUNCONF_ALLOW_MAX)
		return -1;
	if ((nv = realloc(*v, (*n + 1) * sizeof(**v))) == NULL)
		return -1;
	nv[(*n)++] = arg;
	*v = nv;
	return 0;
}

/* [A-Za-z0-9._-]{1,64}: the admin protocol's sandbox names. */
static int
runconf_name_ok(const char *s)
{
	size_t	i, n = strlen(s);

	if (n == 0 || n > RUNCONF_NAME_MAX)
		return 0;
	for (i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' &&
		    s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') ||
		    s[i] == '.' || s[i] == '_' || s[i] == '-'))
			return 0;
	return 1;
}

/* --moatd ADDR: "unix:PATH" or PATH, kept as the path to connect to. */
static int
runconf_moatd(struct runconf *rc, const char *arg)
{
	const struct sockaddr_un	*sun = NULL;
	const char			*path = arg;

	if (STRNCMP_LIT(arg, "unix:") == 0)
		path = arg + LIT_LEN("unix:");
	if (path[0] == '\0' || strlen(path) >= sizeof(sun->sun_path)) {
		fprintf(stderr, "%s: --moatd %s: not a Unix socket path "
		    "(unix:PATH or PATH, at most %zu bytes)\n", rc->cmd, arg,
		    sizeof(sun->sun_path) - 1);
		return -1;
	}
	rc->moatd = arg;
	rc->moatd_path = path;
	return 0;
}

int
runconf_option(struct runconf *rc, int ch, const char *arg)
{
	switch (ch) {
	case RUNCONF_OPT_POLICY:
		rc->policy_file = arg;
		return 0;
	case RUNCONF_OPT_ALLOW:
		if (runconf_push(&rc->allow, &rc->nallow, arg) == -1)
			goto toomany;
		return 0;
	case RUNCONF_OPT_ALLOW_PRIVATE:
		if (runconf_push(&rc->allow_private, &rc->nallow_private,
		    arg) == -1)
			goto toomany;
		return 0;
	case RUNCONF_OPT_MODE:
		if (strcmp(arg, "held") == 0)
			rc->mode = RUNCONF_HELD;
		else if (strcmp(arg, "veth") == 0)
			rc->mode = RUNCONF_VETH;
		else {
			fprintf(stderr, "%s: --mode %s: want held or veth\n",
			    rc->cmd, arg);
			return -1;
		}
		return 0;
	case RUNCONF_OPT_MOATD:
		return runconf_moatd(rc, arg);
	case RUNCONF_OPT_NAME:
		if (!runconf_name_ok(arg)) {
			fprintf(stderr, "%s: --name %s: want 1-64 of A-Z a-z "
			    "0-9 . _ -\n", rc->cmd, arg);
			return -1;
		}
		snprintf(rc->name, sizeof(rc->name), "%s", arg);
		return 0;
	case RUNCONF_OPT_HTTP_PORT:
		return runconf_port(rc->cmd, "http-port", arg, &rc->http_port);
	case RUNCONF_OPT_SOCKS_PORT:
		return runconf_port(rc->cmd, "socks-port", arg,
		    &rc->socks_port);
	case RUNCONF_OPT_DNS_PORT:
		return runconf_port(rc->cmd, "dns-port", arg, &rc->dns_port);
	case RUNCONF_OPT_TRANSPARENT_PORT:
		return runconf_port(rc->cmd, "transparent-port", arg,
		    &rc->transparent_port);
	case RUNCONF_OPT_AUDIT_ONLY:
		rc->audit_only = 1;
		return 0;
	default:
		fprintf(stderr, "%s: internal error: option %d\n", rc->cmd, ch);
		return -1;
	}
 toomany:
	fprintf(stderr, "%s: more than %d --allow or --allow-private, or out "
	    "of memory\n", rc->cmd, RUNCONF_ALLOW_MAX);
	return -1;
}

/* Reads a whole regular file (bounded), NUL-terminated.  NULL on error. */
static char *
runconf_read(const char *cmd, const char *path, size_t *len)
{
	char	 err[MOAT_ERR_MAX], *buf;

	if ((buf = runconf_slurp(path, RUNCONF_FILE_MAX, len, err,
	    sizeof(err))) == NULL)
		fprintf(stderr, "%s: %s\n", cmd, err);
	return buf;
}

/*
 * The whole regular file at path, NUL-terminated (free() it; *len bytes
 * before the NUL), at most max bytes, or NULL with err set ("PATH:
 * why").  A FIFO in its place does not hang the open.
 */
static char *
runconf_slurp(const char *path, size_t max, size_t *len, char *err,
    size_t errlen)
{
	struct stat	 st;
	char		*buf = NULL;
	size_t		 n = 0;
	ssize_t		 r;
	int		 fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) == -1) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) ||
	    (unsigned long long)st.st_size > max) {
		if (!S_ISREG(st.st_mode))
			snprintf(err, errlen, "%s: not a regular file", path);
		else
			snprintf(err, errlen, "%s: larger than %zu KiB", path,
			    max >> 10);
		goto fail;
	}
	if ((buf = malloc((size_t)st.st_size + 1)) == NULL) {
		snprintf(err, errlen, "%s: out of memory", path);
		goto fail;
	}
	while (n < (size_t)st.st_size) {
		r = read(fd, buf + n, (size_t)st.st_size - n);
		if (r == -1 && errno == EINTR)
			continue;
		if (r <= 0) {
			snprintf(err, errlen, "%s: %s", path, r == 0 ?
			    "shorter than its size" : strerror(errno));
			goto fail;
		}
		n += (size_t)r;
	}
	buf[n] = '\0';
	*len = n;
	close(fd);
	return buf;
 fail:
	free(buf);
	close(fd);
	return NULL;
}

/*
 * Loads text as moatd would, printing every error (and warning, if
 * warnings; unused: the keys that get one for being skipped).  0 or -1.
 */
static int
runconf_validate(const char *cmd, const char *name, const char *text,
    size_t len, bool warnings, const struct policy_unused_key *unused)
{
	struct policy_load_opts	 opts = policyio_load_opts;
	struct policy_diags	 d;
	struct moat_config	*c;
	char			 line[RUNCONF_DIAG_MAX];
	size_t			 i;

	opts.unused = unused;
	policy_diags_init(&d);
	/* libidn2 costs moat run's start a millisecond or more: only if
	 * this config may need it. */
	policyio_idn_for(text, len);
	c = policy_config_load_opts(name, text, len, &opts, &d);
	for (i = 0; i < d.n; i++)
		if (warnings || d.v[i].level == POLICY_DIAG_ERROR)
			fprintf(stderr, "%s\n", policy_diag_format(&d, i,
			    line, sizeof(line)));
	if (c == NULL && d.n == 0)
		fprintf(stderr, "%s: %s: cannot load the config\n", cmd, name);
	policy_diags_clear(&d);
	policy_config_unref(c);
	return c != NULL ? 0 : -1;
}

/*
 * --policy FILE: a moat.json, validated whole (so errors name FILE and its
 * lines), of which the sandbox takes "policy" and "secrets" (and a private
 * moatd "tls").  A file written for moat run needs no listener: if it has
 * neither "listen" nor "admin", an empty "listen" is added for the
 * validation just before its closing brace (and a stand-in "tls" when a
 * running moatd will intercept), so every line and column before it stays
 * the file's own.
 */
static json_t *
runconf_file_policy(struct runconf *rc, json_t **secrets, json_t **tls)
{
	struct runconf_unused	 unused;
	json_error_t		 je;
	json_t			*root = NULL, *p, *s;
	json_t			*policy = NULL;
	char			*text, *check = NULL;
	size_t			 len, checklen;

	if ((text = runconf_read(rc->cmd, rc->policy_file, &len)) == NULL)
		return NULL;
	if ((root = policy_json_loadb(text, len, JSON_REJECT_DUPLICATES, &je)) ==
	    NULL || !json_is_object(root)) {
		fprintf(stderr, "%s:%d:%d: %s\n", rc->policy_file, je.line,
		    je.column, root == NULL ? je.text : "not a JSON object");
		goto out;
	}
	/*
	 * What the file need not say, added for the check: listeners (the
	 * sandbox's are made here), and for a running moatd (--moatd) a
	 * stand-in CA (its own is used; it checks again at registration).
	 */
	check = runconf_standins(root, text, len, rc->moatd != NULL,
	    &checklen);
	if (check == NULL && checklen != 0) {
		fprintf(stderr, "%s: out of memory\n", rc->cmd);
		goto out;
	}
	/* What the file says that the sandbox does not take is said. */
	runconf_unused(root, rc->cmd, rc->moatd != NULL, &unused);
	if (runconf_validate(rc->cmd, rc->policy_file, check != NULL ? check :
	    text, check != NULL ? checklen : len, true, unused.keys) == -1)
		goto out;
	p = json_object_get(root, "policy");
	policy = p != NULL ? json_deep_copy(p) : json_object();
	if ((s = json_object_get(root, "secrets")) != NULL)
		*secrets = json_deep_copy(s);
	if ((s = json_object_get(root, "tls")) != NULL)
		*tls = json_deep_copy(s);
	/* Its databases: a private moatd opens them; for a running one
	 * they serve the check here, and the daemon's own decide. */
	if ((s = json_object_get(root, "geoip")) != NULL)
		rc->geoip = json_deep_copy(s);
	/* The file may put the sandbox in audit mode; --audit-only wins. */
	if (rc->audit_only == -1 && json_is_boolean(s = json_object_get(root,
	    "audit_only")))
		rc->audit_only = json_is_true(s) ? 1 : 0;
 out:
	json_decref(root);
	free(check);
	free(text);
	return policy;
}

char *
runconf_standins(const json_t *root, const char *text, size_t len,
    bool tls_standin, size_t *outlen)
{
	static const char	 listen[] = ", \"listen\": []";
	static const char	 tls[] = ", \"tls\": {\"ca_cert\": "
				    "\"(moatd's)\", \"ca_key\": \"(moatd's)\"}";
	char			 ins[sizeof(listen) + sizeof(tls)], *out;
	const char		*brace = NULL, *p, *from;
	size_t			 at, n;

	*outlen = 0;
	snprintf(ins, sizeof(ins), "%s%s",
	    json_object_get(root, "listen") == NULL &&
	    json_object_get(root, "admin") == NULL ? listen : "",
	    tls_standin && json_object_get(root, "tls") == NULL ? tls : "");
	for (p = text; p < text + len; p++)
		if (*p == '}')
			brace = p;
	if (ins[0] == '\0' || brace == NULL)
		return NULL;
	/* No ", " before the first key of an empty object. */
	from = json_object_size(root) > 0 ? ins : ins + 2;
	n = strlen(from);
	if ((out = malloc(len + n + 1)) == NULL) {
		*outlen = (size_t)-1;
		return NULL;
	}
	at = (size_t)(brace - text);
	memcpy(out, text, at);
	memcpy(out + at, from, n);
	memcpy(out + at + n, brace, len - at);
	*outlen = len + n;
	out[*outlen] = '\0';
	return out;
}

void
runconf_unused(const json_t *root, const char *cmd, bool moatd,
    struct runconf_unused *u)
{
	static const char	 defaults[] = "its moatd runs with the defaults";
	static const char	 running[] = "the running moatd's own apply";
	const struct {
		const char	*key;
		const char	*how;	/* NULL: taken */
	} keys[] = {
		{ "listen", "it makes the sandbox's listeners itself "
		    "(--http-port, --socks-port, --dns-port, "
		    "--transparent-port)" },
		{ "admin", moatd ? "it reaches the running moatd by --moatd "
		    "SOCKET" : "to use a running moatd, give --moatd SOCKET" },
		{ "audit", moatd ? "the running moatd writes its own audit "
		    "log" : "give --audit FILE (- for stderr) instead" },
		{ "resolver", moatd ? "the running moatd resolves with its "
		    "own" : "give --resolver ADDR:PORT instead" },
		{ "tls", moatd ? "the running moatd's own CA serves the "
		    "sandbox" : NULL },
		{ "timeouts", moatd ? running : defaults },
		{ "limits", moatd ? running : defaults },
		{ "workers", moatd ? running : defaults },
		{ "user", moatd ? running : defaults },
		{ "metrics", moatd ? "the running moatd's own \"metrics\" "
		    "apply" : "its moatd serves no metrics (run a moatd with "
		    "\"metrics\" and give --moatd SOCKET)" },
	};
	size_t			 i, n = 0;

	for (i = 0; i < sizeof(keys) / sizeof(keys[0]) &&
	    n < RUNCONF_UNUSED_MAX; i++) {
		if (keys[i].how == NULL ||
		    json_object_get(root, keys[i].key) == NULL)
			continue;
		snprintf(u->why[n], sizeof(u->why[n]), "%s does not use it: "
		    "%s", cmd, keys[i].how);
		u->keys[n].key = keys[i].key;
		u->keys[n].why = u->why[n];
		n++;
	}
	u->keys[n].key = NULL;
	u->keys[n].why = NULL;
}

/* The built-in default config's "policy". */
static json_t *
runconf_default_policy(const char *cmd)
{
	json_error_t	 je;
	json_t		*root, *p = NULL;

	if ((root = policy_json_loadb(moat_default_config, moat_default_config_len,
	    JSON_REJECT_DUPLICATES, &je)) == NULL) {
		fprintf(stderr, "%s: the built-in config: %s\n", cmd, je.text);
		return NULL;
	}
	if (json_object_get(root, "policy") != NULL)
		p = json_deep_copy(json_object_get(root, "policy"));
	json_decref(root);
	if (p == NULL)
		fprintf(stderr, "%s: the built-in config has no policy\n", cmd);
	return p;
}

/*
 * --allow HOST[:PORT]: "[V6]:PORT", "HOST:PORT", "HOST" or a bare IPv6
 * address; HOST may start with "*." (a wildcard).  Without a port the
 * rule opens 80 and 443.
 */
static int
runconf_allow_rule(const char *cmd, const char *arg, size_t index,
    json_t **rule)
{
	struct policy_host	 h;
	const char		*colon, *end, *err = NULL, *check;
	char			 host[POLICY_NAME_MAX + 8], name[32];
	json_t			*ports;
	uint16_t		 port = 0;
	size_t			 hlen;

	*rule = NULL;
	if (arg[0] == '[') {
		if ((end = strchr(arg, ']')) == NULL)
			goto bad;
		hlen = (size_t)(end - arg - 1);
		if (hlen == 0 || hlen >= sizeof(host))
			goto bad;
		memcpy(host, arg + 1, hlen);
		host[hlen] = '\0';
		if (end[1] == ':') {
			if (runconf_port(cmd, "allow", end + 2, &port) == -1)
				return -1;
		} else if (end[1] != '\0')
			goto bad;
	} else if ((colon = strchr(arg, ':')) != NULL &&
	    strchr(colon + 1, ':') == NULL) {
		hlen = (size_t)(colon - arg);
		if (hlen == 0 || hlen >= sizeof(host))
			goto bad;
		memcpy(host, arg, hlen);
		host[hlen] = '\0';
		if (runconf_port(cmd, "allow", colon + 1, &port) == -1)
			return -1;
	} else {
		if (strlen(arg) >= sizeof(host))
			goto bad;
		snprintf(host, sizeof(host), "%s", arg);
	}
	check = STRNCMP_LIT(host, "*.") == 0 ? host + LIT_LEN("*.") : host;
	policyio_idn_for(check, strlen(check));
	if (policy_host_normalise(check, strlen(check), &h, &err) == -1) {
		fprintf(stderr, "%s: --allow %s: %s\n", cmd, arg, err);
		return -1;
	}
	if (check != host && h.kind != POLICY_HOST_NAME) {
		fprintf(stderr, "%s: --allow %s: a wildcard needs a name, not "
		    "an address\n", cmd, arg);
		return -1;
	}
	snprintf(name, sizeof(name), "cli-allow-%zu", index + 1);
	ports = port != 0 ? json_pack("[i]", (json_int_t)port) :
	    json_pack("[i, i]", 80, 443);
	*rule = json_pack("{s:s, s:s, s:[s], s:o}", "name", name, "action",
	    "allow", "hosts", host, "ports", ports);
	if (*rule == NULL) {
		fprintf(stderr, "%s: out of memory\n", cmd);
		return -1;
	}
	return 0;
 bad:
	fprintf(stderr, "%s: --allow %s: want HOST, HOST:PORT or [IPV6]:PORT\n",
	    cmd, arg);
	return -1;
}

int
runconf_finish(struct runconf *rc)
{
	json_t		*policy = NULL, *secrets = NULL, *rules, *ap, *rule;
	json_t		*tls;
	char		*text = NULL;
	size_t		 i;
	int		 ret = -1;

	if (rc->name[0] == '\0')
		snprintf(rc->name, sizeof(rc->name), "run-%ld", (long)getpid());
	if (rc->dns_port == rc->transparent_port || rc->http_port ==
	    rc->socks_port || rc->http_port == rc->dns_port || rc->http_port ==
	    rc->transparent_port || rc->socks_port == rc->dns_port ||
	    rc->socks_port == rc->transparent_port) {
		fprintf(stderr, "%s: the http, socks, dns and transparent "
		    "ports must differ\n", rc->cmd);
		return -1;
	}
	if (rc->policy_file != NULL)
		policy = runconf_file_policy(rc, &secrets, &rc->tls);
	else if (rc->nallow == 0)
		policy = runconf_default_policy(rc->cmd);
	else
		policy = json_pack("{s:s, s:[]}", "default", "deny", "rules");
	if (policy == NULL)
		goto out;
	if (!json_is_object(policy)) {
		fprintf(stderr, "%s: %s: \"policy\" is not an object\n",
		    rc->cmd, rc->policy_file);
		goto out;
	}
	if (rc->nallow > 0) {
		if ((rules = json_object_get(policy, "rules")) == NULL) {
			rules = json_array();
			if (json_object_set_new(policy, "rules", rules) == -1)
				goto oom;
		}
		for (i = 0; i < rc->nallow; i++) {
			if (runconf_allow_rule(rc->cmd, rc->allow[i], i,
			    &rule) == -1)
				goto out;
			if (json_array_append_new(rules, rule) == -1)
				goto oom;
		}
	}
	if (rc->nallow_private > 0) {
		if ((ap = json_object_get(policy, "allow_private")) == NULL) {
			ap = json_array();
			if (json_object_set_new(policy, "allow_private",
			    ap) == -1)
				goto oom;
		}
		for (i = 0; i < rc->nallow_private; i++)
			if (json_array_append_new(ap, json_string(
			    rc->allow_private[i])) == -1)
				goto oom;
	}
	if ((rc->config = json_pack("{s:O}", "policy", policy)) == NULL)
		goto oom;
	if (secrets != NULL && json_object_set(rc->config, "secrets",
	    secrets) == -1)
		goto oom;
	if (rc->audit_only != -1 && json_object_set_new(rc->config,
	    "audit_only", json_boolean(rc->audit_only == 1)) == -1)
		goto oom;
	/*
	 * Validate what moatd will see (its admin side adds an empty
	 * "listen"), so the flags' mistakes are caught here too.
	 */
	/*
	 * Rules that must see inside TLS need a CA: the file's for a private
	 * moatd; a running one (--moatd) has its own, checked when the
	 * sandbox registers.
	 */
	tls = rc->tls != NULL ? json_incref(rc->tls) : rc->moatd != NULL ?
	    json_pack("{s:s, s:s}", "ca_cert", "(moatd's)", "ca_key",
	    "(moatd's)") : NULL;
	if (json_object_set_new(rc->config, "listen", json_array()) == -1 ||
	    (tls != NULL && json_object_set_new(rc->config, "tls",
	    tls) == -1) ||
	    (rc->geoip != NULL && json_object_set(rc->config, "geoip",
	    rc->geoip) == -1) ||
	    (text = json_dumps(rc->config, JSON_INDENT(2))) == NULL)
		goto oom;
	(void)json_object_del(rc->config, "listen");
	(void)json_object_del(rc->config, "tls");
	(void)json_object_del(rc->config, "geoip");
	/* Warnings about the file were printed with its own name above. */
	if (runconf_validate(rc->cmd, RUNCONF_GENERATED, text, strlen(text),
	    rc->policy_file == NULL, NULL) == -1) {
		fprintf(stderr, "%s: the policy built from --policy, --allow "
		    "and --allow-private is not valid (above)\n", rc->cmd);
		goto out;
	}
	ret = 0;
	goto out;
 oom:
	fprintf(stderr, "%s: out of memory\n", rc->cmd);
 out:
	if (ret == -1) {
		json_decref(rc->config);
		rc->config = NULL;
	}
	free(text);
	json_decref(policy);
	json_decref(secrets);
	return ret;
}

size_t
runconf_listeners(const struct runconf *rc, struct runconf_listener *out,
    size_t max)
{
	const struct runconf_listener	all[] = {
		{ "http+socks5", NSH_AF_INET, NSH_SOCK_STREAM, rc->http_port },
		{ "socks5", NSH_AF_INET, NSH_SOCK_STREAM, rc->socks_port },
		{ "dns-udp", NSH_AF_INET, NSH_SOCK_DGRAM, rc->dns_port },
		{ "dns-tcp", NSH_AF_INET, NSH_SOCK_STREAM, rc->dns_port },
		{ "transparent", NSH_AF_INET, NSH_SOCK_STREAM,
		    rc->transparent_port },
		{ "dns-udp", NSH_AF_INET6, NSH_SOCK_DGRAM, rc->dns_port },
		{ "dns-tcp", NSH_AF_INET6, NSH_SOCK_STREAM, rc->dns_port },
		{ "transparent", NSH_AF_INET6, NSH_SOCK_STREAM,
		    rc->transparent_port },
	};
	size_t	i, n = sizeof(all) / sizeof(all[0]);

	for (i = 0; i < n && i < max; i++)
		out[i] = all[i];
	return i;
}

int
runconf_exe_dir(char *buf, size_t len)
{
	ssize_t	 n;
	char	*slash;

	if (len == 0 || (n = readlink("/proc/self/exe", buf, len - 1)) <= 0 ||
	    (size_t)n >= len - 1)
		return -1;
	buf[n] = '\0';
	if ((slash = strrchr(buf, '/')) == NULL)
		return -1;
	*slash = '\0';
	return 0;
}

int
runconf_libexec_path(const char *name, const char *env,
    const char *srcdir, char *buf, size_t len)
{
	const char	*v;
	char		 dir[PATH_MAX];

	if ((v = getenv(env)) != NULL && v[0] != '\0') {
		snprintf(buf, len, "%s", v);
		return access(buf, X_OK);
	}
	if (runconf_exe_dir(dir, sizeof(dir)) == 0) {
		if ((size_t)snprintf(buf, len, "%s/%s", dir, name) < len &&
		    access(buf, X_OK) == 0)
			return 0;
		if ((size_t)snprintf(buf, len, "%s/../%s/%s", dir, srcdir,
		    name) < len && access(buf, X_OK) == 0)
			return 0;
	}
	snprintf(buf, len, "%s/%s", MOAT_LIBEXECDIR, name);
	return access(buf, X_OK);
}

#define RUNCONF_SPAWN_STACK	(64 << 10)	/* the child's, until exec */

pid_t
runconf_spawn(int (*child)(void *), void *arg)
{
	static unsigned char	stack[RUNCONF_SPAWN_STACK]
				    __attribute__((aligned(64)));

	/* Stacks grow down here (x86-64, arm64): pass the top. */
	return clone(child, stack + sizeof(stack), CLONE_VM | CLONE_VFORK |
	    SIGCHLD, arg);
}

void RUNCONF_SPAWNED
runconf_spawn_fail(const char *what, int err)
{
	const char	*e = strerrordesc_np(err);
	struct iovec	 v[5];

	if (e == NULL)
		e = "unknown error";
	v[0] = (struct iovec){ (void *)"moat: ", 6 };
	v[1] = (struct iovec){ (void *)what, strlen(what) };
	v[2] = (struct iovec){ (void *)": ", 2 };
	v[3] = (struct iovec){ (void *)e, strlen(e) };
	v[4] = (struct iovec){ (void *)"\n", 1 };
	(void)!writev(STDERR_FILENO, v, 5);
}

/* Adds "VAR=VALUE: why" to rc->trust_warn.  0 or -1 (memory). */
static int
runconf_trust_warn(struct runconf *rc, const char *var, const char *val,
    const char *why)
{
	return json_array_append_new(rc->trust_warn, json_sprintf("%s=%s: "
	    "not merged into the sandbox's trust bundle: %s", var, val,
	    why));
}

int
runconf_trust(struct runconf *rc, bool merge, bool store)
{
	char		 sys[PATH_MAX], real[PATH_MAX], err[MOAT_ERR_MAX];
	char		 seen[16][PATH_MAX], *text, *name;
	const char	*v;
	json_t		*ex, *e;
	size_t		 i, j, nseen = 0, len, total = 0, max;

	if ((rc->trust = json_pack("{s:b, s:[]}", "trust_store", store,
	    "trust_extra")) == NULL || (rc->trust_warn = json_array()) ==
	    NULL)
		goto oom;
	if (!merge)
		return 0;
	ex = json_object_get(rc->trust, "trust_extra");
	/* The request must still fit in one message with the policy. */
	if ((text = json_dumps(rc->config, JSON_COMPACT)) == NULL)
		goto oom;
	len = strlen(text);
	free(text);
	max = len < ADMIN_MSG_MAX ? (ADMIN_MSG_MAX - len) / 2 : 0;
	if (max > RUNCONF_TRUST_MAX)
		max = RUNCONF_TRUST_MAX;
	if (realpath(CERTS_SYSTEM_BUNDLE, sys) == NULL)
		sys[0] = '\0';
	for (i = 0; i < sandbox_ca_nvars; i++) {
		if ((v = getenv(sandbox_ca_vars[i])) == NULL || *v == '\0')
			continue;
		if (realpath(v, real) == NULL) {
			if (runconf_trust_warn(rc, sandbox_ca_vars[i], v,
			    strerror(errno)) == -1)
				goto oom;
			continue;
		}
		/* The system's roots are in it already, a file once. */
		if (strcmp(real, sys) == 0)
			continue;
		for (j = 0; j < nseen && strcmp(seen[j], real) != 0; j++)
			;
		if (j < nseen || nseen == sizeof(seen) / sizeof(seen[0]))
			continue;
		memcpy(seen[nseen++], real, strlen(real) + 1);
		if ((text = runconf_slurp(real, max - total, &len, err,
		    sizeof(err))) == NULL) {
			if (runconf_trust_warn(rc, sandbox_ca_vars[i], v,
			    err) == -1)
				goto oom;
			continue;
		}
		total += len;
		if (asprintf(&name, "%s=%s", sandbox_ca_vars[i], v) == -1) {
			free(text);
			goto oom;
		}
		e = json_pack("{s:s, s:s%}", "name", name, "pem", text, len);
		free(name);
		free(text);
		if (e == NULL ? runconf_trust_warn(rc, sandbox_ca_vars[i], v,
		    "not a text file (UTF-8)") == -1 :
		    json_array_append_new(ex, e) == -1)
			goto oom;
	}
	return 0;
 oom:
	fprintf(stderr, "%s: out of memory\n", rc->cmd);
	return -1;
}

unsigned char *
runconf_trust_store(const struct runconf *rc, json_t *answer, size_t *len)
{
	json_t		*st = json_object_get(answer, "trust_store");
	const char	*err;
	unsigned char	*buf;
	int		 n;

	*len = 0;
	if ((err = json_string_value(json_object_get(answer,
	    "trust_store_error"))) != NULL)
		fprintf(stderr, "%s: no Java trust store for the sandbox: %s\n",
		    rc->cmd, err);
	if (!json_is_string(st))
		return NULL;
	if ((buf = malloc(json_string_length(st) / 4 * 3 + 3)) == NULL ||
	    (n = b64_pton(json_string_value(st), buf,
	    json_string_length(st) / 4 * 3 + 3)) <= 0) {
		fprintf(stderr, "%s: moatd's trust store is not base64; Java "
		    "in the sandbox gets none\n", rc->cmd);
		free(buf);
		return NULL;
	}
	*len = (size_t)n;
	return buf;
}

/* Appends len bytes of p to the growing buffer *buf (*n used, *cap). */
static int
runconf_append(char **buf, size_t *n, size_t *cap, const char *p, size_t len)
{
	char	*nb;
	size_t	 want;

	if (*n + len + 1 > *cap) {
		want = (*n + len + 1) * 2;
		if ((nb = realloc(*buf, want)) == NULL)
			return -1;
		*buf = nb;
		*cap = want;
	}
	memcpy(*buf + *n, p, len);
	*n += len;
	(*buf)[*n] = '\0';
	return 0;
}

char *
runconf_extras(const struct runconf *rc, json_t *answer, size_t *len)
{
	json_t		*ph, *sec, *ref, *v;
	const char	*key, *var, *pem;
	unsigned char	*store;
	char		*buf = NULL;
	size_t		 n = 0, cap = 0, i, storelen;

	/* The variables moatd reads secret values from never go in. */
	sec = json_object_get(rc->config, "secrets");
	json_object_foreach(sec, key, ref) {
		if ((var = json_string_value(json_object_get(ref, "env"))) ==
		    NULL)
			continue;
		if (runconf_append(&buf, &n, &cap, var, strlen(var) + 1) == -1)
			goto oom;
	}
	/* Files to hide in the sandbox (absolute paths). */
	json_array_foreach(json_object_get(answer, "hide"), i, v) {
		var = json_string_value(v);
		if (var == NULL || var[0] != '/')
			continue;
		if (runconf_append(&buf, &n, &cap, var, strlen(var) + 1) == -1)
			goto oom;
	}
		/* Each secret's placeholder, under its variable. */
	ph = json_object_get(answer, "placeholders");
	json_object_foreach(ph, key, v) {
		if (!json_is_string(v))
			continue;
		if (runconf_append(&buf, &n, &cap, key, strlen(key)) == -1 ||
		    runconf_append(&buf, &n, &cap, "=", 1) == -1 ||
		    runconf_append(&buf, &n, &cap, json_string_value(v),
		    json_string_length(v) + 1) == -1)
			goto oom;
	}
	if (runconf_append(&buf, &n, &cap, "", 1) == -1)
		goto oom;
	/* The bundle moatd built (its CA, the system's roots, the files
	 * the caller named), then its Java trust store. */
	pem = json_string_value(json_object_get(answer, "trust_bundle"));
	if (json_object_get(answer, "trust_pem") != NULL && pem == NULL) {
		fprintf(stderr, "%s: moatd intercepts TLS but sent no trust "
		    "bundle: %s\n", rc->cmd, json_string_value(json_object_get(
		    answer, "trust_bundle_error")) != NULL ?
		    json_string_value(json_object_get(answer,
		    "trust_bundle_error")) : "(no reason given)");
		free(buf);
		return NULL;
	}
	if (pem != NULL) {
		/* What could not be merged is said where it matters. */
		json_array_foreach(rc->trust_warn, i, v)
			fprintf(stderr, "%s: %s\n", rc->cmd,
			    json_string_value(v));
		json_array_foreach(json_object_get(answer, "trust_warnings"),
		    i, v)
			if (json_is_string(v))
				fprintf(stderr, "%s: %s\n", rc->cmd,
				    json_string_value(v));
		store = runconf_trust_store(rc, answer, &storelen);
		if (runconf_append(&buf, &n, &cap, pem, json_string_length(
		    json_object_get(answer, "trust_bundle"))) == -1 ||
		    (store != NULL && (runconf_append(&buf, &n, &cap, "",
		    1) == -1 || runconf_append(&buf, &n, &cap,
		    (const char *)store, storelen) == -1))) {
			free(store);
			goto oom;
		}
		free(store);
	}
	*len = n;
	return buf;
 oom:
	free(buf);
	fprintf(stderr, "%s: out of memory\n", rc->cmd);
	return NULL;
}

/* --- the sandbox's refusals, from moatd's watch ---------------------- */

uint64_t
runconf_now_ms(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void
runconf_watch_msg(void *arg, json_t *msg)
{
	refusals_message(arg, msg, runconf_now_ms());
}

struct refusals *
runconf_refusals(const struct runconf *rc, bool all, const char *where,
    int (*term)(void *), void *arg)
{
	struct refusals_opts	 o;
	char			 details[RUNCONF_DETAILS_MAX];

	memset(&o, 0, sizeof(o));
	o.fd = STDERR_FILENO;
	o.all = all;
	/*
	 * `moat explain` judges as moatd does only with the same policy: a
	 * --policy FILE's (-c FILE) or the built-in one; --allow and
	 * --allow-private have no counterpart there.
	 */
	o.hint = rc->nallow == 0 && rc->nallow_private == 0;
	o.config = rc->policy_file;
	snprintf(details, sizeof(details), "see %s%s", where,
	    o.hint ? " or moat explain" : "");
	o.details = details;
	o.term = term;
	o.term_arg = arg;
	return refusals_new(&o);
}

int
runconf_watch(const struct runconf *rc, struct admin_client *ac,
    struct refusals *rf, bool all, char *err, size_t errlen)
{
	if (!admin_client_can_watch(ac)) {
		fprintf(stderr, "%s: this moatd does not report refusals (it "
		    "is older than moat): its audit log has them\n", rc->cmd);
		return 0;
	}
	admin_client_on_watch(ac, runconf_watch_msg, rf);
	if (admin_client_watch(ac, rc->name, all, err, errlen) == -1)
		return -1;
	return 1;
}

void
runconf_refusals_end(const struct runconf *rc, struct admin_client *ac,
    bool watching, struct refusals *rf)
{
	char	err[MOAT_ERR_MAX];

	if (rf == NULL)
		return;
	/* moatd sends what it holds before it answers: nothing is missed. */
	if (ac != NULL && watching &&
	    admin_client_unwatch(ac, rc->name, RUNCONF_UNWATCH_MS, err,
	    sizeof(err)) == -1)
		fprintf(stderr, "%s: the last refusals: %s\n", rc->cmd, err);
	refusals_finish(rf);
	if (ac != NULL)
		admin_client_on_watch(ac, NULL, NULL);
}

void
runconf_drops_note(const struct runconf *rc, const struct admin_client *ac)
{
	if (admin_client_can_drops(ac))
		return;
	fprintf(stderr, "%s: this moatd does not read dropped packets (it is "
	    "older than moat): the sandbox's nftables counters still count "
	    "them (nft list counters table inet moat)\n", rc->cmd);
}
