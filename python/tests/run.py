"""Run the Python tests with unittest for CTest: `run.py PATTERN` (e.g. test_capi.py;
test_torch.py runs under $NVFP4JIT_TEST_PYTHON when that is set).
Prints "SKIP python.<test>: <reason>" for each skipped test (tools/test.sh shows those lines)
and, when every test skipped, "all N tests skipped: <reason>" so that CTest reports the test
as skipped.
Exit status 0 on success, 1 on a failure or error."""
import os
import sys
import unittest

# The torch tests may need another interpreter than the one CMake found (CI installs torch
# into a venv of its own): NVFP4JIT_TEST_PYTHON names it.
if len(sys.argv) > 1 and sys.argv[1] == "test_torch.py":
    py = os.environ.pop("NVFP4JIT_TEST_PYTHON", None)  # (a venv's python is a symlink)
    if py:
        os.execv(py, [py, os.path.abspath(__file__), *sys.argv[1:]])

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
