/* common/embedded.h: files compiled into the programs.
 *
 * scripts/embed.sh turns a list of files into a C file that defines one
 * table of these, ended by an entry whose name is NULL, so data the
 * programs need (hardware profiles) travels inside them and nothing has to
 * be installed beside them. */
#ifndef COMMON_EMBEDDED_H
#define COMMON_EMBEDDED_H

#include <stddef.h>

struct sc_embedded {
    const char *name;          /* the file's base name */
    const unsigned char *data; /* its bytes, followed by a NUL */
    size_t len;                /* its length, the NUL not counted */
};

#endif
