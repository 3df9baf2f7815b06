/*
 * test_certs.c - moat's CA, leaf minting and trust bundles (certs/).
 *
 * Everything is written under one temporary directory made in the suite's
 * init and removed in its cleanup.  Certificates are checked with
 * OpenSSL's own verifier (X509_verify_cert, X509_check_host,
 * X509_check_ip_asc), not by comparing against what certs/ meant to
 * write.  The refusals (bad key modes, mismatched keys, non-CA or expired
 * certificates, bad hosts, keys near a bundle) each check the message
 * too, since the message is what tells a user what to fix.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/pkcs12.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

#include "certs/certs.h"
#include "certs/certs_int.h"
#include "tests/unit/unit.h"

#define TC_ERR_MAX	1024	/* error buffer */
#define TC_THREADS	4	/* concurrent getters */
#define TC_ITERS	300	/* gets per thread */
#define TC_HOSTS_PER	10	/* private hosts per thread */
#define TC_DAY		86400
#define TC_SLACK	120	/* seconds of tolerance on validity checks */
#define TC_NFTW_FDS	16

/* Every test needs the suite's directory and CA: fail, not skip, without. */
#define TC_NEED()	CU_ASSERT_FATAL(tc_dir[0] != '\0' && tc_ca != NULL)

/* The suite's temporary directory and the CA most tests use. */
static char		 tc_dir[PATH_MAX];
static char		 tc_ca_dir[PATH_MAX];
static char		 tc_ca_crt[PATH_MAX];
static char		 tc_ca_key[PATH_MAX];
static struct certs_ca	*tc_ca;
static time_t		 tc_fake_now;

static int	tc_init(void);
static int	tc_cleanup(void);
static int	tc_rm(const char *path, const struct stat *st, int flag,
		    struct FTW *ftw);
static void	tc_join(char *buf, const char *dir, const char *name);
static void	tc_path(char *buf, const char *name);
static char	*tc_slurp(const char *path, size_t *len);
static int	tc_spit(const char *path, const char *data, size_t len,
		    mode_t mode);
static int	tc_count(const char *hay, const char *needle);
static mode_t	tc_mode(const char *path);
static int	tc_dir_entries(const char *dir);
static X509	*tc_read_cert(const char *path);
static int	tc_write_cert(const char *path, X509 *x);
static int	tc_write_key(const char *path, EVP_PKEY *k, const char *pass);
static X509	*tc_make_cert(EVP_PKEY *key, const char *bc, const char *ku,
		    long from, long to);
static int	tc_verify(X509 *leaf, X509 *ca);
static bool	tc_contains(const char *s, const char *needle);
static time_t	tc_clock(void);
static time_t	tc_asn1(const ASN1_TIME *t);
static void	*tc_thread(void *arg);
static int	tc_read_all(const char *path, X509 **first, X509 **last);
static int	tc_cmd(char **out, char **errs, int argc, ...);

static void	test_certs_ca_init(void);
static void	test_certs_ca_init_refuses(void);
static void	test_certs_ca_load(void);
static void	test_certs_ca_load_modes(void);
static void	test_certs_ca_load_mismatch(void);
static void	test_certs_ca_load_not_ca(void);
static void	test_certs_ca_load_bad_files(void);
static void	test_certs_leaf_dns(void);
static void	test_certs_leaf_ip(void);
static void	test_certs_leaf_long(void);
static void	test_certs_leaf_cache(void);
static void	test_certs_leaf_lru(void);
static void	test_certs_leaf_stale(void);
static void	test_certs_leaf_bad_hosts(void);
static void	test_certs_leaf_threads(void);
static void	test_certs_bundle(void);
static void	test_certs_bundle_system(void);
static void	test_certs_bundle_refuses(void);
static void	test_certs_bundle_files(void);
static void	test_certs_bundle_merge(void);
static void	test_certs_trust_store(void);
static void	test_certs_cmd(void);

/* ------------------------------------------------------------------ */
/* Helpers                                                              */
/* ------------------------------------------------------------------ */

static int
tc_rm(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		return rmdir(path) == -1 ? -1 : 0;
	return unlink(path) == -1 ? -1 : 0;
}

/*
 * Makes the directory and the CA.  Always returns 0: a suite whose init
 * fails is only a warning to CUnit's runner, so a failure here is left to
 * TC_NEED() in each test, which turns it into failed tests.
 */
static int
tc_init(void)
{
	char	err[TC_ERR_MAX];

	(void)snprintf(tc_dir, sizeof(tc_dir), "/tmp/moat-test-certs-XXXXXX");
	if (mkdtemp(tc_dir) == NULL) {
		fprintf(stderr, "mkdtemp: %s\n", strerror(errno));
		tc_dir[0] = '\0';
		return 0;
	}
	tc_path(tc_ca_dir, "ca");
	tc_join(tc_ca_crt, tc_ca_dir, "ca.crt");
	tc_join(tc_ca_key, tc_ca_dir, "ca.key");
	if (certs_ca_init(tc_ca_dir, err, sizeof(err)) == -1) {
		fprintf(stderr, "certs_ca_init: %s\n", err);
		return 0;
	}
	if ((tc_ca = certs_ca_load(tc_ca_crt, tc_ca_key, err,
	    sizeof(err))) == NULL)
		fprintf(stderr, "certs_ca_load: %s\n", err);
	return 0;
}

static int
tc_cleanup(void)
{
	certs_ca_free(tc_ca);
	tc_ca = NULL;
	if (tc_dir[0] != '\0' &&
	    nftw(tc_dir, tc_rm, TC_NFTW_FDS, FTW_DEPTH | FTW_PHYS) == -1)
		return -1;
	return 0;
}

/* buf (PATH_MAX bytes) = dir/name; the test tree never comes close. */
static void
tc_join(char *buf, const char *dir, const char *name)
{
	if (snprintf(buf, PATH_MAX, "%s/%s", dir, name) >= PATH_MAX)
		abort();
}

static void
tc_path(char *buf, const char *name)
{
	tc_join(buf, tc_dir, name);
}

static char *
tc_slurp(const char *path, size_t *lenp)
{
	FILE	*f;
	char	*buf;
	long	 len;

	if ((f = fopen(path, "rb")) == NULL)
		return NULL;
	if (fseek(f, 0, SEEK_END) == -1 || (len = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET) == -1 ||
	    (buf = malloc((size_t)len + 1)) == NULL) {
		fclose(f);
		return NULL;
	}
	if (fread(buf, 1, (size_t)len, f) != (size_t)len) {
		free(buf);
		fclose(f);
		return NULL;
	}
	buf[len] = '\0';
	fclose(f);
	if (lenp != NULL)
		*lenp = (size_t)len;
	return buf;
}

static int
tc_spit(const char *path, const char *data, size_t len, mode_t mode)
{
	int	fd;

	(void)unlink(path);
	if ((fd = open(path, O_WRONLY | O_CREAT | O_EXCL, mode)) == -1)
		return -1;
	if (write(fd, data, len) != (ssize_t)len || fchmod(fd, mode) == -1) {
		close(fd);
		return -1;
	}
	return close(fd);
}

static int
tc_count(const char *hay, const char *needle)
{
	int	n = 0;

	while ((hay = strstr(hay, needle)) != NULL) {
		n++;
		hay += strlen(needle);
	}
	return n;
}

static mode_t
tc_mode(const char *path)
{
	struct stat	st;

	if (stat(path, &st) == -1)
		return (mode_t)-1;
	return st.st_mode & 07777;
}

/* Entries of dir other than . and .., or -1. */
static int
tc_dir_entries(const char *dir)
{
	DIR		*d;
	struct dirent	*de;
	int		 n = 0;

	if ((d = opendir(dir)) == NULL)
		return -1;
	while ((de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") != 0 &&
		    strcmp(de->d_name, "..") != 0)
			n++;
	closedir(d);
	return n;
}

static X509 *
tc_read_cert(const char *path)
{
	FILE	*f;
	X509	*x;

	if ((f = fopen(path, "r")) == NULL)
		return NULL;
	x = PEM_read_X509(f, NULL, NULL, NULL);
	fclose(f);
	return x;
}

static int
tc_write_cert(const char *path, X509 *x)
{
	FILE	*f;
	int	 ok;

	(void)unlink(path);
	if ((f = fopen(path, "w")) == NULL)
		return -1;
	ok = PEM_write_X509(f, x);
	return fclose(f) == 0 && ok == 1 ? 0 : -1;
}

/* Writes k as PEM with mode 0600, encrypted with pass if not NULL. */
static int
tc_write_key(const char *path, EVP_PKEY *k, const char *pass)
{
	FILE	*f;
	int	 fd, ok;

	(void)unlink(path);
	if ((fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600)) == -1)
		return -1;
	if ((f = fdopen(fd, "w")) == NULL) {
		close(fd);
		return -1;
	}
	ok = PEM_write_PKCS8PrivateKey(f, k,
	    pass != NULL ? EVP_aes_256_cbc() : NULL, NULL, 0, NULL,
	    (void *)pass);
	return fclose(f) == 0 && ok == 1 ? 0 : -1;
}

/*
 * A self-signed certificate for key built with OpenSSL's config syntax
 * (independent of certs/): basicConstraints bc and keyUsage ku (either
 * may be NULL), valid from now+from to now+to seconds.
 */
static X509 *
tc_make_cert(EVP_PKEY *key, const char *bc, const char *ku, long from,
    long to)
{
	X509		*x;
	X509_NAME	*n;
	X509_EXTENSION	*ext;
	X509V3_CTX	 ctx;

	if ((x = X509_new()) == NULL)
		return NULL;
	X509_set_version(x, X509_VERSION_3);
	ASN1_INTEGER_set(X509_get_serialNumber(x), 4242);
	X509_gmtime_adj(X509_getm_notBefore(x), from);
	X509_gmtime_adj(X509_getm_notAfter(x), to);
	X509_set_pubkey(x, key);
	n = X509_get_subject_name(x);
	X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC,
	    (const unsigned char *)"test cert", -1, -1, 0);
	X509_set_issuer_name(x, n);
	X509V3_set_ctx(&ctx, x, x, NULL, NULL, 0);
	if (bc != NULL) {
		ext = X509V3_EXT_conf_nid(NULL, &ctx, NID_basic_constraints,
		    bc);
		X509_add_ext(x, ext, -1);
		X509_EXTENSION_free(ext);
	}
	if (ku != NULL) {
		ext = X509V3_EXT_conf_nid(NULL, &ctx, NID_key_usage, ku);
		X509_add_ext(x, ext, -1);
		X509_EXTENSION_free(ext);
	}
	if (X509_sign(x, key, EVP_sha256()) <= 0) {
		X509_free(x);
		return NULL;
	}
	return x;
}

