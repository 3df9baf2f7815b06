/*
 * launcher.h - the moat command line's private interfaces: `moat run`
 * (run.c), `moat attach` (attach.c) and the modules they share: the
 * options and registration config both take (runconf.c), the client of
 * moat-netns (helper_client.c), the client of moatd's admin socket
 * (admin_client.c), the sandbox's namespaces and init (sbx_init.c) and the
 * terminal relay (pty.c).
 *
 * Errors: functions that can fail take a char buffer (err, errlen) and
 * write one human-readable sentence into it, without a program prefix
 * or newline; the command prints it.  Nothing here calls exit() but the
 * children between fork and exec.
 */
#ifndef MOAT_MOAT_INT_H
#define MOAT_MOAT_INT_H

#include <sys/types.h>
#include <sys/socket.h>

#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "policy/policy.h"
#include "proto/helper_proto.h"

#define MOAT_ERR_MAX		512	/* one error sentence, bytes */
#define MOAT_EXIT_LAUNCH	125	/* moat run itself failed */
#define MOAT_EXIT_CANNOT_EXEC	126	/* the command could not run */
#define MOAT_EXIT_NOT_FOUND	127	/* the command was not found */
#define MOAT_STEP_TIMEOUT_MS	10000	/* one set-up step, at most */
#define MOAT_STOP_TIMEOUT_MS	5000	/* a child asked to stop, at most */
#define MOAT_LISTENERS_MAX	NSH_SOCKETS_MAX

/* The entry points of the subcommands (argv[0] is the subcommand). */
int	run_main(int argc, char *argv[]);
int	attach_main(int argc, char *argv[]);
int	status_main(int argc, char *argv[]);
int	podinit_main(int argc, char *argv[]);

/* --- runconf.c: options shared by run and attach ------------------- */

enum runconf_mode {
	RUNCONF_HELD = 0,	/* held sockets: lo only (default) */
	RUNCONF_VETH		/* veth gateway (root) */
};

/* Long-option codes of the shared options (above any short option). */
enum runconf_opt {
	RUNCONF_OPT_POLICY = 256,
	RUNCONF_OPT_ALLOW,
	RUNCONF_OPT_ALLOW_PRIVATE,
	RUNCONF_OPT_MODE,
	RUNCONF_OPT_MOATD,
	RUNCONF_OPT_NAME,
	RUNCONF_OPT_HTTP_PORT,
	RUNCONF_OPT_SOCKS_PORT,
	RUNCONF_OPT_DNS_PORT,
	RUNCONF_OPT_TRANSPARENT_PORT,
	RUNCONF_OPT_AUDIT_ONLY,
	RUNCONF_OPT__END
};

/* getopt_long entries of the shared options, to copy into a command's. */
#define RUNCONF_LONGOPTS \
	{ "policy", required_argument, NULL, RUNCONF_OPT_POLICY }, \
	{ "allow", required_argument, NULL, RUNCONF_OPT_ALLOW }, \
	{ "allow-private", required_argument, NULL, \
	    RUNCONF_OPT_ALLOW_PRIVATE }, \
	{ "mode", required_argument, NULL, RUNCONF_OPT_MODE }, \
	{ "moatd", required_argument, NULL, RUNCONF_OPT_MOATD }, \
	{ "name", required_argument, NULL, RUNCONF_OPT_NAME }, \
	{ "http-port", required_argument, NULL, RUNCONF_OPT_HTTP_PORT }, \
	{ "socks-port", required_argument, NULL, RUNCONF_OPT_SOCKS_PORT }, \
	{ "dns-port", required_argument, NULL, RUNCONF_OPT_DNS_PORT }, \
	{ "transparent-port", required_argument, NULL, \
	    RUNCONF_OPT_TRANSPARENT_PORT }, \
	{ "audit-only", no_argument, NULL, RUNCONF_OPT_AUDIT_ONLY }

/* One listening socket of a sandbox, as registered with moatd. */
struct runconf_listener {
	const char		*proto;	/* "http+socks5", "dns-udp", ... */
	enum nsh_family		 family;
	enum nsh_socktype	 type;
	uint16_t		 port;
};

