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
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "certs/certs_int.h"
#include "certs/ssldl.h"

#define BUNDLE_MODE		0644
#define BUNDLE_KEY_MARK		"PRIVATE KEY"	/* in every PEM key label */
#define BUNDLE_PEM_BEGIN	"-----BEGIN "
#define BUNDLE_MAX_CERTS	100000	/* certificates in one input file */
/*
 * The attribute by which Java's PKCS12 key store tells a trusted
 * certificate entry (ORACLE_TrustedKeyUsage), and the usage it is
 * trusted for: any extended key usage.  A certificate bag without it is
 * not read as a trust anchor.
 */
#define BUNDLE_JAVA_TRUSTED	"2.16.840.1.113894.746875.1.1"
#define BUNDLE_ANY_EKU		"2.5.29.37.0"

/* One certificate of a bundle being built, and where it came from. */
struct bundle_ent {
	X509		*x;
	size_t		 pos;	/* its place in the bundle */
	unsigned char	 sha1[SHA_DIGEST_LENGTH]; /* X509_digest's, cached */
};

static int	bundle_count(const char *buf, size_t len, const char *needle);
static int	bundle_collect(STACK_OF(X509) *sk, const char *what,
		    const char *buf, size_t len, char *err, size_t errlen);
static int	bundle_collect_file(STACK_OF(X509) *sk, const char *file,
		    char *err, size_t errlen);
static int	bundle_ent_cmp(const void *a, const void *b);
static int	bundle_dedupe(STACK_OF(X509) *sk);
static char	*bundle_pem(const STACK_OF(X509) *sk, const char *what,
		    size_t *outlen, char *err, size_t errlen);
static unsigned char *bundle_p12(const STACK_OF(X509) *sk, size_t *len,
		    char *err, size_t errlen);