/* X509_verify_cert of leaf for TLS server use with ca as the only root. */
static int
tc_verify(X509 *leaf, X509 *ca)
{
	X509_STORE	*store;
	X509_STORE_CTX	*ctx;
	int		 ok = -1;

	store = X509_STORE_new();
	ctx = X509_STORE_CTX_new();
	if (store != NULL && ctx != NULL &&
	    X509_STORE_add_cert(store, ca) == 1 &&
	    X509_STORE_CTX_init(ctx, store, leaf, NULL) == 1 &&
	    X509_STORE_CTX_set_purpose(ctx, X509_PURPOSE_SSL_SERVER) == 1) {
		ok = X509_verify_cert(ctx);
		if (ok != 1)
			fprintf(stderr, "verify: %s\n",
			    X509_verify_cert_error_string(
			    X509_STORE_CTX_get_error(ctx)));
	}
	X509_STORE_CTX_free(ctx);
	X509_STORE_free(store);
	return ok;
}

static bool
tc_contains(const char *s, const char *needle)
{
	if (strstr(s, needle) != NULL)
		return true;
	fprintf(stderr, "\n  message \"%s\" lacks \"%s\"\n", s, needle);
	return false;
}

static time_t
tc_clock(void)
{
	return tc_fake_now;
}

static time_t
tc_asn1(const ASN1_TIME *t)
{
	time_t	v = 0;

	(void)certs_asn1_time(t, &v);
	return v;
}

/* ------------------------------------------------------------------ */
/* The CA                                                               */
/* ------------------------------------------------------------------ */

static void
test_certs_ca_init(void)
{
	char			 dir[PATH_MAX], key[PATH_MAX], crt[PATH_MAX];
	char			 err[TC_ERR_MAX], *pem;
	X509			*x;
	X509_NAME		*n;
	BASIC_CONSTRAINTS	*bc;
	AUTHORITY_KEYID		*akid;
	const ASN1_OCTET_STRING	*ski;
	BIGNUM			*serial;
	EVP_PKEY		*pk;
	char			 cn[128], o[64];
	unsigned		 hex;
	int			 crit, consumed = 0;
	time_t			 now = time(NULL), nb, na;

	TC_NEED();

	tc_path(dir, "init/sub");
	tc_path(key, "init");
	/* Parent missing: fails, leaves nothing. */
	CU_ASSERT(certs_ca_init(dir, err, sizeof(err)) == -1);
	CU_ASSERT(tc_contains(err, "cannot create directory"));
	CU_ASSERT(access(key, F_OK) == -1);

	tc_path(dir, "init");
	CU_ASSERT_FATAL(certs_ca_init(dir, err, sizeof(err)) == 0);
	tc_join(key, dir, "ca.key");
	tc_join(crt, dir, "ca.crt");
	CU_ASSERT(tc_mode(dir) == 0700);
	CU_ASSERT(tc_mode(key) == 0600);
	CU_ASSERT(tc_mode(crt) == 0644);
	CU_ASSERT(tc_dir_entries(dir) == 2);	/* no temporary left */

	/* PEM PKCS#8, an ECDSA P-256 key */
	CU_ASSERT_FATAL((pem = tc_slurp(key, NULL)) != NULL);
	CU_ASSERT(STRNCMP_LIT(pem, "-----BEGIN PRIVATE KEY-----\n") == 0);
	free(pem);

	CU_ASSERT_FATAL((x = tc_read_cert(crt)) != NULL);
	pk = X509_get0_pubkey(x);
	CU_ASSERT(pk != NULL && EVP_PKEY_is_a(pk, "EC"));
	CU_ASSERT(pk != NULL && EVP_PKEY_get_bits(pk) == 256);
	CU_ASSERT(X509_get_version(x) == X509_VERSION_3);
	CU_ASSERT(X509_get_signature_nid(x) == NID_ecdsa_with_SHA256);

	/* subject: O=moat, CN=moat sandbox CA <8 hex>; self-issued */
	n = X509_get_subject_name(x);
	CU_ASSERT(X509_NAME_get_text_by_NID(n, NID_organizationName, o,
	    sizeof(o)) == 4 && strcmp(o, "moat") == 0);
	CU_ASSERT(X509_NAME_get_text_by_NID(n, NID_commonName, cn,
	    sizeof(cn)) == 24);
	CU_ASSERT(sscanf(cn, "moat sandbox CA %8x%n", &hex, &consumed) == 1 &&
	    consumed == 24);
	CU_ASSERT(X509_NAME_cmp(n, X509_get_issuer_name(x)) == 0);
	CU_ASSERT(X509_check_issued(x, x) == X509_V_OK);
	CU_ASSERT(X509_verify(x, pk) == 1);

	/* random positive serial of at most 128 bits */
	serial = ASN1_INTEGER_to_BN(X509_get0_serialNumber(x), NULL);
	CU_ASSERT(serial != NULL && !BN_is_negative(serial) &&
	    !BN_is_zero(serial) && BN_num_bits(serial) <= 128 &&
	    BN_num_bits(serial) > 64);
	BN_free(serial);

	/* validity: now - 1h .. now + 3 years */
	nb = tc_asn1(X509_get0_notBefore(x));
	na = tc_asn1(X509_get0_notAfter(x));
	CU_ASSERT(nb >= now - 3600 - TC_SLACK && nb <= now - 3600 + TC_SLACK);
	CU_ASSERT(na >= now + 1095 * (time_t)TC_DAY - TC_SLACK &&
	    na <= now + 1097 * (time_t)TC_DAY + TC_SLACK);

	/* extensions */
	bc = X509_get_ext_d2i(x, NID_basic_constraints, &crit, NULL);
	CU_ASSERT(bc != NULL && bc->ca && crit == 1 && bc->pathlen != NULL &&
	    ASN1_INTEGER_get(bc->pathlen) == 0);
	BASIC_CONSTRAINTS_free(bc);
	CU_ASSERT(X509_get_key_usage(x) == (KU_KEY_CERT_SIGN | KU_CRL_SIGN));
	CU_ASSERT(X509_EXTENSION_get_critical(X509_get_ext(x,
	    X509_get_ext_by_NID(x, NID_key_usage, -1))) == 1);
	ski = X509_get0_subject_key_id(x);
	CU_ASSERT_FATAL(ski != NULL);
	CU_ASSERT(ASN1_STRING_length(ski) == 20);
	akid = X509_get_ext_d2i(x, NID_authority_key_identifier, &crit, NULL);
	CU_ASSERT(akid != NULL && akid->keyid != NULL &&
	    ASN1_OCTET_STRING_cmp(akid->keyid, ski) == 0 && crit == 0);
	AUTHORITY_KEYID_free(akid);
	/* the CN's hex is the start of the key id */
	CU_ASSERT(hex == ((unsigned)ASN1_STRING_get0_data(ski)[0] << 24 |
	    (unsigned)ASN1_STRING_get0_data(ski)[1] << 16 |
	    (unsigned)ASN1_STRING_get0_data(ski)[2] << 8 |
	    (unsigned)ASN1_STRING_get0_data(ski)[3]));
	X509_free(x);
}

static void
test_certs_ca_init_refuses(void)
{
	char	dir[PATH_MAX], path[PATH_MAX], err[TC_ERR_MAX];
	char	*before_k, *before_c, *after_k, *after_c;

	TC_NEED();

	/* A second init on the suite's CA changes nothing. */
	before_k = tc_slurp(tc_ca_key, NULL);
	before_c = tc_slurp(tc_ca_crt, NULL);
	CU_ASSERT(certs_ca_init(tc_ca_dir, err, sizeof(err)) == -1);
	CU_ASSERT(tc_contains(err, tc_ca_key));
	CU_ASSERT(tc_contains(err, "already exists"));
	after_k = tc_slurp(tc_ca_key, NULL);
	after_c = tc_slurp(tc_ca_crt, NULL);
	CU_ASSERT(before_k != NULL && after_k != NULL &&
	    strcmp(before_k, after_k) == 0);
	CU_ASSERT(before_c != NULL && after_c != NULL &&
	    strcmp(before_c, after_c) == 0);
	CU_ASSERT(tc_dir_entries(tc_ca_dir) == 2);
	free(before_k);
	free(before_c);
	free(after_k);
	free(after_c);

	/* Only ca.crt there: refused naming it, and no ca.key appears. */
	tc_path(dir, "only-crt");
	CU_ASSERT_FATAL(mkdir(dir, 0700) == 0);
	tc_join(path, dir, "ca.crt");
	CU_ASSERT_FATAL(tc_spit(path, "x", 1, 0644) == 0);
	CU_ASSERT(certs_ca_init(dir, err, sizeof(err)) == -1);
	CU_ASSERT(tc_contains(err, path));
	CU_ASSERT(tc_dir_entries(dir) == 1);

	/* A dangling symlink named ca.key counts as existing. */
	tc_path(dir, "symlink");
	CU_ASSERT_FATAL(mkdir(dir, 0700) == 0);
	tc_join(path, dir, "ca.key");
	CU_ASSERT_FATAL(symlink("/nonexistent/moat-key", path) == 0);
	CU_ASSERT(certs_ca_init(dir, err, sizeof(err)) == -1);
	CU_ASSERT(tc_contains(err, "already exists"));
	CU_ASSERT(tc_dir_entries(dir) == 1);

	/* Not a directory. */
	tc_path(path, "a-file");
	CU_ASSERT_FATAL(tc_spit(path, "x", 1, 0600) == 0);
	CU_ASSERT(certs_ca_init(path, err, sizeof(err)) == -1);
	CU_ASSERT(tc_contains(err, "not a directory"));

	/* A directory others may write to. */
	tc_path(dir, "shared");
	CU_ASSERT_FATAL(mkdir(dir, 0700) == 0 && chmod(dir, 0777) == 0);
	CU_ASSERT(certs_ca_init(dir, err, sizeof(err)) == -1);
	CU_ASSERT(tc_contains(err, "writable by group or others"));
	CU_ASSERT(tc_dir_entries(dir) == 0);

	CU_ASSERT(certs_ca_init("", err, sizeof(err)) == -1);
	CU_ASSERT(certs_ca_init(NULL, err, sizeof(err)) == -1);
}