struct runconf {
	const char	*cmd;		/* "moat run", for messages */
	const char	*policy_file;	/* --policy, or NULL */
	const char	**allow;	/* --allow values (borrowed argv) */
	size_t		 nallow;
	const char	**allow_private;
	size_t		 nallow_private;
	enum runconf_mode mode;
	const char	*moatd;		/* --moatd ADDR, or NULL */
	const char	*moatd_path;	/* its socket path (ADDR without
					   "unix:"), or NULL */
	char		 name[NSH_TEXT_MAX]; /* the sandbox's name */
	uint16_t	 http_port, socks_port, dns_port, transparent_port;
	json_t		*config;	/* {"policy": ...} to register; owned */
	json_t		*tls;		/* --policy FILE's "tls", or NULL; owned
					   (a private moatd's; a running
					   moatd has its own) */
	json_t		*geoip;		/* --policy FILE's "geoip", or NULL;
					   owned */
	json_t		*trust;		/* the register request's trust keys
					   (runconf_trust()), or NULL; owned */
	json_t		*trust_warn;	/* the CA files the caller named that
					   could not be read, said once moatd
					   intercepts; owned */
	int		 audit_only;	/* --audit-only (1), else the
					   --policy FILE's "audit_only" (1,
					   0), or -1: not given */
};

/* Zeroes *rc and sets the defaults. */
void	runconf_init(struct runconf *rc, const char *cmd);

/*
 * Handles one shared option (ch is a RUNCONF_OPT_*).  Returns 0, or -1
 * after printing what is wrong with arg.
 */
int	runconf_option(struct runconf *rc, int ch, const char *arg);

/*
 * Builds rc->config from --policy, --allow and --allow-private (or the
 * built-in default config's policy when neither --policy nor --allow is
 * given) and validates it with the policy library, printing every
 * diagnostic.  Sets the default name ("run-PID") if none was given.
 * Returns 0, or -1 after printing why.
 */
int	runconf_finish(struct runconf *rc);

/*
 * Fills out[] with the listeners of rc's mode (at most max) and returns
 * how many.
 */
size_t	runconf_listeners(const struct runconf *rc,
	    struct runconf_listener *out, size_t max);

/* Releases what rc owns.  NULL-safe on its fields; repeatable. */
void	runconf_free(struct runconf *rc);
/*
 * A `moat run --policy` file's text as moatd's config loader must see it:
 * "listen": [] when it has neither "listen" nor "admin", and, with
 * tls_standin, a stand-in "tls" (moatd's CA) when it has none; inserted
 * before the final brace, so every line and column before it stays the
 * file's own.  root is text parsed.  Returns the new NUL-terminated text
 * (free() it) with *outlen, or NULL: with *outlen 0 when nothing is
 * needed, (size_t)-1 when memory ran out.
 */
char	*runconf_standins(const json_t *root, const char *text, size_t len,
	    bool tls_standin, size_t *outlen);

#define RUNCONF_UNUSED_MAX	12	/* top-level keys moat run may skip */

/* Room for runconf_unused()'s answer. */
struct runconf_unused {
	struct policy_unused_key	keys[RUNCONF_UNUSED_MAX + 1];
	char				why[RUNCONF_UNUSED_MAX][200];
};

/*
 * The top-level keys of a --policy file (root, parsed) that cmd ("moat
 * run", ...) takes nothing from, each with what to do instead ("give
 * --audit FILE"), into u->keys (ended by a NULL key) for
 * policy_load_opts.unused.  moatd: a running moatd serves the sandbox
 * (--moatd, moat attach), whose own CA, audit, resolver and limits
 * apply; else a private one, which takes the file's "tls".  Only keys the
 * file has: a stand-in runconf_standins() adds is never named.
 */
void	runconf_unused(const json_t *root, const char *cmd, bool moatd,
	    struct runconf_unused *u);

/*
 * The extras the sandbox's init gets (sandbox_go()) from moatd's register
 * answer: the variables moatd reads secrets from, to remove; the files
 * to hide (absolute paths); each placeholder as VAR=PLACEHOLDER; an empty
 * string; the trust bundle moatd built, a NUL and its Java trust store
 * (each when moatd intercepts TLS; the merge's warnings are printed
 * then).  Returns a buffer (free() it; *len bytes) or NULL after
 * printing why.
 */
