/*
 * certs_paths.h - the file names of certs/ that programs without OpenSSL
 * need too (moat's sandbox mounts its bundle over the system's).
 */
#ifndef MOAT_CERTS_PATHS_H
#define MOAT_CERTS_PATHS_H

/* File names inside a CA directory. */
#define CERTS_CA_KEY_FILE	"ca.key"
#define CERTS_CA_CERT_FILE	"ca.crt"
/* The system's roots (Debian's ca-certificates). */
#define CERTS_SYSTEM_BUNDLE	"/etc/ssl/certs/ca-certificates.crt"

#endif
