/* daemon/digest.h: SHA-256 (OpenSSL EVP) and random identifiers.
 *
 * Trace blobs are named by the SHA-256 of their bytes, computed while an
 * upload streams to disk; tokens are stored as the SHA-256 of the secret.
 * Digests travel as 64 lowercase hex characters plus a NUL. */
#ifndef DAEMON_DIGEST_H
#define DAEMON_DIGEST_H

#include <stddef.h>

#include "common/error.h"

#define DIGEST_HEX_LEN 64

struct digest {
    void *md; /* EVP_MD_CTX */
};

int digest_init(struct digest *d, struct sc_error *err);
int digest_update(struct digest *d, const void *p, size_t n, struct sc_error *err);
/* hex gets 64 characters and a NUL; the digest is released. */
int digest_final(struct digest *d, char hex[DIGEST_HEX_LEN + 1], struct sc_error *err);
void digest_release(struct digest *d); /* NULL-safe, idempotent */

/* SHA-256 of p[0..n) as hex. */
int digest_hex(const void *p, size_t n, char hex[DIGEST_HEX_LEN + 1], struct sc_error *err);

/* nbytes of cryptographic randomness as 2*nbytes hex characters (+ NUL). */
int digest_random_hex(size_t nbytes, char *hex, size_t hex_size, struct sc_error *err);

/* Whether s is exactly 64 lowercase hex characters. */
int digest_is_hex(const char *s);

#endif
