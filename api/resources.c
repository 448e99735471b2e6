/* api/resources.c: names and release functions of the API records. */
#include "api/resources.h"

#include <stdlib.h>
#include <string.h>

#include "common/banned.h"

static const char *const scope_names[] = {"none", "read", "write", "admin"};
static const char *const status_names[] = {"building", "ready", "failed", "interrupted"};

const char *api_scope_name(enum api_scope sc)
{
    return scope_names[sc];
}

int api_scope_parse(const char *s, enum api_scope *out)
{
    for (int i = API_SCOPE_READ; i <= API_SCOPE_ADMIN; i++)
        if (strcmp(s, scope_names[i]) == 0) {
            *out = (enum api_scope)i;
            return 0;
        }
    return -1;
}

const char *api_model_status_name(enum api_model_status st)
{
    return status_names[st];
}

void api_job_release(struct api_job *j)
{
    if (j) {
        free(j->description);
        j->description = NULL;
    }
}

void api_jobs_free(struct api_job *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        api_job_release(&v[i]);
    free(v);
}

void api_model_release(struct api_model *m)
{
    if (!m)
        return;
    free(m->error);
    free(m->step_marker);
    free(m->steps);
    free(m->summary);
    m->error = m->step_marker = m->steps = m->summary = NULL;
}

void api_models_free(struct api_model *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        api_model_release(&v[i]);
    free(v);
}
