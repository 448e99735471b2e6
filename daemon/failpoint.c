/* daemon/failpoint.c: named crash points (failpoint.h). */
#include "daemon/failpoint.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/log.h"
#include "common/banned.h"

static const char *armed; /* the point named in the environment, or NULL */

void fp_init(void)
{
    const char *v = getenv("STEPCAST_FAILPOINT");
    armed = v && *v ? v : NULL;
    if (armed)
        log_warn("failpoint", "armed=%s", armed);
}

void fp_hit(const char *name)
{
    if (armed && strcmp(armed, name) == 0) {
        log_warn("failpoint", "hit=%s action=SIGKILL", name);
        kill(getpid(), SIGKILL);
        pause();
    }
}
