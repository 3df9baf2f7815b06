/*
 * certs_util.c - the small pieces the rest of certs/ is built from: error
 * messages, bounded file reads, temporary files, serial numbers, validity
 * and the X.509 extensions of the CA and of the leaves.
 *
 * What it is not: policy.  Which extensions a certificate gets is decided
 * in ca.c and minter.c; this file only knows how to encode them.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "certs/certs_int.h"
#include "certs/ssldl.h"

#define CERTS_READ_CHUNK	16384	/* bytes per read(2) */
#define CERTS_SERIAL_TRIES	8	/* attempts at a non-zero serial */
#define CERTS_TMP_SUFFIX	".XXXXXX"

static void	certs_verr(char *err, size_t errlen, const char *ssl,
		    const char *fmt, va_list ap)
		    __attribute__((format(printf, 4, 0)));
static int	certs_write_all(int fd, const void *buf, size_t len);

static void
certs_verr(char *err, size_t errlen, const char *ssl, const char *fmt,
    va_list ap)
{
	size_t	n;

	if (err == NULL || errlen == 0)
		return;
	(void)vsnprintf(err, errlen, fmt, ap);
	n = strlen(err);
	if (ssl != NULL && n < errlen)
		(void)snprintf(err + n, errlen - n, ": %s", ssl);
}

void
certs_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	certs_verr(err, errlen, NULL, fmt, ap);
	va_end(ap);
	ERR_clear_error();
}

void
certs_err_ssl(char *err, size_t errlen, const char *fmt, ...)
{
	char		 buf[256];
	const char	*reason = NULL;
	unsigned long	 e;
	va_list		 ap;

	if ((e = ERR_peek_error()) != 0) {
		reason = ERR_reason_error_string(e);
		if (reason == NULL) {
			ERR_error_string_n(e, buf, sizeof(buf));
			reason = buf;
		}
	}
	va_start(ap, fmt);
	certs_verr(err, errlen, reason, fmt, ap);
	va_end(ap);
	ERR_clear_error();
}

char *
certs_file_read(const char *path, size_t max, struct stat *stp, size_t *lenp,
    char *err, size_t errlen)
{
	struct stat	 st;
	char		*buf = NULL;
	size_t		 len = 0, cap;
	ssize_t		 r;
	int		 fd;

	/* O_NONBLOCK: a FIFO in place of the file must not hang open(2). */
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)) ==
	    -1) {
		certs_err(err, errlen, "%s: %s", path, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) == -1) {
		certs_err(err, errlen, "%s: %s", path, strerror(errno));
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		certs_err(err, errlen, "%s: not a regular file", path);
		goto fail;
	}
	if ((uintmax_t)st.st_size > max) {
		certs_err(err, errlen, "%s: larger than %zu bytes", path, max);
		goto fail;
	}
	/* One byte more than allowed, to see a file that grew meanwhile. */
	cap = (size_t)st.st_size + 2;
	/* From the secure heap if the program set one up, else malloc. */
	if ((buf = OPENSSL_secure_zalloc(cap)) == NULL) {
		certs_err(err, errlen, "%s: out of memory", path);
		goto fail;
	}
	for (;;) {
		r = read(fd, buf + len, cap - 1 - len);
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1) {
			certs_err(err, errlen, "%s: %s", path, strerror(errno));
			goto fail;
		}
		if (r == 0)
			break;
		len += (size_t)r;
		if (len > max || len == cap - 1) {
			certs_err(err, errlen, "%s: changed while being read",
			    path);
			goto fail;
		}
	}
	buf[len] = '\0';
	(void)close(fd);
	if (stp != NULL)
		*stp = st;
	*lenp = len;
	return buf;
 fail:
	if (buf != NULL)
		OPENSSL_secure_clear_free(buf, cap);
	(void)close(fd);
	return NULL;
}

void
certs_file_free(char *buf, size_t len)
{
	/* The allocation is at least len + 2 bytes: wipe the NUL too. */
	if (buf != NULL)
		OPENSSL_secure_clear_free(buf, len + 1);
}

