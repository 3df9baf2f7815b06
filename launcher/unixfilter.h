/*
 * unixfilter.h - the seccomp filter on Unix sockets of `moat run`'s
 * workload (unixfilter.c).
 */
#ifndef MOAT_UNIXFILTER_H
#define MOAT_UNIXFILTER_H

/*
 * Installs, on the calling thread and all it starts, a filter under which
 * socket(AF_UNIX), socketpair(AF_UNIX, SOCK_DGRAM), io_uring_setup and
 * every system call of another ABI fail with EPERM.  The caller has set
 * no_new_privs (or holds CAP_SYS_ADMIN).  Returns 0, or -1 and errno.
 */
int	unixfilter_install(void);

/*
 * The filter with allowed paths (--allow-unix-socket): socket(AF_UNIX)
 * and socketpair(AF_UNIX) of types other than SOCK_STREAM and
 * SOCK_SEQPACKET, io_uring_setup, seccomp() asking for a listener and
 * other ABIs fail with EPERM; every
 * connect() waits for the supervisor holding the returned listener
 * (close-on-exec).  Returns the listener, or -1 and errno.
 */
int	unixfilter_install_notify(void);

#endif /* MOAT_UNIXFILTER_H */
