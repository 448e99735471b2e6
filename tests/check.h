/* tests/check.h: the test harness every test file includes.
 *
 *     TEST(strtab_interns_once) {
 *         CHECK(x == 1);
 *         CHECK_EQ_INT(count, 3);
 *     }
 *
 * TEST registers the function at load time, so adding a test is adding a
 * function: no list to edit. tests/runner.c runs each test in its own child
 * process with a timeout (N at a time with -j N, TEST_ALONE tests alone),
 * prints `ok`/`FAIL`/`skip` per test and ends with the line
 * `N passed, N failed`. A check that fails records the failure and
 * lets the test go on; REQUIRE is for preconditions: when it fails the test
 * fails and ends there (what follows would only crash or mislead); SKIP()
 * ends the test as skipped with a reason. */
#ifndef TESTS_CHECK_H
#define TESTS_CHECK_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

struct sc_test {
    const char *name;
    const char *file;
    void (*fn)(void);
    int alone; /* TEST_ALONE: never run beside another test (runner -j) */
    struct sc_test *next;
};

void sc_test_register(struct sc_test *t);
void sc_check_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
_Noreturn void sc_require_fail(const char *file, int line, const char *cond);
_Noreturn void sc_test_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
extern int sc_check_failures;

#define TEST_REGISTERED(name, alone)                                               \
    static void test_##name(void);                                                 \
    static struct sc_test test_reg_##name = {#name, __FILE__, test_##name, alone,  \
                                             NULL};                                \
    __attribute__((constructor)) static void test_ctor_##name(void)                \
    {                                                                              \
        sc_test_register(&test_reg_##name);                                        \
    }                                                                              \
    static void test_##name(void)

#define TEST(name) TEST_REGISTERED(name, 0)

/* A test that times what it asserts (latency under load, timeouts): with
 * `stepcast-tests -j N` it runs when no other test does, so another
 * test's work cannot make it fail. */
#define TEST_ALONE(name) TEST_REGISTERED(name, 1)

#define CHECK(c)                                                                   \
    do {                                                                           \
        if (!(c))                                                                  \
            sc_check_fail(__FILE__, __LINE__, "CHECK(%s)", #c);                    \
    } while (0)

#define REQUIRE(c)                                                                 \
    do {                                                                           \
        if (!(c))                                                                  \
            sc_require_fail(__FILE__, __LINE__, #c);                               \
    } while (0)

#define CHECK_EQ_INT(a, b)                                                         \
    do {                                                                           \
        long long a_ = (long long)(a), b_ = (long long)(b);                        \
        if (a_ != b_)                                                              \
            sc_check_fail(__FILE__, __LINE__, "%s == %s: %lld != %lld", #a, #b,    \
                          a_, b_);                                                 \
    } while (0)

#define CHECK_NEAR(a, b, tol)                                                      \
    do {                                                                           \
        double a_ = (double)(a), b_ = (double)(b), t_ = (double)(tol);             \
        if (!(a_ - b_ <= t_ && b_ - a_ <= t_))                                     \
            sc_check_fail(__FILE__, __LINE__, "%s ~= %s (+-%g): %.9g vs %.9g", #a, \
                          #b, t_, a_, b_);                                         \
    } while (0)

#define CHECK_STREQ(a, b)                                                          \
    do {                                                                           \
        const char *a_ = (a), *b_ = (b);                                           \
        if (!a_ || !b_ || strcmp(a_, b_) != 0)                                     \
            sc_check_fail(__FILE__, __LINE__, "%s == %s: \"%s\" != \"%s\"", #a,    \
                          #b, a_ ? a_ : "(null)", b_ ? b_ : "(null)");             \
    } while (0)

/* CHECK that haystack contains needle. */
#define CHECK_CONTAINS(hay, needle)                                                \
    do {                                                                           \
        const char *h_ = (hay), *n_ = (needle);                                    \
        if (!h_ || !strstr(h_, n_))                                                \
            sc_check_fail(__FILE__, __LINE__, "%s contains \"%s\": \"%s\"", #hay,  \
                          n_, h_ ? h_ : "(null)");                                 \
    } while (0)

#define SKIP(...) sc_test_skip(__VA_ARGS__)

#endif