static int
certs_write_all(int fd, const void *buf, size_t len)
{
	const char	*p = buf;
	ssize_t		 r;

	while (len > 0) {
		r = write(fd, p, len);
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1)
			return -1;
		p += r;
		len -= (size_t)r;
	}
	return 0;
}

int
certs_file_write_tmp(const char *prefix, mode_t mode, const void *buf,
    size_t len, char *tmp, size_t tmplen, char *err, size_t errlen)
{
	int	fd, n, saved;

	n = snprintf(tmp, tmplen, "%s%s", prefix, CERTS_TMP_SUFFIX);
	if (n < 0 || (size_t)n >= tmplen) {
		certs_err(err, errlen, "%s: path too long", prefix);
		return -1;
	}
	/* mkostemp: O_CREAT|O_EXCL, mode 0600 whatever the umask. */
	if ((fd = mkostemp(tmp, O_CLOEXEC)) == -1) {
		certs_err(err, errlen, "%s: cannot create: %s", tmp,
		    strerror(errno));
		return -1;
	}
	if (fchmod(fd, mode) == -1 || certs_write_all(fd, buf, len) == -1 ||
	    fsync(fd) == -1) {
		saved = errno;
		(void)close(fd);
		(void)unlink(tmp);
		certs_err(err, errlen, "%s: %s", tmp, strerror(saved));
		return -1;
	}
	if (close(fd) == -1) {
		saved = errno;
		(void)unlink(tmp);
		certs_err(err, errlen, "%s: %s", tmp, strerror(saved));
		return -1;
	}
	return 0;
}

int
certs_dir_sync(const char *dir, char *err, size_t errlen)
{
	int	fd, rc = 0;

	if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1) {
		certs_err(err, errlen, "%s: %s", dir, strerror(errno));
		return -1;
	}
	/* Some file systems cannot fsync a directory; that is no error. */
	if (fsync(fd) == -1 && errno != EINVAL && errno != EROFS) {
		certs_err(err, errlen, "%s: fsync: %s", dir, strerror(errno));
		rc = -1;
	}
	(void)close(fd);
	return rc;
}

int
certs_asn1_time(const ASN1_TIME *t, time_t *out)
{
	struct tm	tm;

	memset(&tm, 0, sizeof(tm));
	if (ASN1_TIME_to_tm(t, &tm) != 1)
		return -1;
	*out = timegm(&tm);
	return 0;
}

int
certs_x509_serial(X509 *x)
{
	BIGNUM		*bn = NULL;
	ASN1_INTEGER	*ai = NULL;
	int		 i, rc = -1;

	if ((bn = BN_new()) == NULL)
		goto out;
	/* Zero is not a positive serial; 8 zeros in a row is a broken RNG. */
	for (i = 0; i < CERTS_SERIAL_TRIES; i++) {
		if (BN_rand(bn, CERTS_SERIAL_BITS, BN_RAND_TOP_ANY,
		    BN_RAND_BOTTOM_ANY) != 1)
			goto out;
		if (!BN_is_zero(bn))
			break;
	}
	if (BN_is_zero(bn))
		goto out;
	if ((ai = BN_to_ASN1_INTEGER(bn, NULL)) == NULL)
		goto out;
	if (X509_set_serialNumber(x, ai) != 1)
		goto out;
	rc = 0;
 out:
	ASN1_INTEGER_free(ai);
	BN_free(bn);
	return rc;
}

int
certs_x509_validity(X509 *x, time_t now, time_t not_after)
{
	if (X509_time_adj_ex(X509_getm_notBefore(x), 0, -CERTS_BACKDATE_SECS,
	    &now) == NULL)
		return -1;
	if (ASN1_TIME_set(X509_getm_notAfter(x), not_after) == NULL)
		return -1;
	return 0;
}

