/*
 * tls.c - the TLS contexts of interception.
 *
 * Server side (towards the sandbox): TLS 1.2+, ALPN http/1.1 only (moat
 * speaks HTTP/1.1 to both sides), a leaf per host from certs/, all leaves
 * sharing one key.  Client side (towards upstreams): TLS 1.2+, the
 * system's roots plus "tls.upstream_ca_files", peer verification with the
 * host name or address checked by OpenSSL, SNI for names, ALPN http/1.1,
 * and a small cache of sessions per host:port so a new intercepted
 * connection can resume instead of paying a full handshake upstream.
 *
 * Not here: the CA key (certs/ keeps it), the byte moving (io.c).
 */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "certs/certs.h"
#include "certs/ssldl.h"
#include "proxy/log.h"
#include "proxy/tls.h"

struct tls_sess {
	char			*key;		/* "host:port" */
	SSL_SESSION		*sess;
	struct tls_sess		*next;
};

struct tls {
	atomic_int		 refcnt;
	struct certs_ca		*ca;
	struct certs_minter	*minter;
	SSL_CTX			*server;
	SSL_CTX			*client;
	pthread_mutex_t		 mu;		/* sessions */
	struct tls_sess		*sessions;
	size_t			 nsessions;
	char			*trust_pem;	/* CA + extra_ca_files */
	size_t			 trust_len;
	char			*bundle;	/* trust_pem + the system's
						   roots, built on first use
						   (the admin thread's) */
	size_t			 bundle_len;
	unsigned char		*store;		/* bundle as PKCS12, built
						   with it */
	size_t			 store_len;
};

static int	tls_ex_key = -1;	/* SSL ex_data: "host:port" (client) */
static int	tls_ex_self = -1;	/* SSL ex_data: struct tls * */
static pthread_once_t tls_once = PTHREAD_ONCE_INIT;

static void	tls_init_once(void);
static int	tls_alpn_select(SSL *ssl, const unsigned char **out,
		    unsigned char *outlen, const unsigned char *in,
		    unsigned int inlen, void *arg);
static int	tls_new_session(SSL *ssl, SSL_SESSION *sess);
static void	tls_ex_free(void *parent, void *ptr, CRYPTO_EX_DATA *ad,
		    int idx, long argl, void *argp);

static void
tls_init_once(void)
{
	tls_ex_key = SSL_get_ex_new_index(0, NULL, NULL, NULL, tls_ex_free);
	tls_ex_self = SSL_get_ex_new_index(0, NULL, NULL, NULL, NULL);
}

static void
tls_ex_free(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx, long argl,
    void *argp)
{
	free(ptr);
}

/* http/1.1 or nothing: a client that offers only h2 gets no ALPN, and
 * then speaks HTTP/1.1 by default or fails clearly. */
static int
tls_alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen,
    const unsigned char *in, unsigned int inlen, void *arg)
{
	unsigned int	i = 0;

	while (i < inlen) {
		unsigned int l = in[i];

		if (i + 1 + l > inlen)
			break;
		if (l == LIT_LEN("http/1.1") &&
		    MEMCMP_LIT(in + i + 1, "http/1.1") == 0) {
			*out = in + i + 1;
			*outlen = LIT_LEN("http/1.1");
			return SSL_TLSEXT_ERR_OK;
		}
		i += 1 + l;
	}
	return SSL_TLSEXT_ERR_NOACK;
}

