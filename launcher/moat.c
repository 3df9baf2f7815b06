/*
 * moat.c - the moat command line.
 *
 * What it is: the user's entry point.  `moat explain` loads a config,
 * decides on a target exactly as moatd would and prints the verdict and
 * the rule that made it, without sending a byte or resolving a name;
 * `moat ca` creates the CA for TLS interception (moat-ca, certs/ca_cmd.c);
 * `moat run` runs a command with moatd as its only network exit (run.c)
 * and `moat attach` puts an existing network namespace behind moatd
 * (attach.c); `moat status` shows what a running moatd is doing
 * (status.c); `moat pod-init` puts a pod's namespace behind the moatd
 * sidecar inside it (podinit.c).
 *
 * What it is not: a proxy.  explain opens no socket; the policy library
 * does no I/O, so reading the config file is done here.
 *
 * `moat check` validates a moatd config or a `moat run --policy` file
 * as the program that will read it does.  `moat audit` reads moatd's
 * audit files (audit_cmd.c).
 *
 * Exit status (explain): 0 allow, 1 deny, 2 usage or config errors;
 * (check): 0 valid, 1 errors, 2 usage; run and attach document their own.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "launcher/audit_cmd.h"
#include "launcher/launcher.h"
#include "policy/policy.h"
#include "policy/jsonload.h"
#include "policyio/policyio.h"

#define MOAT_EXIT_ALLOW		0
#define MOAT_EXIT_DENY		1
#define MOAT_EXIT_USAGE		2
#define MOAT_CONFIG_MAX		(256u * 1024 * 1024)	/* largest config */
#define MOAT_READ_CHUNK		65536	/* bytes per read while loading */
#define MOAT_DIAG_MAX		1024	/* longest diagnostic line printed */
#define MOAT_DEFAULT_NAME	"(default config)"

static void	moat_usage(FILE *f);
static void	moat_explain_usage(FILE *f);
static int	moat_read_file(const char *path, char **buf, size_t *len);
static struct moat_config	*moat_load(const char *file);
static void	moat_print_geo(const struct moat_config *c,
		    const struct policy_addr *a);
static void	moat_print_decision(const struct moat_config *c,
		    const struct policy_decision *d);
static void	moat_print_notes(const struct moat_config *c,
		    const struct policy_explain_target *et,
		    const struct policy_decision *d, bool have_addr,
		    bool final);
static void	moat_print_traffic(const struct moat_config *c,
		    const struct policy_explain_target *et,
		    const struct policy_decision *d, const char *detail,
		    enum policy_transport xport);
static int	moat_explain(int argc, char *argv[]);
static void	moat_check_usage(FILE *f);
static int	moat_check(int argc, char *argv[]);
static bool	moat_check_valid_running(const char *file, const char *buf,
		    size_t len);
static int	moat_ca(int argc, char *argv[]);

static void
moat_usage(FILE *f)
{
	fprintf(f,
	    "usage: moat explain [-c FILE] [--method M] [--addr IP] TARGET\n"
	    "       moat check [--running-moatd] FILE\n"
	    "       moat ca init DIR\n"
	    "       moat ca bundle -c CONFIG [-o FILE]\n"
	    "       moat audit summary|suggest|replay|verify [OPTIONS] FILE...\n"
	    "       moat run [OPTIONS] -- COMMAND [ARG...]\n"
	    "       moat attach --netns PATH [OPTIONS]\n"
	    "       moat attach --listen ADDR [OPTIONS]\n"
	    "       moat status [--moatd ADDR] [--json]\n"
	    "       moat pod-init --exempt-uid UID [OPTIONS]\n"
	    "       moat --help | --version\n"
	    "\n"
	    "Commands:\n"
	    "  explain   print the decision moat makes for TARGET (a URL or\n"
	    "            HOST:PORT) and the rule that makes it; sends nothing\n"
	    "  check     validate a moatd config or a moat run --policy file\n"
	    "  ca        create the CA moatd signs intercepted hosts with, and\n"
	    "            write the trust bundle of its sandboxes\n"
	    "  audit     read moatd's audit files: summary, suggest a policy,\n"
	    "            replay them under another, verify their hash chain\n"
	    "  run       run COMMAND with moatd as its only network exit\n"
	    "  attach    put an existing network namespace behind moatd, or\n"
	    "            serve sockets of its own (a relay such as srt)\n"
	    "  status    what a running moatd is doing: its sandboxes, their\n"
	    "            listeners and counters\n"
	    "  pod-init  put a namespace whose moatd runs inside it (a pod's)\n"
	    "            behind that moatd, and exit\n"
	    "\n"
	    "Run `moat COMMAND --help` for a command's options.\n");
}