X509_EXTENSION *
certs_ext_basic(int ca, int pathlen)
{
	BASIC_CONSTRAINTS	*bc;
	X509_EXTENSION		*ext = NULL;

	if ((bc = BASIC_CONSTRAINTS_new()) == NULL)
		return NULL;
	bc->ca = ca ? 0xff : 0;
	if (ca && pathlen >= 0) {
		if ((bc->pathlen = ASN1_INTEGER_new()) == NULL ||
		    ASN1_INTEGER_set(bc->pathlen, pathlen) != 1)
			goto out;
	}
	ext = X509V3_EXT_i2d(NID_basic_constraints, 1, bc);
 out:
	BASIC_CONSTRAINTS_free(bc);
	return ext;
}

X509_EXTENSION *
certs_ext_key_usage(const int *bits, size_t n)
{
	ASN1_BIT_STRING	*ku;
	X509_EXTENSION	*ext = NULL;
	size_t		 i;

	if ((ku = ASN1_BIT_STRING_new()) == NULL)
		return NULL;
	for (i = 0; i < n; i++)
		if (ASN1_BIT_STRING_set_bit(ku, bits[i], 1) != 1)
			goto out;
	ext = X509V3_EXT_i2d(NID_key_usage, 1, ku);
 out:
	ASN1_BIT_STRING_free(ku);
	return ext;
}

X509_EXTENSION *
certs_ext_server_auth(void)
{
	EXTENDED_KEY_USAGE	*eku;
	ASN1_OBJECT		*obj;
	X509_EXTENSION		*ext = NULL;

	if ((eku = sk_ASN1_OBJECT_new_null()) == NULL)
		return NULL;
	if ((obj = OBJ_nid2obj(NID_server_auth)) == NULL ||
	    sk_ASN1_OBJECT_push(eku, obj) <= 0)
		goto out;
	ext = X509V3_EXT_i2d(NID_ext_key_usage, 0, eku);
 out:
	/* OBJ_nid2obj's objects are static: nothing to free in the stack. */
	sk_ASN1_OBJECT_free(eku);
	return ext;
}

ASN1_OCTET_STRING *
certs_key_id(EVP_PKEY *pkey)
{
	X509_PUBKEY		*xpk = NULL;
	ASN1_OCTET_STRING	*id = NULL;
	const unsigned char	*bits;
	unsigned char		 md[EVP_MAX_MD_SIZE];
	unsigned int		 mdlen;
	int			 bitslen;

	if (X509_PUBKEY_set(&xpk, pkey) != 1)
		goto fail;
	if (X509_PUBKEY_get0_param(NULL, &bits, &bitslen, NULL, xpk) != 1)
		goto fail;
	if (EVP_Digest(bits, (size_t)bitslen, md, &mdlen, EVP_sha1(),
	    NULL) != 1)
		goto fail;
	if ((id = ASN1_OCTET_STRING_new()) == NULL ||
	    ASN1_OCTET_STRING_set(id, md, (int)mdlen) != 1)
		goto fail;
	X509_PUBKEY_free(xpk);
	return id;
 fail:
	ASN1_OCTET_STRING_free(id);
	X509_PUBKEY_free(xpk);
	return NULL;
}

X509_EXTENSION *
certs_ext_ski(const ASN1_OCTET_STRING *ski)
{
	/* The i2d of an OCTET STRING extension only reads it. */
	return X509V3_EXT_i2d(NID_subject_key_identifier, 0,
	    (ASN1_OCTET_STRING *)ski);
}

X509_EXTENSION *
certs_ext_aki(const ASN1_OCTET_STRING *ski)
{
	AUTHORITY_KEYID	*akid;
	X509_EXTENSION	*ext = NULL;

	if ((akid = AUTHORITY_KEYID_new()) == NULL)
		return NULL;
	if ((akid->keyid = ASN1_OCTET_STRING_dup(ski)) == NULL)
		goto out;
	ext = X509V3_EXT_i2d(NID_authority_key_identifier, 0, akid);
 out:
	AUTHORITY_KEYID_free(akid);
	return ext;
}

int
certs_x509_add_ext(X509 *x, X509_EXTENSION *ext)
{
	int	ok;

	if (ext == NULL)
		return -1;
	ok = X509_add_ext(x, ext, -1);
	X509_EXTENSION_free(ext);
	return ok == 1 ? 0 : -1;
}
