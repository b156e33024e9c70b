/* test_compile.c - tests for this area (filled in as the area lands). */
#include "testutil.h"

const test_case tests_compile[] = {
    {0, 0},
};