static void
moat_explain_usage(FILE *f)
{
	fprintf(f,
	    "usage: moat explain [-c FILE] [--method M] [--addr IP] TARGET\n"
	    "\n"
	    "Prints the decision moat makes for TARGET without sending or\n"
	    "resolving anything.  TARGET is a URL (http, https, ws, wss;\n"
	    "\"METHOD URL\" also works) or HOST:PORT for a tunnel.  For an\n"
	    "allowed target it also prints how moatd carries the traffic\n"
	    "(TLS terminated by moatd, an opaque tunnel, or plain HTTP) and\n"
	    "the secrets the rule injects, by name (never a value).\n"
	    "\n"
	    "  -c, --config FILE  the config (default: the built-in one)\n"
	    "  -m, --method M     the HTTP method of a URL target "
	    "(default GET)\n"
	    "  -a, --addr IP      also check IP as if the name resolved to it\n"
	    "  -h, --help         this text\n"
	    "\n"
	    "Exit status: 0 allow, 1 deny, 2 usage or config error.\n");
}

/* Reads a whole file into *buf (NUL-terminated).  Returns 0 or -1. */
static int
moat_read_file(const char *path, char **buf, size_t *len)
{
	FILE	*f;
	char	*b = NULL, *nb;
	size_t	 n = 0, cap = 0, r;
	int	 rc = -1;

	if ((f = fopen(path, "rb")) == NULL) {
		fprintf(stderr, "moat: %s: %s\n", path, strerror(errno));
		return -1;
	}
	for (;;) {
		if (cap - n < MOAT_READ_CHUNK + 1) {
			cap = cap ? cap * 2 : MOAT_READ_CHUNK * 2;
			if (cap > MOAT_CONFIG_MAX + MOAT_READ_CHUNK * 2) {
				fprintf(stderr, "moat: %s: larger than %u "
				    "bytes\n", path, MOAT_CONFIG_MAX);
				goto out;
			}
			if ((nb = realloc(b, cap)) == NULL) {
				fprintf(stderr, "moat: %s: out of memory\n",
				    path);
				goto out;
			}
			b = nb;
		}
		r = fread(b + n, 1, MOAT_READ_CHUNK, f);
		n += r;
		if (r < MOAT_READ_CHUNK)
			break;
	}
	if (ferror(f)) {
		fprintf(stderr, "moat: %s: read error\n", path);
		goto out;
	}
	if (n > MOAT_CONFIG_MAX) {
		fprintf(stderr, "moat: %s: larger than %u bytes\n", path,
		    MOAT_CONFIG_MAX);
		goto out;
	}
	b[n] = '\0';
	*buf = b;
	*len = n;
	b = NULL;
	rc = 0;
 out:
	free(b);
	fclose(f);
	return rc;
}

/*
 * A policy file written for `moat run --policy` (no "listen", no "admin")
 * is read as moat run reads it, with its stand-ins (runconf_standins()).
 * Returns the new text (free() it), or NULL to load buf as it is.
 */
static char *
moat_run_policy_text(const char *buf, size_t len, size_t *outlen)
{
	json_error_t	 je;
	json_t		*root;
	char		*out = NULL;

	root = policy_json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
	if (root != NULL && json_is_object(root) &&
	    json_object_get(root, "listen") == NULL &&
	    json_object_get(root, "admin") == NULL)
		out = runconf_standins(root, buf, len, true, outlen);
	json_decref(root);	/* errors: the loader says what it has to */
	return out;
}

