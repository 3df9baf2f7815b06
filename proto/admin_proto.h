/*
 * admin_proto.h - the admin protocol between moatd and the programs that
 * register sandboxes with it (`moat run`, `moat attach`, a sandbox
 * platform) or ask what it is doing (`moat status`).  Shared by proxy/admin.c (the server) and launcher/
 * (the clients).
 *
 * Transport: a Unix stream socket: the path of "admin.address" in moatd's
 * config (mode "admin.mode", default 0600; moatd also checks the peer's
 * uid with SO_PEERCRED: root or moatd's own uid only), or a socketpair
 * end handed to a private moatd with `moatd --admin-fd N`.
 *
 * Framing: each message is a 4-byte big-endian length N (1..ADMIN_MSG_MAX)
 * followed by N bytes of one JSON object (UTF-8, no trailing data).
 * Descriptors travel as SCM_RIGHTS on the sendmsg() that carries the
 * length prefix of their message, at most ADMIN_FDS_MAX per message; a
 * message that arrives with descriptors it does not announce, or without
 * the ones it announces, is a protocol error.  On any protocol error moatd
 * answers {"ok": false, "error": "..."} if it can and closes the
 * connection.
 *
 * Requests and answers (every answer has "ok"; failures have "error", a
 * human-readable sentence):
 *
 *   {"op": "hello", "version": 1}
 *     -> {"ok": true, "version": 1, "moatd": "0.1.0", "watch": true,
 *         "drops": true, "list": true, "stats": true}
 *   {"op": "register", "sandbox": NAME, "config": CONFIG,
 *    "listeners": [{"proto": PROTO, "fd": I}, ...],
 *    "trust_extra": [{"name": TEXT, "pem": PEM}, ...],
 *    "trust_store": BOOL, "drops": N}  + descriptors
 *     NAME: [A-Za-z0-9._-]{1,64}, unique among live sandboxes and not
 *       the "sandbox" of one of moatd's configured listeners.
 *     CONFIG: a moat.json object holding only "policy" (and, with TLS
 *       interception, "secrets"; and "limits": {"sandbox_connections":
 *       N}, the sandbox's open connections at most, capped by moatd's
 *       own limits.sandbox_connections; and "audit_only": BOOL, the
 *       sandbox's decisions in audit mode or not, instead of the
 *       daemon's top-level "audit_only"); validated like moatd's own
 *       config, errors reported as "sandbox NAME:LINE:COLUMN: message".
 *     PROTO: "http", "socks5", "http+socks5", "transparent", "dns-udp",
 *       "dns-tcp"; I indexes the descriptors of this message; each is a
 *       socket already bound (and, but for dns-udp, listening), usually
 *       inside the sandbox's network namespace.  An "http" or
 *       "http+socks5" listener may add "connect_refusal": "status" (the
 *       default) or "in-tunnel" (moatd needs a CA), as the config key of
 *       that name; no other key.
 *     "trust_extra" (optional, at most 16): CA files the sandbox's user
 *       named (moat run sends the files of SSL_CERT_FILE and the other
 *       bundle variables), each by a NAME of 1-512 bytes for messages;
 *       merged into its "trust_bundle" when moatd intercepts TLS.
 *     "trust_store" (optional, default false): answer with the bundle as
 *       a PKCS12 trust store too.
 *     "drops" (optional; the hello said "drops": true): N is the number
 *       of listeners, and the descriptor after theirs is the sandbox's
 *       drop log, a netfilter netlink socket bound to the NFLOG group of
 *       its nftables table's drops in its namespace (moat-netns's DROPS,
 *       proto/drops_proto.h); moatd reads it as long as the sandbox
 *       lives and audits the drops as "drop" lines.  At most
 *       ADMIN_FDS_MAX descriptors in all.
 *     -> {"ok": true, "sandbox": NAME, "placeholders": {VAR: PH, ...},
 *         "hide": [PATH, ...], "trust_pem": PEM, "trust_bundle": PEM,
 *         "trust_store": BASE64, "trust_warnings": [TEXT, ...]}
 *     "placeholders": for each secret of CONFIG's "secrets", the
 *       variable the sandbox gets ("sandbox_env", default the secret's
 *       name) and this sandbox's random placeholder for it ("moat-ph-"
 *       and 32 hex digits); the values themselves never leave moatd.
 *       Empty when CONFIG has no secrets.
 *     "hide": absolute paths a sandbox must not read even where its
 *       user could: moatd's CA key and the secret files of the daemon
 *       and of CONFIG (moat run mounts /dev/null over each).
 *     "trust_pem": present when moatd intercepts TLS (tls.ca_cert): its
 *       CA certificate and tls.extra_ca_files, PEM (never a key).
 *     "trust_bundle": with "trust_pem": those, the system's roots and
 *       the certificates of "trust_extra", each once and re-encoded, what
 *       a sandbox mounts as its trust bundle; if moatd cannot build it
 *       (no system bundle, say), "trust_bundle_error": TEXT instead.
 *     "trust_store": when asked for, the bundle as PKCS12 (DER, base64):
 *       trusted certificate entries only, nothing encrypted and no MAC,
 *       so Java opens it with any password or none; if it cannot be
 *       built, "trust_store_error": TEXT instead.
 *     "trust_warnings": the "trust_extra" files left out, and why (one
 *       that is no bundle of certificates, holds a key, or would make the
 *       answer larger than ADMIN_MSG_MAX); absent when none was.
 *     Rules that must see inside TLS are accepted only when moatd has a
 *     CA; secrets are read when the sandbox registers (a file that is
 *     missing or readable by others refuses the registration).
 *   {"op": "unregister", "sandbox": NAME}
 *     -> {"ok": true}
 *   {"op": "watch", "sandbox": NAME, "all": BOOL}
 *     -> {"ok": true}
 *     then, unasked, on this connection, until unwatch or the end of the
 *     connection (between answers, never inside one):
 *       {"audit": RECORD}  one audit line of sandbox NAME, the object
 *         moatd writes to its audit log (secrets redacted: never a
 *         value); only its refusals ("verdict": "deny") and
 *         would-denies ("would_deny": REASON, audit mode), or with
 *         "all" (default false) every line of it.
 *       {"dropped": N}  N lines (N > 0) this client did not read fast
 *         enough: moatd holds at most 256 KiB of lines per watch plus
 *         256 KiB framed for the connection, drops the rest and counts
 *         them, never waits for a watcher nor closes its connection.
 *     These messages have no "ok": a client tells them from answers so.
 *     NAME: 1-256 bytes; it need not be registered yet (a client
 *     watches before it registers, so that no refusal falls between),
 *     and may be a configured listener's sandbox.  Watching the same
 *     NAME again changes "all".  At most 16 watches per connection.
 *     The hello answer says "watch": true when moatd knows these ops.
 *   {"op": "unwatch", "sandbox": NAME}
 *     -> every line the watch holds, then {"ok": true}: a client that
 *     unwatches has the lines of every decision made before.
 *   {"op": "list", "after": NAME}
 *     -> {"ok": true, "sandboxes": [SANDBOX, ...], "more": K}
 *     every live sandbox, registered ones and those of moatd's
 *     configured listeners, sorted by name; "after" (optional) starts
 *     after NAME.  An answer holds as many as fit in ADMIN_MSG_MAX;
 *     "more" (present when K > 0) says K were left: ask again with
 *     "after" the last NAME given.  SANDBOX:
 *       {"sandbox": NAME, "kind": "registered" | "configured",
 *        "policy": "own" | "moatd", "listeners": [{"proto": PROTO,
 *        "address": ADDR}, ...], "secrets": [SECRET_NAME, ...],
 *        "client_pid": PID, "age_s": S, "limit": N, "connections": N,
 *        "allowed": N, "denied": N, "refused_at_limit": N,
 *        "bytes_up": N, "bytes_down": N, "would_deny": N,
 *        "dropped_packets": N}
 *     "client_pid": the pid (SO_PEERCRED) of the client that
 *       registered it; absent for a configured listener's sandbox.
 *     "age_s": seconds since it was registered (or since moatd made
 *       its configured listener's).  "limit": its open connections at
 *       most (limits.sandbox_connections, its own or moatd's).
 *     "secrets": the names of its secrets (moatd's for a configured
 *       listener's sandbox); never a value nor a placeholder.
 *     Counters since it was made: "connections" open now (tunnels
 *       included); "allowed" and "denied": its decisions, one per
 *       request, open (tunnel) and dns audit line, by verdict, plus
 *       each connection refused at its limit ("refused_at_limit" also
 *       counts those); "bytes_up" and "bytes_down": of its requests and
 *       of its opaque tunnels once closed (an open tunnel's bytes count
 *       when it closes); "would_deny": allowed decisions that audit mode
 *       let through (counted in "allowed" too); "dropped_packets": what
 *       its table dropped that
 *       moatd heard of (its drop log, every kind).
 *   {"op": "stats"}
 *     -> {"ok": true, "moatd": {"version": V, "pid": PID, "config":
 *         FILE, "uptime_s": S, "workers": N}, "sandboxes":
 *         {"registered": N, "configured": N}, "admin": {"clients": N,
 *         "watches": N}, "connections": {"open": N, "limit": N},
 *         "audit": {"queued_bytes": N, "dropped": N, "ok": BOOL},
 *         "reloads": {"done": N, "refused": N}}
 *     "uptime_s": since moatd began serving; "connections": client
 *     connections and tunnels open in all workers, and
 *     limits.connections; "audit": bytes of lines waiting for the
 *     writer, lines lost since start, false while lines wait or are
 *     lost; "reloads": SIGHUPs that applied a config and those refused.
 *   Neither op takes other keys.
 *
 * The guard: a register is refused (reason "sandbox-refused" in the
 * audit log, the error in the answer) when the client's socket was made
 * inside the network namespace of a live registered sandbox (its
 * workload reached the admin socket), when one of the descriptors is a
 * socket of such a namespace, or when NAME is a configured listener's
 * sandbox.  moatd tells namespaces apart by SO_NETNS_COOKIE: of the
 * descriptors, and of the accepted admin connection (made in the
 * client's namespace); a client whose namespace it cannot tell is
 * refused.  A sandbox's sockets that live in the namespace of the client
 * that registered it, or in moatd's own, do not make that namespace a
 * guarded one (a platform binding them where it runs).  A watch is
 * guarded alike: a client inside a live sandbox's namespace, or one whose
 * namespace moatd cannot tell, reads no one's lines (refused, audited as
 * "sandbox-refused"), and list and stats are refused alike (audited
 * under the name of the sandbox the client is in).
 *
 * A sandbox lives as long as the admin connection that registered it:
 * when that connection closes, moatd unregisters it, closes its
 * listening sockets and ends its connections.  Audit lines of a sandbox
 * carry its NAME in "sandbox".
 */
#ifndef MOAT_ADMIN_PROTO_H
#define MOAT_ADMIN_PROTO_H

#define ADMIN_PROTO_VERSION	1
#define ADMIN_MSG_MAX		(1u << 20)	/* largest JSON message, bytes */
#define ADMIN_FDS_MAX		16		/* descriptors per message */
#define ADMIN_NAME_MAX		64		/* sandbox name, bytes */

/*
 * The registry of admin sockets: each moatd that listens on an admin
 * socket path writes one file here (mode 0644, named by 16 hex digits),
 * holding the socket's absolute path and a newline.  `moat run` hides
 * every path listed here that is a socket from the sandboxes it makes.
 */
#define MOAT_ADMIN_RUNDIR	"/run/moat"
#define MOAT_ADMIN_REGISTRY	MOAT_ADMIN_RUNDIR "/admin.d"

#endif /* MOAT_ADMIN_PROTO_H */