static int	bundle_publish(const char *path, const void *data, size_t len,
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
 * Appends every certificate of buf (named what, for errors) to sk, parsed
 * (so that what is written later is re-encoded, never the input's bytes).
 * Returns their number (at least 1), or -1 with err set and sk as it was.
 */
static int
bundle_collect(STACK_OF(X509) *sk, const char *what, const char *buf,
    size_t len, char *err, size_t errlen)
{
	BIO		*in = NULL;
	X509		*x;
	unsigned long	 e;
	int		 blocks, n = 0, had = sk_X509_num(sk), rc = -1;

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
		if (sk_X509_push(sk, x) == 0) {
			X509_free(x);
			certs_err(err, errlen, "%s: out of memory", what);
			goto out;
		}
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
	if (rc == -1)
		while (sk_X509_num(sk) > had)
			X509_free(sk_X509_pop(sk));
	BIO_free(in);
	return rc;
}

/* bundle_collect() on the contents of file. */
static int
bundle_collect_file(STACK_OF(X509) *sk, const char *file, char *err,
    size_t errlen)
{
	char	*buf;
	size_t	 len = 0;
	int	 rc;

	if ((buf = certs_file_read(file, CERTS_BUNDLE_FILE_MAX, NULL, &len,
	    err, errlen)) == NULL)
		return -1;
	rc = bundle_collect(sk, file, buf, len, err, errlen);
	certs_file_free(buf, len);
	return rc;
}

/* Orders certificates by digest, then by place in the bundle. */
static int
bundle_ent_cmp(const void *a, const void *b)
{
	const struct bundle_ent	*ea = a, *eb = b;
	int			 c;

	if ((c = memcmp(ea->sha1, eb->sha1, sizeof(ea->sha1))) != 0)
		return c;
	return ea->pos < eb->pos ? -1 : ea->pos > eb->pos;
}

/*
 * Removes from sk every certificate equal to one before it (the same
 * certificate named twice, a private bundle that repeats the system's
 * roots), keeping the order of the rest.  Sorting a copy keeps it
 * O(n log n) for the largest bundles.  0, or -1 (memory) with sk as it
 * was.
 */
static int
bundle_dedupe(STACK_OF(X509) *sk)
{
	struct bundle_ent	*ent;
	bool			*dup;
	size_t			 n = (size_t)sk_X509_num(sk), i, j;

	if (n < 2)
		return 0;
	ent = calloc(n, sizeof(*ent));
	dup = calloc(n, sizeof(*dup));
	if (ent == NULL || dup == NULL) {
		free(ent);
		free(dup);
		return -1;
	}
	/*
	 * The SHA-1 that parsing cached (X509_digest hands it out without
	 * hashing again) sorts; X509_cmp, which compares the encodings,
	 * decides.
	 */
	for (i = 0; i < n; i++) {
		ent[i].x = sk_X509_value(sk, (int)i);
		ent[i].pos = i;
		if (X509_digest(ent[i].x, EVP_sha1(), ent[i].sha1, NULL) != 1) {
			free(ent);
			free(dup);
			return -1;
		}
	}
	qsort(ent, n, sizeof(*ent), bundle_ent_cmp);
	for (i = 1; i < n; i++)
		if (memcmp(ent[i - 1].sha1, ent[i].sha1,
		    sizeof(ent[i].sha1)) == 0 &&
		    X509_cmp(ent[i - 1].x, ent[i].x) == 0)
			dup[ent[i].pos] = true;
	for (i = j = 0; i < n; i++) {
		X509	*x = sk_X509_value(sk, (int)i);

		if (dup[i])
			X509_free(x);
		else
			(void)sk_X509_set(sk, (int)j++, x);
	}
	while ((size_t)sk_X509_num(sk) > j)
		(void)sk_X509_pop(sk);
	free(ent);
	free(dup);
	return 0;
}

/*
 * The certificates of sk as one PEM text, a NUL-terminated copy (free()
 * it), checked once more for a key (built from parsed certificates only,
 * it cannot hold one; this text is handed to a sandbox).  NULL with err
 * set on failure.
 */
static char *
bundle_pem(const STACK_OF(X509) *sk, const char *what, size_t *outlen,
    char *err, size_t errlen)
{
	BIO	*out;
	char	*data, *copy = NULL;
	long	 len;
	int	 i;

	if ((out = BIO_new(BIO_s_mem())) == NULL) {
		certs_err_ssl(err, errlen, "cannot build %s", what);
		return NULL;
	}
	for (i = 0; i < sk_X509_num(sk); i++)
		if (PEM_write_bio_X509(out, sk_X509_value(sk, i)) != 1) {
			certs_err_ssl(err, errlen, "%s: cannot re-encode "
			    "certificate %d", what, i + 1);
			goto out;
		}
	if ((len = BIO_get_mem_data(out, &data)) <= 0) {
		certs_err_ssl(err, errlen, "cannot build %s", what);
		goto out;
	}
	if (memmem(data, (size_t)len, BUNDLE_KEY_MARK,
	    strlen(BUNDLE_KEY_MARK)) != NULL) {
		certs_err(err, errlen, "%s: internal error: the bundle would "
		    "contain a private key; refused", what);
		goto out;
	}
	if ((copy = malloc((size_t)len + 1)) == NULL) {
		certs_err(err, errlen, "out of memory");
		goto out;
	}
	memcpy(copy, data, (size_t)len);
	copy[len] = '\0';
	*outlen = (size_t)len;
 out:
	BIO_free(out);
	return copy;
}

char *
certs_trust_pem(const struct certs_ca *ca, char *const *extra_ca_files,
    size_t *len, char *err, size_t errlen)
{
	STACK_OF(X509)	*sk;
	char		*text = NULL;
	size_t		 i;

	if ((sk = sk_X509_new_null()) == NULL) {
		certs_err(err, errlen, "out of memory");
		return NULL;
	}
	if (X509_up_ref(certs_ca_cert(ca)) != 1 ||
	    sk_X509_push(sk, certs_ca_cert(ca)) == 0) {
		certs_err(err, errlen, "out of memory");
		goto out;
	}
	for (i = 0; extra_ca_files != NULL && extra_ca_files[i] != NULL; i++)
		if (bundle_collect_file(sk, extra_ca_files[i], err,
		    errlen) == -1)
			goto out;
	text = bundle_pem(sk, "trust certificates", len, err, errlen);
 out:
	sk_X509_pop_free(sk, X509_free);
	return text;
}

char *
certs_bundle_from_pem(const char *pem, size_t pemlen,
    const char *system_bundle, struct certs_extra *extra, size_t nextra,
    size_t *len, unsigned char **store, size_t *storelen, char *err,
    size_t errlen)
{
	STACK_OF(X509)	*sk;
	char		*text = NULL;
	size_t		 i;

	if (system_bundle == NULL)
		system_bundle = CERTS_SYSTEM_BUNDLE;
	if ((sk = sk_X509_new_null()) == NULL) {
		certs_err(err, errlen, "out of memory");
		return NULL;
	}
	if (bundle_collect(sk, "moatd's trust certificates", pem, pemlen,
	    err, errlen) == -1 || bundle_collect_file(sk, system_bundle, err,
	    errlen) == -1)
		goto out;
	/* A file the sandbox's user named that is no bundle stays out. */
	for (i = 0; i < nextra; i++) {
		extra[i].why[0] = '\0';
		(void)bundle_collect(sk, extra[i].name, extra[i].pem,
		    extra[i].len, extra[i].why, sizeof(extra[i].why));
	}
	if (bundle_dedupe(sk) == -1) {
		certs_err(err, errlen, "out of memory");
		goto out;
	}
	text = bundle_pem(sk, "the sandbox's trust bundle", len, err, errlen);
	/* The store from the same certificates: parsing is what costs. */
	if (text != NULL && store != NULL &&
	    (*store = bundle_p12(sk, storelen, err, errlen)) == NULL) {
		free(text);
		text = NULL;
	}
 out:
	sk_X509_pop_free(sk, X509_free);
	return text;
}

char *
certs_bundle_from_files(char *const *files, const char *system_bundle,
    size_t *len, char *err, size_t errlen)
{
	STACK_OF(X509)	*sk;
	char		*text = NULL;
	size_t		 i;

	if (files == NULL || files[0] == NULL) {
		certs_err(err, errlen, "no CA certificate given");
		return NULL;
	}
	if (system_bundle == NULL)
		system_bundle = CERTS_SYSTEM_BUNDLE;
	if ((sk = sk_X509_new_null()) == NULL) {
		certs_err(err, errlen, "out of memory");
		return NULL;
	}
	for (i = 0; files[i] != NULL; i++)
		if (bundle_collect_file(sk, files[i], err, errlen) == -1)
			goto out;
	if (bundle_collect_file(sk, system_bundle, err, errlen) == -1)
		goto out;
	/* Each certificate once, as moatd's (certs_bundle_from_pem()). */
	if (bundle_dedupe(sk) == -1) {
		certs_err(err, errlen, "out of memory");
		goto out;
	}
	text = bundle_pem(sk, "the trust bundle", len, err, errlen);
 out:
	sk_X509_pop_free(sk, X509_free);
	return text;
}

/*
 * One certificate bag of a trust store: x, its alias (friendlyName) and
 * the attribute that makes Java trust it.  NULL on failure.
 */
static PKCS12_SAFEBAG *
bundle_trusted_bag(X509 *x, int n, ASN1_OBJECT *any_eku)
{
	PKCS12_SAFEBAG	*bag;
	char		 alias[32];

	if ((bag = PKCS12_SAFEBAG_create_cert(x)) == NULL)
		return NULL;
	snprintf(alias, sizeof(alias), "moat-%d", n);
	if (PKCS12_add_friendlyname_asc(bag, alias, -1) != 1 ||
	    PKCS12_add1_attr_by_txt(bag, BUNDLE_JAVA_TRUSTED, V_ASN1_OBJECT,
	    (const unsigned char *)any_eku, -1) != 1) {
		PKCS12_SAFEBAG_free(bag);
		return NULL;
	}
	return bag;
}

/*
 * The certificates of sk as a PKCS12 trust store (certs_trust_store()):
 * DER bytes (free() them), or NULL with err set.
 */
static unsigned char *
bundle_p12(const STACK_OF(X509) *sk, size_t *len, char *err, size_t errlen)
{
	STACK_OF(PKCS12_SAFEBAG) *bags = NULL;
	STACK_OF(PKCS7)		*safes = NULL;
	PKCS12_SAFEBAG		*bag;
	PKCS12			*p12 = NULL;
	PKCS7			*p7;
	ASN1_OBJECT		*any_eku = NULL;
	unsigned char		*der = NULL, *p;
	int			 i, n;

	if ((any_eku = OBJ_txt2obj(BUNDLE_ANY_EKU, 1)) == NULL ||
	    (bags = sk_PKCS12_SAFEBAG_new_null()) == NULL ||
	    (safes = sk_PKCS7_new_null()) == NULL) {
		certs_err_ssl(err, errlen, "cannot build the trust store");
		goto out;
	}
	for (i = 0; i < sk_X509_num(sk); i++) {
		if ((bag = bundle_trusted_bag(sk_X509_value(sk, i), i,
		    any_eku)) == NULL || sk_PKCS12_SAFEBAG_push(bags,
		    bag) == 0) {
			PKCS12_SAFEBAG_free(bag);
			certs_err_ssl(err, errlen, "cannot build the trust "
			    "store (certificate %d)", i + 1);
			goto out;
		}
	}
	/*
	 * Certificates only, in the clear, with no MAC: nothing in it is
	 * secret, and so it opens with any password or none (Java checks a
	 * MAC only when there is one; javax.net.ssl.trustStorePassword may
	 * be unset or "changeit").
	 */
	if ((p7 = PKCS12_pack_p7data(bags)) == NULL ||
	    sk_PKCS7_push(safes, p7) == 0) {
		PKCS7_free(p7);
		certs_err_ssl(err, errlen, "cannot build the trust store");
		goto out;
	}
	if ((p12 = PKCS12_add_safes(safes, 0)) == NULL ||
	    (n = i2d_PKCS12(p12, NULL)) <= 0) {
		certs_err_ssl(err, errlen, "cannot encode the trust store");
		goto out;
	}
	if ((der = malloc((size_t)n)) == NULL) {
		certs_err(err, errlen, "out of memory");
		goto out;
	}
	p = der;
	if (i2d_PKCS12(p12, &p) != n) {
		certs_err_ssl(err, errlen, "cannot encode the trust store");
		free(der);
		der = NULL;
		goto out;
	}
	*len = (size_t)n;
 out:
	PKCS12_free(p12);
	sk_PKCS7_pop_free(safes, PKCS7_free);
	sk_PKCS12_SAFEBAG_pop_free(bags, PKCS12_SAFEBAG_free);
	ASN1_OBJECT_free(any_eku);
	ERR_clear_error();
	return der;
}

unsigned char *
certs_trust_store(const char *pem, size_t pemlen, size_t *len, char *err,
    size_t errlen)
{
	STACK_OF(X509)	*sk;
	unsigned char	*der = NULL;

	if ((sk = sk_X509_new_null()) == NULL) {
		certs_err(err, errlen, "out of memory");
		return NULL;
	}
	if (bundle_collect(sk, "the trust bundle", pem, pemlen, err,
	    errlen) != -1)
		der = bundle_p12(sk, len, err, errlen);
	sk_X509_pop_free(sk, X509_free);
	return der;
}

/*
 * Writes data to a temporary file beside path and renames it over path.
 * Once the rename is done the bundle is in place: syncing the directory
 * afterwards is only for durability, and its failure is not reported.
 */
static int
bundle_publish(const char *path, const void *data, size_t len, char *err,
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
certs_publish(const char *path, const void *data, size_t len, char *err,
    size_t errlen)
{
	if (path == NULL || *path == '\0') {
		certs_err(err, errlen, "no path given");
		return -1;
	}
	return bundle_publish(path, data, len, err, errlen);
}

int
certs_write_bundle(const char *path, const struct certs_ca *ca,
    char *const *extra_ca_files, const char *system_bundle, char *err,
    size_t errlen)
{
	STACK_OF(X509)	*sk = NULL;
	char		*data = NULL;
	size_t		 len = 0, i;
	int		 rc = -1;

	if (path == NULL || *path == '\0' || ca == NULL) {
		certs_err(err, errlen, "no bundle path or CA given");
		return -1;
	}
	if (system_bundle == NULL)
		system_bundle = CERTS_SYSTEM_BUNDLE;
	if ((sk = sk_X509_new_null()) == NULL) {
		certs_err(err, errlen, "out of memory");
		return -1;
	}
	/* moat's CA first: it is the one a reader of the file looks for. */
	if (X509_up_ref(certs_ca_cert(ca)) != 1 ||
	    sk_X509_push(sk, certs_ca_cert(ca)) == 0) {
		certs_err(err, errlen, "out of memory");
		goto out;
	}
	if (bundle_collect_file(sk, system_bundle, err, errlen) == -1)
		goto out;
	for (i = 0; extra_ca_files != NULL && extra_ca_files[i] != NULL; i++)
		if (bundle_collect_file(sk, extra_ca_files[i], err,
		    errlen) == -1)
			goto out;
	if ((data = bundle_pem(sk, path, &len, err, errlen)) == NULL)
		goto out;
	if (bundle_publish(path, data, len, err, errlen) == -1)
		goto out;
	rc = sk_X509_num(sk);
 out:
	free(data);
	sk_X509_pop_free(sk, X509_free);
	return rc;
}