static void
test_certs_ca_load(void)
{
	char			 fp[CERTS_FINGERPRINT_LEN];
	char			 want[CERTS_FINGERPRINT_LEN];
	unsigned char		 md[EVP_MAX_MD_SIZE];
	unsigned int		 mdlen, i;
	X509			*x;

	TC_NEED();
	CU_ASSERT_FATAL((x = tc_read_cert(tc_ca_crt)) != NULL);
	CU_ASSERT(X509_cmp(x, certs_ca_cert(tc_ca)) == 0);
	CU_ASSERT_FATAL(X509_digest(x, EVP_sha256(), md, &mdlen) == 1);
	for (i = 0; i < mdlen; i++)
		(void)snprintf(want + 3 * i, 4, "%02X%s", md[i],
		    i + 1 < mdlen ? ":" : "");
	CU_ASSERT(certs_ca_fingerprint(tc_ca, fp, sizeof(fp)) == 0);
	CU_ASSERT(strlen(fp) == 95 && strcmp(fp, want) == 0);
	CU_ASSERT(certs_ca_fingerprint(tc_ca, fp, 95) == -1);
	X509_free(x);
	certs_ca_free(NULL);
}

static void
test_certs_ca_load_modes(void)
{
	static const mode_t	 bad[] = { 0640, 0604, 0620, 0602, 0644, 0610 };
	char			 key[PATH_MAX], err[TC_ERR_MAX], *pem;
	size_t			 len, i;
	struct certs_ca		*ca;

	TC_NEED();

	CU_ASSERT_FATAL((pem = tc_slurp(tc_ca_key, &len)) != NULL);
	tc_path(key, "mode.key");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CU_ASSERT_FATAL(tc_spit(key, pem, len, bad[i]) == 0);
		ca = certs_ca_load(tc_ca_crt, key, err, sizeof(err));
		CU_ASSERT(ca == NULL);
		CU_ASSERT(tc_contains(err, "chmod 600"));
		CU_ASSERT(tc_contains(err, key));
		certs_ca_free(ca);
	}
	CU_ASSERT_FATAL(chmod(key, 0400) == 0);
	ca = certs_ca_load(tc_ca_crt, key, err, sizeof(err));
	CU_ASSERT(ca != NULL);
	certs_ca_free(ca);

	/* A second name for the key: moat hides it by path, so refused. */
	{
		char	link2[PATH_MAX];

		tc_path(link2, "mode-link.key");
		(void)unlink(link2);
		CU_ASSERT_FATAL(link(key, link2) == 0);
		ca = certs_ca_load(tc_ca_crt, key, err, sizeof(err));
		CU_ASSERT(ca == NULL);
		CU_ASSERT(tc_contains(err, "2 hard links"));
		certs_ca_free(ca);
		CU_ASSERT_FATAL(unlink(link2) == 0);
		ca = certs_ca_load(tc_ca_crt, key, err, sizeof(err));
		CU_ASSERT(ca != NULL);
		certs_ca_free(ca);
	}

	/* Owned by another user (only root can arrange that). */
	if (geteuid() == 0) {
		CU_ASSERT_FATAL(chown(key, 65534, 65534) == 0);
		ca = certs_ca_load(tc_ca_crt, key, err, sizeof(err));
		CU_ASSERT(ca == NULL);
		CU_ASSERT(tc_contains(err, "owned by uid 65534"));
		certs_ca_free(ca);
	}
	free(pem);
}

static void
test_certs_ca_load_mismatch(void)
{
	char		 dir[PATH_MAX], key[PATH_MAX], crt[PATH_MAX];
	char		 err[TC_ERR_MAX];
	struct certs_ca	*ca;

	TC_NEED();

	tc_path(dir, "other-ca");
	CU_ASSERT_FATAL(certs_ca_init(dir, err, sizeof(err)) == 0);
	tc_join(key, dir, "ca.key");
	tc_join(crt, dir, "ca.crt");
	ca = certs_ca_load(tc_ca_crt, key, err, sizeof(err));
	CU_ASSERT(ca == NULL);
	CU_ASSERT(tc_contains(err, "does not match"));
	certs_ca_free(ca);
	ca = certs_ca_load(crt, tc_ca_key, err, sizeof(err));
	CU_ASSERT(ca == NULL);
	CU_ASSERT(tc_contains(err, "does not match"));
	certs_ca_free(ca);
	/* and the right pair loads */
	ca = certs_ca_load(crt, key, err, sizeof(err));
	CU_ASSERT(ca != NULL);
	certs_ca_free(ca);
}

static void
test_certs_ca_load_not_ca(void)
{
	static const struct {
		const char	*bc, *ku;
		long		 from, to;
		const char	*msg;
	} v[] = {
		{ NULL, "keyCertSign", -3600, 86400, "CA:TRUE missing" },
		{ "CA:FALSE", "keyCertSign", -3600, 86400, "CA:TRUE missing" },
		{ "critical,CA:TRUE", NULL, -3600, 86400,
		    "keyCertSign missing" },
		{ "critical,CA:TRUE", "digitalSignature", -3600, 86400,
		    "keyCertSign missing" },
		{ "critical,CA:TRUE", "keyCertSign", -7200, -3600,
		    "expired on" },
		{ "critical,CA:TRUE", "keyCertSign", 3600, 7200,
		    "not valid before" },
		{ "critical,CA:TRUE", "keyCertSign", -60, 86400, NULL },
	};
	char			 key[PATH_MAX], crt[PATH_MAX], err[TC_ERR_MAX];
	struct certs_minter	*m;
	struct certs_ca		*ca;
	EVP_PKEY		*k;
	X509			*x;
	size_t			 i;

	TC_NEED();

	/* A leaf moat minted, with its own key, is not a CA. */
	m = certs_minter_new(tc_ca, 4, err, sizeof(err));
	CU_ASSERT_FATAL(m != NULL);
	x = certs_leaf_get(m, "leaf.example", err, sizeof(err));
	CU_ASSERT_FATAL(x != NULL);
	tc_path(key, "leaf.key");
	tc_path(crt, "leaf.crt");
	CU_ASSERT_FATAL(tc_write_key(key, certs_leaf_key(m), NULL) == 0);
	CU_ASSERT_FATAL(tc_write_cert(crt, x) == 0);
	ca = certs_ca_load(crt, key, err, sizeof(err));
	CU_ASSERT(ca == NULL);
	CU_ASSERT(tc_contains(err, "not a CA certificate"));
	certs_ca_free(ca);
	X509_free(x);
	certs_minter_free(m);

	/* Certificates made here with each flaw, and one without. */
	k = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	CU_ASSERT_FATAL(k != NULL);
	tc_path(key, "made.key");
	tc_path(crt, "made.crt");
	CU_ASSERT_FATAL(tc_write_key(key, k, NULL) == 0);
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		x = tc_make_cert(k, v[i].bc, v[i].ku, v[i].from, v[i].to);
		CU_ASSERT_FATAL(x != NULL);
		CU_ASSERT_FATAL(tc_write_cert(crt, x) == 0);
		X509_free(x);
		ca = certs_ca_load(crt, key, err, sizeof(err));
		if (v[i].msg == NULL) {
			CU_ASSERT(ca != NULL);
		} else {
			CU_ASSERT(ca == NULL && tc_contains(err, v[i].msg));
		}
		certs_ca_free(ca);
	}
	EVP_PKEY_free(k);
}

static void
test_certs_ca_load_bad_files(void)
{
	char		 key[PATH_MAX], crt[PATH_MAX], err[TC_ERR_MAX];
	char		*pem, *both;
	size_t		 klen, clen;
	struct certs_ca	*ca;
	EVP_PKEY	*k;

	TC_NEED();

	tc_path(key, "missing.key");
	ca = certs_ca_load(tc_ca_crt, key, err, sizeof(err));
	CU_ASSERT(ca == NULL && tc_contains(err, "No such file"));
	ca = certs_ca_load(key, tc_ca_key, err, sizeof(err));
	CU_ASSERT(ca == NULL && tc_contains(err, "No such file"));
	ca = certs_ca_load(tc_ca_crt, tc_dir, err, sizeof(err));
	CU_ASSERT(ca == NULL && tc_contains(err, "not a regular file"));

	tc_path(key, "garbage.key");
	CU_ASSERT_FATAL(tc_spit(key, "hello\n", 6, 0600) == 0);
	ca = certs_ca_load(tc_ca_crt, key, err, sizeof(err));
	CU_ASSERT(ca == NULL && tc_contains(err, "not a PEM private key"));

	/* The CA key, encrypted with a passphrase. */
	tc_path(key, "enc.key");
	CU_ASSERT_FATAL((pem = tc_slurp(tc_ca_key, &klen)) != NULL);
	{
		BIO	*b = BIO_new_mem_buf(pem, (int)klen);

		k = PEM_read_bio_PrivateKey(b, NULL, NULL, NULL);
		BIO_free(b);
	}
	CU_ASSERT_FATAL(k != NULL);
	CU_ASSERT_FATAL(tc_write_key(key, k, "secret") == 0);
	EVP_PKEY_free(k);
	ca = certs_ca_load(tc_ca_crt, key, err, sizeof(err));
	CU_ASSERT(ca == NULL && tc_contains(err, "encrypted"));

	/* A certificate file with the key pasted in. */
	tc_path(crt, "with-key.crt");
	{
		char	*c = tc_slurp(tc_ca_crt, &clen);

		CU_ASSERT_FATAL(c != NULL);
		both = malloc(clen + klen + 1);
		CU_ASSERT_FATAL(both != NULL);
		memcpy(both, c, clen);
		memcpy(both + clen, pem, klen);
		free(c);
	}
	CU_ASSERT_FATAL(tc_spit(crt, both, clen + klen, 0600) == 0);
	ca = certs_ca_load(crt, tc_ca_key, err, sizeof(err));
	CU_ASSERT(ca == NULL && tc_contains(err, "contains a private key"));
	free(both);
	free(pem);

	/* A certificate file with no certificate. */
	tc_path(crt, "garbage.crt");
	CU_ASSERT_FATAL(tc_spit(crt, "hello\n", 6, 0644) == 0);
	ca = certs_ca_load(crt, tc_ca_key, err, sizeof(err));
	CU_ASSERT(ca == NULL && tc_contains(err, "not a PEM certificate"));
	CU_ASSERT(certs_ca_load(NULL, tc_ca_key, err, sizeof(err)) == NULL);
}