char	*runconf_extras(const struct runconf *rc, json_t *answer, size_t *len);

/*
 * What the register request says about trust (rc->trust): "trust_store"
 * as store says (moatd answers with the bundle as a Java trust store
 * too) and, with merge,
 * "trust_extra": the files the caller's sandbox_ca_vars name (the
 * system bundle and a file named twice once; at most 512 KiB in all,
 * less where the policy is large),
 * which moatd merges into the sandbox's bundle.  A file that cannot be
 * read goes to rc->trust_warn.  0, or -1 after printing why (memory).
 */
int	runconf_trust(struct runconf *rc, bool merge, bool store);

/*
 * The Java trust store of moatd's register answer (base64 PKCS12) as
 * bytes: a new buffer (free() it; *len bytes), or NULL with *len 0 when
 * there is none or it is not base64 (then said on stderr, as is moatd's
 * "trust_store_error").
 */
unsigned char	*runconf_trust_store(const struct runconf *rc, json_t *answer,
		    size_t *len);

/*
 * Returns the directory of the running executable (from /proc/self/exe)
 * into buf, or -1.  Used to find moat-netns and moatd beside moat.
 */
int	runconf_exe_dir(char *buf, size_t len);

/*
 * The path of moat's helper program name (moat-netns, moat-ca): the
 * variable env if set, else beside the running moat, else in the build
 * tree's folder srcdir (a moat run from its build tree is launcher/moat,
 * its helpers netns-helper/moat-netns and certs/moat-ca), else in
 * MOAT_LIBEXECDIR.  Returns 0 if that file is executable, else -1 with
 * errno (buf still names what was tried).
 */
int	runconf_libexec_path(const char *name, const char *env,
	    const char *srcdir, char *buf, size_t len);

/*
 * Starts a child that runs child(arg) and then execs, as posix_spawn(3)
 * does: it shares moat's memory and moat waits (CLONE_VM | CLONE_VFORK)
 * until it has exec'd or exited, so no page tables are copied.  child()
 * runs on a stack of its own and may only make system calls (no stdio,
 * no malloc: the memory is moat's); it must exec or _exit().  Returns the
 * pid, or -1 with errno.  One at a time (the stack is static).
 */
pid_t	runconf_spawn(int (*child)(void *), void *arg);
/*
 * For child() and what it calls: AddressSanitizer's bookkeeping assumes
 * one stack per thread and warns about the child's; it has no place in
 * code that only makes system calls anyway.
 */
#define RUNCONF_SPAWNED	__attribute__((no_sanitize_address))
/*
 * Writes "moat: WHAT: REASON\n" to stderr with writev(2) alone; REASON is
 * err's untranslated text (no locale file is read in a spawned child).
 */
void	runconf_spawn_fail(const char *what, int err) RUNCONF_SPAWNED;

/*
 * The sandbox's refusals (refusals.h), from moatd's watch.
 * runconf_refusals(): the printer, on stderr, for rc's policy (the `moat
 * explain` hint when explain can judge alike); where names what has every
 * decision, for the summary ("moatd's audit log"); term and arg as in
 * struct refusals_opts.  NULL if out of memory.
 * runconf_watch(): watch rc->name on ac (all: allowed traffic too): 1,
 * 0 when this moatd cannot (said on stderr), -1 with err.
 * runconf_refusals_end(): at exit, unwatch (the last lines come first)
 * when watching, then the summary.  NULL-safe.
 */
#define RUNCONF_DETAILS_MAX	256
#define RUNCONF_UNWATCH_MS	1000	/* the last lines, at exit, at most */
struct admin_client;
struct refusals;
struct refusals	*runconf_refusals(const struct runconf *rc, bool all,
		    const char *where, int (*term)(void *), void *arg);
int		 runconf_watch(const struct runconf *rc,
		    struct admin_client *ac, struct refusals *rf, bool all,
		    char *err, size_t errlen);
void		 runconf_refusals_end(const struct runconf *rc,
		    struct admin_client *ac, bool watching,
		    struct refusals *rf);