/* Loads FILE (or the built-in config), printing every diagnostic. */
static struct moat_config *
moat_load(const char *file)
{
	struct policy_diags	 d;
	struct moat_config	*c;
	char			*buf = NULL, *alt, line[MOAT_DIAG_MAX];
	const char		*text;
	size_t			 len, i, altlen;

	if (file != NULL) {
		if (moat_read_file(file, &buf, &len) == -1)
			return NULL;
		if ((alt = moat_run_policy_text(buf, len, &altlen)) != NULL) {
			free(buf);
			buf = alt;
			len = altlen;
		}
		text = buf;
	} else {
		text = moat_default_config;
		len = moat_default_config_len;
	}
	policy_diags_init(&d);
	policyio_idn_for(text, len);
	c = policy_config_load_opts(file != NULL ? file : MOAT_DEFAULT_NAME,
	    text, len, &policyio_load_opts, &d);
	for (i = 0; i < d.n; i++)
		fprintf(stderr, "%s\n", policy_diag_format(&d, i, line,
		    sizeof(line)));
	if (c == NULL && d.n == 0)
		fprintf(stderr, "moat: %s: cannot load the config\n",
		    file != NULL ? file : MOAT_DEFAULT_NAME);
	policy_diags_clear(&d);
	free(buf);
	return c;
}

static void
moat_print_decision(const struct moat_config *c,
    const struct policy_decision *d)
{
	printf("verdict  %s\n", d->verdict == POLICY_ALLOW ? "allow" : "deny");
	if (d->rule != NULL)
		printf("rule     %s  (policy.rules[%zu], %s:%d:%d)\n",
		    d->rule_name, policy_rule_index(d->rule), c->file,
		    policy_rule_line(d->rule), policy_rule_column(d->rule));
	else
		printf("rule     -\n");
	printf("reason   %s\n", policy_reason_str(d->reason));
}

static void
moat_print_notes(const struct moat_config *c,
    const struct policy_explain_target *et,
    const struct policy_decision *d, bool have_addr, bool final)
{
	bool	name = et->t.name != NULL;

	if (d->reason == POLICY_R_METADATA || d->reason ==
	    POLICY_R_PRIVATE_ADDRESS)
		printf("note     built-in deny set, checked before any rule: "
		    "only policy.allow_private can open an address range "
		    "(never a name)\n");
	if (d->verdict == POLICY_ALLOW && name && d->rule == NULL)
		printf("note     no host rule allows this name, but a cidr "
		    "rule may allow its addresses: try --addr IP\n");
	if (d->verdict == POLICY_ALLOW && name && !have_addr)
		printf("note     the name's addresses are checked when moatd "
		    "resolves it: each must pass the built-in deny sets, "
		    "the cidr rules and the rules by country or AS (try "
		    "--addr IP)\n");
	if (d->verdict == POLICY_DENY && name && have_addr && !final)
		printf("note     denied by name, before resolution: --addr "
		    "was not needed\n");
	if (d->verdict == POLICY_ALLOW && et->t.method == NULL &&
	    (d->flags & POLICY_F_INSPECT) != 0)
		printf("note     methods, paths, injections or the git preset "
		    "act per request: moatd must see the requests inside "
		    "this tunnel\n");
	if (d->verdict == POLICY_ALLOW && (d->flags & POLICY_F_OPAQUE) != 0)
		printf("note     intercept is false: moatd never terminates "
		    "TLS for this rule\n");
	if (d->verdict == POLICY_ALLOW && (d->flags & POLICY_F_WILDCARD) != 0)
		printf("note     allowed through a wildcard: moatd resolves at "
		    "most %zu new such names a minute per sandbox under this "
		    "rule (limits.dns_wildcard_names), then refuses them with "
		    "dns-budget\n", c->limits.dns_wildcard_names);
}

/* How the traffic is carried, why a late check denied, what is injected. */
static void
moat_print_traffic(const struct moat_config *c,
    const struct policy_explain_target *et,
    const struct policy_decision *d, const char *detail,
    enum policy_transport xport)
{
	const struct policy_inject	*in;
	const char			*proto;
	char				 line[MOAT_DIAG_MAX];
	size_t				 n = 0, i;

