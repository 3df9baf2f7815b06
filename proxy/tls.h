/*
 * tls.h - moatd's TLS contexts for interception: the server side a
 * sandbox talks to (leaves minted by certs/ for the host it asked for,
 * ALPN http/1.1 only) and the client side moatd dials upstreams with
 * (system roots plus configured CA files, SNI, hostname verification,
 * session resumption).
 *
 * One struct tls per config generation with a CA; refcounted, shared by
 * all workers (OpenSSL contexts are thread-safe; the minter locks its
 * cache).  The CA key stays inside certs/.
 */
#ifndef MOAT_TLS_H
#define MOAT_TLS_H

#include <stddef.h>
#include <stdint.h>

#include "certs/ssldl.h"
#include "policy/policy.h"

struct tls;

#define TLS_SESSION_CACHE_MAX	4096	/* upstream sessions kept */

/*
 * Builds the contexts for cfg's "tls" section.  Returns NULL and an empty
 * err if cfg has no CA (no interception), NULL and a message on failure,
 * or the contexts with one reference.
 */
struct tls	*tls_new(const struct moat_config *cfg, char *err, size_t errlen);
struct tls	*tls_ref(struct tls *t);
/* Drops a reference; frees at zero.  NULL is ok.  Thread-safe. */
void		 tls_unref(struct tls *t);

/*
 * What a sandbox must trust (PEM: moat's CA certificate, then
 * tls.extra_ca_files), for its trust bundle.  Never a key.
 */
const char	*tls_trust_pem(const struct tls *t, size_t *len);
/*
 * What a sandbox mounts as its trust bundle: tls_trust_pem() and the
 * system's roots (certs_bundle_from_pem(): re-encoded, no private key),
 * built on the first call and kept.  Only from the thread that serves the
 * admin socket.  NULL with err set if it cannot be built.
 */
const char	*tls_trust_bundle(struct tls *t, size_t *len, char *err,
		    size_t errlen);
/*
 * tls_trust_bundle() as a PKCS12 trust store, for Java
 * (certs_trust_store()), built with it and kept; likewise only from the
 * admin socket's thread.  NULL with err set if it cannot be built.
 */
const unsigned char *tls_trust_store(struct tls *t, size_t *len, char *err,
		    size_t errlen);

/* The files tls_publish() writes, in tls.trust_dir. */
#define TLS_TRUST_PEM	"ca-bundle.crt"
#define TLS_TRUST_P12	"ca-bundle.p12"
/*
 * Writes tls_trust_bundle() to dir/ca-bundle.crt and tls_trust_store() to
 * dir/ca-bundle.p12 (each mode 0644, replaced whole: a reader sees the
 * old file or the new one), making dir (0755) if it is missing: what the
 * clients of moatd's own listeners trust (tls.trust_dir).  Likewise only
 * from the admin socket's thread.  0, or -1 with err set.
 */
int		tls_publish(struct tls *t, const char *dir, char *err,
		    size_t errlen);

/*
 * A server-side SSL for a client that asked for host (canonical name or
 * address text): the leaf for host (from the cache or minted), the shared
 * leaf key, accept state.  Returns NULL with a message in err.
 */
SSL		*tls_server_ssl(struct tls *t, const char *host, char *err,
		    size_t errlen);
/*
 * A client-side SSL towards host: SNI (names only), verification against
 * the trusted roots with the host name or address checked, ALPN
 * http/1.1, and a cached session for host:port when there is one.
 * Returns NULL with a message in err.
 */
SSL		*tls_client_ssl(struct tls *t, const char *host, int is_addr,
		    uint16_t port, char *err, size_t errlen);
/*
 * A short text for why an upstream handshake failed: the verification
 * result if there was one ("certificate verify failed: unable to get
 * local issuer certificate"), else OpenSSL's error.  Into buf; returns buf.
 */
char		*tls_error_text(SSL *ssl, char *buf, size_t len);

#endif /* MOAT_TLS_H */
