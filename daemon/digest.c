/* daemon/digest.c: SHA-256 and randomness through OpenSSL (digest.h). */
#include "daemon/digest.h"

#include <string.h>

#include <openssl/evp.h>
#include <openssl/rand.h>

#include "common/banned.h"

static void to_hex(const unsigned char *b, size_t n, char *out)
{
    static const char hexd[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = hexd[b[i] >> 4];
        out[2 * i + 1] = hexd[b[i] & 15];
    }
    out[2 * n] = '\0';
}

int digest_init(struct digest *d, struct sc_error *err)
{
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    d->md = NULL;
    if (!md)
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    if (EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1) {
        EVP_MD_CTX_free(md);
        return sc_error_set(err, SC_EINTERNAL, "sha256 init failed");
    }
    d->md = md;
    return SC_OK;
}

int digest_update(struct digest *d, const void *p, size_t n, struct sc_error *err)
{
    if (n && EVP_DigestUpdate(d->md, p, n) != 1)
        return sc_error_set(err, SC_EINTERNAL, "sha256 update failed");
    return SC_OK;
}

int digest_final(struct digest *d, char hex[DIGEST_HEX_LEN + 1], struct sc_error *err)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned n = 0;
    int ok = EVP_DigestFinal_ex(d->md, md, &n) == 1 && n == 32;
    digest_release(d);
    if (!ok)
        return sc_error_set(err, SC_EINTERNAL, "sha256 final failed");
    to_hex(md, 32, hex);
    return SC_OK;
}

void digest_release(struct digest *d)
{
    if (d && d->md) {
        EVP_MD_CTX_free(d->md);
        d->md = NULL;
    }
}

int digest_hex(const void *p, size_t n, char hex[DIGEST_HEX_LEN + 1], struct sc_error *err)
{
    struct digest d;
    int rc = digest_init(&d, err);
    if (rc == SC_OK && (rc = digest_update(&d, p, n, err)) == SC_OK)
        return digest_final(&d, hex, err);
    digest_release(&d);
    return rc;
}

int digest_random_hex(size_t nbytes, char *hex, size_t hex_size, struct sc_error *err)
{
    unsigned char b[64];
    if (nbytes > sizeof b || hex_size < 2 * nbytes + 1)
        return sc_error_set(err, SC_EINTERNAL, "random id too long");
    if (RAND_bytes(b, (int)nbytes) != 1)
        return sc_error_set(err, SC_EINTERNAL, "no randomness available");
    to_hex(b, nbytes, hex);
    return SC_OK;
}

int digest_is_hex(const char *s)
{
    size_t n = 0;
    for (; s[n]; n++)
        if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f')))
            return 0;
    return n == DIGEST_HEX_LEN;
}
