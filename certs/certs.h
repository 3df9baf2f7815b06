/*
 * certs.h - moat's certificate authority, leaf minting and trust bundles.
 *
 * What it is: the library moatd uses when a rule must see inside a TLS
 * tunnel.  moatd then presents to the sandbox a leaf certificate for the
 * host the client asked for, signed by moat's own CA; the sandbox trusts
 * that CA through a bundle moat writes for it.  This library creates the
 * CA (`moat ca init`), loads it, mints and caches leaves, and writes the
 * bundle.
 *
 * What it is not: TLS.  It opens no socket and builds no SSL_CTX; proxy/
 * does that with the X509 and EVP_PKEY it gets from here.
 *
 * The CA key stays behind this API: nothing here hands it out.  The only
 * things done with it are loading it, signing leaves with it and freeing
 * it, so the key could move to a process of its own without proxy/
 * noticing.  Leaves share one key, generated when a minter is created;
 * certs_leaf_key() lends it out, as a TLS server needs it.
 *
 * Errors: functions that can fail take (err, errlen) and write one line of
 * English there (NUL-terminated, truncated to errlen, no newline, naming
 * the file or host concerned).  err may be NULL when errlen is 0.  The
 * OpenSSL error queue of the calling thread is left empty.
 *
 * Threading: a loaded struct certs_ca is immutable and reference counted
 * (atomically).  A struct certs_minter may be used by any number of threads
 * at once.  Everything else is reentrant.
 */
#ifndef MOAT_CERTS_H
#define MOAT_CERTS_H

#include <stddef.h>
#include <stdint.h>

#include "certs/certs_paths.h"
#include "certs/ssldl.h"

#define CERTS_HOST_MAX		253	/* longest host certs_leaf_get takes */
#define CERTS_FINGERPRINT_LEN	96	/* "AB:CD:..." of SHA-256, with NUL */
#define CERTS_CACHE_MAX		(1024u * 1024)	/* largest leaf cache */

struct certs_ca;
struct certs_minter;

/* ------------------------------------------------------------------ */
/* The CA                                                               */
/* ------------------------------------------------------------------ */

/*
 * Creates a new CA in directory dir: dir/ca.key (ECDSA P-256 private key,
 * PEM PKCS#8, mode 0600) and dir/ca.crt (self-signed certificate, mode
 * 0644, CN "moat sandbox CA <8 hex digits>", O "moat", valid from one hour
 * ago for three years, CA:TRUE pathlen:0, keyCertSign and cRLSign).
 *
 * dir is created with mode 0700 if it does not exist; an existing dir
 * must be a directory not writable by group or others.  Never overwrites:
 * if either file exists, fails naming it.  Both files are written to
 * temporary files in dir and published with link(2) only when both are
 * complete, so no half-written CA is ever visible; on any failure
 * everything created is removed again (dir included, if created here).
 *
 * Returns 0, or -1 with err set.  Not safe to run twice on the same dir at
 * the same time (one of the two fails).
 */
int	certs_ca_init(const char *dir, char *err, size_t errlen);

/*
 * Loads a CA from cert_path (PEM certificate; the first one in the file)
 * and key_path (PEM private key, EC or RSA, unencrypted).  Checks that:
 * the key file is a regular file owned by the caller (or root) with no
 * permission for group or others (otherwise the message says
 * "chmod 600 FILE"); the key matches the certificate; the certificate is a
 * CA (basicConstraints CA:TRUE and keyUsage keyCertSign); it is valid now.
 *
 * Returns a CA holding one reference, which the caller releases with
 * certs_ca_free(), or NULL with err set.  The file bytes of the key are
 * wiped before return; the key lives only inside OpenSSL's EVP_PKEY.
 */
struct certs_ca	*certs_ca_load(const char *cert_path, const char *key_path,
		    char *err, size_t errlen);

/*
 * Releases the caller's reference to ca; the CA (certificate and key) is
 * freed when the last reference goes, minters holding one included.
 * NULL is accepted.
 */
void	certs_ca_free(struct certs_ca *ca);

/*
 * Returns the CA's certificate, borrowed: valid while the caller holds its
 * reference to ca.  Never NULL.  To keep it longer, X509_up_ref() it.
 */
X509	*certs_ca_cert(const struct certs_ca *ca);

