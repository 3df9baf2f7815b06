/*
 * ssldl.c - the OpenSSL functions of ssldl.h, loaded from SSL_SONAME
 * (libcrypto comes with it, as its dependency) the first time they are
 * wanted.
 *
 * The table is filled once, under pthread_once, and read without a lock
 * after: a thread sees it whole, or calls ssldl_get(), which waits for
 * the one filling it.  A library that cannot be loaded is reported by
 * ssldl_load(), and ends the process in ssldl_get(): moatd loads it in its
 * main thread wherever its config says it will be needed, so that a call
 * finding it missing is a bug or a library removed under a running moatd.
 */
#include "config.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SSLDL_IMPLEMENTATION	/* the names, not the table's redirects */
#include "certs/ssldl.h"

static struct ssldl	ssldl_fns;
static pthread_once_t	ssldl_once = PTHREAD_ONCE_INIT;
static int		ssldl_ok;
static char		ssldl_err[256];

static void	ssldl_init(void);

static void
ssldl_init(void)
{
	void		*h;
	const char	*e;

	if ((h = dlopen(SSL_SONAME, RTLD_NOW | RTLD_LOCAL)) == NULL) {
		e = dlerror();
		snprintf(ssldl_err, sizeof(ssldl_err), "cannot load %s: %s",
		    SSL_SONAME, e != NULL ? e : "unknown error");
		return;
	}
	/* POSIX's way from dlsym's void * to a function pointer. */
#define SSLDL_SYM(name)							\
	if ((*(void **)&ssldl_fns.name = dlsym(h, #name)) == NULL) {	\
		snprintf(ssldl_err, sizeof(ssldl_err), "%s has no %s",	\
		    SSL_SONAME, #name);					\
		return;							\
	}
	SSLDL_FUNCTIONS(SSLDL_SYM)
#undef SSLDL_SYM
	/* The handle stays open for the life of the process. */
	ssldl_ok = 1;
}

int
ssldl_load(char *err, size_t errlen)
{
	pthread_once(&ssldl_once, ssldl_init);
	if (ssldl_ok)
		return 0;
	snprintf(err, errlen, "%s", ssldl_err);
	return -1;
}

const struct ssldl *
ssldl_get(void)
{
	pthread_once(&ssldl_once, ssldl_init);
	if (!ssldl_ok) {
		fprintf(stderr, "moat: OpenSSL is needed and %s\n", ssldl_err);
		abort();
	}
	return &ssldl_fns;
}
