/*
 * ca_cmd.c - the `moat ca` subcommand.
 *
 * `moat ca init DIR` creates the CA moatd signs intercepted leaves with,
 * and prints where it went and the certificate's fingerprint, so that the
 * user can recognise the CA later in a sandbox's trust store.
 *
 * `moat ca bundle [-o FILE] CERT [EXTRA...]` writes the trust bundle a
 * sandbox of that CA is given (CERT, the EXTRA files, the system's roots:
 * what moatd hands `moat attach --trust-bundle`), for a moatd's static
 * listeners or a platform that mounts it; `moat ca bundle -c CONFIG`
 * (launcher/moat.c) takes CERT and EXTRA from the config.
 *
 * What it is not: the CA itself (ca.c) or moat's main(); the moat CLI
 * calls certs_cmd_ca() with argv[0] = "ca".
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "certs/certs.h"
#include "certs/certs_int.h"

#define CA_CMD_EXIT_OK		0
#define CA_CMD_EXIT_FAIL	1
#define CA_CMD_EXIT_USAGE	2
#define CA_CMD_ERR_MAX		1024	/* longest error message */
#define CA_CMD_BUNDLE_MODE	0644	/* the bundle is public */

static void	ca_cmd_usage(FILE *f);
static int	ca_cmd_is_help(const char *arg);
static int	ca_cmd_init(int argc, char *argv[]);
static int	ca_cmd_bundle(int argc, char *argv[]);

static void
ca_cmd_usage(FILE *f)
{
	fprintf(f,
	    "usage: moat ca init DIR\n"
	    "       moat ca bundle -c CONFIG [-o FILE] [--system-bundle FILE]\n"
	    "       moat ca bundle [-o FILE] [--system-bundle FILE] CERT "
	    "[EXTRA...]\n"
	    "       moat ca --help\n"
	    "\n"
	    "Commands:\n"
	    "  init DIR  create the CA moatd signs intercepted TLS leaves "
	    "with:\n"
	    "            DIR/" CERTS_CA_KEY_FILE " (private key, mode 0600) "
	    "and DIR/" CERTS_CA_CERT_FILE "\n"
	    "            (certificate, mode 0644).  DIR is created with mode "
	    "0700 if\n"
	    "            missing.  An existing CA is never overwritten.\n"
	    "  bundle    write the trust bundle a sandbox of this CA is "
	    "given: the\n"
	    "            CA certificate (CONFIG's tls.ca_cert, or CERT), "
	    "the extra\n"
	    "            CAs (tls.extra_ca_files, or EXTRA) and the system's "
	    "roots\n"
	    "            (--system-bundle, default\n"
	    "            " CERTS_SYSTEM_BUNDLE "), re-encoded, never a "
	    "key:\n"
	    "            the bundle moatd hands moat attach --trust-bundle.  "
	    "To\n"
	    "            FILE (mode 0644, replaced whole) or standard "
	    "output.\n"
	    "\n"
	    "The key stays on the host: sandboxes only ever get the "
	    "certificate, in\n"
	    "the trust bundle moat writes for them.\n"
	    "\n"
	    "Exit status: 0 success, 1 failure, 2 usage error.\n");
}

static int
ca_cmd_is_help(const char *arg)
{
	return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0;
}

/* argv[0] is "init". */
static int
ca_cmd_init(int argc, char *argv[])
{
	struct certs_ca	*ca;
	char		 err[CA_CMD_ERR_MAX], fp[CERTS_FINGERPRINT_LEN];
	char		 keypath[PATH_MAX], crtpath[PATH_MAX];
	const char	*dir;
	int		 i = 1;

	if (argc == 2 && ca_cmd_is_help(argv[1])) {
		ca_cmd_usage(stdout);
		return CA_CMD_EXIT_OK;
	}
	if (i < argc && strcmp(argv[i], "--") == 0)
		i++;
	else if (i < argc && argv[i][0] == '-') {
		fprintf(stderr, "moat ca init: unknown option %s\n", argv[i]);
		ca_cmd_usage(stderr);
		return CA_CMD_EXIT_USAGE;
	}
	if (argc - i != 1) {
		fprintf(stderr, "moat ca init: %s\n", argc - i < 1 ?
		    "missing DIR" : "too many arguments");
		ca_cmd_usage(stderr);
		return CA_CMD_EXIT_USAGE;
	}
	dir = argv[i];
	if ((size_t)snprintf(keypath, sizeof(keypath), "%s/%s", dir,
	    CERTS_CA_KEY_FILE) >= sizeof(keypath) ||
	    (size_t)snprintf(crtpath, sizeof(crtpath), "%s/%s", dir,
	    CERTS_CA_CERT_FILE) >= sizeof(crtpath)) {
		fprintf(stderr, "moat ca init: %s: path too long\n", dir);
		return CA_CMD_EXIT_FAIL;
	}
	if (certs_ca_init(dir, err, sizeof(err)) == -1) {
		fprintf(stderr, "moat ca init: %s\n", err);
		return CA_CMD_EXIT_FAIL;
	}
	/* Load it back: proves the pair is usable and gives the digest. */
	if ((ca = certs_ca_load(crtpath, keypath, err, sizeof(err))) == NULL) {
		fprintf(stderr, "moat ca init: the new CA does not load: %s\n",
		    err);
		return CA_CMD_EXIT_FAIL;
	}
	if (certs_ca_fingerprint(ca, fp, sizeof(fp)) == -1) {
		fprintf(stderr, "moat ca init: cannot compute the fingerprint "
		    "of %s\n", crtpath);
		certs_ca_free(ca);
		return CA_CMD_EXIT_FAIL;
	}
	certs_ca_free(ca);
	printf("wrote %s (CA private key, mode 0600: keep it on the host)\n"
	    "wrote %s (CA certificate, mode 0644)\n"
	    "SHA-256 fingerprint: %s\n", keypath, crtpath, fp);
	if (fflush(stdout) == EOF) {
		perror("moat ca init: stdout");
		return CA_CMD_EXIT_FAIL;
	}
	return CA_CMD_EXIT_OK;
}

