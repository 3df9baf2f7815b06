/*
 * bundle.c - the trust bundle a sandbox is given: moat's CA, the system's
 * roots and any CA the user adds, in one PEM file.
 *
 * Clients inside the sandbox (curl, pip, node, python) are pointed at this
 * file so that they accept the leaves moatd presents and still verify
 * everything else as they would outside.  The file is public by nature; it
 * must never carry a key.  Every certificate is therefore parsed and
 * written out again from its parsed form, input files that mention a
 * private key are refused outright, and the finished bundle is checked
 * once more before it reaches the disk.
 *
 * What it is not: a certificate store.  Nothing here judges whether a
 * certificate should be trusted; the user's choice of files is the policy.
 */
#include "config.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "certs/certs_int.h"

#define BUNDLE_MODE		0644
#define BUNDLE_KEY_MARK		"PRIVATE KEY"	/* in every PEM key label */
#define BUNDLE_PEM_BEGIN	"-----BEGIN "
#define BUNDLE_MAX_CERTS	100000	/* certificates in one input file */

static int	bundle_count(const char *buf, size_t len, const char *needle);
static int	bundle_add_buf(BIO *out, const char *what, const char *buf,
		    size_t len, char *err, size_t errlen);
static int	bundle_add_file(BIO *out, const char *file, char *err,
		    size_t errlen);
static char	*bundle_text(BIO *out, const char *what, size_t *outlen,
		    char *err, size_t errlen);
static int	bundle_publish(const char *path, const char *data, size_t len,
		    char *err, size_t errlen);

/* Occurrences of needle in buf[0..len). */
static int
bundle_count(const char *buf, size_t len, const char *needle)
{
	const char	*p = buf, *end = buf + len, *hit;
	size_t		 nlen = strlen(needle);
	int		 n = 0;

	while (p < end && (hit = memmem(p, (size_t)(end - p), needle,
	    nlen)) != NULL) {
		n++;
		p = hit + nlen;
	}
	return n;
}

/*
 * Appends every certificate of buf (named what, for errors) to out,
 * re-encoded.  Returns their number (at least 1), or -1 with err set.
 */
static int
bundle_add_buf(BIO *out, const char *what, const char *buf, size_t len,
    char *err, size_t errlen)
{
	BIO		*in = NULL;
	X509		*x;
	unsigned long	 e;
	int		 blocks, n = 0, rc = -1;

	if (len > INT_MAX || memchr(buf, '\0', len) != NULL) {
		certs_err(err, errlen, "%s: contains a NUL byte; not a PEM "
		    "file", what);
		return -1;
	}
	if (memmem(buf, len, BUNDLE_KEY_MARK, strlen(BUNDLE_KEY_MARK)) !=
	    NULL) {
		certs_err(err, errlen, "%s: contains a private key; refusing "
		    "to put it in a trust bundle", what);
		return -1;
	}
	blocks = bundle_count(buf, len, BUNDLE_PEM_BEGIN);
	if (blocks > BUNDLE_MAX_CERTS) {
		certs_err(err, errlen, "%s: more than %d PEM blocks", what,
		    BUNDLE_MAX_CERTS);
		return -1;
	}
	if ((in = BIO_new_mem_buf(buf, (int)len)) == NULL) {
		certs_err_ssl(err, errlen, "%s", what);
		return -1;
	}
	ERR_clear_error();
	while ((x = PEM_read_bio_X509(in, NULL, NULL, NULL)) != NULL) {
		n++;
		if (PEM_write_bio_X509(out, x) != 1) {
			X509_free(x);
			certs_err_ssl(err, errlen, "%s: cannot re-encode "
			    "certificate %d", what, n);
			goto out;
		}
		X509_free(x);
	}
	/* The loop ends at the end of input, or at a block it cannot read. */
	e = ERR_peek_last_error();
	if (ERR_GET_LIB(e) != ERR_LIB_PEM ||
	    ERR_GET_REASON(e) != PEM_R_NO_START_LINE) {
		certs_err_ssl(err, errlen, "%s: certificate %d is not valid "
		    "PEM", what, n + 1);
		goto out;
	}
	ERR_clear_error();
	/* PEM_read_bio_X509 skips blocks of other types; we do not. */
	if (n != blocks) {
		certs_err(err, errlen, "%s: %d of its %d PEM blocks are not "
		    "certificates", what, blocks - n, blocks);
		goto out;
	}
	if (n == 0) {
		certs_err(err, errlen, "%s: no PEM certificate found", what);
		goto out;
	}
	rc = n;
 out:
	BIO_free(in);
	return rc;
}

/* bundle_add_buf() on the contents of file. */
static int
bundle_add_file(BIO *out, const char *file, char *err, size_t errlen)
{
	char	*buf;
	size_t	 len = 0;
	int	 rc;

	if ((buf = certs_file_read(file, CERTS_BUNDLE_FILE_MAX, NULL, &len,
	    err, errlen)) == NULL)
		return -1;
	rc = bundle_add_buf(out, file, buf, len, err, errlen);
	certs_file_free(buf, len);
	return rc;
}

/*
 * The text of out, as a NUL-terminated copy, checked once more for a key
 * (built from re-encoded certificates only, it cannot hold one; this text
 * is handed to a sandbox).  NULL with err set on failure.
 */