struct tls *
tls_new(const struct moat_config *cfg, char *err, size_t errlen)
{
	struct tls	*t;
	size_t		 i;
	static const unsigned char alpn[] = "\x08http/1.1";

	err[0] = '\0';
	if (cfg->tls.ca_cert == NULL)
		return NULL;
	/* The first config with a CA loads OpenSSL (certs/ssldl.c). */
	if (ssldl_load(err, errlen) == -1)
		return NULL;
	pthread_once(&tls_once, tls_init_once);
	if ((t = calloc(1, sizeof(*t))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	atomic_init(&t->refcnt, 1);
	pthread_mutex_init(&t->mu, NULL);
	if ((t->ca = certs_ca_load(cfg->tls.ca_cert, cfg->tls.ca_key, err,
	    errlen)) == NULL)
		goto fail;
	if ((t->trust_pem = certs_trust_pem(t->ca, cfg->tls.extra_ca_files,
	    &t->trust_len, err, errlen)) == NULL)
		goto fail;
	if ((t->minter = certs_minter_new(t->ca, cfg->tls.leaf_cache_entries ?
	    cfg->tls.leaf_cache_entries : 1024, err, errlen)) == NULL)
		goto fail;

	if ((t->server = SSL_CTX_new(TLS_server_method())) == NULL)
		goto ossl;
	SSL_CTX_set_min_proto_version(t->server, TLS1_2_VERSION);
	SSL_CTX_set_options(t->server, SSL_OP_NO_RENEGOTIATION |
	    SSL_OP_CIPHER_SERVER_PREFERENCE);
	SSL_CTX_set_mode(t->server, SSL_MODE_ENABLE_PARTIAL_WRITE |
	    SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS);
	/* Read what the socket has in one recv(), not header then body. */
	SSL_CTX_set_read_ahead(t->server, 1);
	SSL_CTX_set_alpn_select_cb(t->server, tls_alpn_select, NULL);
	/* Tickets let a sandbox client resume: cheaper for both. */
	SSL_CTX_set_session_cache_mode(t->server, SSL_SESS_CACHE_SERVER);

	if ((t->client = SSL_CTX_new(TLS_client_method())) == NULL)
		goto ossl;
	SSL_CTX_set_min_proto_version(t->client, TLS1_2_VERSION);
	SSL_CTX_set_options(t->client, SSL_OP_NO_RENEGOTIATION);
	SSL_CTX_set_mode(t->client, SSL_MODE_ENABLE_PARTIAL_WRITE |
	    SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS);
	SSL_CTX_set_read_ahead(t->client, 1);
	SSL_CTX_set_verify(t->client, SSL_VERIFY_PEER, NULL);
	if (SSL_CTX_set_default_verify_paths(t->client) != 1)
		goto ossl;
	for (i = 0; cfg->tls.upstream_ca_files != NULL &&
	    cfg->tls.upstream_ca_files[i] != NULL; i++) {
		if (SSL_CTX_load_verify_locations(t->client,
		    cfg->tls.upstream_ca_files[i], NULL) != 1) {
			snprintf(err, errlen, "tls.upstream_ca_files: %s: not "
			    "a readable PEM file of CA certificates",
			    cfg->tls.upstream_ca_files[i]);
			goto fail;
		}
	}
	if (SSL_CTX_set_alpn_protos(t->client, alpn, sizeof(alpn) - 1) != 0)
		goto ossl;
	SSL_CTX_set_session_cache_mode(t->client, SSL_SESS_CACHE_CLIENT |
	    SSL_SESS_CACHE_NO_INTERNAL_STORE);
	SSL_CTX_sess_set_new_cb(t->client, tls_new_session);
	return t;
 ossl:
	snprintf(err, errlen, "OpenSSL: %s",
	    ERR_reason_error_string(ERR_get_error()));
 fail:
	tls_unref(t);
	return NULL;
}

struct tls *
tls_ref(struct tls *t)
{
	atomic_fetch_add(&t->refcnt, 1);
	return t;
}

void
tls_unref(struct tls *t)
{
	struct tls_sess	*s, *n;

	if (t == NULL || atomic_fetch_sub(&t->refcnt, 1) != 1)
		return;
	for (s = t->sessions; s != NULL; s = n) {
		n = s->next;
		SSL_SESSION_free(s->sess);
		free(s->key);
		free(s);
	}
	SSL_CTX_free(t->server);
	SSL_CTX_free(t->client);
	certs_minter_free(t->minter);
	certs_ca_free(t->ca);
	free(t->trust_pem);
	free(t->bundle);
	free(t->store);
	pthread_mutex_destroy(&t->mu);
	free(t);
}

const char *
tls_trust_pem(const struct tls *t, size_t *len)
{
	*len = t->trust_len;
	return t->trust_pem;
}

const char *
tls_trust_bundle(struct tls *t, size_t *len, char *err, size_t errlen)
{
	/* The store with it: parsing the certificates is what costs. */
	if (t->bundle == NULL && (t->bundle = certs_bundle_from_pem(
	    t->trust_pem, t->trust_len, NULL, NULL, 0, &t->bundle_len,
	    &t->store, &t->store_len, err, errlen)) == NULL)
		return NULL;
	*len = t->bundle_len;
	return t->bundle;
}

const unsigned char *
tls_trust_store(struct tls *t, size_t *len, char *err, size_t errlen)
{
	size_t	plen;

	if (tls_trust_bundle(t, &plen, err, errlen) == NULL)
		return NULL;
	*len = t->store_len;
	return t->store;
}

int
tls_publish(struct tls *t, const char *dir, char *err, size_t errlen)
{
	const unsigned char	*store;
	const char		*pem;
	char			 path[PATH_MAX];
	size_t			 plen, slen;

	if (mkdir(dir, 0755) == -1 && errno != EEXIST) {
		snprintf(err, errlen, "%s: %s", dir, strerror(errno));
		return -1;
	}
	if ((pem = tls_trust_bundle(t, &plen, err, errlen)) == NULL ||
	    (store = tls_trust_store(t, &slen, err, errlen)) == NULL)
		return -1;
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir,
	    TLS_TRUST_PEM) >= sizeof(path) ||
	    certs_publish(path, pem, plen, err, errlen) == -1)
		goto fail;
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir,
	    TLS_TRUST_P12) >= sizeof(path) ||
	    certs_publish(path, store, slen, err, errlen) == -1)
		goto fail;
	return 0;
 fail:
	if (err[0] == '\0')
		snprintf(err, errlen, "%s: path too long", dir);
	return -1;
}

