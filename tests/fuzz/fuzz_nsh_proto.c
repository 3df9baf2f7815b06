/*
 * fuzz_nsh_proto.c - fuzz target for the moat-netns protocol decoder
 * (proto/helper_proto.c), the parser of everything moat-netns, a
 * privileged process, receives.
 *
 * Input: the first byte is the number of descriptors that came with the
 * record (0-3); the rest is the record.  Properties, each an abort() when
 * broken:
 * - decoding never reads past the record (AddressSanitizer watches an
 *   exact-size copy);
 * - a refused record yields a message and a zeroed *m;
 * - an accepted record is canonical: encoding the decoded message gives
 *   back exactly the record, and decoding that again the same message;
 * - an accepted message is one the encoder accepts, with a descriptor
 *   count no larger than NSH_FDS_MAX and strings NUL-terminated inside
 *   their fields.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/helper_proto.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define FUZZ_CHECK(c)	do { if (!(c)) abort(); } while (0)

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct nsh_msg	 zero;
	struct nsh_msg			 m, m2;
	const char			*err = NULL;
	uint8_t				*rec, out[NSH_MSG_MAX];
	unsigned			 nfds;
	size_t				 len;
	int				 rc, n;

	if (size == 0)
		return 0;
	nfds = data[0] % 4;
	len = size - 1;
	if ((rec = malloc(len ? len : 1)) == NULL)
		return 0;
	memcpy(rec, data + 1, len);
	rc = nsh_proto_decode(rec, len, nfds, &m, &err);
	if (rc == -1) {
		FUZZ_CHECK(err != NULL && err[0] != '\0');
		FUZZ_CHECK(memcmp(&m, &zero, sizeof(m)) == 0);
		goto out;
	}
	FUZZ_CHECK(rc == 0 && m.nfds == nfds && m.nfds <= NSH_FDS_MAX);
	FUZZ_CHECK((unsigned)m.op < NSH_OP__COUNT);
	if (m.op == NSH_OP_REPLY) {
		FUZZ_CHECK(memchr(m.u.reply.text, '\0',
		    sizeof(m.u.reply.text)) != NULL);
		FUZZ_CHECK(memchr(m.u.reply.ifname, '\0',
		    sizeof(m.u.reply.ifname)) != NULL);
		FUZZ_CHECK((m.u.reply.error == 0) == (m.u.reply.text[0] ==
		    '\0'));
	}
	n = nsh_proto_encode(&m, out, sizeof(out), &err);
	FUZZ_CHECK(n >= 0 && (size_t)n == len && memcmp(out, rec, len) == 0);
	FUZZ_CHECK(nsh_proto_decode(out, (size_t)n, nfds, &m2, &err) == 0);
	FUZZ_CHECK(memcmp(&m, &m2, sizeof(m)) == 0);
 out:
	free(rec);
	return 0;
}