/* Writes the bundle to path whole (a temporary file, renamed). */
static int
ca_cmd_write(const char *path, const char *text, size_t len)
{
	char	err[CA_CMD_ERR_MAX], tmp[PATH_MAX];

	if (certs_file_write_tmp(path, CA_CMD_BUNDLE_MODE, text, len, tmp,
	    sizeof(tmp), err, sizeof(err)) == -1) {
		fprintf(stderr, "moat ca bundle: %s\n", err);
		return -1;
	}
	if (rename(tmp, path) == -1) {
		fprintf(stderr, "moat ca bundle: %s: %s\n", path,
		    strerror(errno));
		(void)unlink(tmp);
		return -1;
	}
	return 0;
}

/* argv[0] is "bundle".  Options may come before or after the files. */
static int
ca_cmd_bundle(int argc, char *argv[])
{
	const char	*out = NULL, *sys = NULL;
	char		 err[CA_CMD_ERR_MAX], *text, **files;
	size_t		 len = 0, n = 0;
	int		 i, rc = CA_CMD_EXIT_FAIL;
	bool		 opts = true;

	if ((files = calloc((size_t)argc, sizeof(*files))) == NULL) {
		fprintf(stderr, "moat ca bundle: out of memory\n");
		return CA_CMD_EXIT_FAIL;
	}
	for (i = 1; i < argc; i++) {
		if (!opts || argv[i][0] != '-')
			files[n++] = argv[i];
		else if (strcmp(argv[i], "--") == 0)
			opts = false;
		else if (ca_cmd_is_help(argv[i])) {
			ca_cmd_usage(stdout);
			free(files);
			return CA_CMD_EXIT_OK;
		} else if ((strcmp(argv[i], "-o") == 0 || strcmp(argv[i],
		    "--output") == 0) && i + 1 < argc)
			out = argv[++i];
		else if (strcmp(argv[i], "--system-bundle") == 0 &&
		    i + 1 < argc)
			sys = argv[++i];
		else {
			fprintf(stderr, "moat ca bundle: %s %s\n", argv[i],
			    i + 1 < argc ? "is not an option here" :
			    "needs a value");
			ca_cmd_usage(stderr);
			free(files);
			return CA_CMD_EXIT_USAGE;
		}
	}
	if (n == 0) {
		fprintf(stderr, "moat ca bundle: missing CERT (moat's CA "
		    "certificate), or -c CONFIG\n");
		ca_cmd_usage(stderr);
		free(files);
		return CA_CMD_EXIT_USAGE;
	}
	if ((text = certs_bundle_from_files(files, sys, &len, err,
	    sizeof(err))) == NULL) {
		fprintf(stderr, "moat ca bundle: %s\n", err);
		free(files);
		return CA_CMD_EXIT_FAIL;
	}
	if (out != NULL) {
		if (ca_cmd_write(out, text, len) == 0) {
			printf("wrote %s (trust bundle: %s%s and the system's "
			    "roots, mode 0644)\n", out, files[0], n > 1 ?
			    ", the extra CAs" : "");
			rc = CA_CMD_EXIT_OK;
		}
	} else if (fwrite(text, 1, len, stdout) == len && fflush(stdout) == 0)
		rc = CA_CMD_EXIT_OK;
	else
		perror("moat ca bundle: stdout");
	free(text);
	free(files);
	return rc;
}

int
certs_cmd_ca(int argc, char *argv[])
{
	if (argc < 2) {
		fprintf(stderr, "moat ca: missing command\n");
		ca_cmd_usage(stderr);
		return CA_CMD_EXIT_USAGE;
	}
	if (ca_cmd_is_help(argv[1])) {
		ca_cmd_usage(stdout);
		return CA_CMD_EXIT_OK;
	}
	if (strcmp(argv[1], "init") == 0)
		return ca_cmd_init(argc - 1, argv + 1);
	if (strcmp(argv[1], "bundle") == 0)
		return ca_cmd_bundle(argc - 1, argv + 1);
	fprintf(stderr, "moat ca: unknown command %s\n", argv[1]);
	ca_cmd_usage(stderr);
	return CA_CMD_EXIT_USAGE;
}
