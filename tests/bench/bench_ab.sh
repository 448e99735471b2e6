#!/bin/sh
# The A/B verdict on generated pairs (tests/unit/test_ab.c): how often a
# 3% slower variant reads slower (power, 1,000 seeds) and how often no
# change reads faster or slower (false positives, 1,000 seeds).
cd "$(dirname "$0")/../.." || exit 1
make -s build/tests/stepcast-tests || exit 1
echo "build/tests/stepcast-tests ab_finds_a_three_percent_slowdown; ... ab_rarely_reads_a_change_that_is_not_there"
build/tests/stepcast-tests ab_finds_a_three_percent_slowdown | grep -v passed
build/tests/stepcast-tests ab_rarely_reads_a_change_that_is_not_there | grep -v passed
