/*
 * audit_cmd.c - `moat audit`: its options, the files it reads and the
 * filters every command shares (--sandbox, --since, --until).
 *
 * Exit status, every command: 0 fine, 1 what the command looks for was
 * found (replay: an allowed decision would be refused; verify: the file
 * was changed), 2 usage, unreadable files or lines.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "launcher/audit_cmd.h"

#define AUDIT_TOP_DEFAULT	10
#define AUDIT_TOP_MAX		100000

static void
audit_cmd_usage(FILE *f)
{
	fprintf(f,
	    "usage: moat audit summary [--json] [--top N] [FILTERS] FILE...\n"
	    "       moat audit suggest [--group N] [--allow-private CIDR]... "
	    "[FILTERS] FILE...\n"
	    "       moat audit replay --policy FILE [--json] [--top N] "
	    "[FILTERS] FILE...\n"
	    "       moat audit verify [--start HASH] [--end HASH] FILE...\n"
	    "\n"
	    "Reads moatd's audit files (oldest first; gzip-compressed ones\n"
	    "too; - is standard input).\n"
	    "\n"
	    "  summary  per sandbox: destinations by decisions and bytes,\n"
	    "           refusals and would-denies by reason and rule, secrets\n"
	    "           used by host, clients; sandboxes by bytes sent\n"
	    "  suggest  a moat.json \"policy\" that allows what was allowed\n"
	    "           and would-denied, checked before it is printed\n"
	    "  replay   every recorded decision judged again under --policy\n"
	    "           FILE: exit 1 if something allowed would be refused\n"
	    "  verify   the hash chain (audit.hash_chain): exit 1 if lines\n"
	    "           were changed, removed or inserted\n"
	    "\n"
	    "FILTERS: --sandbox NAME (repeatable), --since TIME, --until TIME\n"
	    "(2026-11-29, 2026-11-29T13:42[:38[.123]][Z], UTC; or 30m, 12h,\n"
	    "7d before now; --since includes, --until excludes).\n"
	    "\n"
	    "Exit status: 0 fine, 1 found (replay: a refusal to come; verify:\n"
	    "tampered), 2 usage or unreadable input.\n");
}

void
audit_cmd_puts(FILE *f, const char *s)
{
	for (; *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;

		if (c < 0x20 || c >= 0x7f || c == '\\')
			fprintf(f, "\\x%02x", c);
		else
			putc(c, f);
	}
}

static int
audit_cmd_digits(const char *s, size_t n, int lo, int hi, int *out)
{
	int	v = 0;
	size_t	i;

	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	if (v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

int
audit_cmd_time(const char *arg, int64_t now_s, char *out)
{
	char		 ts[AUDIT_TS_LEN + 1] = "0000-01-01T00:00:00.000Z";
	size_t		 n = strlen(arg), i;
	struct tm	 tm;
	time_t		 t;
	char		*end;
	long long	 v;
	int		 d;

	if (n >= 2 && strchr("smhd", arg[n - 1]) != NULL && arg[0] >= '0' &&
	    arg[0] <= '9') {
		errno = 0;
		v = strtoll(arg, &end, 10);
		if (errno != 0 || end != arg + n - 1 || v > 100000000LL)
			return -1;
		v *= arg[n - 1] == 's' ? 1 : arg[n - 1] == 'm' ? 60 :
		    arg[n - 1] == 'h' ? 3600 : 86400;
		t = (time_t)(now_s - v);
		if (gmtime_r(&t, &tm) == NULL)
			return -1;
		strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S.000Z", &tm);
		memcpy(out, ts, sizeof(ts));
		return 0;
	}
	if (n > 0 && arg[n - 1] == 'Z')
		n--;
	/* YYYY-MM-DD[THH:MM[:SS[.mmm]]] */
	if (n != 10 && n != 16 && n != 19 && n != 23)
		return -1;
	for (i = 0; i < n; i++) {
		static const char	shape[] = "dddd-dd-ddTdd:dd:dd.ddd";

		if (shape[i] == 'd' ? arg[i] < '0' || arg[i] > '9' :
		    arg[i] != shape[i])
			return -1;
	}
	if (audit_cmd_digits(arg + 5, 2, 1, 12, &d) == -1 ||
	    audit_cmd_digits(arg + 8, 2, 1, 31, &d) == -1 ||
	    (n > 10 && (audit_cmd_digits(arg + 11, 2, 0, 23, &d) == -1 ||
	    audit_cmd_digits(arg + 14, 2, 0, 59, &d) == -1)) ||
	    (n > 16 && audit_cmd_digits(arg + 17, 2, 0, 60, &d) == -1))
		return -1;
	memcpy(ts, arg, n);
	memcpy(out, ts, sizeof(ts));
	return 0;
}

static bool
audit_cmd_pass(const struct audit_opts *o, const struct audit_ln *l)
{
	size_t	i;

	if (o->nsandboxes > 0) {
		if (l->sandbox == NULL)
			return false;
		for (i = 0; i < o->nsandboxes; i++)
			if (strcmp(o->sandboxes[i], l->sandbox) == 0)
				break;
		if (i == o->nsandboxes)
			return false;
	}
	if (o->since[0] != '\0' && (l->ts == NULL || strcmp(l->ts,
	    o->since) < 0))
		return false;
	if (o->until[0] != '\0' && (l->ts == NULL || strcmp(l->ts,
	    o->until) >= 0))
		return false;
	return true;
}