	if (detail != NULL)
		printf("why      %s\n", detail);
	/* A tunnel to ssh's port: what moatd reads there is not ssh. */
	proto = et->t.method == NULL ? policy_port_unreadable(et->t.port) :
	    NULL;
	switch (xport) {
	case POLICY_XPORT_INSPECTED:
		if (proto != NULL)
			printf("traffic  inspected only if it is TLS or HTTP: "
			    "moatd cannot read %s, the protocol of port %u, "
			    "and refuses it here (needs-inspection): a rule "
			    "for this host must see the requests\n", proto,
			    et->t.port);
		else
			printf("traffic  inspected: TLS is terminated by "
			    "moatd\n");
		break;
	case POLICY_XPORT_OPAQUE:
		printf("traffic  opaque tunnel: moatd checks the first bytes "
		    "(TLS server name, protocol), then passes the bytes "
		    "unread\n");
		break;
	case POLICY_XPORT_PLAIN:
		printf("traffic  plain HTTP: moatd reads each request\n");
		break;
	case POLICY_XPORT_NONE:
		return;
	}
	if (d->rule == NULL)
		return;
	if (xport == POLICY_XPORT_OPAQUE)
		printf("protocols %s\n", policy_protocols_format(
		    policy_rule_protocols(d->rule), line, sizeof(line)));
	if (xport == POLICY_XPORT_OPAQUE && proto != NULL)
		printf("note     %s is opaque to moat: nothing inside it is "
		    "checked, git push included\n", proto);
	in = policy_rule_injects(d->rule, &n);
	for (i = 0; i < n; i++)
		printf("inject   %s\n", policy_explain_inject(c, &in[i], line,
		    sizeof(line)));
	if (n > 0 && xport == POLICY_XPORT_PLAIN)
		printf("note     plain_http is true: the injected values "
		    "cross the network in clear text\n");
	if (policy_rule_git(d->rule) == POLICY_GIT_READ_ONLY)
		printf("git      read-only: fetch and clone pass, push and "
		    "dumb-HTTP writes are denied\n");
}

/* "where": the address's country and AS number, with "geoip" set. */
static void
moat_print_geo(const struct moat_config *c, const struct policy_addr *a)
{
	struct policy_geo	g;

	if (a == NULL || !policy_geo_enabled(c->policy))
		return;
	policy_geo_lookup(c->policy, a, &g);
	printf("where    country %s, ", g.country[0] != '\0' ? g.country :
	    "unknown");
	if (g.asn != 0)
		printf("AS%u\n", g.asn);
	else
		printf("AS unknown\n");
}

static int
moat_explain(int argc, char *argv[])
{
	static const struct option	opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "method", required_argument, NULL, 'm' },
		{ "addr", required_argument, NULL, 'a' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct policy_explain_target	 et;
	struct policy_decision		 d;
	struct policy_target		 t2;
	struct policy_host		 ah;
	struct moat_config		*c = NULL;
	enum policy_transport		 xport;
	const char			*file = NULL, *method = NULL;
	const char			*addr = NULL, *err = NULL, *detail;
	char				 a[POLICY_NAME_MAX + 1];
	int				 ch, rc = MOAT_EXIT_USAGE;
	bool				 final = true;

	memset(&et, 0, sizeof(et));
	optind = 1;
	while ((ch = getopt_long(argc, argv, "+c:m:a:h", opts, NULL)) != -1) {
		switch (ch) {
		case 'c':
			file = optarg;
			break;
		case 'm':
			method = optarg;
			break;
		case 'a':
			addr = optarg;
			break;
		case 'h':
			moat_explain_usage(stdout);
			return 0;
		default:
			moat_explain_usage(stderr);
			return MOAT_EXIT_USAGE;
		}
	}
	if (argc - optind != 1) {
		fprintf(stderr, "moat explain: %s\n", argc - optind == 0 ?
		    "missing TARGET" : "more than one TARGET");
		moat_explain_usage(stderr);
		return MOAT_EXIT_USAGE;
	}
	/* libidn2 only if the target or --addr may need it. */
	policyio_idn_for(argv[optind], strlen(argv[optind]));
	if (addr != NULL)
		policyio_idn_for(addr, strlen(addr));
	if (policy_explain_parse(argv[optind], method, &et, &err) == -1) {
		fprintf(stderr, "moat explain: %s: %s\n", argv[optind], err);
		return MOAT_EXIT_USAGE;
	}
	if (addr != NULL) {
		if (policy_host_normalise(addr, strlen(addr), &ah,
		    &err) == -1 || ah.kind != POLICY_HOST_ADDR) {
			fprintf(stderr, "moat explain: --addr %s: %s\n", addr,
			    err != NULL ? err : "not an IP address");
			goto out;
		}
		if (et.t.name == NULL) {
			fprintf(stderr, "moat explain: --addr is for a target "
			    "named by host name; %s is an address\n",
			    et.host.name);
			goto out;
		}
	}
	if ((c = moat_load(file)) == NULL)
		goto out;

	printf("target   %s  (host %s, port %u)\n", argv[optind],
	    et.host.name, et.t.port);
	if (et.t.method != NULL)
		printf("request  %s %s\n", et.t.method, et.t.path);
	policy_explain_decide(c, &et, &et.t, &d, &detail, &xport);
	if (addr != NULL && d.verdict == POLICY_ALLOW) {
		t2 = et.t;
		t2.addr = &ah.addr;
		printf("address  %s\n", policy_addr_format(&ah.addr, a,
		    sizeof(a)));
		policy_explain_decide(c, &et, &t2, &d, &detail, &xport);
	} else if (addr != NULL)
		final = false;
	moat_print_geo(c, addr != NULL ? &ah.addr : et.t.addr);
	moat_print_decision(c, &d);
	moat_print_traffic(c, &et, &d, detail, xport);
	moat_print_notes(c, &et, &d, addr != NULL, final);
	rc = d.verdict == POLICY_ALLOW ? MOAT_EXIT_ALLOW : MOAT_EXIT_DENY;
 out:
	policy_config_unref(c);
	free(et.buf);
	return rc;
}