/* Milliseconds on CLOCK_MONOTONIC. */
uint64_t	 runconf_now_ms(void);
/*
 * After register: when moatd could not take the sandbox's drop log (it
 * is older), says so on stderr, and where the drops are still counted.
 */
void		 runconf_drops_note(const struct runconf *rc,
		    const struct admin_client *ac);

/* --- attach_listen.c: the sockets of moat attach --listen ----------- */

/* One --listen socket: a Unix path, or a loopback TCP address. */
struct attach_listen {
	const char		*text;		/* as given (borrowed argv) */
	bool			 is_unix;
	const char		*path;		/* its path (in text), or NULL */
	struct sockaddr_storage	 ss;		/* TCP: the address */
	socklen_t		 sslen;
	int			 fd;		/* listening, or -1 */
	bool			 made;		/* the socket file is ours */
	dev_t			 dev;		/* ... and is this one */
	ino_t			 ino;
};

/*
 * --listen ARG: "unix:/PATH" or a loopback "127.0.0.1:PORT" ("[::1]:PORT")
 * into *l.  --owner USER[:GROUP] (names or numbers; the group defaults to
 * the user's).  --listen-mode MODE (3-4 octal digits, permissions only).
 * Each returns 0, or -1 after printing what is wrong (cmd first).
 */
int	attach_listen_parse(const char *cmd, const char *arg,
	    struct attach_listen *l);
int	attach_owner_parse(const char *cmd, const char *arg, uid_t *uid,
	    gid_t *gid);
int	attach_mode_parse(const char *cmd, const char *arg, int *mode);
/*
 * Creates l's listening socket: a Unix socket replaces only a stale one,
 * and is reachable by no one but its owner until it has uid:gid (unless
 * uid is (uid_t)-1) and mode; a TCP one is bound to its loopback address.
 * 0, or -1 with err (what was made stays in l for attach_listen_remove()).
 */
int	attach_listen_open(struct attach_listen *l, int mode, uid_t uid,
	    gid_t gid, char *err, size_t errlen);
/* Closes l's copy of the socket (moatd holds its own).  Repeatable. */
void	attach_listen_close(struct attach_listen *l);
/* attach_listen_close(), and removes the socket file if it is still the
 * one l made.  Repeatable. */
void	attach_listen_remove(struct attach_listen *l);

/* --- helper_client.c: the moat-netns client ------------------------- */

/*
 * Waits up to timeout_ms (0: just looks) for child pid to exit and reaps
 * it: 1 with *status (waitpid's), or 0 if it still runs.
 */
int	moat_reap(pid_t pid, int timeout_ms, int *status);

struct nsh_client;

/*
 * Starts moat-netns (MOAT_NETNS, else beside moat, else MOAT_LIBEXECDIR)
 * with its channel on fd 3, in a process group of its own, and greets
 * it.  Returns the client (free with nsh_client_close), or NULL with err
 * set.
 */
struct nsh_client *nsh_client_spawn(char *err, size_t errlen);
/*
 * nsh_client_spawn() in two steps, so that the helper starts while the
 * caller does something else: start() runs it and sends HELLO, ready()
 * reads the answer (every other call needs it first).  -1/NULL with err.
 */
struct nsh_client *nsh_client_start(char *err, size_t errlen);
int	nsh_client_ready(struct nsh_client *c, char *err, size_t errlen);

/*
 * Sends JOIN with the sandbox's network namespace (and, if userns is not
 * -1, its user namespace).  The descriptors stay the caller's.  0 or -1.
 */
int	nsh_client_join(struct nsh_client *c, int userns, int netns,
	    char *err, size_t errlen);

/*
 * Sends HELD or VETH for rc (attach: an existing namespace).  For VETH
 * *index and ifname (NSH_IFNAME_MAX) receive the subnet and the host-side
 * interface.  0 or -1.
 */
int	nsh_client_setup(struct nsh_client *c, const struct runconf *rc,
	    bool attach, unsigned *index, char *ifname, char *err,
	    size_t errlen);