static void
audit_cmd_bad(long *nbad, const char *file, uint64_t lineno,
    const char *why)
{
	if (++*nbad <= AUDIT_BAD_SHOWN) {
		fprintf(stderr, "moat audit: ");
		audit_cmd_puts(stderr, file);
		if (lineno > 0)
			fprintf(stderr, ":%llu", (unsigned long long)lineno);
		fprintf(stderr, ": %s\n", why);
	}
}

long
audit_cmd_read(const struct audit_opts *o, audit_fold_fn fold, void *arg)
{
	struct audit_scan	*s;
	struct audit_in		*in;
	struct audit_ln		 l;
	struct audit_where	 w;
	char			 err[AUDIT_ERR_MAX], *line;
	const char		*why;
	size_t			 i, len;
	long			 nbad = 0;
	int			 rc;

	if ((s = audit_scan_new()) == NULL) {
		fprintf(stderr, "moat audit: out of memory\n");
		return -1;
	}
	for (i = 0; i < o->nfiles; i++) {
		if ((in = audit_in_open(o->files[i], err, sizeof(err))) ==
		    NULL) {
			audit_cmd_bad(&nbad, o->files[i], 0, err);
			continue;
		}
		w.file = audit_in_name(in);
		while ((rc = audit_in_line(in, &line, &len, err,
		    sizeof(err))) != 0) {
			w.lineno = audit_in_lineno(in);
			if (rc == -1) {
				audit_cmd_bad(&nbad, w.file, w.lineno, err);
				break;
			}
			if (rc == -2) {
				audit_cmd_bad(&nbad, w.file, w.lineno, err);
				continue;
			}
			if (audit_scan_line(s, line, len, &l, false, &why) ==
			    -1) {
				audit_cmd_bad(&nbad, w.file, w.lineno, why);
				continue;
			}
			if (audit_cmd_pass(o, &l) && fold(arg, &l, &w) == -1) {
				fprintf(stderr, "moat audit: out of memory\n");
				audit_in_close(in);
				audit_scan_free(s);
				return -1;
			}
		}
		audit_in_close(in);
	}
	audit_scan_free(s);
	if (nbad > AUDIT_BAD_SHOWN)
		fprintf(stderr, "moat audit: %ld more lines or files could "
		    "not be read\n", nbad - AUDIT_BAD_SHOWN);
	return nbad;
}

static int
audit_cmd_size(const char *cmd, const char *opt, const char *arg,
    size_t max, size_t *out)
{
	char		*end;
	unsigned long	 v;

	errno = 0;
	v = strtoul(arg, &end, 10);
	if (errno != 0 || *arg < '0' || *arg > '9' || *end != '\0' ||
	    v > max) {
		fprintf(stderr, "%s: %s %s: expected an integer from 0 to "
		    "%zu\n", cmd, opt, arg, max);
		return -1;
	}
	*out = (size_t)v;
	return 0;
}

enum {
	AUDIT_OPT_SINCE = 256, AUDIT_OPT_UNTIL, AUDIT_OPT_SANDBOX,
	AUDIT_OPT_TOP, AUDIT_OPT_GROUP, AUDIT_OPT_POLICY, AUDIT_OPT_AP,
	AUDIT_OPT_START, AUDIT_OPT_END, AUDIT_OPT_JSON
};

