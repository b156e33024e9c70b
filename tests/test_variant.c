/* test_variant.c - tests for this area (filled in as the area lands). */
#include "testutil.h"

const test_case tests_variant[] = {
    {0, 0},
};