/* ------------------------------------------------------------------ */
/* Leaves                                                               */
/* ------------------------------------------------------------------ */

static void
test_certs_leaf_dns(void)
{
	struct certs_minter	*m;
	X509			*x;
	char			 err[TC_ERR_MAX], cn[128];
	BASIC_CONSTRAINTS	*bc;
	EXTENDED_KEY_USAGE	*eku;
	AUTHORITY_KEYID		*akid;
	GENERAL_NAMES		*gens;
	const GENERAL_NAME	*gen;
	BIGNUM			*serial;
	time_t			 now = time(NULL), nb, na;
	int			 crit;

	TC_NEED();

	m = certs_minter_new(tc_ca, 16, err, sizeof(err));
	CU_ASSERT_FATAL(m != NULL);
	x = certs_leaf_get(m, "api.example.com", err, sizeof(err));
	CU_ASSERT_FATAL(x != NULL);

	CU_ASSERT(tc_verify(x, certs_ca_cert(tc_ca)) == 1);
	CU_ASSERT(X509_check_host(x, "api.example.com", 0, 0, NULL) == 1);
	CU_ASSERT(X509_check_host(x, "API.Example.COM", 0, 0, NULL) == 1);
	CU_ASSERT(X509_check_host(x, "other.example.com", 0, 0, NULL) == 0);
	CU_ASSERT(X509_check_host(x, "example.com", 0, 0, NULL) == 0);
	CU_ASSERT(X509_check_host(x, "x.api.example.com", 0, 0, NULL) == 0);
	CU_ASSERT(X509_check_ip_asc(x, "192.0.2.1", 0) == 0);

	/* The leaf's key is the minter's. */
	CU_ASSERT(X509_check_private_key(x, certs_leaf_key(m)) == 1);
	CU_ASSERT(EVP_PKEY_is_a(certs_leaf_key(m), "EC"));
	CU_ASSERT(EVP_PKEY_get_bits(certs_leaf_key(m)) == 256);

	CU_ASSERT(X509_NAME_get_text_by_NID(X509_get_subject_name(x),
	    NID_commonName, cn, sizeof(cn)) > 0 &&
	    strcmp(cn, "api.example.com") == 0);
	CU_ASSERT(X509_NAME_cmp(X509_get_issuer_name(x),
	    X509_get_subject_name(certs_ca_cert(tc_ca))) == 0);
	CU_ASSERT(X509_get_signature_nid(x) == NID_ecdsa_with_SHA256);
	serial = ASN1_INTEGER_to_BN(X509_get0_serialNumber(x), NULL);
	CU_ASSERT(serial != NULL && !BN_is_negative(serial) &&
	    BN_num_bits(serial) <= 128 && BN_num_bits(serial) > 64);
	BN_free(serial);

	nb = tc_asn1(X509_get0_notBefore(x));
	na = tc_asn1(X509_get0_notAfter(x));
	CU_ASSERT(nb >= now - 3600 - TC_SLACK && nb <= now - 3600 + TC_SLACK);
	CU_ASSERT(na >= now + 7 * TC_DAY - TC_SLACK &&
	    na <= now + 7 * TC_DAY + TC_SLACK);

	bc = X509_get_ext_d2i(x, NID_basic_constraints, &crit, NULL);
	CU_ASSERT(bc != NULL && !bc->ca && crit == 1);
	BASIC_CONSTRAINTS_free(bc);
	CU_ASSERT(X509_get_key_usage(x) == KU_DIGITAL_SIGNATURE);
	CU_ASSERT(X509_EXTENSION_get_critical(X509_get_ext(x,
	    X509_get_ext_by_NID(x, NID_key_usage, -1))) == 1);
	eku = X509_get_ext_d2i(x, NID_ext_key_usage, &crit, NULL);
	CU_ASSERT(eku != NULL && sk_ASN1_OBJECT_num(eku) == 1 &&
	    OBJ_obj2nid(sk_ASN1_OBJECT_value(eku, 0)) == NID_server_auth);
	sk_ASN1_OBJECT_pop_free(eku, ASN1_OBJECT_free);
	CU_ASSERT(X509_get0_subject_key_id(x) != NULL);
	akid = X509_get_ext_d2i(x, NID_authority_key_identifier, &crit, NULL);
	CU_ASSERT(akid != NULL && akid->keyid != NULL &&
	    ASN1_OCTET_STRING_cmp(akid->keyid,
	    X509_get0_subject_key_id(certs_ca_cert(tc_ca))) == 0);
	AUTHORITY_KEYID_free(akid);
	gens = X509_get_ext_d2i(x, NID_subject_alt_name, &crit, NULL);
	CU_ASSERT_FATAL(gens != NULL);
	CU_ASSERT(sk_GENERAL_NAME_num(gens) == 1);
	gen = sk_GENERAL_NAME_value(gens, 0);
	CU_ASSERT(gen->type == GEN_DNS &&
	    ASN1_STRING_length(gen->d.dNSName) == 15 &&
	    MEMCMP_LIT(ASN1_STRING_get0_data(gen->d.dNSName),
	    "api.example.com") == 0);
	GENERAL_NAMES_free(gens);
	X509_free(x);

	/* Names a canonicaliser gives that are still worth a check. */
	x = certs_leaf_get(m, "_dmarc.example-1.com", err, sizeof(err));
	CU_ASSERT(x != NULL && tc_verify(x, certs_ca_cert(tc_ca)) == 1);
	X509_free(x);
	x = certs_leaf_get(m, "localhost", err, sizeof(err));
	CU_ASSERT(x != NULL &&
	    X509_check_host(x, "localhost", 0, 0, NULL) == 1);
	X509_free(x);
	x = certs_leaf_get(m, "xn--bcher-kva.example", err, sizeof(err));
	CU_ASSERT(x != NULL &&
	    X509_check_host(x, "xn--bcher-kva.example", 0, 0, NULL) == 1);
	X509_free(x);
	certs_minter_free(m);
}

static void
test_certs_leaf_ip(void)
{
	static const struct {
		const char	*host, *same, *other;
		int		 len;
	} v[] = {
		{ "192.0.2.7", "192.0.2.7", "192.0.2.8", 4 },
		{ "0.0.0.0", "0.0.0.0", "0.0.0.1", 4 },
		{ "2001:db8::1", "2001:DB8:0:0::1", "2001:db8::2", 16 },
		{ "::1", "0:0:0:0:0:0:0:1", "::2", 16 },
		{ "fd00:ec2::254", "fd00:ec2:0::254", "fd00:ec2::255", 16 },
		{ "::ffff:192.0.2.1", "::ffff:c000:201", "192.0.2.1", 16 },
	};
	struct certs_minter	*m;
	GENERAL_NAMES		*gens;
	const GENERAL_NAME	*gen;
	X509			*x;
	char			 err[TC_ERR_MAX], cn[128];
	size_t			 i;

	TC_NEED();

	m = certs_minter_new(tc_ca, 16, err, sizeof(err));
	CU_ASSERT_FATAL(m != NULL);
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		x = certs_leaf_get(m, v[i].host, err, sizeof(err));
		CU_ASSERT_FATAL(x != NULL);
		CU_ASSERT(tc_verify(x, certs_ca_cert(tc_ca)) == 1);
		CU_ASSERT(X509_check_ip_asc(x, v[i].host, 0) == 1);
		CU_ASSERT(X509_check_ip_asc(x, v[i].same, 0) == 1);
		CU_ASSERT(X509_check_ip_asc(x, v[i].other, 0) == 0);
		/* An address is an iPAddress, never a dNSName. */
		CU_ASSERT(X509_check_host(x, v[i].host, 0,
		    X509_CHECK_FLAG_NEVER_CHECK_SUBJECT, NULL) == 0);
		gens = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
		CU_ASSERT_FATAL(gens != NULL);
		gen = sk_GENERAL_NAME_value(gens, 0);
		CU_ASSERT(sk_GENERAL_NAME_num(gens) == 1 &&
		    gen->type == GEN_IPADD &&
		    ASN1_STRING_length(gen->d.iPAddress) == v[i].len);
		GENERAL_NAMES_free(gens);
		CU_ASSERT(X509_NAME_get_text_by_NID(X509_get_subject_name(x),
		    NID_commonName, cn, sizeof(cn)) > 0 &&
		    strcmp(cn, v[i].host) == 0);
		X509_free(x);
	}
	certs_minter_free(m);
}

/* A 253-byte name: the SAN carries it all, the CN its first 64 bytes. */
static void
test_certs_leaf_long(void)
{
	struct certs_minter	*m;
	X509			*x;
	char			 host[CERTS_HOST_MAX + 2], cn[128];
	char			 err[TC_ERR_MAX];

	TC_NEED();

	/* 63 + 1 + 63 + 1 + 63 + 1 + 61 = 253 */
	memset(host, 'a', CERTS_HOST_MAX);
	host[63] = host[127] = host[191] = '.';
	host[CERTS_HOST_MAX] = '\0';
	m = certs_minter_new(tc_ca, 4, err, sizeof(err));
	CU_ASSERT_FATAL(m != NULL);
	x = certs_leaf_get(m, host, err, sizeof(err));
	CU_ASSERT_FATAL(x != NULL);
	CU_ASSERT(tc_verify(x, certs_ca_cert(tc_ca)) == 1);
	CU_ASSERT(X509_check_host(x, host, 0, 0, NULL) == 1);
	CU_ASSERT(X509_NAME_get_text_by_NID(X509_get_subject_name(x),
	    NID_commonName, cn, sizeof(cn)) == 64 &&
	    strncmp(cn, host, 64) == 0);
	X509_free(x);

	/* One byte more is refused. */
	host[CERTS_HOST_MAX] = 'a';
	host[CERTS_HOST_MAX + 1] = '\0';
	x = certs_leaf_get(m, host, err, sizeof(err));
	CU_ASSERT(x == NULL && tc_contains(err, "longer than 253"));
	certs_minter_free(m);
}