/* The options of sub (which each command takes is checked after). */
static int
audit_cmd_options(const char *cmd, int argc, char *argv[],
    struct audit_opts *o)
{
	static const struct option	opts[] = {
		{ "since", required_argument, NULL, AUDIT_OPT_SINCE },
		{ "until", required_argument, NULL, AUDIT_OPT_UNTIL },
		{ "sandbox", required_argument, NULL, AUDIT_OPT_SANDBOX },
		{ "top", required_argument, NULL, AUDIT_OPT_TOP },
		{ "group", required_argument, NULL, AUDIT_OPT_GROUP },
		{ "policy", required_argument, NULL, AUDIT_OPT_POLICY },
		{ "allow-private", required_argument, NULL, AUDIT_OPT_AP },
		{ "start", required_argument, NULL, AUDIT_OPT_START },
		{ "end", required_argument, NULL, AUDIT_OPT_END },
		{ "json", no_argument, NULL, AUDIT_OPT_JSON },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	int				ch;

	optind = 1;
	while ((ch = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (ch) {
		case AUDIT_OPT_SINCE:
		case AUDIT_OPT_UNTIL:
			if (audit_cmd_time(optarg, (int64_t)time(NULL),
			    ch == AUDIT_OPT_SINCE ? o->since : o->until) ==
			    -1) {
				fprintf(stderr, "%s: %s %s: expected "
				    "YYYY-MM-DD[THH:MM[:SS[.mmm]]][Z] (UTC) or "
				    "N followed by s, m, h or d\n", cmd,
				    ch == AUDIT_OPT_SINCE ? "--since" :
				    "--until", optarg);
				return -1;
			}
			break;
		case AUDIT_OPT_SANDBOX:
			if (o->nsandboxes == AUDIT_SANDBOXES_MAX) {
				fprintf(stderr, "%s: more than %d --sandbox\n",
				    cmd, AUDIT_SANDBOXES_MAX);
				return -1;
			}
			o->sandboxes[o->nsandboxes++] = optarg;
			break;
		case AUDIT_OPT_TOP:
			if (audit_cmd_size(cmd, "--top", optarg,
			    AUDIT_TOP_MAX, &o->top) == -1)
				return -1;
			break;
		case AUDIT_OPT_GROUP:
			if (audit_cmd_size(cmd, "--group", optarg, 1000000,
			    &o->group) == -1)
				return -1;
			break;
		case AUDIT_OPT_POLICY:
			o->policy = optarg;
			break;
		case AUDIT_OPT_AP:
			if (o->nallow_private == AUDIT_SANDBOXES_MAX) {
				fprintf(stderr, "%s: more than %d "
				    "--allow-private\n", cmd,
				    AUDIT_SANDBOXES_MAX);
				return -1;
			}
			o->allow_private[o->nallow_private++] = optarg;
			break;
		case AUDIT_OPT_START:
			o->start_hash = optarg;
			break;
		case AUDIT_OPT_END:
			o->end_hash = optarg;
			break;
		case AUDIT_OPT_JSON:
			o->json = true;
			break;
		case 'h':
			audit_cmd_usage(stdout);
			return 1;
		default:
			audit_cmd_usage(stderr);
			return -1;
		}
	}
	o->files = argv + optind;
	o->nfiles = (size_t)(argc - optind);
	return 0;
}

/* Whether cmd took an option it does not use: said, and -1. */
static int
audit_cmd_unused(const char *cmd, const struct audit_opts *o,
    const char *takes)
{
	const struct {
		const char	*name;
		bool		 given;
	} g[] = {
		{ "json", o->json },
		{ "top", o->top != AUDIT_TOP_DEFAULT },
		{ "group", o->group != AUDIT_GROUP_DEFAULT },
		{ "policy", o->policy != NULL },
		{ "allow-private", o->nallow_private > 0 },
		{ "start", o->start_hash != NULL },
		{ "end", o->end_hash != NULL },
		{ "filters", o->nsandboxes > 0 || o->since[0] != '\0' ||
		    o->until[0] != '\0' },
	};
	size_t	i;

	for (i = 0; i < sizeof(g) / sizeof(g[0]); i++)
		if (g[i].given && strstr(takes, g[i].name) == NULL) {
			fprintf(stderr, "%s: does not take --%s\n", cmd,
			    strcmp(g[i].name, "filters") == 0 ?
			    "sandbox, --since or --until" : g[i].name);
			return -1;
		}
	return 0;
}

int
audit_cmd_main(int argc, char *argv[],
    struct moat_config *(*load)(const char *file))
{
	static const struct {
		const char	*name;
		const char	*takes;
		int		(*main)(const struct audit_opts *);
	} cmds[] = {
		{ "summary", "json top filters", audit_summary_main },
		{ "suggest", "group allow-private filters", audit_suggest_main },
		{ "replay", "policy json top filters", audit_replay_main },
		{ "verify", "start end", audit_verify_main },
	};
	struct audit_opts	 o;
	char			 cmd[64];
	size_t			 i;
	int			 rc;

	if (argc < 2 || strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "-h") == 0) {
		audit_cmd_usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? AUDIT_EXIT_ERROR : AUDIT_EXIT_OK;
	}
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (strcmp(argv[1], cmds[i].name) == 0)
			break;
	if (i == sizeof(cmds) / sizeof(cmds[0])) {
		fprintf(stderr, "moat audit: unknown command %s\n", argv[1]);
		audit_cmd_usage(stderr);
		return AUDIT_EXIT_ERROR;
	}
	snprintf(cmd, sizeof(cmd), "moat audit %s", cmds[i].name);
	memset(&o, 0, sizeof(o));
	o.top = AUDIT_TOP_DEFAULT;
	o.group = AUDIT_GROUP_DEFAULT;
	o.load = load;
	argv[1] = cmd;
	if ((rc = audit_cmd_options(cmd, argc - 1, argv + 1, &o)) != 0)
		return rc == 1 ? AUDIT_EXIT_OK : AUDIT_EXIT_ERROR;
	if (audit_cmd_unused(cmd, &o, cmds[i].takes) == -1)
		return AUDIT_EXIT_ERROR;
	if (o.nfiles == 0) {
		fprintf(stderr, "%s: no FILE (- reads standard input)\n", cmd);
		return AUDIT_EXIT_ERROR;
	}
	if (strcmp(cmds[i].name, "replay") == 0 && o.policy == NULL) {
		fprintf(stderr, "%s: needs --policy FILE (the policy to judge "
		    "the recorded decisions by)\n", cmd);
		return AUDIT_EXIT_ERROR;
	}
	return cmds[i].main(&o);
}
