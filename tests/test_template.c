/* test_template.c - tests for this area (filled in as the area lands). */
#include "testutil.h"

const test_case tests_template[] = {
    {0, 0},
};
