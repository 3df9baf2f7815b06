/*
 * unixsuper.h - the supervisor of `moat run`'s workload's connect()
 * calls under --allow-unix-socket (unixsuper.c).
 */
#ifndef MOAT_UNIXSUPER_H
#define MOAT_UNIXSUPER_H

#include <sys/types.h>
#include <sys/un.h>

#include <stddef.h>

#define UNIXSUPER_PATHS_MAX	16	/* --allow-unix-socket */
#define UNIXSUPER_PATH_MAX	(sizeof(((struct sockaddr_un *)0)->sun_path))

/*
 * Canonical form of the Unix socket path in: realpath() of it, or, when it
 * does not exist (yet), realpath() of its directory and its last name.
 * Fills out (UNIXSUPER_PATH_MAX bytes) and returns 0; -1 with err set
 * when in is not absolute, too long, names no directory, or resolves to
 * something too long for a sockaddr_un.
 */
int	unixsuper_canon(const char *in, char *out, char *err, size_t errlen);

/*
 * The entry of allowed (n canonical paths) that the path the workload
 * gave (len bytes, maybe without NUL) stands for, once canonical: its
 * index, or -1 (relative, abstract, unnamed, or not allowed).  Resolves
 * the path: to decide only; connect through a descriptor of one
 * resolution (unixsuper.c) instead of resolving again.
 */
int	unixsuper_match(const char *path, size_t len,
	    char allowed[][UNIXSUPER_PATH_MAX], size_t n);

/*
 * Forks the supervisor and its workers: they answer the listener's
 * notifications (every connect() of the workload) by performing each
 * connect themselves, on the workload's socket, with their own copy of
 * the address, from the workload's user namespace userns (-1: ours); a
 * Unix address is connected only when the socket its path leads to
 * (resolved once) has one of allowed as canonical name, else it fails
 * with EPERM.  Returns its pid (kill and
 * reap it when the sandbox is gone), or -1 with err set.  Close listener
 * and userns after: then with the workers gone, connect() fails (ENOSYS).
 */
pid_t	unixsuper_start(int listener, int userns,
	    char allowed[][UNIXSUPER_PATH_MAX], size_t n, char *err,
	    size_t errlen);

#endif /* MOAT_UNIXSUPER_H */
