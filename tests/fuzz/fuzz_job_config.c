/* tests/fuzz/fuzz_job_config.c: libFuzzer target for the job description
 * and what-if set parsers (estimator/spec/job_config.h).
 *
 * An input starting with 'S' is the rest as a "k=v,k=v" set, 'J' a set as
 * JSON, anything else a job description. A description that parses must
 * be written out and read back to the same; anything but a clean success
 * or a clean error is a bug. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "estimator/spec/job_config.h"
#include "common/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sc_error err;
    struct job_config c, back, applied;
    memset(&c, 0, sizeof c);
    if (size && data[0] == 'S') {
        char *s = malloc(size);
        if (!s)
            return 0;
        memcpy(s, data + 1, size - 1);
        s[size - 1] = '\0';
        spec_job_config_parse_set_list(s, &c, &err);
        free(s);
        return 0;
    }
    if (size && data[0] == 'J') {
        if (spec_job_config_parse_set_json((const char *)data + 1, size - 1, &c, &err) == SC_OK)
            spec_job_config_apply(&c, &c, &applied);
        return 0;
    }
    if (spec_job_config_parse((const char *)data, size, &c, &err) != SC_OK)
        return 0;
    char *text = spec_job_config_json(&c);
    memset(&back, 0, sizeof back);
    if (!text || spec_job_config_parse(text, strlen(text), &back, &err) != SC_OK || memcmp(&back, &c, sizeof back) != 0)
        abort();
    free(text);
    return 0;
}
