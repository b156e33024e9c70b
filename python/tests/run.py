"""Run the Python tests with unittest for CTest: `run.py PATTERN` (e.g. test_capi.py).
Prints "SKIP python.<test>: <reason>" for each skipped test (tools/test.sh shows those lines)
and, when every test skipped, "all N tests skipped: <reason>" so that CTest reports the test as skipped.
Exit status 0 on success, 1 on a failure or error."""
import os
import sys
import unittest

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
suite = unittest.defaultTestLoader.discover(here, pattern=sys.argv[1] if len(sys.argv) > 1
                                            else "test_*.py", top_level_dir=here)
result = unittest.TextTestRunner(verbosity=2, stream=sys.stdout).run(suite)
for test, reason in result.skipped:
    name = test.id().split(".", 1)[-1] if "." in test.id() else test.id()
    print(f"SKIP python.{name}: {reason}")
if not result.wasSuccessful():
    sys.exit(1)
if result.testsRun and len(result.skipped) == result.testsRun:
    # CTest's SKIP_REGULAR_EXPRESSION for the python tests (single skips must not match it)
    print(f"all {result.testsRun} tests skipped: {result.skipped[0][1]}")
