/*
 * status.c - `moat status`: what a running moatd is doing, from its admin
 * socket (the ops stats and list, proto/admin_proto.h): moatd's uptime,
 * workers, connections, audit queue and reloads, and each live sandbox
 * with its listeners, the names of its secrets and its counters.
 *
 * What it is not: a way in.  moatd answers only root and its own user,
 * and refuses a client inside a sandbox's network namespace; nothing it
 * answers holds a secret or a placeholder.
 *
 * Exit status: 0 printed; 1 moatd could not be reached, refused, or broke
 * the protocol (the message says what to check); 2 usage.
 */
#include "config.h"

#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "launcher/launcher.h"
#include "launcher/status.h"
#include "proto/admin_proto.h"

#define STATUS_DEFAULT_ADMIN	MOAT_ADMIN_RUNDIR "/admin.sock"
#define STATUS_PAGES_MAX	100000	/* list pages, at most */
#define STATUS_NAME_MAX		512	/* a sandbox name moatd lists */
#define STATUS_EXIT_OK		0
#define STATUS_EXIT_MOATD	1
#define STATUS_EXIT_USAGE	2

static void	status_usage(FILE *f);
static const char *status_hint(int err);
static int	status_fetch(struct admin_client *ac, json_t **stats,
		    json_t **sandboxes, char *err, size_t errlen);

static void
status_usage(FILE *f)
{
	fprintf(f,
	    "usage: moat status [--moatd ADDR] [--json]\n"
	    "\n"
	    "Prints what a running moatd is doing: its version, uptime,\n"
	    "workers, open connections, audit queue and reloads, and each\n"
	    "live sandbox (registered on the admin socket, or of a configured\n"
	    "listener) with its listeners, the names of its secrets, its open\n"
	    "connections, decisions allowed and denied, and bytes sent and\n"
	    "received.  Root or moatd's user; never from inside a sandbox.\n"
	    "\n"
	    "  --moatd ADDR   moatd's admin socket (unix:PATH or PATH;\n"
	    "                 default %s)\n"
	    "  --json         one JSON object: \"stats\", moatd's stats\n"
	    "                 answer, and \"sandboxes\", every sandbox of\n"
	    "                 its list\n"
	    "  -h, --help     this text\n"
	    "\n"
	    "Exit status: 0 printed, 1 moatd cannot be reached or refused,\n"
	    "2 usage.\n", STATUS_DEFAULT_ADMIN);
}

/* What to check when the admin socket cannot be connected to. */
static const char *
status_hint(int err)
{
	switch (err) {
	case ENOENT:
		return "is moatd running, with \"admin\": {\"address\": "
		    "\"unix:PATH\"} in its config? --moatd names its socket";
	case ECONNREFUSED:
		return "nothing listens there: moatd stopped, or this is the "
		    "socket of one that was killed";
	case EACCES:
	case EPERM:
		return "only root and moatd's own user may use its admin "
		    "socket (\"admin\": {\"mode\": ...})";
	case ENOTSOCK:
		return "that path is not a socket: --moatd names moatd's "
		    "\"admin\" address";
	default:
		return "check --moatd and that moatd runs";
	}
}

/*
 * stats, then list page by page ("after" the last name of a page while
 * moatd says there are "more").  *stats and *sandboxes are new
 * references.  0, or -1 with err.
 */
