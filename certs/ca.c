/*
 * ca.c - moat's certificate authority: creating it, loading it, signing
 * with it.
 *
 * This is the only file that touches the CA private key.  It is
 * generated, written once to DIR/ca.key by certs_ca_init(), read back by
 * certs_ca_load(), used by certs_ca_sign() and freed by the last
 * certs_ca_free().  Nothing hands the key out, so this file could become
 * the body of a separate key-holding process (as relayd's ca.c is) with
 * certs_ca_sign() turned into a message.
 *
 * What it is not: the leaf minter (minter.c) or the bundle writer
 * (bundle.c); both see the CA only through the functions below.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "certs/certs_int.h"
#include "certs/ssldl.h"

#define CA_CURVE		"P-256"	/* the CA key: ECDSA on this curve */
#define CA_VALID_YEARS		3	/* a new CA is valid this long */
#define CA_ORG			"moat"
#define CA_CN_PREFIX		"moat sandbox CA "
#define CA_CN_ID_BYTES		4	/* key id bytes shown in the CN */
#define CA_KEY_MODE		0600
#define CA_CERT_MODE		0644
#define CA_DIR_MODE		0700
#define CA_KEY_TMP		".ca.key"	/* temporary file prefixes */
#define CA_CERT_TMP		".ca.crt"

struct certs_ca {
	X509		*cert;
	EVP_PKEY	*key;		/* the CA key; never leaves this file */
	time_t		 not_after;	/* the certificate's, epoch seconds */
	atomic_uint	 refs;
};

static int	ca_dir_prepare(const char *dir, bool *made, char *err,
		    size_t errlen);
static int	ca_path(char *buf, size_t len, const char *dir,
		    const char *name, char *err, size_t errlen);
static int	ca_refuse_existing(const char *path, char *err, size_t errlen);
static X509	*ca_build(EVP_PKEY *key, time_t now, char *err, size_t errlen);
static int	ca_name(X509 *x, const ASN1_OCTET_STRING *id);
static char	*ca_pem_key(EVP_PKEY *key, size_t *len);
static char	*ca_pem_cert(X509 *x, size_t *len);
static int	ca_publish(const char *tmp, const char *path);
static int	ca_no_passphrase(char *buf, int size, int rwflag, void *arg);
static EVP_PKEY	*ca_load_key(const char *path, char *err, size_t errlen);
static X509	*ca_load_cert(const char *path, char *err, size_t errlen);
static int	ca_check_cert(X509 *x, const char *path, time_t *not_after,
		    char *err, size_t errlen);
static void	ca_time_str(time_t t, char *buf, size_t len);

/* ------------------------------------------------------------------ */
/* certs_ca_init                                                        */
/* ------------------------------------------------------------------ */

/*
 * Makes sure dir exists as a private directory.  A directory writable by
 * group or others, or owned by someone else, would let another user
 * replace the key after we wrote it: refused.
 */
