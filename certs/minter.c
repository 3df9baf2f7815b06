/*
 * minter.c - leaf certificates for intercepted TLS, minted on demand and
 * kept in a bounded LRU cache.
 *
 * When moatd terminates a tunnel it needs a certificate for the host the
 * client asked for.  Signing one costs an ECDSA signature; a cache keyed
 * by the canonical host makes the second connection to a host cost a tree
 * lookup.  All leaves share one key, generated when the minter starts, so
 * no key generation happens per host.
 *
 * Threads: one mutex guards the tree, the LRU list and the counters.  It
 * is held to look up and to insert, never while signing: two threads that
 * miss on the same host both sign, and the second to insert keeps the
 * first one's certificate and drops its own, so every caller of a host
 * sees one certificate.  The tree is glibc's tsearch(3) red-black tree:
 * lookups stay O(log n) whatever names a client picks, which a hash table
 * with an unkeyed hash would not promise.
 *
 * Time: certificate validity is wall-clock time by nature, so this file
 * reads time(2) (through a pointer tests may replace), not a monotonic
 * clock.
 *
 * What it is not: a policy check.  Whether moatd may talk to a host is
 * decided before a leaf is asked for; this file only refuses hosts that
 * are not canonical.
 */
#include "config.h"

#include <sys/queue.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <pthread.h>
#include <search.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "certs/certs_int.h"
#include "certs/ssldl.h"

#define LEAF_CURVE		"P-256"	/* the shared leaf key */
#define LEAF_VALID_SECS		(7 * CERTS_DAY_SECS)	/* leaf lifetime */
#define LEAF_RENEW_SECS		CERTS_DAY_SECS	/* re-mint with less left */
#define LEAF_LABEL_MAX		63	/* longest DNS label */
#define LEAF_V6_TEXT_MAX	INET6_ADDRSTRLEN

enum leaf_ext {
	LEAF_EXT_BASIC = 0,	/* CA:FALSE, critical */
	LEAF_EXT_KEY_USAGE,	/* digitalSignature, critical */
	LEAF_EXT_EKU,		/* serverAuth */
	LEAF_EXT_SKI,		/* the shared leaf key's id */
	LEAF_EXT_AKI,		/* the CA's key id */
	LEAF_EXT__COUNT
};

enum leaf_host_kind {
	LEAF_HOST_DNS = 0,
	LEAF_HOST_IP
};

struct leaf_host {
	enum leaf_host_kind	kind;
	unsigned char		addr[16];	/* IP: network order */
	int			addrlen;	/* IP: 4 or 16 */
	size_t			len;		/* strlen of the host */
};

struct leaf_entry {
	TAILQ_ENTRY(leaf_entry)	 lru;
	X509			*cert;		/* the cache's reference */
	time_t			 not_before;	/* epoch seconds */
	time_t			 not_after;
	char			 host[];	/* the tree's key */
};
TAILQ_HEAD(leaf_lru, leaf_entry);

/* Every minter's hits and misses together (certs_minter_totals). */
static _Atomic uint64_t	certs_leaf_hits, certs_leaf_misses;

struct certs_minter {
	struct certs_ca		*ca;		/* a reference */
	EVP_PKEY		*key;		/* every leaf's key */
	X509_EXTENSION		*ext[LEAF_EXT__COUNT]; /* NULL: left out */
	size_t			 cap;
	time_t			(*now)(void);
	pthread_mutex_t		 lock;		/* guards what follows */
	void			*root;		/* tsearch tree of host */
	struct leaf_lru		 lru;		/* most recently used first */
	struct certs_minter_stats st;
};

static time_t	leaf_now(void);
static int	leaf_host_parse(const char *host, struct leaf_host *h,
		    char *err, size_t errlen);
static int	leaf_dns_check(const char *host, char *err, size_t errlen);
static int	leaf_ip_check(const char *host, int af, struct leaf_host *h,
		    char *err, size_t errlen);
static bool	leaf_numeric_label(const char *label);
static int	leaf_cmp(const void *a, const void *b);
static struct leaf_entry	*leaf_find(struct certs_minter *m,
				    const char *host);
static bool	leaf_fresh(const struct leaf_entry *e, time_t now);
static void	leaf_unlink(struct certs_minter *m, struct leaf_entry *e);
static void	leaf_entry_free(struct leaf_entry *e);
static X509_EXTENSION	*leaf_ext_san(const char *host,
			    const struct leaf_host *h);
