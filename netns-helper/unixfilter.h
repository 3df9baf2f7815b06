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

#endif /* MOAT_UNIXFILTER_H */