/* Asks for one listening socket; *fd receives it (close-on-exec). */
int	nsh_client_socket(struct nsh_client *c,
	    const struct runconf_listener *l, int *fd, char *err,
	    size_t errlen);

/*
 * After nsh_client_setup() (which asks for the drop log): DROPS, the
 * NFLOG socket of the sandbox's drop records into *fd (close-on-exec),
 * for moatd's register.  0 or -1.
 */
int	nsh_client_drops(struct nsh_client *c, int *fd, char *err,
	    size_t errlen);

/*
 * JOIN (userns may be -1), the setup of nsh_client_setup(), DROPS (the
 * drop log into *drops, -1 until received), a SOCKET per listener (n of
 * them, into fds[], each -1 until received) and, with release, RELEASE:
 * all sent at once, then every answer read in order, so the helper works
 * through them without waiting for us in between.  Its phases still
 * order them: after a refusal it refuses the rest.  0, or -1 with the
 * first error (descriptors received are left in fds[] and *drops for the
 * caller to close).
 */
int	nsh_client_open(struct nsh_client *c, int userns, int netns,
	    const struct runconf *rc, const struct runconf_listener *ls,
	    size_t n, int *fds, int *drops, bool release, unsigned *index,
	    char *ifname, char *err, size_t errlen);

/*
 * `moat pod-init`: JOIN netns (self: the namespace moat runs in, a pod's),
 * HELD of an existing namespace whose moatd runs inside it as exempt_uid
 * (its traffic passes; TCP goes to transparent_port, DNS to dns_port),
 * then RELEASE: the table stays.  0, or -1 with err (then TEARDOWN).
 */
int	nsh_client_pod(struct nsh_client *c, int netns, bool self,
	    uint16_t dns_port, uint16_t transparent_port, uint32_t exempt_uid,
	    char *err, size_t errlen);

/*
 * Ends the helper with TEARDOWN (remove everything it added; a held
 * `moat run` releases it in nsh_client_open() instead).  The answer
 * comes once the work is done; the helper's own exit is not waited for
 * (nsh_client_close() reaps it if it is gone by then).  0 or -1.
 */
int	nsh_client_teardown(struct nsh_client *c, char *err, size_t errlen);

/*
 * Runs `moat-netns cleanup` (with --netns netns unless NULL): removes the
 * tables and veths whose owner is gone.  Its report goes to stderr.
 * 0, or -1 with err set.
 */
int	nsh_client_cleanup(const char *netns, char *err, size_t errlen);

/* The channel (readable when the helper died) and the helper's pid. */
int	nsh_client_fd(const struct nsh_client *c);
pid_t	nsh_client_pid(const struct nsh_client *c);

/*
 * Closes the channel (the helper then removes the host side on its own),
 * waits for the helper (bounded; then SIGKILL) and frees c.  NULL-safe.
 */
void	nsh_client_close(struct nsh_client *c);

/* --- admin_client.c: moatd's admin protocol (proto/admin_proto.h) --- */

struct admin_client;

/*
 * Connects to moatd's admin socket at path (runconf's moatd_path).
 * Returns the client (free with admin_client_close) or NULL, err set
 * (and errno, connect(2)'s when it failed).
 */
struct admin_client *admin_client_connect(const char *path, char *err,
	    size_t errlen);

/* Wraps a connected stream socket (a private moatd's --admin-fd peer);
 * takes ownership of fd.  NULL only if out of memory (fd closed). */
struct admin_client *admin_client_from_fd(int fd);

/* hello: checks moatd speaks version ADMIN_PROTO_VERSION.  0 or -1. */
int	admin_client_hello(struct admin_client *ac, char *err, size_t errlen);
/*
 * The same in two halves, for a moatd that is still starting: the request
 * waits in the socket until moatd reads it, the answer says it is ready.
 */
int	admin_client_hello_send(struct admin_client *ac, char *err,
	    size_t errlen);
int	admin_client_hello_recv(struct admin_client *ac, char *err,
	    size_t errlen);

