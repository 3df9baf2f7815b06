/*
 * unixfilter.c - the seccomp filter `moat run` puts its workload under:
 * no Unix sockets of its own making (moat(1), "Unix sockets").  Apart
 * from sbx_init.c so that the unit tests can run it in a child.
 */
#include "config.h"

#include <sys/socket.h>
#include <sys/syscall.h>

#include <errno.h>
#include <stddef.h>
#include <unistd.h>

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#include "launcher/unixfilter.h"

#if defined(__x86_64__)
#define UNIXFILTER_AUDIT_ARCH	AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define UNIXFILTER_AUDIT_ARCH	AUDIT_ARCH_AARCH64
#else
#error "moat run's seccomp filter knows x86_64 and aarch64 only"
#endif
#ifndef __X32_SYSCALL_BIT
#define __X32_SYSCALL_BIT	0x40000000
#endif
#define UNIXFILTER_ARG0	(offsetof(struct seccomp_data, args[0]))
#define UNIXFILTER_ARG1	(offsetof(struct seccomp_data, args[1]))
#define UNIXFILTER_EPERM	(SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA))

/*
 * The filter (item 12 of the security issue): no socket(AF_UNIX), so a
 * Unix socket of the host (a relay of the same user: tmux, an ssh
 * ControlMaster, socat) cannot carry traffic past moatd.  A filter cannot see the path connect() is given, hence the
 * whole family; socketpair(AF_UNIX) stays (its two ends reach only each
 * other) but for SOCK_DGRAM, whose ends may still sendto() a path.
 * io_uring is refused (IORING_OP_SOCKET makes sockets seccomp never
 * sees); so is every call of another ABI (x32, i386: socketcall(2) hides
 * its arguments).  Each refusal is EPERM.  Arguments are ints: the low
 * 32 bits are compared (little-endian).
 */
int
unixfilter_install(void)
{
	struct sock_filter	f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
		    offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, UNIXFILTER_AUDIT_ARCH, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, UNIXFILTER_EPERM),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
		    offsetof(struct seccomp_data, nr)),
#if defined(__x86_64__)
		BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, __X32_SYSCALL_BIT, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, UNIXFILTER_EPERM),
#endif
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, UNIXFILTER_EPERM),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_socket, 0, 2),
		/* socket(AF_UNIX, ...): to the EPERM at the end */
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, UNIXFILTER_ARG0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_UNIX, 5, 6),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_socketpair, 0, 5),
		/* socketpair(AF_UNIX, type, ...) */
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, UNIXFILTER_ARG0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_UNIX, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, UNIXFILTER_ARG1),
		/* any of bits 0, 2, 3 of the type: not SOCK_DGRAM (2) */
		BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, 0xf & ~SOCK_DGRAM, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, UNIXFILTER_EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog	prog = {
		.len = (unsigned short)(sizeof(f) / sizeof(f[0])),
		.filter = f,
	};

	return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
}

/*
 * The filter with --allow-unix-socket: as above, but socket(AF_UNIX) of
 * type SOCK_STREAM or SOCK_SEQPACKET is allowed (their send calls ignore
 * or refuse a destination, so connect() is their only way to a peer),
 * other Unix types still fail, and every connect() goes to the
 * supervisor (unixsuper.c), which performs it itself on the address it
 * copied: a filter sees neither the socket's family nor the address.
 * seccomp() with SECCOMP_FILTER_FLAG_NEW_LISTENER fails with EPERM.
 */
int
unixfilter_install_notify(void)
{
	struct sock_filter	f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
		    offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, UNIXFILTER_AUDIT_ARCH, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, UNIXFILTER_EPERM),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
		    offsetof(struct seccomp_data, nr)),
#if defined(__x86_64__)
		BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, __X32_SYSCALL_BIT, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, UNIXFILTER_EPERM),
#endif
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, UNIXFILTER_EPERM),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_connect, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
		/*
		 * A filter of the workload's own that notifies would take
		 * the connect() first (the newest filter wins a tie) and
		 * could answer CONTINUE: no listener for the workload.  The
		 * kernel refuses a second listener in a chain (EBUSY) too;
		 * this does not depend on it.
		 */
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_seccomp, 0, 4),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, UNIXFILTER_ARG1),
		BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K,
		    SECCOMP_FILTER_FLAG_NEW_LISTENER, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, UNIXFILTER_EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_socket, 1, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_socketpair, 0, 7),
		/* socket or socketpair (AF_UNIX, type): stream, seqpacket */
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, UNIXFILTER_ARG0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_UNIX, 0, 5),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, UNIXFILTER_ARG1),
		BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0xf),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SOCK_STREAM, 2, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SOCK_SEQPACKET, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, UNIXFILTER_EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog	prog = {
		.len = (unsigned short)(sizeof(f) / sizeof(f[0])),
		.filter = f,
	};

	return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
	    SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
}
