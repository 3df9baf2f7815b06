/*
 * geo.c - the country and AS number of an address, from MaxMind DB files
 * (GeoLite2-Country / -City / -ASN, DB-IP lite, or any database with the
 * same fields), read with libmaxminddb.
 *
 * The databases are opened by the caller's loader (struct
 * policy_load_opts) while a config loads: moatd and moat map a sealed
 * private copy of each file (policyio/policyio.c), so lookups from any
 * number of worker threads need no lock and a file rewritten in place
 * changes nothing.  A reload opens them again: replacing a file and
 * sending SIGHUP is how a newer database takes effect.
 */
#include "config.h"

#include <sys/socket.h>
#include <netinet/in.h>

#include <stdlib.h>
#include <string.h>

#include <maxminddb.h>

#include "policy/policy_int.h"

struct geo_db {
	MMDB_s	mmdb;
};

struct geo_db *
geo_open(const struct policy_load_opts *o, const char *path,
    const char **err)
{
	struct geo_db	*g;

	if (o == NULL || o->geo_open == NULL) {
		*err = "this program opens no GeoIP database";
		return NULL;
	}
	if ((g = calloc(1, sizeof(*g))) == NULL) {
		*err = "out of memory";
		return NULL;
	}
	if (o->geo_open(path, &g->mmdb, err, o->geo_arg) == -1) {
		free(g);
		return NULL;
	}
	return g;
}

void
geo_close(struct geo_db *g)
{
	if (g == NULL)
		return;
	MMDB_close(&g->mmdb);
	free(g);
}

const char *
geo_type(const struct geo_db *g)
{
	return g->mmdb.metadata.database_type != NULL ?
	    g->mmdb.metadata.database_type : "";
}

/* The database's entry for a, or false if it has none. */
static bool
geo_entry(const struct geo_db *g, const struct policy_addr *a,
    MMDB_entry_s *out)
{
	MMDB_lookup_result_s	res;
	struct sockaddr_in	s4;
	struct sockaddr_in6	s6;
	const struct sockaddr	*sa;
	int			err = MMDB_SUCCESS;

	if (a->family == AF_INET) {
		memset(&s4, 0, sizeof(s4));
		s4.sin_family = AF_INET;
		s4.sin_addr = a->u.v4;
		sa = (const struct sockaddr *)&s4;
	} else if (a->family == AF_INET6) {
		memset(&s6, 0, sizeof(s6));
		s6.sin6_family = AF_INET6;
		s6.sin6_addr = a->u.v6;
		sa = (const struct sockaddr *)&s6;
	} else
		return false;
	/* An IPv6 address in an IPv4-only database is an error: unknown. */
	res = MMDB_lookup_sockaddr(&g->mmdb, sa, &err);
	if (err != MMDB_SUCCESS || !res.found_entry)
		return false;
	*out = res.entry;
	return true;
}

bool
geo_country(const struct geo_db *g, const struct policy_addr *a, char cc[3])
{
	MMDB_entry_s		e;
	MMDB_entry_data_s	d;
	const char		*s;

	if (g == NULL || !geo_entry(g, a, &e))
		return false;
	/* Where the network is; else (anycast, satellite) where it is
	 * registered. */
	if (MMDB_get_value(&e, &d, "country", "iso_code", NULL) !=
	    MMDB_SUCCESS || !d.has_data ||
	    d.type != MMDB_DATA_TYPE_UTF8_STRING || d.data_size != 2) {
		if (MMDB_get_value(&e, &d, "registered_country", "iso_code",
		    NULL) != MMDB_SUCCESS || !d.has_data ||
		    d.type != MMDB_DATA_TYPE_UTF8_STRING || d.data_size != 2)
			return false;
	}
	s = d.utf8_string;
	if (!geo_cc_ok(s, 2))
		return false;
	cc[0] = (char)(s[0] & ~0x20);
	cc[1] = (char)(s[1] & ~0x20);
	cc[2] = '\0';
	return true;
}

bool
geo_asn(const struct geo_db *g, const struct policy_addr *a, uint32_t *asn)
{
	MMDB_entry_s		e;
	MMDB_entry_data_s	d;

	if (g == NULL || !geo_entry(g, a, &e))
		return false;
	if (MMDB_get_value(&e, &d, "autonomous_system_number", NULL) !=
	    MMDB_SUCCESS || !d.has_data)
		return false;
	switch (d.type) {
	case MMDB_DATA_TYPE_UINT16:
		*asn = d.uint16;
		break;
	case MMDB_DATA_TYPE_UINT32:
		*asn = d.uint32;
		break;
	default:
		return false;
	}
	return *asn != 0;
}

bool
geo_cc_ok(const char *s, size_t len)
{
	size_t	i;

	if (len != 2)
		return false;
	for (i = 0; i < 2; i++)
		if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' &&
		    s[i] <= 'z')))
			return false;
	return true;
}