/*
 * register: name, config (borrowed), and n listeners: protos[i] names
 * fds[i].  connect_refusal ("in-tunnel", or NULL: moatd's default) goes
 * with each http and http+socks5 listener; the keys of more (borrowed,
 * may be NULL: "trust_store", "trust_extra") are added to the request;
 * drops, unless -1, the sandbox's drop log (nsh_client_drops()), sent
 * only if admin_client_can_drops().  The descriptors are sent, not
 * closed.  0 or -1 (err holds moatd's "error" when it refused).  With
 * answer non-NULL, *answer is moatd's answer ("placeholders",
 * "trust_pem"; json_decref() it).
 */
int	admin_client_register(struct admin_client *ac, const char *name,
	    json_t *config, json_t *more, const char *const *protos,
	    const int *fds, size_t n, const char *connect_refusal, int drops,
	    json_t **answer, char *err, size_t errlen);
/* The hello said moatd reads a sandbox's drop log ("drops": true). */
bool	admin_client_can_drops(const struct admin_client *ac);

/* unregister NAME.  0 or -1. */
int	admin_client_unregister(struct admin_client *ac, const char *name,
	    char *err, size_t errlen);

/*
 * watch NAME: moatd sends NAME's refusals (with all, every audit line) as
 * they happen; they go to the handler admin_client_on_watch() set, as
 * the JSON messages {"audit": RECORD} and {"dropped": N} (borrowed: the
 * handler keeps a reference if it needs one).  Only when
 * admin_client_can_watch() (the hello said so: an older moatd closes
 * the connection on an op it does not know).  0 or -1.
 */
bool	admin_client_can_watch(const struct admin_client *ac);
void	admin_client_on_watch(struct admin_client *ac,
	    void (*fn)(void *arg, json_t *msg), void *arg);
int	admin_client_watch(struct admin_client *ac, const char *name,
	    bool all, char *err, size_t errlen);
/*
 * unwatch NAME: the watch's last lines arrive first, and the answer
 * within wait_ms (at exit, a stopped moatd must not hold moat).  0 or -1.
 */
int	admin_client_unwatch(struct admin_client *ac, const char *name,
	    int wait_ms, char *err, size_t errlen);
/*
 * Handles the watch messages that arrived (without waiting for more):
 * call it when the socket is readable.  0, or -1 with err when moatd
 * closed the connection or broke the protocol.
 */
int	admin_client_pump(struct admin_client *ac, char *err, size_t errlen);

/*
 * Whether the hello said moatd knows the ops list and stats (an older
 * moatd closes the connection on an op it does not know), and the version
 * it gave ("?" if none).
 */
bool	admin_client_can_status(const struct admin_client *ac);
const char *admin_client_version(const struct admin_client *ac);
/*
 * Sends req (consumed; NULL: out of memory), a request without
 * descriptors, and reads its answer: 0 with *answer (json_decref() it),
 * or -1 with err (moatd's "error" when it refused).
 */
int	admin_client_request(struct admin_client *ac, json_t *req,
	    json_t **answer, char *err, size_t errlen);

/* The socket, to poll for moatd closing it (or sending a watch's lines). */
int	admin_client_fd(const struct admin_client *ac);

/* Closes and frees.  NULL-safe. */
void	admin_client_close(struct admin_client *ac);

/* --- sbx_init.c: namespaces, init, workload ------------------------- */

struct sandbox;

struct sandbox_spec {
	char *const	*argv;		/* the workload and its arguments */
	bool		 userns;	/* rootless: an outer user namespace */
	int		 tty;		/* pty slave for the ttys among 0-2, or
					   -1 */
	const char	*mask;		/* a path to hide (admin socket), or
					   NULL */
	bool		 unix_sockets;	/* --allow-unix-sockets: no filter on
					   socket(AF_UNIX) */
	bool		 unix_notify;	/* --allow-unix-socket: the filter
					   that sends connect() to a
					   supervisor (sandbox_listener) */
};

/* What the sandbox's init needs once the network exists. */
/*
 * The variables TLS clients read their trust bundle from (SSL_CERT_FILE,
 * REQUESTS_CA_BUNDLE, ...): the sandbox gets them pointing at its bundle,
 * into which the files the caller's own values name are merged.
 */
extern const char *const sandbox_ca_vars[];
extern const size_t sandbox_ca_nvars;