static int
status_fetch(struct admin_client *ac, json_t **stats, json_t **sandboxes,
    char *err, size_t errlen)
{
	json_t		*page = NULL, *arr, *last;
	char		 after[STATUS_NAME_MAX];
	size_t		 i;
	bool		 more = true;

	*stats = *sandboxes = NULL;
	if (admin_client_request(ac, json_pack("{s:s}", "op", "stats"), stats,
	    err, errlen) == -1)
		return -1;
	if ((*sandboxes = json_array()) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	after[0] = '\0';
	for (i = 0; more && i < STATUS_PAGES_MAX; i++) {
		if (admin_client_request(ac, after[0] == '\0' ?
		    json_pack("{s:s}", "op", "list") : json_pack("{s:s, s:s}",
		    "op", "list", "after", after), &page, err, errlen) == -1)
			return -1;
		arr = json_object_get(page, "sandboxes");
		more = json_is_integer(json_object_get(page, "more")) &&
		    json_integer_value(json_object_get(page, "more")) > 0;
		last = json_array_get(arr, json_array_size(arr) - 1);
		if (!json_is_array(arr) || json_array_extend(*sandboxes,
		    arr) == -1 || (more && (!json_is_string(json_object_get(
		    last, "sandbox")) || strcmp(json_string_value(
		    json_object_get(last, "sandbox")), after) <= 0))) {
			snprintf(err, errlen, "moatd's list answer is not a "
			    "page of sandboxes after \"%.64s\"", after);
			json_decref(page);
			return -1;
		}
		if (more)
			snprintf(after, sizeof(after), "%s", json_string_value(
			    json_object_get(last, "sandbox")));
		json_decref(page);
	}
	return 0;
}

int
status_main(int argc, char *argv[])
{
	static const struct option	 opts[] = {
		{ "moatd", required_argument, NULL, 'M' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	const struct sockaddr_un	*sun = NULL;
	struct admin_client		*ac = NULL;
	const char			*path = STATUS_DEFAULT_ADMIN;
	json_t				*stats = NULL, *sbs = NULL, *out;
	char				 err[MOAT_ERR_MAX];
	bool				 json = false;
	int				 ch, rc = STATUS_EXIT_MOATD, saved;

	optind = 1;
	while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (ch) {
		case 'M':
			path = strncmp(optarg, "unix:", 5) == 0 ? optarg + 5 :
			    optarg;
			if (path[0] == '\0' || strlen(path) >=
			    sizeof(sun->sun_path)) {
				fprintf(stderr, "moat status: --moatd %s: not a "
				    "Unix socket path (unix:PATH or PATH, at "
				    "most %zu bytes)\n", optarg,
				    sizeof(sun->sun_path) - 1);
				return STATUS_EXIT_USAGE;
			}
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			status_usage(stdout);
			return STATUS_EXIT_OK;
		default:
			status_usage(stderr);
			return STATUS_EXIT_USAGE;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "moat status: unexpected argument %s\n",
		    argv[optind]);
		status_usage(stderr);
		return STATUS_EXIT_USAGE;
	}
	if ((ac = admin_client_connect(path, err, sizeof(err))) == NULL) {
		saved = errno;
		fprintf(stderr, "moat status: %s: %s\n", err,
		    status_hint(saved));
		return STATUS_EXIT_MOATD;
	}
	if (admin_client_hello(ac, err, sizeof(err)) == -1)
		goto fail;
	if (!admin_client_can_status(ac)) {
		snprintf(err, sizeof(err), "moatd %s on %s does not know the "
		    "admin ops list and stats: upgrade it",
		    admin_client_version(ac), path);
		goto fail;
	}
	if (status_fetch(ac, &stats, &sbs, err, sizeof(err)) == -1)
		goto fail;
	if (json) {
		json_object_del(stats, "ok");
		if ((out = json_pack("{s:O, s:O}", "stats", stats,
		    "sandboxes", sbs)) == NULL ||
		    json_dumpf(out, stdout, JSON_INDENT(2)) == -1 ||
		    fputc('\n', stdout) == EOF || fflush(stdout) == EOF) {
			json_decref(out);
			snprintf(err, sizeof(err), "cannot write the answer");
			goto fail;
		}
		json_decref(out);
	} else if (status_print(stdout, stats, sbs) == -1) {
		snprintf(err, sizeof(err), "cannot write the answer");
		goto fail;
	}
	rc = STATUS_EXIT_OK;
	goto out;
 fail:
	fprintf(stderr, "moat status: %s\n", err);
 out:
	json_decref(stats);
	json_decref(sbs);
	admin_client_close(ac);
	return rc;
}