static int
ca_dir_prepare(const char *dir, bool *made, char *err, size_t errlen)
{
	struct stat	st;

	*made = false;
	if (mkdir(dir, CA_DIR_MODE) == 0) {
		*made = true;
		/* mkdir(2) honours the umask; the mode must be exact. */
		if (chmod(dir, CA_DIR_MODE) == -1) {
			certs_err(err, errlen, "%s: %s", dir, strerror(errno));
			return -1;
		}
		return 0;
	}
	if (errno != EEXIST) {
		certs_err(err, errlen, "%s: cannot create directory: %s", dir,
		    strerror(errno));
		return -1;
	}
	if (stat(dir, &st) == -1) {
		certs_err(err, errlen, "%s: %s", dir, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		certs_err(err, errlen, "%s: exists and is not a directory",
		    dir);
		return -1;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		certs_err(err, errlen, "%s: writable by group or others (mode "
		    "%04o); use a private directory", dir,
		    (unsigned)(st.st_mode & 07777));
		return -1;
	}
	if (st.st_uid != geteuid() && st.st_uid != 0) {
		certs_err(err, errlen, "%s: owned by uid %u, not by uid %u or "
		    "root", dir, (unsigned)st.st_uid, (unsigned)geteuid());
		return -1;
	}
	return 0;
}

static int
ca_path(char *buf, size_t len, const char *dir, const char *name, char *err,
    size_t errlen)
{
	int	n;

	n = snprintf(buf, len, "%s/%s", dir, name);
	if (n < 0 || (size_t)n >= len) {
		certs_err(err, errlen, "%s: path too long", dir);
		return -1;
	}
	return 0;
}

/* A friendly early error; link(2) below is what actually guarantees it. */
static int
ca_refuse_existing(const char *path, char *err, size_t errlen)
{
	struct stat	st;

	if (lstat(path, &st) == 0) {
		certs_err(err, errlen, "%s: already exists; refusing to "
		    "overwrite it", path);
		return -1;
	}
	if (errno != ENOENT) {
		certs_err(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* Sets subject and issuer: O=moat, CN=moat sandbox CA <first key id bytes>. */
static int
ca_name(X509 *x, const ASN1_OCTET_STRING *id)
{
	X509_NAME		*name;
	const unsigned char	*p;
	char			 cn[CERTS_CN_MAX + 1];
	int			 rc = -1;

	if (ASN1_STRING_length(id) < CA_CN_ID_BYTES)
		return -1;
	p = ASN1_STRING_get0_data(id);
	(void)snprintf(cn, sizeof(cn), "%s%02x%02x%02x%02x", CA_CN_PREFIX,
	    p[0], p[1], p[2], p[3]);
	if ((name = X509_NAME_new()) == NULL)
		return -1;
	if (X509_NAME_add_entry_by_NID(name, NID_organizationName,
	    MBSTRING_UTF8, (const unsigned char *)CA_ORG, -1, -1, 0) != 1 ||
	    X509_NAME_add_entry_by_NID(name, NID_commonName, MBSTRING_UTF8,
	    (const unsigned char *)cn, -1, -1, 0) != 1)
		goto out;
	if (X509_set_subject_name(x, name) != 1 ||
	    X509_set_issuer_name(x, name) != 1)
		goto out;
	rc = 0;
 out:
	X509_NAME_free(name);
	return rc;
}

/* Builds and self-signs the CA certificate for key. */
static X509 *
ca_build(EVP_PKEY *key, time_t now, char *err, size_t errlen)
{
	static const int	 ku[] = {
		5,	/* keyCertSign */
		6	/* cRLSign */
	};
	X509			*x = NULL;
	ASN1_OCTET_STRING	*id = NULL;
	struct tm		 tm;
	time_t			 end;

	/* Three calendar years on (29 February becomes 1 March). */
	if (gmtime_r(&now, &tm) == NULL) {
		certs_err(err, errlen, "cannot convert the current time");
		return NULL;
	}
	tm.tm_year += CA_VALID_YEARS;
	end = timegm(&tm);

	if ((x = X509_new()) == NULL || (id = certs_key_id(key)) == NULL)
		goto fail;
	if (X509_set_version(x, X509_VERSION_3) != 1 ||
	    certs_x509_serial(x) == -1 ||
	    certs_x509_validity(x, now, end) == -1 ||
	    X509_set_pubkey(x, key) != 1 ||
	    ca_name(x, id) == -1)
		goto fail;
	if (certs_x509_add_ext(x, certs_ext_basic(1, 0)) == -1 ||
	    certs_x509_add_ext(x, certs_ext_key_usage(ku,
	    sizeof(ku) / sizeof(ku[0]))) == -1 ||
	    certs_x509_add_ext(x, certs_ext_ski(id)) == -1 ||
	    certs_x509_add_ext(x, certs_ext_aki(id)) == -1)
		goto fail;
	if (X509_sign(x, key, EVP_sha256()) <= 0)
		goto fail;
	ASN1_OCTET_STRING_free(id);
	return x;
 fail:
	certs_err_ssl(err, errlen, "cannot build the CA certificate");
	ASN1_OCTET_STRING_free(id);
	X509_free(x);
	return NULL;
}

/*
 * PEM (PKCS#8, unencrypted) of key in a buffer that certs_file_free()
 * wipes.  The secure-memory BIO wipes its own copy when freed.
 */
static char *
ca_pem_key(EVP_PKEY *key, size_t *len)
{
	BIO	*bio;
	char	*data, *buf = NULL;
	long	 n;

	if ((bio = BIO_new(BIO_s_secmem())) == NULL)
		return NULL;
	if (PEM_write_bio_PKCS8PrivateKey(bio, key, NULL, NULL, 0, NULL,
	    NULL) != 1)
		goto out;
	if ((n = BIO_get_mem_data(bio, &data)) <= 0)
		goto out;
	if ((buf = OPENSSL_secure_malloc((size_t)n + 2)) == NULL)
		goto out;
	memcpy(buf, data, (size_t)n);
	buf[n] = buf[n + 1] = '\0';
	*len = (size_t)n;
 out:
	BIO_free(bio);
	return buf;
}

static char *
ca_pem_cert(X509 *x, size_t *len)
{
	BIO	*bio;
	char	*data, *buf = NULL;
	long	 n;

	if ((bio = BIO_new(BIO_s_mem())) == NULL)
		return NULL;
	if (PEM_write_bio_X509(bio, x) != 1)
		goto out;
	if ((n = BIO_get_mem_data(bio, &data)) <= 0)
		goto out;
	if ((buf = malloc((size_t)n + 1)) == NULL)
		goto out;
	memcpy(buf, data, (size_t)n);
	buf[n] = '\0';
	*len = (size_t)n;
 out:
	BIO_free(bio);
	return buf;
}

/*
 * Gives the complete temporary file tmp its final name path, failing with
 * EEXIST if path exists (never replacing it).  link(2) where the file
 * system has hard links, else renameat2(RENAME_NOREPLACE).  Returns 0, or
 * -1 with errno set.
 */
static int
ca_publish(const char *tmp, const char *path)
{
	if (link(tmp, path) == 0)
		return 0;
	if (errno != EPERM && errno != EOPNOTSUPP && errno != ENOSYS)
		return -1;
	return renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE);
}

int
certs_ca_init(const char *dir, char *err, size_t errlen)
{
	char		 keypath[PATH_MAX], crtpath[PATH_MAX];
	char		 keytmp[PATH_MAX], crttmp[PATH_MAX];
	char		 keypfx[PATH_MAX], crtpfx[PATH_MAX];
	EVP_PKEY	*key = NULL;
	X509		*x = NULL;
	char		*keypem = NULL, *crtpem = NULL;
	size_t		 keylen = 0, crtlen = 0;
	bool		 made_dir = false, key_tmp = false, crt_tmp = false;
	bool		 key_done = false, crt_done = false;
	int		 rc = -1;

	if (dir == NULL || *dir == '\0') {
		certs_err(err, errlen, "no CA directory given");
		return -1;
	}
	if (ca_path(keypath, sizeof(keypath), dir, CERTS_CA_KEY_FILE, err,
	    errlen) == -1 ||
	    ca_path(crtpath, sizeof(crtpath), dir, CERTS_CA_CERT_FILE, err,
	    errlen) == -1 ||
	    ca_path(keypfx, sizeof(keypfx), dir, CA_KEY_TMP, err,
	    errlen) == -1 ||
	    ca_path(crtpfx, sizeof(crtpfx), dir, CA_CERT_TMP, err,
	    errlen) == -1)
		return -1;
	if (ca_dir_prepare(dir, &made_dir, err, errlen) == -1)
		goto out;
	if (ca_refuse_existing(keypath, err, errlen) == -1 ||
	    ca_refuse_existing(crtpath, err, errlen) == -1)
		goto out;

	if ((key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", CA_CURVE)) == NULL) {
		certs_err_ssl(err, errlen, "cannot generate the CA key");
		goto out;
	}
	if ((x = ca_build(key, time(NULL), err, errlen)) == NULL)
		goto out;
	if ((keypem = ca_pem_key(key, &keylen)) == NULL ||
	    (crtpem = ca_pem_cert(x, &crtlen)) == NULL) {
		certs_err_ssl(err, errlen, "cannot encode the CA");
		goto out;
	}

	/* Both files complete on disk before either gets its name. */
	if (certs_file_write_tmp(keypfx, CA_KEY_MODE, keypem, keylen, keytmp,
	    sizeof(keytmp), err, errlen) == -1)
		goto out;
	key_tmp = true;
	if (certs_file_write_tmp(crtpfx, CA_CERT_MODE, crtpem, crtlen, crttmp,
	    sizeof(crttmp), err, errlen) == -1)
		goto out;
	crt_tmp = true;
	if (ca_publish(keytmp, keypath) == -1) {
		certs_err(err, errlen, "%s: %s", keypath, errno == EEXIST ?
		    "already exists; refusing to overwrite it" :
		    strerror(errno));
		goto out;
	}
	key_done = true;
	if (ca_publish(crttmp, crtpath) == -1) {
		certs_err(err, errlen, "%s: %s", crtpath, errno == EEXIST ?
		    "already exists; refusing to overwrite it" :
		    strerror(errno));
		goto out;
	}
	crt_done = true;
	if (certs_dir_sync(dir, err, errlen) == -1)
		goto out;
	rc = 0;
 out:
	if (rc == -1 && crt_done)
		(void)unlink(crtpath);
	if (rc == -1 && key_done)
		(void)unlink(keypath);
	if (crt_tmp)
		(void)unlink(crttmp);
	if (key_tmp)
		(void)unlink(keytmp);
	if (rc == -1 && made_dir)
		(void)rmdir(dir);
	if (keypem != NULL)
		OPENSSL_secure_clear_free(keypem, keylen + 2);
	free(crtpem);
	X509_free(x);
	EVP_PKEY_free(key);
	return rc;
}

/* ------------------------------------------------------------------ */
/* certs_ca_load                                                        */
/* ------------------------------------------------------------------ */

/* Passphrase callback: encrypted keys are refused; note that one was. */
static int
ca_no_passphrase(char *buf, int size, int rwflag, void *arg)
{
	*(bool *)arg = true;
	return -1;
}

static EVP_PKEY *
ca_load_key(const char *path, char *err, size_t errlen)
{
	struct stat	 st;
	BIO		*bio = NULL;
	EVP_PKEY	*key = NULL;
	char		*buf;
	size_t		 len = 0;
	bool		 encrypted = false;

	if ((buf = certs_file_read(path, CERTS_KEY_FILE_MAX, &st, &len, err,
	    errlen)) == NULL)
		return NULL;
	/*
	 * The key signs certificates every sandbox trusts: a key others can
	 * read is a key others can mint with, and one others can write is a
	 * CA others chose.  As smtpd does for its secrets, refuse both.
	 */
	if (st.st_mode & (S_IRWXG | S_IRWXO)) {
		certs_err(err, errlen, "%s: key file is accessible by group or "
		    "others (mode %04o); run chmod 600 %s", path,
		    (unsigned)(st.st_mode & 07777), path);
		goto out;
	}
	if (st.st_uid != geteuid() && st.st_uid != 0) {
		certs_err(err, errlen, "%s: key file is owned by uid %u, not "
		    "by uid %u or root", path, (unsigned)st.st_uid,
		    (unsigned)geteuid());
		goto out;
	}
	/* moat run hides the key from sandboxes by its path: another name
	 * of the same file would stay readable there. */
	if (st.st_nlink > 1) {
		certs_err(err, errlen, "%s: key file has %lu hard links; moat "
		    "hides it from sandboxes by its path, so keep it to one "
		    "name", path, (unsigned long)st.st_nlink);
		goto out;
	}
	if ((bio = BIO_new_mem_buf(buf, (int)len)) == NULL) {
		certs_err_ssl(err, errlen, "%s", path);
		goto out;
	}
	key = PEM_read_bio_PrivateKey(bio, NULL, ca_no_passphrase, &encrypted);
	if (key == NULL && encrypted) {
		certs_err(err, errlen, "%s: the key is encrypted; moat needs "
		    "it unencrypted (mode 0600)", path);
		goto out;
	}
	if (key == NULL) {
		certs_err_ssl(err, errlen, "%s: not a PEM private key", path);
		goto out;
	}
	if (!EVP_PKEY_is_a(key, "EC") && !EVP_PKEY_is_a(key, "RSA")) {
		certs_err(err, errlen, "%s: %s keys are not supported (use EC "
		    "or RSA)", path, EVP_PKEY_get0_type_name(key) != NULL ?
		    EVP_PKEY_get0_type_name(key) : "such");
		EVP_PKEY_free(key);
		key = NULL;
		goto out;
	}
 out:
	BIO_free(bio);
	certs_file_free(buf, len);
	return key;
}

static X509 *
ca_load_cert(const char *path, char *err, size_t errlen)
{
	BIO	*bio = NULL;
	X509	*x = NULL;
	char	*buf;
	size_t	 len = 0;

	if ((buf = certs_file_read(path, CERTS_CERT_FILE_MAX, NULL, &len, err,
	    errlen)) == NULL)
		return NULL;
	/* The certificate is public (0644); a key in it would leak. */
	if (strstr(buf, "PRIVATE KEY") != NULL) {
		certs_err(err, errlen, "%s: contains a private key; keep the "
		    "key in its own file", path);
		goto out;
	}
	if ((bio = BIO_new_mem_buf(buf, (int)len)) == NULL ||
	    (x = PEM_read_bio_X509(bio, NULL, NULL, NULL)) == NULL)
		certs_err_ssl(err, errlen, "%s: not a PEM certificate", path);
 out:
	BIO_free(bio);
	certs_file_free(buf, len);
	return x;
}

static void
ca_time_str(time_t t, char *buf, size_t len)
{
	struct tm	tm;

	if (gmtime_r(&t, &tm) == NULL ||
	    strftime(buf, len, "%Y-%m-%d %H:%M:%S UTC", &tm) == 0)
		(void)snprintf(buf, len, "%lld", (long long)t);
}

/* Is x a CA certificate that is valid now? */
static int
ca_check_cert(X509 *x, const char *path, time_t *not_after, char *err,
    size_t errlen)
{
	BASIC_CONSTRAINTS	*bc;
	char			 when[64];
	time_t			 nb, na, now;
	uint32_t		 flags;
	int			 is_ca;

	flags = X509_get_extension_flags(x);
	if (flags & EXFLAG_INVALID) {
		certs_err(err, errlen, "%s: the certificate has invalid "
		    "extensions", path);
		return -1;
	}
	bc = X509_get_ext_d2i(x, NID_basic_constraints, NULL, NULL);
	is_ca = bc != NULL && bc->ca;
	BASIC_CONSTRAINTS_free(bc);
	if (!is_ca) {
		certs_err(err, errlen, "%s: not a CA certificate "
		    "(basicConstraints CA:TRUE missing)", path);
		return -1;
	}
	if (!(flags & EXFLAG_KUSAGE) ||
	    !(X509_get_key_usage(x) & KU_KEY_CERT_SIGN)) {
		certs_err(err, errlen, "%s: not a CA certificate (keyUsage "
		    "keyCertSign missing)", path);
		return -1;
	}
	if (certs_asn1_time(X509_get0_notBefore(x), &nb) == -1 ||
	    certs_asn1_time(X509_get0_notAfter(x), &na) == -1) {
		certs_err(err, errlen, "%s: unreadable validity dates", path);
		return -1;
	}
	now = time(NULL);
	if (now < nb) {
		ca_time_str(nb, when, sizeof(when));
		certs_err(err, errlen, "%s: not valid before %s", path, when);
		return -1;
	}
	if (now >= na) {
		ca_time_str(na, when, sizeof(when));
		certs_err(err, errlen, "%s: expired on %s", path, when);
		return -1;
	}
	*not_after = na;
	return 0;
}

struct certs_ca *
certs_ca_load(const char *cert_path, const char *key_path, char *err,
    size_t errlen)
{
	struct certs_ca	*ca = NULL;
	EVP_PKEY	*key = NULL;
	X509		*x = NULL;
	time_t		 not_after;

	if (cert_path == NULL || key_path == NULL) {
		certs_err(err, errlen, "no CA certificate or key file given");
		return NULL;
	}
	if ((key = ca_load_key(key_path, err, errlen)) == NULL)
		goto fail;
	if ((x = ca_load_cert(cert_path, err, errlen)) == NULL)
		goto fail;
	if (X509_check_private_key(x, key) != 1) {
		certs_err(err, errlen, "%s does not match %s: the key is not "
		    "the certificate's", key_path, cert_path);
		goto fail;
	}
	if (ca_check_cert(x, cert_path, &not_after, err, errlen) == -1)
		goto fail;
	if ((ca = calloc(1, sizeof(*ca))) == NULL) {
		certs_err(err, errlen, "out of memory");
		goto fail;
	}
	ca->cert = x;
	ca->key = key;
	ca->not_after = not_after;
	atomic_init(&ca->refs, 1);
	ERR_clear_error();
	return ca;
 fail:
	X509_free(x);
	EVP_PKEY_free(key);
	return NULL;
}

/* ------------------------------------------------------------------ */
/* References, accessors, signing                                       */
/* ------------------------------------------------------------------ */

struct certs_ca *
certs_ca_ref(struct certs_ca *ca)
{
	atomic_fetch_add(&ca->refs, 1);
	return ca;
}

void
certs_ca_free(struct certs_ca *ca)
{
	if (ca == NULL)
		return;
	if (atomic_fetch_sub(&ca->refs, 1) != 1)
		return;
	X509_free(ca->cert);
	ca->cert = NULL;
	/* EVP_PKEY_free clears the private key material it frees. */
	EVP_PKEY_free(ca->key);
	ca->key = NULL;
	free(ca);
}

X509 *
certs_ca_cert(const struct certs_ca *ca)
{
	return ca->cert;
}

time_t
certs_ca_not_after(const struct certs_ca *ca)
{
	return ca->not_after;
}

int
certs_ca_fingerprint(const struct certs_ca *ca, char *buf, size_t len)
{
	unsigned char	md[EVP_MAX_MD_SIZE];
	unsigned int	mdlen, i;

	if (X509_digest(ca->cert, EVP_sha256(), md, &mdlen) != 1) {
		ERR_clear_error();
		return -1;
	}
	if (len < (size_t)mdlen * 3)
		return -1;
	for (i = 0; i < mdlen; i++)
		(void)snprintf(buf + i * 3, 4, "%02X%s", md[i],
		    i + 1 < mdlen ? ":" : "");
	return 0;
}

int
certs_ca_sign(const struct certs_ca *ca, X509 *x, char *err, size_t errlen)
{
	if (X509_sign(x, ca->key, EVP_sha256()) <= 0) {
		certs_err_ssl(err, errlen, "cannot sign the certificate");
		return -1;
	}
	return 0;
}