static int	leaf_subject(X509 *x, const char *host, size_t len);
static X509	*leaf_mint(struct certs_minter *m, const char *host,
		    const struct leaf_host *h, time_t now, time_t *not_after,
		    char *err, size_t errlen);

static time_t
leaf_now(void)
{
	return time(NULL);
}

/* ------------------------------------------------------------------ */
/* Canonical hosts                                                      */
/* ------------------------------------------------------------------ */

/*
 * A label the WHATWG host parser (and so policy_host_normalise) would read
 * as a number: decimal digits, or 0x followed by hex digits.  A canonical
 * name never ends in one; such a host is a non-canonical address.
 */
static bool
leaf_numeric_label(const char *label)
{
	const char	*p = label;

	if (p[0] == '0' && p[1] == 'x') {
		for (p += 2; *p != '\0'; p++)
			if (!((*p >= '0' && *p <= '9') ||
			    (*p >= 'a' && *p <= 'f')))
				return false;
		return true;
	}
	if (*p == '\0')
		return false;
	for (; *p != '\0'; p++)
		if (*p < '0' || *p > '9')
			return false;
	return true;
}

/* Labels of 1..63 bytes, no empty label, no leading or final dot. */
static int
leaf_dns_check(const char *host, char *err, size_t errlen)
{
	const char	*label = host, *dot;
	size_t		 n;

	for (;;) {
		dot = strchr(label, '.');
		n = dot != NULL ? (size_t)(dot - label) : strlen(label);
		if (n == 0) {
			certs_err(err, errlen, "host %s: empty label", host);
			return -1;
		}
		if (n > LEAF_LABEL_MAX) {
			certs_err(err, errlen, "host %s: label longer than %d "
			    "bytes", host, LEAF_LABEL_MAX);
			return -1;
		}
		if (dot == NULL)
			break;
		label = dot + 1;
	}
	if (leaf_numeric_label(label)) {
		certs_err(err, errlen, "host %s: ends in a number but is not "
		    "an IPv4 address in canonical form", host);
		return -1;
	}
	return 0;
}

/* An address literal that inet_ntop(3) would print back byte for byte. */
static int
leaf_ip_check(const char *host, int af, struct leaf_host *h, char *err,
    size_t errlen)
{
	char	text[LEAF_V6_TEXT_MAX];

	if (inet_pton(af, host, h->addr) != 1) {
		certs_err(err, errlen, "host %s: not a valid %s address", host,
		    af == AF_INET ? "IPv4" : "IPv6");
		return -1;
	}
	if (inet_ntop(af, h->addr, text, sizeof(text)) == NULL ||
	    strcmp(text, host) != 0) {
		certs_err(err, errlen, "host %s: %s address not in canonical "
		    "form (%s)", host, af == AF_INET ? "IPv4" : "IPv6",
		    af == AF_INET ? "dotted decimal" : "RFC 5952");
		return -1;
	}
	h->kind = LEAF_HOST_IP;
	h->addrlen = af == AF_INET ? 4 : 16;
	return 0;
}

static int
leaf_host_parse(const char *host, struct leaf_host *h, char *err,
    size_t errlen)
{
	const char	*last;
	size_t		 i, len;
	unsigned char	 c;

	memset(h, 0, sizeof(*h));
	len = strnlen(host, CERTS_HOST_MAX + 1);
	if (len == 0) {
		certs_err(err, errlen, "empty host");
		return -1;
	}
	if (len > CERTS_HOST_MAX) {
		certs_err(err, errlen, "host longer than %d bytes",
		    CERTS_HOST_MAX);
		return -1;
	}
	/* The host is not echoed here: it may hold control bytes. */
	for (i = 0; i < len; i++) {
		c = (unsigned char)host[i];
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		    c == '.' || c == '-' || c == '_' || c == ':')) {
			certs_err(err, errlen, "host has byte 0x%02x at offset "
			    "%zu; a canonical host has only a-z 0-9 . - _ :",
			    c, i);
			return -1;
		}
	}
	h->len = len;
	if (strchr(host, ':') != NULL)
		return leaf_ip_check(host, AF_INET6, h, err, errlen);
	last = strrchr(host, '.');
	last = last != NULL ? last + 1 : host;
	if (leaf_numeric_label(last) && strspn(host, "0123456789.") == len)
		return leaf_ip_check(host, AF_INET, h, err, errlen);
	h->kind = LEAF_HOST_DNS;
	return leaf_dns_check(host, err, errlen);
}