static void
moat_check_usage(FILE *f)
{
	fprintf(f,
	    "usage: moat check [--running-moatd] FILE\n"
	    "\n"
	    "Validates FILE as the program that reads it will, and prints\n"
	    "every error as FILE:LINE:COLUMN: message.  A file with \"listen\"\n"
	    "or \"admin\" is a moatd config (moatd -c FILE); one without is a\n"
	    "policy file for moat run --policy (or moat attach --policy):\n"
	    "the keys moat run does not take from it get a warning.  Secret\n"
	    "values and the CA are not read (moatd --check reads them).\n"
	    "\n"
	    "      --running-moatd  a policy file for a running moatd (moat run\n"
	    "                       --moatd, moat attach): its CA serves the\n"
	    "                       rules that need to see inside TLS\n"
	    "  -h, --help           this text\n"
	    "\n"
	    "Exit status: 0 valid, 1 errors, 2 usage.\n");
}

/*
 * `moat check FILE`: a moatd config (it has "listen" or "admin") is
 * loaded as moatd loads it; anything else as moat run loads a --policy
 * file: with its stand-ins (runconf_standins()) and a warning for each
 * key moat run skips.  Says which it took the file for.
 */
static int
moat_check(int argc, char *argv[])
{
	static const struct option	opts[] = {
		{ "running-moatd", no_argument, NULL, 'M' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct policy_load_opts		 lo = policyio_load_opts;
	struct runconf_unused		 unused;
	struct policy_diags		 d;
	struct moat_config		*c;
	json_error_t			 je;
	json_t				*root;
	const char			*file, *kind, *text;
	char				*buf = NULL, *alt = NULL;
	char				 line[MOAT_DIAG_MAX];
	size_t				 len, altlen = 0, i;
	int				 ch;
	bool				 running = false;

	optind = 1;
	while ((ch = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (ch) {
		case 'M':
			running = true;
			break;
		case 'h':
			moat_check_usage(stdout);
			return 0;
		default:
			moat_check_usage(stderr);
			return MOAT_EXIT_USAGE;
		}
	}
	if (argc - optind != 1) {
		fprintf(stderr, "moat check: %s\n", argc - optind == 0 ?
		    "missing FILE" : "more than one FILE");
		moat_check_usage(stderr);
		return MOAT_EXIT_USAGE;
	}
	file = argv[optind];
	if (moat_read_file(file, &buf, &len) == -1)
		return 1;
	text = buf;
	root = policy_json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
	if (root == NULL || !json_is_object(root))
		kind = NULL;
	else if (json_object_get(root, "listen") != NULL ||
	    json_object_get(root, "admin") != NULL)
		kind = "a moatd config: it has \"listen\" or \"admin\"";
	else {
		kind = running ? "a policy file for moat run --moatd or moat "
		    "attach" : "a policy file for moat run --policy";
		runconf_unused(root, running ? "moat run --moatd" :
		    "moat run", running, &unused);
		lo.unused = unused.keys;
		alt = runconf_standins(root, buf, len, running, &altlen);
		if (alt == NULL && altlen != 0) {
			fprintf(stderr, "moat check: out of memory\n");
			json_decref(root);
			free(buf);
			return 1;
		}
		if (alt != NULL) {
			text = alt;
			len = altlen;
		}
	}
	json_decref(root);
	policy_diags_init(&d);
	policyio_idn_for(text, len);
	c = policy_config_load_opts(file, text, len, &lo, &d);
	for (i = 0; i < d.n; i++)
		fprintf(stderr, "%s\n", policy_diag_format(&d, i, line,
		    sizeof(line)));
	if (c != NULL)
		printf("%s: OK (%s)\n", file, kind);
	else if (kind == NULL)
		fprintf(stderr, "moat check: %s: not a JSON object, so neither "
		    "a moatd config nor a policy file\n", file);
	else
		fprintf(stderr, "moat check: %s: %zu error%s (checked as %s)\n",
		    file, d.nerrors, d.nerrors == 1 ? "" : "s", kind);
	if (c == NULL && kind != NULL && lo.unused != NULL && !running &&
	    moat_check_valid_running(file, buf, strlen(buf)))
		fprintf(stderr, "moat check: %s is valid for a running moatd "
		    "with a CA (moat run --moatd, moat attach): moat check "
		    "--running-moatd %s\n", file, file);
	policy_diags_clear(&d);
	policy_config_unref(c);
	free(alt);
	free(buf);
	return c != NULL ? 0 : 1;
}

/*
 * Whether a policy file (buf, len bytes) that failed as moat run's with a
 * private moatd loads for a running moatd, whose CA serves its rules.
 */
static bool
moat_check_valid_running(const char *file, const char *buf, size_t len)
{
	struct policy_diags	 d;
	struct moat_config	*c = NULL;
	json_error_t		 je;
	json_t			*root;
	char			*alt;
	size_t			 altlen;

	if ((root = policy_json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je)) == NULL)
		return false;
	alt = runconf_standins(root, buf, len, true, &altlen);
	json_decref(root);
	if (alt == NULL)
		return false;
	policy_diags_init(&d);
	c = policy_config_load_opts(file, alt, altlen, &policyio_load_opts,
	    &d);
	policy_diags_clear(&d);
	free(alt);
	policy_config_unref(c);
	return c != NULL;
}

/*
 * `moat ca bundle -c CONFIG [OPTION...]`: CONFIG is loaded as moat check
 * loads it (moatd's config, or a --policy file with a "tls"), and its
 * tls.ca_cert and tls.extra_ca_files become moat-ca's CERT and EXTRA
 * (moat reads the config, moat-ca the certificates).  argv[0] is "ca";
 * the other options go to moat-ca as they are.  Returns the new argv
 * (free() it, not its strings; *c holds them until it is unref'd), or
 * NULL after printing why, with *rc the exit status; argv itself when
 * there is no -c.
 */
static char **
moat_ca_config(int argc, char *argv[], struct moat_config **c, int *rc)
{
	json_error_t	 je;
	json_t		*root, *tls;
	const char	*file = NULL;
	char		**nv, *buf = NULL;
	size_t		 len, n = 0, i;
	int		 j, at = -1;
	bool		 other = false;

	*c = NULL;
	*rc = MOAT_EXIT_USAGE;
	for (j = 2; j < argc; j++) {
		if ((strcmp(argv[j], "-c") == 0 || strcmp(argv[j],
		    "--config") == 0) && j + 1 < argc && file == NULL) {
			file = argv[j + 1];
			at = j++;
		} else if ((strcmp(argv[j], "-o") == 0 || strcmp(argv[j],
		    "--output") == 0 || strcmp(argv[j], "--system-bundle") ==
		    0) && j + 1 < argc)
			j++;
		else
			other = true;	/* CERT, "--", or moat-ca's to judge */
	}
	if (file == NULL)
		return argv;
	if (other) {
		fprintf(stderr, "moat ca bundle: -c CONFIG names the "
		    "certificates: give only -o FILE and --system-bundle FILE "
		    "with it\n");
		return NULL;
	}
	*rc = 1;
	if (moat_read_file(file, &buf, &len) == -1)
		return NULL;
	root = policy_json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
	free(buf);
	tls = json_object_get(root, "tls");
	if (root != NULL && (!json_is_object(tls) ||
	    json_object_get(tls, "ca_cert") == NULL)) {
		fprintf(stderr, "moat ca bundle: %s has no tls.ca_cert: moatd "
		    "intercepts no TLS with it, so its sandboxes need no "
		    "bundle of moat's\n", file);
		json_decref(root);
		return NULL;
	}
	json_decref(root);
	if ((*c = moat_load(file)) == NULL)	/* says what is wrong */
		return NULL;
	for (i = 0; (*c)->tls.extra_ca_files != NULL &&
	    (*c)->tls.extra_ca_files[i] != NULL; i++)
		n++;
	if ((nv = calloc((size_t)argc + n + 3, sizeof(*nv))) == NULL) {
		fprintf(stderr, "moat ca bundle: out of memory\n");
		return NULL;
	}
	n = 0;
	for (j = 0; j < argc; j++)
		if (j != at && j != at + 1)
			nv[n++] = argv[j];
	nv[n++] = (char *)"--";
	nv[n++] = (*c)->tls.ca_cert;
	for (i = 0; (*c)->tls.extra_ca_files != NULL &&
	    (*c)->tls.extra_ca_files[i] != NULL; i++)
		nv[n++] = (*c)->tls.extra_ca_files[i];
	nv[n] = NULL;
	return nv;
}

/*
 * `moat ca ...`: moat-ca (MOAT_CA, else beside moat, else the build
 * tree's certs/, else libexecdir), which holds the OpenSSL part of the
 * command line, with argv[0] "ca"; `moat ca bundle -c CONFIG` first
 * reads CONFIG (moat_ca_config()).
 */
static int
moat_ca(int argc, char *argv[])
{
	struct moat_config	*c = NULL;
	char			 path[PATH_MAX];
	int			 rc;

	if (argc >= 2 && strcmp(argv[1], "bundle") == 0 &&
	    (argv = moat_ca_config(argc, argv, &c, &rc)) == NULL) {
		policy_config_unref(c);
		return rc;
	}
	(void)runconf_libexec_path("moat-ca", "MOAT_CA", "certs", path,
	    sizeof(path));
	execv(path, argv);
	fprintf(stderr, "moat ca: cannot run %s: %s (set MOAT_CA)\n", path,
	    strerror(errno));
	return MOAT_EXIT_NOT_FOUND;
}

int
main(int argc, char *argv[])
{
	static const struct option	opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	int				ch;

	while ((ch = getopt_long(argc, argv, "+hV", opts, NULL)) != -1) {
		switch (ch) {
		case 'h':
			moat_usage(stdout);
			return 0;
		case 'V':
			printf("moat %s\n", PACKAGE_VERSION);
			return 0;
		default:
			moat_usage(stderr);
			return MOAT_EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		moat_usage(stderr);
		return MOAT_EXIT_USAGE;
	}
	if (strcmp(argv[optind], "explain") == 0) {
		/* getopt_long names the program by argv[0] in its errors. */
		argv[optind] = (char *)"moat explain";
		return moat_explain(argc - optind, argv + optind);
	}
	if (strcmp(argv[optind], "check") == 0) {
		argv[optind] = (char *)"moat check";
		return moat_check(argc - optind, argv + optind);
	}
	if (strcmp(argv[optind], "ca") == 0)
		return moat_ca(argc - optind, argv + optind);
	if (strcmp(argv[optind], "audit") == 0) {
		argv[optind] = (char *)"moat audit";
		return audit_cmd_main(argc - optind, argv + optind, moat_load);
	}
	if (strcmp(argv[optind], "run") == 0) {
		argv[optind] = (char *)"moat run";
		return run_main(argc - optind, argv + optind);
	}
	if (strcmp(argv[optind], "attach") == 0) {
		argv[optind] = (char *)"moat attach";
		return attach_main(argc - optind, argv + optind);
	}
	if (strcmp(argv[optind], "status") == 0) {
		argv[optind] = (char *)"moat status";
		return status_main(argc - optind, argv + optind);
	}
	if (strcmp(argv[optind], "pod-init") == 0) {
		argv[optind] = (char *)"moat pod-init";
		return podinit_main(argc - optind, argv + optind);
	}
	fprintf(stderr, "moat: unknown command %s\n", argv[optind]);
	moat_usage(stderr);
	return MOAT_EXIT_USAGE;
}