/*
 * Writes the SHA-256 fingerprint of the CA certificate's DER encoding into
 * buf as upper-case hex pairs joined by ':' (95 characters and a NUL; len
 * must be at least CERTS_FINGERPRINT_LEN).  Returns 0, or -1 if len is too
 * small or hashing fails.
 */
int	certs_ca_fingerprint(const struct certs_ca *ca, char *buf, size_t len);

/* ------------------------------------------------------------------ */
/* Leaf certificates                                                    */
/* ------------------------------------------------------------------ */

struct certs_minter_stats {
	uint64_t	hits;		/* gets answered from the cache */
	uint64_t	misses;		/* gets that had to mint */
	uint64_t	mints;		/* leaves signed: one per miss (two
					   threads missing on one host both
					   sign; one result is kept) */
	uint64_t	evictions;	/* entries dropped for the bound */
	size_t		entries;	/* leaves in the cache now */
};

/*
 * Creates a minter signing with ca, caching at most cache_entries leaves
 * (1 .. CERTS_CACHE_MAX), least recently used dropped first.  Generates the
 * one ECDSA P-256 key that all its leaves share.  Takes a reference to ca,
 * so the caller may certs_ca_free() its own.
 *
 * Returns the minter, freed with certs_minter_free(), or NULL with err set.
 */
struct certs_minter	*certs_minter_new(struct certs_ca *ca,
			    size_t cache_entries, char *err, size_t errlen);

/*
 * Frees the minter: its cache (each certificate loses the cache's
 * reference; ones callers still hold stay valid), its leaf key, and its
 * reference to the CA.  No other thread may be using m.  NULL is accepted.
 */
void	certs_minter_free(struct certs_minter *m);

/*
 * Returns a leaf certificate for host, from the cache or freshly minted,
 * with a new reference that the caller releases with X509_free().
 *
 * host must be canonical, as policy_host_normalise() gives it: a lower-case
 * DNS name without a final dot (labels of 1..63 bytes of [a-z0-9_-], the
 * last not numeric), or an IP literal (IPv4 dotted decimal, IPv6 in RFC
 * 5952 text, no brackets).  Anything else (other characters, more than
 * CERTS_HOST_MAX bytes, a non-canonical address) is refused.
 *
 * The leaf: subject CN = host (its first 64 bytes), subjectAltName
 * dNSName or iPAddress = host, issuer = the CA's subject, a random 128-bit
 * serial, valid from an hour ago for 7 days (never past the CA's own end),
 * CA:FALSE, digitalSignature, serverAuth, SKI and AKI, signed by the CA
 * with SHA-256.  A cached leaf with less than a day left is minted anew.
 *
 * Thread-safe.  The cache lock is held only to look up and to insert;
 * signing happens outside it.  Returns NULL with err set on a refused host,
 * an expired CA or an OpenSSL failure.
 */
X509	*certs_leaf_get(struct certs_minter *m, const char *host, char *err,
	    size_t errlen);

/*
 * Returns the private key of every leaf m mints, borrowed: valid until
 * certs_minter_free(m).  Never NULL.  EVP_PKEY_up_ref() it to keep it.
 */
EVP_PKEY	*certs_leaf_key(struct certs_minter *m);

/* Cache hits and misses of every minter since start, whichever config
 * made it (a reload makes a new one): for metrics.  Thread-safe. */
void	certs_minter_totals(uint64_t *hits, uint64_t *misses);
/* Copies m's counters into *st (a consistent snapshot).  Thread-safe. */
void	certs_minter_stats(struct certs_minter *m,
	    struct certs_minter_stats *st);

/* ------------------------------------------------------------------ */
/* Trust bundles                                                        */
/* ------------------------------------------------------------------ */

/*
 * Writes to path the PEM trust bundle a sandbox is given: ca's
 * certificate first, then every certificate of system_bundle (NULL means
 * CERTS_SYSTEM_BUNDLE), then those of each file in extra_ca_files (a
 * NULL-terminated array; NULL means none).
 *
 * Every input file must consist of one or more PEM certificates (text
 * between blocks is ignored, blocks of any other type are errors); a file
 * that contains "PRIVATE KEY" anywhere is refused, and so is a missing
 * system bundle.  Certificates are written re-encoded, never copied as
 * bytes, and the result is checked once more for a private key before it
 * is written.
 *
 * The file is written to a temporary file beside path and renamed over it
 * (mode 0644), so readers see the old bundle or the new one, never a part.
 * Returns the number of certificates written, or -1 with err set (and path
 * untouched).
 */
