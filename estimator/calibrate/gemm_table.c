/* estimator/calibrate/gemm_table.c: GEMM microbenchmark tables (gemm_table.h). */
#include "estimator/calibrate/gemm_table.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/csv.h"
#include "common/vec.h"
#include "common/banned.h"

#define HEADER "dtype,batch,m,n,k,us"
#define DEVICE_TAG "# device:"
#define MAX_DIM 2147483648.0 /* 2^31 */
/* One GEMM's time at most: 1,000 s, past any kernel a benchmark times
 * (and below it, no stored calibration prices a kernel in years) */
#define GEMM_TABLE_MAX_US 1e9

static const char *const columns[] = {"dtype", "batch", "m", "n", "k", "us"};

/* "# device: NAME" into device (n bytes), blanks around NAME dropped. */
static void read_device(const char *s, size_t w, char *device, size_t n)
{
    size_t tag = sizeof DEVICE_TAG - 1;
    const char *b = s + tag, *e = s + w;
    while (b < e && (*b == ' ' || *b == '\t'))
        b++;
    while (e > b && (e[-1] == ' ' || e[-1] == '\t'))
        e--;
    snprintf(device, n, "%.*s", (int)(e - b), b);
}

/* One row into *out. */
static int read_row(const char *s, size_t w, size_t line, struct gemm_sample *out, struct sc_error *err)
{
    const char *q = s, *end = s + w;
    char buf[64];
    double f[5];
    struct sc_error why;
    if (sc_csv_field(&q, end, 0, buf, sizeof buf))
        return sc_error_set(err, SC_EPARSE, "line %zu: expected 6 comma-separated columns (" HEADER ")", line);
    if (cost_hw_dtype_parse(buf, &out->dtype, &why))
        return sc_error_set(err, SC_EPARSE, "line %zu: dtype: '%s' is none of fp32, tf32, fp16, bf16, fp8, fp4",
                            line, buf);
    for (int c = 0; c < 5; c++) {
        char *numend;
        if (sc_csv_field(&q, end, c == 4, buf, sizeof buf))
            return sc_error_set(err, SC_EPARSE, "line %zu: %s: expected 6 comma-separated columns (" HEADER ")",
                                line, columns[c + 1]);
        errno = 0;
        f[c] = strtod(buf, &numend);
        int whole = c < 4;
        if (*numend || errno || !(f[c] > 0) || !isfinite(f[c]) || (whole && (f[c] != floor(f[c]) || f[c] > MAX_DIM)) ||
            (!whole && f[c] > GEMM_TABLE_MAX_US))
            return sc_error_set(err, SC_EPARSE, "line %zu: %s: '%s' is not %s", line, columns[c + 1], buf,
                                whole ? "a whole number from 1 to 2^31" : "a time in microseconds above 0, at most 1e9");
    }
    *out = (struct gemm_sample){.batch = f[0], .m = f[1], .n = f[2], .k = f[3], .dtype = out->dtype,
                                .measured_us = f[4], .kernels = 1, .device = -1, .op = 0};
    return SC_OK;
}

int calib_gemm_table_parse(const char *text, size_t len, struct gemm_samples *out, char *device, size_t n,
                     struct sc_error *err)
{
    struct sc_lines l;
    const char *s;
    size_t w, first = out->n;
    int header = 0, rc = SC_OK;
    if (n)
        device[0] = '\0';
    sc_lines_init(&l, text, len);
    while (!rc && sc_lines_next(&l, &s, &w)) {
        if (w >= sizeof DEVICE_TAG - 1 && memcmp(s, DEVICE_TAG, sizeof DEVICE_TAG - 1) == 0) {
            read_device(s, w, device, n);
        } else if (w == 0 || s[0] == '#') {
            continue;
        } else if (!header) {
            if (w != sizeof HEADER - 1 || memcmp(s, HEADER, w) != 0)
                rc = sc_error_set(err, SC_EPARSE, "line %zu: expected the header '" HEADER "'", l.line);
            header = 1;
        } else if (out->n - first == GEMM_TABLE_MAX_ROWS) {
            rc = sc_error_set(err, SC_ELIMIT, "more than %d rows", GEMM_TABLE_MAX_ROWS);
        } else if (sc_vec_reserve((void **)&out->v, &out->cap, out->n + 1, sizeof *out->v)) {
            rc = sc_error_set(err, SC_ENOMEM, "out of memory");
        } else if ((rc = read_row(s, w, l.line, &out->v[out->n], err)) == SC_OK) {
            out->n++;
        }
    }
    if (!rc && !header)
        rc = sc_error_set(err, SC_EPARSE, "no header '" HEADER "': not a GEMM table");
    if (rc)
        out->n = first;
    return rc;
}
