/* common/vec.c: doubling growth for malloc'd arrays (vec.h). */
#include "common/vec.h"

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>

#include "common/banned.h"

int sc_vec_reserve(void **arr, size_t *cap, size_t need, size_t elem)
{
    assert(arr && cap && elem);
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : 16;
    while (n < need) {
        if (n > SIZE_MAX / 2)
            return -1;
        n *= 2;
    }
    assert(n >= need && n > *cap);
    if (elem && n > SIZE_MAX / elem)
        return -1;
    void *p = realloc(*arr, n * elem);
    if (!p)
        return -1;
    *arr = p;
    *cap = n;
    return 0;
}