static void
test_certs_leaf_cache(void)
{
	struct certs_minter		*m;
	struct certs_minter_stats	 st;
	X509				*a1, *a2, *b;
	char				 err[TC_ERR_MAX];

	TC_NEED();

	m = certs_minter_new(tc_ca, 8, err, sizeof(err));
	CU_ASSERT_FATAL(m != NULL);
	a1 = certs_leaf_get(m, "a.example", err, sizeof(err));
	a2 = certs_leaf_get(m, "a.example", err, sizeof(err));
	b = certs_leaf_get(m, "b.example", err, sizeof(err));
	CU_ASSERT_FATAL(a1 != NULL && a2 != NULL && b != NULL);
	CU_ASSERT(a1 == a2);
	CU_ASSERT(ASN1_INTEGER_cmp(X509_get0_serialNumber(a1),
	    X509_get0_serialNumber(a2)) == 0);
	CU_ASSERT(ASN1_INTEGER_cmp(X509_get0_serialNumber(a1),
	    X509_get0_serialNumber(b)) != 0);
	certs_minter_stats(m, &st);
	CU_ASSERT(st.hits == 1 && st.misses == 2 && st.mints == 2 &&
	    st.entries == 2 && st.evictions == 0);
	X509_free(a1);
	X509_free(a2);
	/* A caller's reference outlives the minter. */
	certs_minter_free(m);
	CU_ASSERT(X509_check_host(b, "b.example", 0, 0, NULL) == 1);
	X509_free(b);

	CU_ASSERT(certs_minter_new(tc_ca, 0, err, sizeof(err)) == NULL);
	CU_ASSERT(tc_contains(err, "out of range"));
	CU_ASSERT(certs_minter_new(tc_ca, CERTS_CACHE_MAX + 1, err,
	    sizeof(err)) == NULL);
	CU_ASSERT(certs_minter_new(NULL, 1, err, sizeof(err)) == NULL);
	certs_minter_free(NULL);
}

/* cache_entries = 2: a, b, c evicts a; a comes back with a new serial. */
static void
test_certs_leaf_lru(void)
{
	struct certs_minter		*m;
	struct certs_minter_stats	 st;
	ASN1_INTEGER			*first_a;
	X509				*x;
	char				 err[TC_ERR_MAX];

	TC_NEED();

	m = certs_minter_new(tc_ca, 2, err, sizeof(err));
	CU_ASSERT_FATAL(m != NULL);
	x = certs_leaf_get(m, "a.example", err, sizeof(err));
	CU_ASSERT_FATAL(x != NULL);
	first_a = ASN1_INTEGER_dup(X509_get0_serialNumber(x));
	X509_free(x);
	X509_free(certs_leaf_get(m, "b.example", err, sizeof(err)));
	X509_free(certs_leaf_get(m, "c.example", err, sizeof(err)));
	certs_minter_stats(m, &st);
	CU_ASSERT(st.entries == 2 && st.evictions == 1 && st.misses == 3);

	/* b and c are cached; a is not: minted anew. */
	X509_free(certs_leaf_get(m, "b.example", err, sizeof(err)));
	certs_minter_stats(m, &st);
	CU_ASSERT(st.hits == 1);
	x = certs_leaf_get(m, "a.example", err, sizeof(err));
	CU_ASSERT_FATAL(x != NULL);
	CU_ASSERT(ASN1_INTEGER_cmp(first_a, X509_get0_serialNumber(x)) != 0);
	X509_free(x);
	certs_minter_stats(m, &st);
	CU_ASSERT(st.hits == 1 && st.misses == 4 && st.evictions == 2 &&
	    st.entries == 2);

	/* b was used more recently than c, so c went: b hits, c misses. */
	X509_free(certs_leaf_get(m, "b.example", err, sizeof(err)));
	X509_free(certs_leaf_get(m, "c.example", err, sizeof(err)));
	certs_minter_stats(m, &st);
	CU_ASSERT(st.hits == 2 && st.misses == 5 && st.entries == 2);
	ASN1_INTEGER_free(first_a);
	certs_minter_free(m);
}

/* A cached leaf with less than a day left is minted again. */
static void
test_certs_leaf_stale(void)
{
	struct certs_minter		*m;
	struct certs_minter_stats	 st;
	X509				*x1, *x2, *x3;
	char				 err[TC_ERR_MAX];
	time_t				 start = time(NULL);

	TC_NEED();

	m = certs_minter_new(tc_ca, 4, err, sizeof(err));
	CU_ASSERT_FATAL(m != NULL);
	tc_fake_now = start;
	certs_minter_set_clock(m, tc_clock);
	x1 = certs_leaf_get(m, "stale.example", err, sizeof(err));
	tc_fake_now = start + 5 * TC_DAY;	/* 2 days left: cached */
	x2 = certs_leaf_get(m, "stale.example", err, sizeof(err));
	tc_fake_now = start + 6 * TC_DAY + 60;	/* < 1 day left: new */
	x3 = certs_leaf_get(m, "stale.example", err, sizeof(err));
	CU_ASSERT_FATAL(x1 != NULL && x2 != NULL && x3 != NULL);
	CU_ASSERT(x1 == x2);
	CU_ASSERT(x3 != x1);
	CU_ASSERT(tc_asn1(X509_get0_notAfter(x3)) ==
	    tc_fake_now + 7 * TC_DAY);
	CU_ASSERT(tc_asn1(X509_get0_notBefore(x3)) == tc_fake_now - 3600);
	certs_minter_stats(m, &st);
	CU_ASSERT(st.hits == 1 && st.misses == 2 && st.entries == 1);

	/* A clock stepped back before a leaf's notBefore: minted anew. */
	tc_fake_now = start - 2 * TC_DAY;
	X509_free(x2);
	x2 = certs_leaf_get(m, "stale.example", err, sizeof(err));
	CU_ASSERT(x2 != NULL && x2 != x3);
	/* Never past the CA's own notAfter. */
	tc_fake_now = certs_ca_not_after(tc_ca) - 3 * TC_DAY;
	X509_free(x2);
	x2 = certs_leaf_get(m, "near-end.example", err, sizeof(err));
	CU_ASSERT(x2 != NULL && tc_asn1(X509_get0_notAfter(x2)) ==
	    certs_ca_not_after(tc_ca));
	tc_fake_now = certs_ca_not_after(tc_ca);
	X509_free(x2);
	x2 = certs_leaf_get(m, "late.example", err, sizeof(err));
	CU_ASSERT(x2 == NULL && tc_contains(err, "expired"));
	X509_free(x1);
	X509_free(x2);
	X509_free(x3);
	certs_minter_free(m);
}

static void
test_certs_leaf_bad_hosts(void)
{
	static const struct {
		const char	*host;
		const char	*msg;
	} v[] = {
		{ "", "empty host" },
		{ "Example.com", "byte 0x45 at offset 0" },
		{ "*.example.com", "byte 0x2a" },
		{ "a b", "byte 0x20" },
		{ "host\n", "byte 0x0a" },
		{ "b\xc3\xbc" "cher.example", "byte 0xc3" },
		{ "[::1]", "byte 0x5b" },
		{ "fe80::1%eth0", "byte 0x25" },
		{ "example.com:443", "not a valid IPv6" },
		{ "a..b", "empty label" },
		{ ".a", "empty label" },
		{ "a.", "empty label" },
		{ ".", "empty label" },
		{ "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"	/* 32 */
		    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"	/* 64 */
		    ".example", "longer than 63" },
		{ "1.2.3", "not a valid IPv4" },
		{ "1.2.3.4.5", "not a valid IPv4" },
		{ "256.1.1.1", "not a valid IPv4" },
		{ "01.2.3.4", "IPv4" },
		{ "2130706433", "IPv4" },
		{ "example.123", "ends in a number" },
		{ "example.0x1f", "ends in a number" },
		{ "2001:0db8::1", "canonical form" },
		{ "2001:db8:0:0:0:0:0:1", "canonical form" },
		{ "::ffff:7f00:1", "canonical form" },
		{ "1::2::3", "not a valid IPv6" },
	};
	struct certs_minter		*m;
	struct certs_minter_stats	 st;
	X509				*x;
	char				 err[TC_ERR_MAX];
	size_t				 i;

	TC_NEED();

	m = certs_minter_new(tc_ca, 4, err, sizeof(err));
	CU_ASSERT_FATAL(m != NULL);
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		err[0] = '\0';
		x = certs_leaf_get(m, v[i].host, err, sizeof(err));
		if (x != NULL)
			fprintf(stderr, "\n  host \"%s\" accepted\n",
			    v[i].host);
		CU_ASSERT(x == NULL);
		CU_ASSERT(tc_contains(err, v[i].msg));
		X509_free(x);
	}
	CU_ASSERT(certs_leaf_get(m, NULL, err, sizeof(err)) == NULL);
	/* A refused host mints nothing and caches nothing. */
	certs_minter_stats(m, &st);
	CU_ASSERT(st.mints == 0 && st.entries == 0 && st.misses == 0);
	/* err may be NULL */
	CU_ASSERT(certs_leaf_get(m, "", NULL, 0) == NULL);
	certs_minter_free(m);
}

struct tc_thread_arg {
	struct certs_minter	*m;
	int			 id;
	X509			*shared;	/* first cert, shared host */
	int			 bad;		/* failed checks */
	int			 diff;		/* shared host: other certs */
};

static void *
tc_thread(void *p)
{
	struct tc_thread_arg	*a = p;
	char			 host[64], err[TC_ERR_MAX];
	X509			*x;
	int			 i;

	for (i = 0; i < TC_ITERS; i++) {
		if (i % 2 == 0)
			(void)snprintf(host, sizeof(host), "shared.example");
		else
			(void)snprintf(host, sizeof(host), "t%d-%d.example",
			    a->id, (i / 2) % TC_HOSTS_PER);
		if ((x = certs_leaf_get(a->m, host, err, sizeof(err))) ==
		    NULL) {
			a->bad++;
			continue;
		}
		if (X509_check_host(x, host, 0, 0, NULL) != 1)
			a->bad++;
		if (i % 2 == 0) {
			if (a->shared == NULL) {
				a->shared = x;
				continue;	/* keep this reference */
			}
			if (x != a->shared)
				a->diff++;
		}
		X509_free(x);
	}
	return NULL;
}

/*
 * 4 threads on one shared host and private ones.  With a big cache every
 * caller must see the same certificate for the shared host (one minted
 * copy kept); with a tiny one, evictions race with gets.  Meant to run
 * under the sanitizer build too.
 */