int	certs_write_bundle(const char *path, const struct certs_ca *ca,
	    char *const *extra_ca_files, const char *system_bundle, char *err,
	    size_t errlen);

/*
 * What moatd hands a sandbox to trust: ca's certificate, then the
 * certificates of each extra_ca_files (NULL-terminated, may be NULL),
 * re-encoded, as one NUL-terminated PEM text (free() it).  The system's
 * roots are not included: the sandbox's side adds its own
 * (certs_bundle_from_pem).  NULL with err set on failure.
 */
char	*certs_trust_pem(const struct certs_ca *ca, char *const *extra_ca_files,
	    size_t *len, char *err, size_t errlen);

/*
 * A file of certificates the sandbox's user named (where a variable such
 * as SSL_CERT_FILE pointed), for certs_bundle_from_pem() to merge.
 */
struct certs_extra {
	const char	*name;		/* in messages: "SSL_CERT_FILE=/path" */
	const char	*pem;		/* its text, len bytes */
	size_t		 len;
	char		 why[256];	/* out: "" if merged, else why not */
};

/*
 * The trust bundle of a sandbox, in memory: the certificates of pem
 * (moatd's certs_trust_pem()), then those of system_bundle (NULL means
 * CERTS_SYSTEM_BUNDLE), then those of each of the nextra extra (may be
 * NULL when nextra is 0), each certificate once: one equal to an earlier
 * one is left out.  pem and the system bundle follow the rules of
 * certs_write_bundle(); an extra that breaks them is left out whole, with
 * the reason in its why, and the rest is built all the same.  With store
 * not NULL, the same certificates as a trust store (certs_trust_store())
 * go to *store (free() it; *storelen bytes), from the one parse.
 * Returns a NUL-terminated text (free() it) or NULL with err set (and
 * no store).
 */
char	*certs_bundle_from_pem(const char *pem, size_t pemlen,
	    const char *system_bundle, struct certs_extra *extra,
	    size_t nextra, size_t *len, unsigned char **store,
	    size_t *storelen, char *err, size_t errlen);

/*
 * The certificates of pem (a bundle from certs_bundle_from_pem()) as a
 * PKCS12 trust store, what Java reads (javax.net.ssl.trustStore, its
 * cacerts): one certificate bag each, alias "moat-N", marked as a trusted
 * certificate entry for any use (Java's trusted key usage attribute);
 * nothing encrypted and no MAC, so that it opens with any password or
 * none.  It never holds a key.  Returns the DER bytes (*len of them;
 * free() them) or NULL with err set.
 */
unsigned char	*certs_trust_store(const char *pem, size_t pemlen,
		    size_t *len, char *err, size_t errlen);

/*
 * Writes len bytes of data to a temporary file beside path (mode 0644)
 * and renames it over path, so readers see the old file or the new one,
 * never a part.  Returns 0, or -1 with err set (path untouched).
 */
int	certs_publish(const char *path, const void *data, size_t len,
	    char *err, size_t errlen);

/*
 * The same bundle from files, for a moatd that is not running (`moat ca
 * bundle`): the certificates of each of files (NULL-terminated, at least
 * one: moatd's CA certificate, then tls.extra_ca_files), then those of
 * system_bundle (NULL means CERTS_SYSTEM_BUNDLE), in moatd's order, each
 * certificate once, under the rules of certs_write_bundle().  Returns a
 * NUL-terminated text (free() it) or NULL with err set.
 */
char	*certs_bundle_from_files(char *const *files, const char *system_bundle,
	    size_t *len, char *err, size_t errlen);

/* ------------------------------------------------------------------ */
/* The `moat ca` subcommand                                             */
/* ------------------------------------------------------------------ */

/*
 * Runs `moat ca ...`; argv[0] is "ca".  `moat ca init DIR` creates a CA
 * and prints the files written and the certificate's SHA-256 fingerprint;
 * `moat ca --help` prints usage on stdout.  Messages go to stdout (result)
 * and stderr (errors, usage after a mistake).
 *
 * Returns the process exit status: 0 success, 1 failure (message on
 * stderr), 2 usage error (usage on stderr).
 */
int	certs_cmd_ca(int argc, char *argv[]);

#endif