static char *
bundle_text(BIO *out, const char *what, size_t *outlen, char *err,
    size_t errlen)
{
	char	*data, *copy;
	long	 len;

	if ((len = BIO_get_mem_data(out, &data)) <= 0) {
		certs_err_ssl(err, errlen, "cannot build the bundle");
		return NULL;
	}
	if (memmem(data, (size_t)len, BUNDLE_KEY_MARK,
	    strlen(BUNDLE_KEY_MARK)) != NULL) {
		certs_err(err, errlen, "%s: internal error: the bundle would "
		    "contain a private key; refused", what);
		return NULL;
	}
	if ((copy = malloc((size_t)len + 1)) == NULL) {
		certs_err(err, errlen, "out of memory");
		return NULL;
	}
	memcpy(copy, data, (size_t)len);
	copy[len] = '\0';
	*outlen = (size_t)len;
	return copy;
}

char *
certs_trust_pem(const struct certs_ca *ca, char *const *extra_ca_files,
    size_t *len, char *err, size_t errlen)
{
	BIO	*out;
	char	*text = NULL;
	size_t	 i;

	if ((out = BIO_new(BIO_s_mem())) == NULL) {
		certs_err_ssl(err, errlen, "cannot build the bundle");
		return NULL;
	}
	if (PEM_write_bio_X509(out, certs_ca_cert(ca)) != 1) {
		certs_err_ssl(err, errlen, "cannot encode the CA certificate");
		goto out;
	}
	for (i = 0; extra_ca_files != NULL && extra_ca_files[i] != NULL; i++)
		if (bundle_add_file(out, extra_ca_files[i], err, errlen) == -1)
			goto out;
	text = bundle_text(out, "trust certificates", len, err, errlen);
 out:
	BIO_free(out);
	return text;
}

char *
certs_bundle_from_pem(const char *pem, size_t pemlen,
    const char *system_bundle, size_t *len, char *err, size_t errlen)
{
	BIO	*out;
	char	*text = NULL;

	if (system_bundle == NULL)
		system_bundle = CERTS_SYSTEM_BUNDLE;
	if ((out = BIO_new(BIO_s_mem())) == NULL) {
		certs_err_ssl(err, errlen, "cannot build the bundle");
		return NULL;
	}
	if (bundle_add_buf(out, "moatd's trust certificates", pem, pemlen,
	    err, errlen) == -1 || bundle_add_file(out, system_bundle, err,
	    errlen) == -1)
		goto out;
	text = bundle_text(out, "the sandbox's trust bundle", len, err,
	    errlen);
 out:
	BIO_free(out);
	return text;
}

char *
certs_bundle_from_files(char *const *files, const char *system_bundle,
    size_t *len, char *err, size_t errlen)
{
	BIO	*out;
	char	*text = NULL;
	size_t	 i;

	if (files == NULL || files[0] == NULL) {
		certs_err(err, errlen, "no CA certificate given");
		return NULL;
	}
	if (system_bundle == NULL)
		system_bundle = CERTS_SYSTEM_BUNDLE;
	if ((out = BIO_new(BIO_s_mem())) == NULL) {
		certs_err_ssl(err, errlen, "cannot build the bundle");
		return NULL;
	}
	for (i = 0; files[i] != NULL; i++)
		if (bundle_add_file(out, files[i], err, errlen) == -1)
			goto out;
	if (bundle_add_file(out, system_bundle, err, errlen) == -1)
		goto out;
	text = bundle_text(out, "the trust bundle", len, err, errlen);
 out:
	BIO_free(out);
	return text;
}

/*
 * Writes data to a temporary file beside path and renames it over path.
 * Once the rename is done the bundle is in place: syncing the directory
 * afterwards is only for durability, and its failure is not reported.
 */
static int
bundle_publish(const char *path, const char *data, size_t len, char *err,
    size_t errlen)
{
	char	 tmp[PATH_MAX];
	char	*dcopy;

	if (certs_file_write_tmp(path, BUNDLE_MODE, data, len, tmp,
	    sizeof(tmp), err, errlen) == -1)
		return -1;
	if (rename(tmp, path) == -1) {
		certs_err(err, errlen, "%s: %s", path, strerror(errno));
		(void)unlink(tmp);
		return -1;
	}
	if ((dcopy = strdup(path)) != NULL)
		(void)certs_dir_sync(dirname(dcopy), NULL, 0);
	free(dcopy);
	return 0;
}

int
certs_write_bundle(const char *path, const struct certs_ca *ca,
    char *const *extra_ca_files, const char *system_bundle, char *err,
    size_t errlen)
{
	BIO	*out = NULL;
	char	*data = NULL;
	size_t	 len = 0;
	int	 n, total = 0, rc = -1;
	size_t	 i;

	if (path == NULL || *path == '\0' || ca == NULL) {
		certs_err(err, errlen, "no bundle path or CA given");
		return -1;
	}
	if (system_bundle == NULL)
		system_bundle = CERTS_SYSTEM_BUNDLE;
	if ((out = BIO_new(BIO_s_mem())) == NULL) {
		certs_err_ssl(err, errlen, "cannot build the bundle");
		return -1;
	}
	/* moat's CA first: it is the one a reader of the file looks for. */
	if (PEM_write_bio_X509(out, certs_ca_cert(ca)) != 1) {
		certs_err_ssl(err, errlen, "cannot encode the CA certificate");
		goto out;
	}
	total = 1;
	if ((n = bundle_add_file(out, system_bundle, err, errlen)) == -1)
		goto out;
	total += n;
	for (i = 0; extra_ca_files != NULL && extra_ca_files[i] != NULL; i++) {
		if ((n = bundle_add_file(out, extra_ca_files[i], err,
		    errlen)) == -1)
			goto out;
		total += n;
	}
	if ((data = bundle_text(out, path, &len, err, errlen)) == NULL)
		goto out;
	if (bundle_publish(path, data, len, err, errlen) == -1)
		goto out;
	rc = total;
 out:
	free(data);
	BIO_free(out);
	return rc;
}