static void
test_certs_leaf_threads(void)
{
	static const size_t		 caps[] = { 64, 3 };
	struct tc_thread_arg		 a[TC_THREADS];
	pthread_t			 t[TC_THREADS];
	struct certs_minter		*m;
	struct certs_minter_stats	 st;
	char				 err[TC_ERR_MAX];
	size_t				 c;
	int				 i;

	TC_NEED();

	for (c = 0; c < sizeof(caps) / sizeof(caps[0]); c++) {
		m = certs_minter_new(tc_ca, caps[c], err, sizeof(err));
		CU_ASSERT_FATAL(m != NULL);
		memset(a, 0, sizeof(a));
		for (i = 0; i < TC_THREADS; i++) {
			a[i].m = m;
			a[i].id = i;
			CU_ASSERT_FATAL(pthread_create(&t[i], NULL, tc_thread,
			    &a[i]) == 0);
		}
		for (i = 0; i < TC_THREADS; i++)
			CU_ASSERT(pthread_join(t[i], NULL) == 0);
		certs_minter_stats(m, &st);
		CU_ASSERT(st.hits + st.misses ==
		    (uint64_t)TC_THREADS * TC_ITERS);
		CU_ASSERT(st.mints == st.misses);
		CU_ASSERT(st.entries <= caps[c]);
		for (i = 0; i < TC_THREADS; i++) {
			CU_ASSERT(a[i].bad == 0);
			CU_ASSERT(a[i].shared != NULL);
			if (caps[c] > TC_THREADS * TC_HOSTS_PER) {
				CU_ASSERT(a[i].diff == 0);
				CU_ASSERT(a[i].shared == a[0].shared);
			}
		}
		if (caps[c] > TC_THREADS * TC_HOSTS_PER) {
			CU_ASSERT(st.entries == TC_THREADS * TC_HOSTS_PER + 1);
			CU_ASSERT(st.evictions == 0);
		} else {
			CU_ASSERT(st.evictions > 0);
		}
		for (i = 0; i < TC_THREADS; i++)
			X509_free(a[i].shared);
		certs_minter_free(m);
	}
}

/* ------------------------------------------------------------------ */
/* Trust bundles                                                        */
/* ------------------------------------------------------------------ */

/* Reads every certificate of a PEM file; returns their number. */
static int
tc_read_all(const char *path, X509 **first, X509 **last)
{
	FILE	*f;
	X509	*x;
	int	 n = 0;

	*first = *last = NULL;
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	while ((x = PEM_read_X509(f, NULL, NULL, NULL)) != NULL) {
		if (n++ == 0)
			*first = x;
		else {
			X509_free(*last);
			*last = x;
		}
	}
	ERR_clear_error();
	fclose(f);
	return n;
}

static void
test_certs_bundle(void)
{
	char		 sys[PATH_MAX], out[PATH_MAX], dir[PATH_MAX];
	char		 other[PATH_MAX], err[TC_ERR_MAX], *data, *two;
	char		*extra[3];
	X509		*first, *last, *ex;
	size_t		 l1, l2;
	int		 n;

	TC_NEED();

	/* A made-up system bundle of two roots, comments between. */
	tc_path(dir, "bundle-other");
	CU_ASSERT_FATAL(certs_ca_init(dir, err, sizeof(err)) == 0);
	tc_join(other, dir, "ca.crt");
	data = tc_slurp(tc_ca_crt, &l1);
	two = tc_slurp(other, &l2);
	CU_ASSERT_FATAL(data != NULL && two != NULL);
	tc_path(sys, "sys.pem");
	{
		FILE	*f = fopen(sys, "w");

		CU_ASSERT_FATAL(f != NULL);
		fprintf(f, "# root one\n%s\n# root two\n%s", two, data);
		fclose(f);
	}
	free(data);
	free(two);

	tc_path(out, "bundle.pem");
	extra[0] = other;
	extra[1] = tc_ca_crt;
	extra[2] = NULL;
	n = certs_write_bundle(out, tc_ca, extra, sys, err, sizeof(err));
	CU_ASSERT(n == 5);
	CU_ASSERT(tc_mode(out) == 0644);
	CU_ASSERT(tc_read_all(out, &first, &last) == 5);
	CU_ASSERT(first != NULL &&
	    X509_cmp(first, certs_ca_cert(tc_ca)) == 0);
	CU_ASSERT(last != NULL && X509_cmp(last, certs_ca_cert(tc_ca)) == 0);
	X509_free(first);
	X509_free(last);
	data = tc_slurp(out, NULL);
	CU_ASSERT_FATAL(data != NULL);
	CU_ASSERT(tc_count(data, "-----BEGIN CERTIFICATE-----") == 5);
	CU_ASSERT(strstr(data, "PRIVATE KEY") == NULL);
	CU_ASSERT(strstr(data, "# root") == NULL);	/* re-encoded */
	free(data);

	/* No extras: NULL; the extra CA itself reads back as the second. */
	n = certs_write_bundle(out, tc_ca, NULL, other, err, sizeof(err));
	CU_ASSERT(n == 2);
	ex = tc_read_cert(other);
	CU_ASSERT(tc_read_all(out, &first, &last) == 2 && ex != NULL &&
	    last != NULL && X509_cmp(last, ex) == 0);
	X509_free(ex);
	X509_free(first);
	X509_free(last);
}

/* The real system bundle: every root is in, after moat's CA. */
static void
test_certs_bundle_system(void)
{
	char	 out[PATH_MAX], dir[PATH_MAX], other[PATH_MAX];
	char	 err[TC_ERR_MAX], *sysdata, *data, *extra[2];
	X509	*first, *last, *ex;
	int	 roots, n;

	TC_NEED();

	if ((sysdata = tc_slurp(CERTS_SYSTEM_BUNDLE, NULL)) == NULL) {
		fprintf(stderr, "\n  %s missing: system bundle test "
		    "skipped\n", CERTS_SYSTEM_BUNDLE);
		return;
	}
	roots = tc_count(sysdata, "-----BEGIN CERTIFICATE-----");
	free(sysdata);
	CU_ASSERT(roots > 0);

	tc_path(dir, "bundle-extra");
	CU_ASSERT_FATAL(certs_ca_init(dir, err, sizeof(err)) == 0);
	tc_join(other, dir, "ca.crt");
	extra[0] = other;
	extra[1] = NULL;
	tc_path(out, "system-bundle.pem");
	n = certs_write_bundle(out, tc_ca, extra, NULL, err, sizeof(err));
	CU_ASSERT(n == roots + 2);
	CU_ASSERT(tc_read_all(out, &first, &last) == roots + 2);
	ex = tc_read_cert(other);
	CU_ASSERT(first != NULL &&
	    X509_cmp(first, certs_ca_cert(tc_ca)) == 0);
	CU_ASSERT(last != NULL && ex != NULL && X509_cmp(last, ex) == 0);
	X509_free(ex);
	X509_free(first);
	X509_free(last);
	data = tc_slurp(out, NULL);
	CU_ASSERT(data != NULL && strstr(data, "PRIVATE KEY") == NULL);
	CU_ASSERT(data != NULL &&
	    tc_count(data, "-----BEGIN CERTIFICATE-----") == roots + 2);
	free(data);
}

/*
 * The bundle from files (moat ca bundle) is the one moatd hands a
 * registration (certs_trust_pem() then certs_bundle_from_pem()), byte
 * for byte; a key among the files is refused; moat ca bundle writes it.
 */
static void
test_certs_bundle_files(void)
{
	char		 dir[PATH_MAX], other[PATH_MAX], sys[PATH_MAX];
	char		 out[PATH_MAX], err[TC_ERR_MAX];
	char		*pem, *a, *b, *c, *o = NULL, *e = NULL;
	char		*extra[2], *files[3];
	size_t		 plen, alen, blen;

	TC_NEED();
	tc_path(dir, "bundle-files");
	CU_ASSERT_FATAL(certs_ca_init(dir, err, sizeof(err)) == 0);
	tc_join(other, dir, "ca.crt");
	/* A system bundle of one root: the other CA. */
	snprintf(sys, sizeof(sys), "%s", other);
	extra[0] = other;
	extra[1] = NULL;
	files[0] = tc_ca_crt;
	files[1] = other;
	files[2] = NULL;
	pem = certs_trust_pem(tc_ca, extra, &plen, err, sizeof(err));
	CU_ASSERT_FATAL(pem != NULL);
	a = certs_bundle_from_pem(pem, plen, sys, NULL, 0, &alen, NULL, NULL,
	    err, sizeof(err));
	b = certs_bundle_from_files(files, sys, &blen, err, sizeof(err));
	CU_ASSERT_FATAL(a != NULL && b != NULL);
	CU_ASSERT(alen == blen && memcmp(a, b, alen) == 0);
	/* The other CA is an extra and the system's root: there once. */
	CU_ASSERT(tc_count(b, "-----BEGIN CERTIFICATE-----") == 2);
	free(pem);
	free(a);

	files[1] = tc_ca_key;
	CU_ASSERT(certs_bundle_from_files(files, sys, &alen, err,
	    sizeof(err)) == NULL);
	CU_ASSERT(tc_contains(err, "contains a private key"));
	files[0] = NULL;
	CU_ASSERT(certs_bundle_from_files(files, sys, &alen, err,
	    sizeof(err)) == NULL);

	tc_path(out, "cmd-bundle.pem");
	CU_ASSERT(tc_cmd(&o, &e, 4, "ca", "bundle", "-x", tc_ca_crt) == 2);
	CU_ASSERT(e != NULL && tc_contains(e, "-x is not an option"));
	free(o);
	free(e);
	CU_ASSERT(tc_cmd(&o, &e, 8, "ca", "bundle", "-o", out,
	    "--system-bundle", sys, tc_ca_crt, other) == 0);
	CU_ASSERT(o != NULL && tc_contains(o, out));
	free(o);
	free(e);
	c = tc_slurp(out, &alen);
	CU_ASSERT(c != NULL && alen == blen && memcmp(c, b, blen) == 0);
	CU_ASSERT(tc_mode(out) == 0644);
	free(c);
	free(b);
	CU_ASSERT(tc_cmd(&o, &e, 3, "ca", "bundle", tc_ca_key) == 1);
	CU_ASSERT(e != NULL && tc_contains(e, "private key"));
	free(o);
	free(e);
	CU_ASSERT(tc_cmd(&o, &e, 2, "ca", "bundle") == 2);
	CU_ASSERT(e != NULL && tc_contains(e, "missing CERT"));
	free(o);
	free(e);
}