/*
 * The Java trust stores the sandbox's JVMs read (the systems', JAVA_HOME's,
 * the JDK of the first java on PATH), by canonical name, each once, at
 * most max of them into out: the init mounts the sandbox's store over
 * each.  Returns how many.
 */
size_t	sandbox_java_stores(char (*out)[PATH_MAX], size_t max);

struct sandbox_net {
	char		nameserver[64];	/* resolv.conf's nameserver */
	char		proxy_host[64];	/* host of the proxy variables */
	uint16_t	http_port;
};

/*
 * Clones the sandbox's init into new mount, PID and network namespaces
 * (and a user namespace when spec->userns) and maps the ids; the init
 * mounts its /proc meanwhile (sandbox_go() waits for that first).
 * Returns the sandbox (free with sandbox_free) or NULL with err set.
 */
struct sandbox *sandbox_create(const struct sandbox_spec *spec, char *err,
	    size_t errlen);

/* Opens /proc/PID/ns/TYPE ("net", "user") of the init: fd or -1. */
int	sandbox_nsfd(const struct sandbox *sb, const char *type, char *err,
	    size_t errlen);

/*
 * Waits until the init is ready (its /proc mounted), then sends the go
 * message and the extras (see sbx_init.c: variables to set or remove,
 * then the trust bundle moatd built; extralen 0 for none): the
 * init writes resolv.conf and the trust bundle, enters the nested user
 * namespace and starts the workload.  Waits for the init's answer: 0 when
 * the workload was started, -1 with err set (exec failure included:
 * *code then holds 126 or 127, else MOAT_EXIT_LAUNCH).
 */
int	sandbox_go(struct sandbox *sb, const struct sandbox_net *net,
	    const char *extra, size_t extralen, int *code, char *err,
	    size_t errlen);

/*
 * With spec->unix_notify, the listener of the workload's seccomp filter
 * and (*userns) the init's nested user namespace, both sent by the init
 * (for unixsuper_start), now the caller's to close; else -1.
 */
int	sandbox_take_listener(struct sandbox *sb, int *userns);

/* The init's pid (in our PID namespace). */
pid_t	sandbox_pid(const struct sandbox *sb);

/* Kills the init (and with it everything in the sandbox) and reaps it. */
void	sandbox_kill(struct sandbox *sb);

/* Frees sb (does not kill).  NULL-safe. */
void	sandbox_free(struct sandbox *sb);

/* --- pty.c: the terminal relay -------------------------------------- */

struct pty;

/*
 * If stdin is a terminal, opens a pseudo-terminal sized and set like it.
 * Returns the pty, or NULL with err set (err[0] == '\0' and errno 0 when
 * stdin is simply not a terminal).
 */
struct pty *pty_open(char *err, size_t errlen);

/* The slave, for the workload; close it in the parent after the clone. */
int	pty_slave(const struct pty *p);
void	pty_close_slave(struct pty *p);

/* Puts our terminal in raw mode (pty_restore undoes it).  0 or -1. */
int	pty_raw(struct pty *p);

/* Copies our terminal's size to the pty (on SIGWINCH). */
void	pty_winch(struct pty *p);

/*
 * Adds the relay's descriptors to pfd (room for 2), returns how many.
 * pty_service handles their events.  Returns 0, or 1 when the pty's
 * output is over (the workload closed it).
 */
size_t	pty_pollfds(struct pty *p, struct pollfd *pfd);
int	pty_service(struct pty *p, const struct pollfd *pfd, size_t n);

/*
 * For a line of moat's own on the same terminal: whether it is raw (a
 * line ends in "\r\n"), and whether the workload's output stopped
 * mid-line (then the line starts on a new one; the answer is forgotten,
 * as the caller's line ends with a newline).
 */
bool	pty_is_raw(const struct pty *p);
bool	pty_take_midline(struct pty *p);

/* Copies what is left of the workload's output (bounded), then returns. */
void	pty_drain(struct pty *p);

/* Restores our terminal.  Repeatable. */
void	pty_restore(struct pty *p);

/* Restores, closes, frees.  NULL-safe. */
void	pty_free(struct pty *p);

#endif /* MOAT_MOAT_INT_H */