SSL *
tls_server_ssl(struct tls *t, const char *host, char *err, size_t errlen)
{
	X509	*leaf;
	SSL	*ssl;

	if ((leaf = certs_leaf_get(t->minter, host, err, errlen)) == NULL)
		return NULL;
	if ((ssl = SSL_new(t->server)) == NULL ||
	    SSL_use_certificate(ssl, leaf) != 1 ||
	    SSL_use_PrivateKey(ssl, certs_leaf_key(t->minter)) != 1) {
		snprintf(err, errlen, "OpenSSL: %s",
		    ERR_reason_error_string(ERR_get_error()));
		SSL_free(ssl);
		X509_free(leaf);
		return NULL;
	}
	X509_free(leaf);	/* the SSL holds its own reference */
	SSL_set_accept_state(ssl);
	return ssl;
}

SSL *
tls_client_ssl(struct tls *t, const char *host, int is_addr, uint16_t port,
    char *err, size_t errlen)
{
	struct tls_sess	*s;
	SSL		*ssl;
	char		*key;
	size_t		 klen = strlen(host) + 8;

	if ((ssl = SSL_new(t->client)) == NULL)
		goto ossl;
	if (is_addr) {
		if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host) !=
		    1)
			goto ossl;
	} else if (SSL_set_tlsext_host_name(ssl, host) != 1 ||
	    SSL_set1_host(ssl, host) != 1)
		goto ossl;
	if ((key = malloc(klen)) == NULL)
		goto ossl;
	snprintf(key, klen, "%s:%u", host, port);
	SSL_set_ex_data(ssl, tls_ex_key, key);
	SSL_set_ex_data(ssl, tls_ex_self, t);
	pthread_mutex_lock(&t->mu);
	for (s = t->sessions; s != NULL; s = s->next)
		if (strcmp(s->key, key) == 0) {
			SSL_set_session(ssl, s->sess);
			break;
		}
	pthread_mutex_unlock(&t->mu);
	SSL_set_connect_state(ssl);
	return ssl;
 ossl:
	snprintf(err, errlen, "OpenSSL: %s",
	    ERR_reason_error_string(ERR_get_error()));
	SSL_free(ssl);
	return NULL;
}

/*
 * A session (or TLS 1.3 ticket) arrived from an upstream: keep the latest
 * per host:port.  Returns 1: the cache owns the reference.
 */
static int
tls_new_session(SSL *ssl, SSL_SESSION *sess)
{
	struct tls	*t = SSL_get_ex_data(ssl, tls_ex_self);
	const char	*key = SSL_get_ex_data(ssl, tls_ex_key);
	struct tls_sess	*s, **pp;

	if (t == NULL || key == NULL)
		return 0;
	pthread_mutex_lock(&t->mu);
	for (s = t->sessions; s != NULL; s = s->next)
		if (strcmp(s->key, key) == 0)
			break;
	if (s == NULL) {
		if (t->nsessions >= TLS_SESSION_CACHE_MAX) {
			/* Full: drop the last one of the list (the oldest). */
			for (pp = &t->sessions; (*pp)->next != NULL;
			    pp = &(*pp)->next)
				;
			SSL_SESSION_free((*pp)->sess);
			free((*pp)->key);
			free(*pp);
			*pp = NULL;
			t->nsessions--;
		}
		if ((s = calloc(1, sizeof(*s))) == NULL ||
		    (s->key = strdup(key)) == NULL) {
			free(s);
			pthread_mutex_unlock(&t->mu);
			return 0;
		}
		s->next = t->sessions;
		t->sessions = s;
		t->nsessions++;
	} else
		SSL_SESSION_free(s->sess);
	s->sess = sess;
	pthread_mutex_unlock(&t->mu);
	return 1;
}

char *
tls_error_text(SSL *ssl, char *buf, size_t len)
{
	long		 v = ssl ? SSL_get_verify_result(ssl) : X509_V_OK;
	unsigned long	 e;

	if (v != X509_V_OK) {
		snprintf(buf, len, "certificate verify failed: %s",
		    X509_verify_cert_error_string(v));
		return buf;
	}
	e = ERR_peek_last_error();
	snprintf(buf, len, "%s", e ? ERR_reason_error_string(e) :
	    "handshake failed");
	return buf;
}
