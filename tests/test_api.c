/* test_api.c - tests for this area (filled in as the area lands). */
#include "testutil.h"

const test_case tests_api[] = {
    {0, 0},
};