static void
test_certs_bundle_refuses(void)
{
	static const char	crl[] = "-----BEGIN X509 CRL-----\n"
	    "MA==\n-----END X509 CRL-----\n";
	static const char	bad64[] = "-----BEGIN CERTIFICATE-----\n"
	    "!!!not base64!!!\n-----END CERTIFICATE-----\n";
	char			 out[PATH_MAX], f[PATH_MAX], err[TC_ERR_MAX];
	char			*before, *after, *crt, *mix, *extra[2];
	size_t			 clen;
	struct {
		const char	*content;	/* NULL: the CA key itself */
		const char	*msg;
	} v[] = {
		{ NULL, "contains a private key" },
		{ "", "no PEM certificate" },
		{ "just text\n", "no PEM certificate" },
		{ crl, "not certificates" },
		{ bad64, "not valid PEM" },
		{ "MIX", "not certificates" },	/* a cert and a CRL */
		{ "KEYMIX", "contains a private key" }, /* a cert, a key */
	};
	size_t			 i;
	int			 n;

	TC_NEED();

	tc_path(out, "refuse-bundle.pem");
	CU_ASSERT_FATAL(certs_write_bundle(out, tc_ca, NULL, tc_ca_crt, err,
	    sizeof(err)) == 2);
	CU_ASSERT_FATAL((before = tc_slurp(out, NULL)) != NULL);
	CU_ASSERT_FATAL((crt = tc_slurp(tc_ca_crt, &clen)) != NULL);

	tc_path(f, "refuse-extra.pem");
	extra[0] = f;
	extra[1] = NULL;
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		if (v[i].content == NULL)
			extra[0] = tc_ca_key;
		else if (strcmp(v[i].content, "MIX") == 0 ||
		    strcmp(v[i].content, "KEYMIX") == 0) {
			char	*k = tc_slurp(tc_ca_key, NULL);

			CU_ASSERT_FATAL(k != NULL);
			mix = malloc(clen + strlen(k) + sizeof(crl));
			CU_ASSERT_FATAL(mix != NULL);
			(void)snprintf(mix, clen + strlen(k) + sizeof(crl),
			    "%s%s", crt, v[i].content[0] == 'K' ? k : crl);
			CU_ASSERT_FATAL(tc_spit(f, mix, strlen(mix), 0644) ==
			    0);
			free(mix);
			free(k);
			extra[0] = f;
		} else {
			CU_ASSERT_FATAL(tc_spit(f, v[i].content,
			    strlen(v[i].content), 0644) == 0);
			extra[0] = f;
		}
		err[0] = '\0';
		n = certs_write_bundle(out, tc_ca, extra, tc_ca_crt, err,
		    sizeof(err));
		CU_ASSERT(n == -1);
		CU_ASSERT(tc_contains(err, v[i].msg));
		CU_ASSERT(tc_contains(err, extra[0]));
		/* The previous bundle is untouched, no temporary left. */
		after = tc_slurp(out, NULL);
		CU_ASSERT(after != NULL && strcmp(before, after) == 0);
		free(after);
	}

	/* A key given as the system bundle, a missing one. */
	n = certs_write_bundle(out, tc_ca, NULL, tc_ca_key, err, sizeof(err));
	CU_ASSERT(n == -1 && tc_contains(err, "private key"));
	tc_path(f, "no-such-bundle.pem");
	n = certs_write_bundle(out, tc_ca, NULL, f, err, sizeof(err));
	CU_ASSERT(n == -1 && tc_contains(err, f) &&
	    tc_contains(err, "No such file"));
	/* A directory that does not exist. */
	tc_path(f, "no-such-dir/bundle.pem");
	n = certs_write_bundle(f, tc_ca, NULL, tc_ca_crt, err, sizeof(err));
	CU_ASSERT(n == -1 && tc_contains(err, "no-such-dir"));
	CU_ASSERT(certs_write_bundle(NULL, tc_ca, NULL, NULL, err,
	    sizeof(err)) == -1);

	after = tc_slurp(out, NULL);
	CU_ASSERT(after != NULL && strcmp(before, after) == 0);
	free(after);
	free(before);
	free(crt);
}

/*
 * certs_bundle_from_pem() with the files a sandbox's user named: a
 * private CA is merged, a copy of a root already there is not repeated,
 * a file with a key or no certificate stays out (with its reason) and
 * does not spoil the rest.
 */
static void
test_certs_bundle_merge(void)
{
	char			 sys[PATH_MAX], dir[PATH_MAX], priv[PATH_MAX];
	char			 err[TC_ERR_MAX], *ca, *root, *pcrt, *key;
	char			*b, *both;
	struct certs_extra	 ex[4];
	X509			*first, *last, *px;
	unsigned char		*st = NULL, *sb;
	size_t			 calen, blen, slen = 0, sblen = 0, i;
	int			 n;
	BIO			*in;

	TC_NEED();
	tc_path(dir, "merge-root");
	CU_ASSERT_FATAL(certs_ca_init(dir, err, sizeof(err)) == 0);
	tc_join(sys, dir, "ca.crt");		/* a one-root system bundle */
	tc_path(dir, "merge-private");
	CU_ASSERT_FATAL(certs_ca_init(dir, err, sizeof(err)) == 0);
	tc_join(priv, dir, "ca.crt");
	ca = tc_slurp(tc_ca_crt, &calen);
	root = tc_slurp(sys, NULL);
	pcrt = tc_slurp(priv, NULL);
	key = tc_slurp(tc_ca_key, NULL);
	CU_ASSERT_FATAL(ca != NULL && root != NULL && pcrt != NULL &&
	    key != NULL);
	both = malloc(strlen(root) + strlen(pcrt) + 1);
	CU_ASSERT_FATAL(both != NULL);
	snprintf(both, strlen(root) + strlen(pcrt) + 1, "%s%s", root, pcrt);

	memset(ex, 0, sizeof(ex));
	ex[0] = (struct certs_extra){ "SSL_CERT_FILE=/a", pcrt,
	    strlen(pcrt), "x" };
	/* A bundle that repeats the system's root and the private CA. */
	ex[1] = (struct certs_extra){ "REQUESTS_CA_BUNDLE=/b", both,
	    strlen(both), "x" };
	ex[2] = (struct certs_extra){ "CURL_CA_BUNDLE=/c", key, strlen(key),
	    "x" };
	ex[3] = (struct certs_extra){ "NODE_EXTRA_CA_CERTS=/d", "text\n", 5,
	    "x" };
	b = certs_bundle_from_pem(ca, calen, sys, ex, 4, &blen, &st, &slen,
	    err, sizeof(err));
	CU_ASSERT_FATAL(b != NULL && st != NULL);
	/* The store from the same parse: the same certificates, in order. */
	sb = certs_trust_store(b, blen, &sblen, err, sizeof(err));
	CU_ASSERT(sb != NULL && sblen == slen && memcmp(sb, st, slen) == 0);
	free(sb);
	free(st);
	CU_ASSERT(strlen(b) == blen);
	CU_ASSERT(ex[0].why[0] == '\0' && ex[1].why[0] == '\0');
	CU_ASSERT(tc_contains(ex[2].why, "CURL_CA_BUNDLE=/c") &&
	    tc_contains(ex[2].why, "private key"));
	CU_ASSERT(tc_contains(ex[3].why, "NODE_EXTRA_CA_CERTS=/d") &&
	    tc_contains(ex[3].why, "no PEM certificate"));
	CU_ASSERT(strstr(b, "PRIVATE KEY") == NULL);
	/* moat's CA, the root, the private CA: each once, in that order. */
	CU_ASSERT(tc_count(b, "-----BEGIN CERTIFICATE-----") == 3);
	in = BIO_new_mem_buf(b, (int)blen);
	CU_ASSERT_FATAL(in != NULL);
	first = PEM_read_bio_X509(in, NULL, NULL, NULL);
	X509_free(PEM_read_bio_X509(in, NULL, NULL, NULL));
	last = PEM_read_bio_X509(in, NULL, NULL, NULL);
	BIO_free(in);
	px = tc_read_cert(priv);
	CU_ASSERT(first != NULL && X509_cmp(first, certs_ca_cert(tc_ca)) == 0);
	CU_ASSERT(last != NULL && px != NULL && X509_cmp(last, px) == 0);
	X509_free(first);
	X509_free(last);
	X509_free(px);
	free(b);

	/* No extras; a bad system bundle is still an error. */
	b = certs_bundle_from_pem(ca, calen, sys, NULL, 0, &blen, NULL, NULL,
	    err, sizeof(err));
	CU_ASSERT(b != NULL && tc_count(b, "-----BEGIN CERTIFICATE-----") ==
	    2);
	free(b);
	err[0] = '\0';
	st = NULL;
	CU_ASSERT(certs_bundle_from_pem(ca, calen, tc_ca_key, NULL, 0, &blen,
	    &st, &slen, err, sizeof(err)) == NULL &&
	    tc_contains(err, "private key") && st == NULL);
	/* moatd's own certificates twice over: once in the bundle. */
	for (i = 0; i < 2; i++) {
		n = 0;
		b = certs_bundle_from_pem(ca, calen, tc_ca_crt, NULL, 0, &blen,
		    NULL, NULL, err, sizeof(err));
		if (b != NULL)
			n = tc_count(b, "-----BEGIN CERTIFICATE-----");
		CU_ASSERT(n == 1);
		free(b);
	}
	free(both);
	free(ca);
	free(root);
	free(pcrt);
	free(key);
}

/*
 * Whether bag is a certificate bag marked the way Java's PKCS12 store
 * reads a trusted certificate entry: the trusted key usage attribute
 * holding anyExtendedKeyUsage.
 */
static bool
tc_java_trusted(const PKCS12_SAFEBAG *bag)
{
	const STACK_OF(X509_ATTRIBUTE)	*attrs;
	const X509_ATTRIBUTE		*a;
	const ASN1_TYPE			*t;
	ASN1_OBJECT			*want, *any;
	int				 i;
	bool				 ok = false;

	if (PKCS12_SAFEBAG_get_nid(bag) != NID_certBag ||
	    (attrs = PKCS12_SAFEBAG_get0_attrs(bag)) == NULL)
		return false;
	want = OBJ_txt2obj("2.16.840.1.113894.746875.1.1", 1);
	any = OBJ_txt2obj("2.5.29.37.0", 1);
	for (i = 0; want != NULL && any != NULL &&
	    i < sk_X509_ATTRIBUTE_num(attrs); i++) {
		a = sk_X509_ATTRIBUTE_value(attrs, i);
		if (OBJ_cmp(X509_ATTRIBUTE_get0_object((X509_ATTRIBUTE *)a),
		    want) != 0)
			continue;
		t = X509_ATTRIBUTE_get0_type((X509_ATTRIBUTE *)a, 0);
		ok = t != NULL && t->type == V_ASN1_OBJECT &&
		    OBJ_cmp(t->value.object, any) == 0;
	}
	ASN1_OBJECT_free(want);
	ASN1_OBJECT_free(any);
	return ok;
}