/* ------------------------------------------------------------------ */
/* The cache                                                            */
/* ------------------------------------------------------------------ */

/* Tree keys are the host strings inside the entries. */
static int
leaf_cmp(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* The entry for host, or NULL.  Lock held. */
static struct leaf_entry *
leaf_find(struct certs_minter *m, const char *host)
{
	void	*node;

	if ((node = tfind(host, &m->root, leaf_cmp)) == NULL)
		return NULL;
	return (struct leaf_entry *)(*(char **)node -
	    offsetof(struct leaf_entry, host));
}

/* Usable now, and for at least LEAF_RENEW_SECS more? */
static bool
leaf_fresh(const struct leaf_entry *e, time_t now)
{
	return now >= e->not_before && e->not_after - now >= LEAF_RENEW_SECS;
}

/* Takes e out of the tree and the list.  Lock held. */
static void
leaf_unlink(struct certs_minter *m, struct leaf_entry *e)
{
	(void)tdelete(e->host, &m->root, leaf_cmp);
	TAILQ_REMOVE(&m->lru, e, lru);
	m->st.entries--;
}

static void
leaf_entry_free(struct leaf_entry *e)
{
	if (e == NULL)
		return;
	X509_free(e->cert);
	e->cert = NULL;
	free(e);
}

/* ------------------------------------------------------------------ */
/* Minting                                                              */
/* ------------------------------------------------------------------ */

static X509_EXTENSION *
leaf_ext_san(const char *host, const struct leaf_host *h)
{
	GENERAL_NAMES		*gens;
	GENERAL_NAME		*gen = NULL;
	ASN1_IA5STRING		*dns = NULL;
	ASN1_OCTET_STRING	*ip = NULL;
	X509_EXTENSION		*ext = NULL;

	if ((gens = GENERAL_NAMES_new()) == NULL ||
	    (gen = GENERAL_NAME_new()) == NULL)
		goto out;
	if (h->kind == LEAF_HOST_DNS) {
		if ((dns = ASN1_IA5STRING_new()) == NULL ||
		    ASN1_STRING_set(dns, host, (int)h->len) != 1)
			goto out;
		GENERAL_NAME_set0_value(gen, GEN_DNS, dns);
		dns = NULL;
	} else {
		if ((ip = ASN1_OCTET_STRING_new()) == NULL ||
		    ASN1_OCTET_STRING_set(ip, h->addr, h->addrlen) != 1)
			goto out;
		GENERAL_NAME_set0_value(gen, GEN_IPADD, ip);
		ip = NULL;
	}
	if (sk_GENERAL_NAME_push(gens, gen) <= 0)
		goto out;
	gen = NULL;
	ext = X509V3_EXT_i2d(NID_subject_alt_name, 0, gens);
 out:
	ASN1_OCTET_STRING_free(ip);
	ASN1_IA5STRING_free(dns);
	GENERAL_NAME_free(gen);
	GENERAL_NAMES_free(gens);
	return ext;
}

/* CN = host, cut to 64 bytes: clients match the SAN, not the CN. */
static int
leaf_subject(X509 *x, const char *host, size_t len)
{
	X509_NAME	*name;
	int		 rc = -1;

	if (len > CERTS_CN_MAX)
		len = CERTS_CN_MAX;
	if ((name = X509_NAME_new()) == NULL)
		return -1;
	if (X509_NAME_add_entry_by_NID(name, NID_commonName, MBSTRING_UTF8,
	    (const unsigned char *)host, (int)len, -1, 0) == 1 &&
	    X509_set_subject_name(x, name) == 1)
		rc = 0;
	X509_NAME_free(name);
	return rc;
}

static X509 *
leaf_mint(struct certs_minter *m, const char *host, const struct leaf_host *h,
    time_t now, time_t *not_after, char *err, size_t errlen)
{
	X509	*x = NULL;
	time_t	 end, ca_end;
	int	 i;

	ca_end = certs_ca_not_after(m->ca);
	if (now >= ca_end) {
		certs_err(err, errlen, "cannot mint for %s: the CA certificate "
		    "has expired", host);
		return NULL;
	}
	/* A leaf outliving its issuer would fail verification anyway. */
	end = now + LEAF_VALID_SECS;
	if (end > ca_end)
		end = ca_end;

	if ((x = X509_new()) == NULL ||
	    X509_set_version(x, X509_VERSION_3) != 1 ||
	    certs_x509_serial(x) == -1 ||
	    certs_x509_validity(x, now, end) == -1 ||
	    X509_set_pubkey(x, m->key) != 1 ||
	    leaf_subject(x, host, h->len) == -1 ||
	    X509_set_issuer_name(x,
	    X509_get_subject_name(certs_ca_cert(m->ca))) != 1)
		goto fail;
	for (i = 0; i < LEAF_EXT__COUNT; i++)
		if (m->ext[i] != NULL && X509_add_ext(x, m->ext[i], -1) != 1)
			goto fail;
	if (certs_x509_add_ext(x, leaf_ext_san(host, h)) == -1)
		goto fail;
	if (certs_ca_sign(m->ca, x, err, errlen) == -1) {
		X509_free(x);
		return NULL;
	}
	/*
	 * Fill the extension cache now, while x is ours alone, so that the
	 * threads sharing it later only ever read it.
	 */
	(void)X509_check_purpose(x, -1, 0);
	ERR_clear_error();
	*not_after = end;
	return x;
 fail:
	certs_err_ssl(err, errlen, "cannot build a certificate for %s", host);
	X509_free(x);
	return NULL;
}

/* ------------------------------------------------------------------ */
/* API                                                                  */
/* ------------------------------------------------------------------ */

struct certs_minter *
certs_minter_new(struct certs_ca *ca, size_t cache_entries, char *err,
    size_t errlen)
{
	static const int	 ku[] = { 0 /* digitalSignature */ };
	struct certs_minter	*m = NULL;
	ASN1_OCTET_STRING	*id = NULL;
	const ASN1_OCTET_STRING	*ca_id;

	if (ca == NULL) {
		certs_err(err, errlen, "no CA given");
		return NULL;
	}
	if (cache_entries == 0 || cache_entries > CERTS_CACHE_MAX) {
		certs_err(err, errlen, "leaf cache size %zu is out of range "
		    "1..%u", cache_entries, CERTS_CACHE_MAX);
		return NULL;
	}
	if (time(NULL) >= certs_ca_not_after(ca)) {
		certs_err(err, errlen, "the CA certificate has expired");
		return NULL;
	}
	if ((m = calloc(1, sizeof(*m))) == NULL) {
		certs_err(err, errlen, "out of memory");
		return NULL;
	}
	if (pthread_mutex_init(&m->lock, NULL) != 0) {
		free(m);
		certs_err(err, errlen, "cannot create the leaf cache lock");
		return NULL;
	}
	TAILQ_INIT(&m->lru);
	m->cap = cache_entries;
	m->now = leaf_now;
	m->ca = certs_ca_ref(ca);

	if ((m->key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", LEAF_CURVE)) ==
	    NULL) {
		certs_err_ssl(err, errlen, "cannot generate the leaf key");
		goto fail;
	}
	if ((id = certs_key_id(m->key)) == NULL ||
	    (m->ext[LEAF_EXT_BASIC] = certs_ext_basic(0, -1)) == NULL ||
	    (m->ext[LEAF_EXT_KEY_USAGE] = certs_ext_key_usage(ku,
	    sizeof(ku) / sizeof(ku[0]))) == NULL ||
	    (m->ext[LEAF_EXT_EKU] = certs_ext_server_auth()) == NULL ||
	    (m->ext[LEAF_EXT_SKI] = certs_ext_ski(id)) == NULL) {
		certs_err_ssl(err, errlen, "cannot build leaf extensions");
		goto fail;
	}
	/*
	 * The AKI names the CA's SKI.  A CA without one (possible with a CA
	 * brought by the user) gets no AKI in its leaves: a key id that
	 * matches no SKI helps no verifier.
	 */
	ca_id = X509_get0_subject_key_id(certs_ca_cert(ca));
	if (ca_id != NULL &&
	    (m->ext[LEAF_EXT_AKI] = certs_ext_aki(ca_id)) == NULL) {
		certs_err_ssl(err, errlen, "cannot build leaf extensions");
		goto fail;
	}
	ASN1_OCTET_STRING_free(id);
	ERR_clear_error();
	return m;
 fail:
	ASN1_OCTET_STRING_free(id);
	certs_minter_free(m);
	return NULL;
}

void
certs_minter_free(struct certs_minter *m)
{
	struct leaf_entry	*e;
	int			 i;

	if (m == NULL)
		return;
	while ((e = TAILQ_FIRST(&m->lru)) != NULL) {
		leaf_unlink(m, e);
		leaf_entry_free(e);
	}
	for (i = 0; i < LEAF_EXT__COUNT; i++) {
		X509_EXTENSION_free(m->ext[i]);
		m->ext[i] = NULL;
	}
	EVP_PKEY_free(m->key);
	m->key = NULL;
	certs_ca_free(m->ca);
	m->ca = NULL;
	(void)pthread_mutex_destroy(&m->lock);
	free(m);
}

X509 *
certs_leaf_get(struct certs_minter *m, const char *host, char *err,
    size_t errlen)
{
	struct leaf_host	 h;
	struct leaf_entry	*e, *ne = NULL, *drop[2] = { NULL, NULL };
	X509			*x = NULL;
	time_t			 now, not_after;

	if (m == NULL || host == NULL) {
		certs_err(err, errlen, "no minter or no host given");
		return NULL;
	}
	if (leaf_host_parse(host, &h, err, errlen) == -1)
		return NULL;
	now = m->now();

	(void)pthread_mutex_lock(&m->lock);
	if ((e = leaf_find(m, host)) != NULL && leaf_fresh(e, now)) {
		TAILQ_REMOVE(&m->lru, e, lru);
		TAILQ_INSERT_HEAD(&m->lru, e, lru);
		x = e->cert;
		X509_up_ref(x);
		m->st.hits++;
		atomic_fetch_add_explicit(&certs_leaf_hits, 1,
		    memory_order_relaxed);
	} else {
		m->st.misses++;
		atomic_fetch_add_explicit(&certs_leaf_misses, 1,
		    memory_order_relaxed);
	}
	(void)pthread_mutex_unlock(&m->lock);
	if (x != NULL)
		return x;

	/* Sign outside the lock; the slow part. */
	if ((x = leaf_mint(m, host, &h, now, &not_after, err, errlen)) == NULL)
		return NULL;
	if ((ne = malloc(sizeof(*ne) + h.len + 1)) == NULL) {
		certs_err(err, errlen, "out of memory");
		X509_free(x);
		return NULL;
	}
	memcpy(ne->host, host, h.len + 1);
	ne->cert = x;		/* the cache's reference... */
	X509_up_ref(x);		/* ...and the caller's */
	ne->not_before = now - CERTS_BACKDATE_SECS;
	ne->not_after = not_after;

	(void)pthread_mutex_lock(&m->lock);
	m->st.mints++;
	if ((e = leaf_find(m, host)) != NULL && leaf_fresh(e, now)) {
		/* Another thread minted this host meanwhile: keep one. */
		drop[0] = ne;
		X509_free(x);
		x = e->cert;
		X509_up_ref(x);
		TAILQ_REMOVE(&m->lru, e, lru);
		TAILQ_INSERT_HEAD(&m->lru, e, lru);
		goto unlock;
	}
	if (e != NULL) {
		/* Stale: the new leaf replaces it. */
		leaf_unlink(m, e);
		drop[0] = e;
	}
	if (tsearch(ne->host, &m->root, leaf_cmp) == NULL) {
		/* Out of memory for a tree node: serve the leaf uncached. */
		drop[1] = ne;
		goto unlock;
	}
	TAILQ_INSERT_HEAD(&m->lru, ne, lru);
	m->st.entries++;
	/* One insert adds one entry, so at most one goes. */
	if (m->st.entries > m->cap) {
		drop[1] = TAILQ_LAST(&m->lru, leaf_lru);
		leaf_unlink(m, drop[1]);
		m->st.evictions++;
	}
 unlock:
	(void)pthread_mutex_unlock(&m->lock);
	leaf_entry_free(drop[0]);
	leaf_entry_free(drop[1]);
	return x;
}

EVP_PKEY *
certs_leaf_key(struct certs_minter *m)
{
	return m->key;
}

void
certs_minter_totals(uint64_t *hits, uint64_t *misses)
{
	*hits = atomic_load_explicit(&certs_leaf_hits, memory_order_relaxed);
	*misses = atomic_load_explicit(&certs_leaf_misses,
	    memory_order_relaxed);
}

void
certs_minter_stats(struct certs_minter *m, struct certs_minter_stats *st)
{
	(void)pthread_mutex_lock(&m->lock);
	*st = m->st;
	(void)pthread_mutex_unlock(&m->lock);
}

void
certs_minter_set_clock(struct certs_minter *m, time_t (*now_fn)(void))
{
	m->now = now_fn != NULL ? now_fn : leaf_now;
}
