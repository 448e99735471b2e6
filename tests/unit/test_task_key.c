/* tests/unit/test_task_key.c: tasks keyed by rank, kind, name and ordinal
 * (model/task_key.h), the key diff matches two runs by and opportunities
 * matches kernels across ranks by. */
#include <string.h>

#include "model/task_key.h"
#include "tests/check.h"
#include "common/banned.h"

TEST(task_keys_sorted_by_rank_kind_name_and_numbered_per_name)
{
    /* equal names in separate storage, as two graphs hold them */
    char b1[] = "b", b2[] = "b", b3[] = "b";
    struct model_task_key k[] = {
        {"b", 5, 0, 1, 0}, {"a", 1, 0, 0, 1}, {b1, 7, 0, 0, 0}, {b2, 3, 0, 0, 0}, {"a", 9, 0, 0, 0},
    };
    model_task_keys_number(k, 5);
    const uint32_t task[] = {9, 3, 7, 1, 5}, ord[] = {0, 0, 1, 0, 0};
    for (size_t i = 0; i < 5; i++) {
        CHECK_EQ_INT(k[i].task, task[i]);
        CHECK_EQ_INT(k[i].ord, ord[i]);
    }
    /* another run's second "b" on rank 0 matches by ordinal, not task */
    struct model_task_key other = {b3, 42, 1, 0, 0};
    CHECK(model_task_key_cmp(&k[2], &other, 1) == 0);
    CHECK(model_task_key_cmp(&k[1], &other, 1) < 0);
    CHECK(model_task_key_cmp(&k[2], &other, 0) < 0);
    other.cpu = 1;
    CHECK(model_task_key_cmp(&k[2], &other, 1) < 0);
}
