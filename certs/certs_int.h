/*
 * certs_int.h - what the files of certs/ share and nothing else sees.
 *
 * ca.c holds the CA key: it is the only file that touches it, through
 * certs_ca_sign().  certs_util.c holds error formatting, file reading and the
 * X509 pieces both the CA and the leaves are built from.
 */
#ifndef MOAT_CERTS_INT_H
#define MOAT_CERTS_INT_H

#include <sys/types.h>
#include <sys/stat.h>

#include <stdarg.h>
#include <stddef.h>
#include <time.h>

#include "certs/certs.h"
#include "certs/ssldl.h"

#define CERTS_SERIAL_BITS	128	/* random serial number size */
#define CERTS_BACKDATE_SECS	3600	/* notBefore is this far in the past */
#define CERTS_DAY_SECS		86400
#define CERTS_CN_MAX		64	/* ub-common-name, RFC 5280 */
#define CERTS_KEY_FILE_MAX	(64u * 1024)	/* largest key file read */
#define CERTS_CERT_FILE_MAX	(1024u * 1024)	/* largest CA cert file read */
#define CERTS_BUNDLE_FILE_MAX	(16u * 1024 * 1024) /* largest bundle input */

/* Formats a message into err (if errlen > 0) and clears the error queue. */
void	certs_err(char *err, size_t errlen, const char *fmt, ...)
	    __attribute__((format(printf, 3, 4)));
/*
 * The same, appending ": " and the reason of the oldest OpenSSL error of
 * this thread if there is one, then clearing the queue.
 */
void	certs_err_ssl(char *err, size_t errlen, const char *fmt, ...)
	    __attribute__((format(printf, 3, 4)));

/*
 * Reads the whole file at path into a new buffer (NUL-terminated; *len
 * excludes the NUL), refusing more than max bytes.  If st is not NULL the
 * fstat(2) of the open file goes there, for the caller's checks.  The
 * file must be a regular file (symbolic links are followed).  Returns the
 * buffer, freed with certs_file_free(buf, len), or NULL with err set
 * (naming path, with strerror for system errors).
 */
char	*certs_file_read(const char *path, size_t max, struct stat *st,
	    size_t *len, char *err, size_t errlen);
/* Wipes and frees a buffer from certs_file_read().  NULL is accepted. */
void	certs_file_free(char *buf, size_t len);

/*
 * Creates a temporary file "<prefix>.XXXXXX" (O_EXCL, close-on-exec) with
 * the given mode, and writes the len bytes of buf to it and fsyncs it.
 * tmp (of tmplen bytes) receives its name.  Returns 0, or -1 with err set
 * and nothing left behind.
 */
int	certs_file_write_tmp(const char *prefix, mode_t mode, const void *buf,
	    size_t len, char *tmp, size_t tmplen, char *err, size_t errlen);

/* fsyncs directory dir so that renames and links in it are durable. */
int	certs_dir_sync(const char *dir, char *err, size_t errlen);

/* Converts an ASN1_TIME to seconds since the epoch.  Returns 0 or -1. */
int	certs_asn1_time(const ASN1_TIME *t, time_t *out);

/* Gives x a new random positive CERTS_SERIAL_BITS-bit serial.  0 or -1. */
int	certs_x509_serial(X509 *x);
/* Sets x's validity to [now - backdate, not_after].  0 or -1. */
int	certs_x509_validity(X509 *x, time_t now, time_t not_after);

/*
 * Extension builders: each returns a new X509_EXTENSION (free with
 * X509_EXTENSION_free) or NULL.
 */
X509_EXTENSION	*certs_ext_basic(int ca, int pathlen);	/* critical */
X509_EXTENSION	*certs_ext_key_usage(const int *bits, size_t n); /* critical */
X509_EXTENSION	*certs_ext_server_auth(void);
/* subjectKeyIdentifier with the given key identifier. */
X509_EXTENSION	*certs_ext_ski(const ASN1_OCTET_STRING *ski);
/* authorityKeyIdentifier with keyid = ski (a copy is taken). */
X509_EXTENSION	*certs_ext_aki(const ASN1_OCTET_STRING *ski);

/*
 * Returns the key identifier of pkey: the SHA-1 of its subjectPublicKey
 * BIT STRING (RFC 5280 4.2.1.2, method 1), freed with
 * ASN1_OCTET_STRING_free(), or NULL.
 */
ASN1_OCTET_STRING	*certs_key_id(EVP_PKEY *pkey);

/* Appends a copy of ext to x and frees ext; NULL ext fails.  0 or -1. */
int	certs_x509_add_ext(X509 *x, X509_EXTENSION *ext);

/* ------------------------------------------------------------------ */
/* ca.c: the CA and its key                                             */
/* ------------------------------------------------------------------ */

/* Takes one more reference to ca.  Returns ca. */
struct certs_ca	*certs_ca_ref(struct certs_ca *ca);
/* The CA's notAfter, in seconds since the epoch. */
time_t	certs_ca_not_after(const struct certs_ca *ca);
/*
 * Signs x with the CA key (SHA-256 for EC and RSA keys).  x's issuer must
 * already be the CA's subject.  Returns 0, or -1 with err set.
 * Thread-safe.
 */
int	certs_ca_sign(const struct certs_ca *ca, X509 *x, char *err,
	    size_t errlen);

/* ------------------------------------------------------------------ */
/* minter.c                                                             */
/* ------------------------------------------------------------------ */

/*
 * Replaces the wall clock m reads (time(2)) with now_fn, for tests that
 * need a leaf to age.  Call before m is shared between threads.
 */
void	certs_minter_set_clock(struct certs_minter *m, time_t (*now_fn)(void));

#endif