/*
 * certs_trust_store(): every certificate of the bundle, in order, as a
 * trusted certificate bag with its alias, in one unencrypted safe, no
 * MAC, no key; input that is not a bundle of certificates is refused.
 */
static void
test_certs_trust_store(void)
{
	STACK_OF(PKCS7)			*safes;
	STACK_OF(PKCS12_SAFEBAG)	*bags;
	const PKCS12_SAFEBAG		*bag;
	char				 err[TC_ERR_MAX], dir[PATH_MAX];
	char				 other[PATH_MAX], *ca, *o, *pem, *name;
	char				*key;
	unsigned char			*der;
	const unsigned char		*p;
	PKCS12				*p12;
	X509				*x, *want[2];
	size_t				 len, clen;
	int				 i;

	TC_NEED();
	tc_path(dir, "store-other");
	CU_ASSERT_FATAL(certs_ca_init(dir, err, sizeof(err)) == 0);
	tc_join(other, dir, "ca.crt");
	ca = tc_slurp(tc_ca_crt, &clen);
	o = tc_slurp(other, NULL);
	CU_ASSERT_FATAL(ca != NULL && o != NULL);
	pem = malloc(clen + strlen(o) + 1);
	CU_ASSERT_FATAL(pem != NULL);
	snprintf(pem, clen + strlen(o) + 1, "%s%s", ca, o);
	want[0] = certs_ca_cert(tc_ca);
	want[1] = tc_read_cert(other);
	CU_ASSERT_FATAL(want[1] != NULL);

	der = certs_trust_store(pem, strlen(pem), &len, err, sizeof(err));
	CU_ASSERT_FATAL(der != NULL && len > 0);
	p = der;
	p12 = d2i_PKCS12(NULL, &p, (long)len);
	CU_ASSERT_FATAL(p12 != NULL);
	CU_ASSERT(p == der + len);
	CU_ASSERT(PKCS12_mac_present(p12) == 0);
	safes = PKCS12_unpack_authsafes(p12);
	CU_ASSERT_FATAL(safes != NULL && sk_PKCS7_num(safes) == 1);
	/* Plain data, not encryptedData: readable with no password. */
	CU_ASSERT(OBJ_obj2nid(sk_PKCS7_value(safes, 0)->type) ==
	    NID_pkcs7_data);
	bags = PKCS12_unpack_p7data(sk_PKCS7_value(safes, 0));
	CU_ASSERT_FATAL(bags != NULL && sk_PKCS12_SAFEBAG_num(bags) == 2);
	for (i = 0; i < 2; i++) {
		char	alias[16];

		bag = sk_PKCS12_SAFEBAG_value(bags, i);
		CU_ASSERT(tc_java_trusted(bag));
		x = PKCS12_SAFEBAG_get1_cert(bag);
		CU_ASSERT(x != NULL && X509_cmp(x, want[i]) == 0);
		X509_free(x);
		name = PKCS12_get_friendlyname((PKCS12_SAFEBAG *)bag);
		snprintf(alias, sizeof(alias), "moat-%d", i);
		CU_ASSERT(name != NULL && strcmp(name, alias) == 0);
		OPENSSL_free(name);
	}
	sk_PKCS12_SAFEBAG_pop_free(bags, PKCS12_SAFEBAG_free);
	sk_PKCS7_pop_free(safes, PKCS7_free);
	PKCS12_free(p12);
	free(der);
	X509_free(want[1]);

	/* A key, or no certificate at all, is no trust store. */
	key = tc_slurp(tc_ca_key, NULL);
	CU_ASSERT_FATAL(key != NULL);
	err[0] = '\0';
	CU_ASSERT(certs_trust_store(key, strlen(key), &len, err,
	    sizeof(err)) == NULL && tc_contains(err, "private key"));
	err[0] = '\0';
	CU_ASSERT(certs_trust_store("", 0, &len, err, sizeof(err)) == NULL &&
	    tc_contains(err, "no PEM certificate"));
	free(key);
	free(pem);
	free(ca);
	free(o);
}

/* ------------------------------------------------------------------ */
/* moat ca                                                              */
/* ------------------------------------------------------------------ */

/* Runs certs_cmd_ca with stdout and stderr captured into *out, *errs. */
static int
tc_cmd(char **out, char **errs, int argc, ...)
{
	char	 of[PATH_MAX], ef[PATH_MAX], *argv[10];
	int	 o, e, so, se, rc, i;
	va_list	 ap;

	va_start(ap, argc);
	for (i = 0; i < argc && i < 9; i++)
		argv[i] = va_arg(ap, char *);
	argv[i] = NULL;
	va_end(ap);
	tc_path(of, "cmd.out");
	tc_path(ef, "cmd.err");
	fflush(stdout);
	fflush(stderr);
	o = open(of, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	e = open(ef, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	so = dup(1);
	se = dup(2);
	if (o == -1 || e == -1 || so == -1 || se == -1)
		return -100;
	dup2(o, 1);
	dup2(e, 2);
	rc = certs_cmd_ca(argc, argv);
	fflush(stdout);
	fflush(stderr);
	dup2(so, 1);
	dup2(se, 2);
	close(o);
	close(e);
	close(so);
	close(se);
	*out = tc_slurp(of, NULL);
	*errs = tc_slurp(ef, NULL);
	return rc;
}

static void
test_certs_cmd(void)
{
	char		 dir[PATH_MAX], crt[PATH_MAX], key[PATH_MAX];
	char		 fp[CERTS_FINGERPRINT_LEN], err[TC_ERR_MAX];
	char		*o = NULL, *e = NULL;
	struct certs_ca	*ca;

	TC_NEED();

	CU_ASSERT(tc_cmd(&o, &e, 1, "ca") == 2);
	CU_ASSERT(o != NULL && *o == '\0');
	CU_ASSERT(e != NULL && tc_contains(e, "usage: moat ca"));
	free(o);
	free(e);
	CU_ASSERT(tc_cmd(&o, &e, 2, "ca", "frobnicate") == 2);
	CU_ASSERT(e != NULL && tc_contains(e, "unknown command frobnicate"));
	free(o);
	free(e);
	CU_ASSERT(tc_cmd(&o, &e, 2, "ca", "--help") == 0);
	CU_ASSERT(o != NULL && tc_contains(o, "usage: moat ca"));
	CU_ASSERT(e != NULL && *e == '\0');
	free(o);
	free(e);
	CU_ASSERT(tc_cmd(&o, &e, 2, "ca", "init") == 2);
	CU_ASSERT(e != NULL && tc_contains(e, "missing DIR"));
	free(o);
	free(e);
	CU_ASSERT(tc_cmd(&o, &e, 4, "ca", "init", "a", "b") == 2);
	CU_ASSERT(e != NULL && tc_contains(e, "too many"));
	free(o);
	free(e);
	CU_ASSERT(tc_cmd(&o, &e, 3, "ca", "init", "-x") == 2);
	CU_ASSERT(e != NULL && tc_contains(e, "unknown option -x"));
	free(o);
	free(e);

	tc_path(dir, "cmd-ca");
	tc_join(crt, dir, "ca.crt");
	tc_join(key, dir, "ca.key");
	CU_ASSERT(tc_cmd(&o, &e, 3, "ca", "init", dir) == 0);
	CU_ASSERT_FATAL(o != NULL && e != NULL);
	CU_ASSERT(*e == '\0');
	CU_ASSERT(tc_contains(o, crt) && tc_contains(o, key));
	ca = certs_ca_load(crt, key, err, sizeof(err));
	CU_ASSERT_FATAL(ca != NULL);
	CU_ASSERT(certs_ca_fingerprint(ca, fp, sizeof(fp)) == 0);
	CU_ASSERT(tc_contains(o, "SHA-256 fingerprint: "));
	CU_ASSERT(tc_contains(o, fp));
	certs_ca_free(ca);
	free(o);
	free(e);

	CU_ASSERT(tc_cmd(&o, &e, 3, "ca", "init", dir) == 1);
	CU_ASSERT(o != NULL && *o == '\0');
	CU_ASSERT(e != NULL && tc_contains(e, "already exists"));
	free(o);
	free(e);
}

void
test_certs_register(void)
{
	CU_pSuite	s;

	if ((s = CU_add_suite("certs", tc_init, tc_cleanup)) == NULL)
		return;
	CU_add_test(s, "ca init: files, modes, fields", test_certs_ca_init);
	CU_add_test(s, "ca init: never overwrites", test_certs_ca_init_refuses);
	CU_add_test(s, "ca load and fingerprint", test_certs_ca_load);
	CU_add_test(s, "ca load: key file modes", test_certs_ca_load_modes);
	CU_add_test(s, "ca load: mismatched key", test_certs_ca_load_mismatch);
	CU_add_test(s, "ca load: not a CA, not valid now",
	    test_certs_ca_load_not_ca);
	CU_add_test(s, "ca load: bad files", test_certs_ca_load_bad_files);
	CU_add_test(s, "leaf: DNS name verifies", test_certs_leaf_dns);
	CU_add_test(s, "leaf: IPv4 and IPv6 verify", test_certs_leaf_ip);
	CU_add_test(s, "leaf: 253-byte name", test_certs_leaf_long);
	CU_add_test(s, "leaf: cache hits, serials", test_certs_leaf_cache);
	CU_add_test(s, "leaf: LRU bound", test_certs_leaf_lru);
	CU_add_test(s, "leaf: re-minted near expiry", test_certs_leaf_stale);
	CU_add_test(s, "leaf: bad hosts refused", test_certs_leaf_bad_hosts);
	CU_add_test(s, "leaf: 4 threads", test_certs_leaf_threads);
	CU_add_test(s, "bundle: CA, roots, extras", test_certs_bundle);
	CU_add_test(s, "bundle: from files, as moatd builds it",
	    test_certs_bundle_files);
	CU_add_test(s, "bundle: the system's roots", test_certs_bundle_system);
	CU_add_test(s, "bundle: refusals", test_certs_bundle_refuses);
	CU_add_test(s, "bundle: the user's CA files merged, once each",
	    test_certs_bundle_merge);
	CU_add_test(s, "trust store: PKCS12 for Java", test_certs_trust_store);
	CU_add_test(s, "moat ca", test_certs_cmd);
}
