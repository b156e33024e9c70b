"""The ctypes layer: everything that needs neither torch nor a GPU."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

import nvfp4jit

SRC = os.environ.get("NVFP4JIT_SOURCE_DIR",
                     os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


class CapiTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp()
        cls.ctx = nvfp4jit.Context(cache_dir=cls.tmp)

    @classmethod
    def tearDownClass(cls):
        cls.ctx.close()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_import_needs_no_torch(self):
        code = ("import sys, nvfp4jit; nvfp4jit.variants('sm_90a'); nvfp4jit.cache_dir(); "
                "assert 'torch' not in sys.modules, 'torch imported'; print(nvfp4jit.__version__)")
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.strip(), nvfp4jit.__version__)

    def test_version_matches_header(self):
        with open(os.path.join(SRC, "include", "nvfp4jit.h")) as f:
            m = re.search(r'#define NVFP4JIT_VERSION_STRING "([^"]+)"', f.read())
        self.assertEqual(nvfp4jit.__version__, m.group(1))

    def test_variants_match_the_command(self):
        for arch in ("sm_90a", "sm_100a"):
            names = nvfp4jit.variants(arch)
            self.assertGreater(len(names), 10)
            self.assertEqual(len(set(names)), len(names))
            tool = nvfp4jit.tool_path()
            if tool:
                out = subprocess.run([tool, "variants", "--arch", arch], capture_output=True,
                                     text=True, check=True).stdout
                listed = [l.split()[0] for l in out.splitlines() if l.startswith("  ")]
                self.assertEqual(names, listed)
        self.assertEqual(nvfp4jit.variants("sm90a"), nvfp4jit.variants(90))
        self.assertTrue(any(v.endswith(":swap:act16") for v in nvfp4jit.variants("sm_90a")))

    def test_bad_arch(self):
        with self.assertRaises(nvfp4jit.Error) as cm:
            nvfp4jit.variants("sm_80")
        self.assertEqual(cm.exception.name, "ERR_UNSUPPORTED_ARCH")

    def test_compile_and_artifacts(self):
        v = "sm90a:128x64x64:s4:swap:act16"
        k = nvfp4jit.compile(v, ctx=self.ctx)
        self.assertEqual(k.variant, v)
        self.assertIs(nvfp4jit.compile(v, ctx=self.ctx), k)  # same kernel again
        self.assertIn("extern \"C\"", k.source)
        self.assertIn(".target sm_90a", k.ptx)
        self.assertEqual(k.cubin[:4], b"\x7fELF")
        self.assertRegex(k.cache_key, r"^[0-9a-f]{32}$")
        self.assertTrue(k.cache_path.startswith(self.tmp))
        r = k.resources
        self.assertGreater(r["registers"], 0)
        self.assertEqual(r["spill_store_bytes"], 0)
        self.assertEqual(nvfp4jit.inspect(v, "resources", ctx=self.ctx), r)
        self.assertEqual(nvfp4jit.inspect(v, "cache_key", ctx=self.ctx), k.cache_key)
        k100 = nvfp4jit.compile(nvfp4jit.variants("sm_100a")[0], ctx=self.ctx)
        self.assertIn(".target sm_100a", k100.ptx)

    def test_sass(self):
        try:
            sass = nvfp4jit.inspect("sm90a:128x64x64:s4:swap:act16", "sass", ctx=self.ctx)
        except nvfp4jit.Error as e:
            if e.name == "ERR_NOT_FOUND":
                self.skipTest("skipped: no nvdisasm or cuobjdump")
            raise
        self.assertIn("HGMMA", sass)

    def test_bad_variants(self):
        with self.assertRaises(nvfp4jit.Error) as cm:
            nvfp4jit.compile("sm90a:nonsense", ctx=self.ctx)
        self.assertEqual(cm.exception.name, "ERR_INVALID_ARG")
        with self.assertRaises(nvfp4jit.Error) as cm:
            nvfp4jit.compile("sm90a:128x64x64:s64", ctx=self.ctx)
        self.assertEqual(cm.exception.name, "ERR_INVALID_VARIANT")
        self.assertTrue(cm.exception.message)

    def test_check_messages(self):
        nvfp4jit.check([(96, 128, 128), (0, 256, 512)], ctx=self.ctx)
        with self.assertRaises(nvfp4jit.Error) as cm:
            nvfp4jit.check([(8, 64, 128)] * 3 + [(8, 64, 100)], ctx=self.ctx)
        e = cm.exception
        self.assertEqual((e.status, e.name), (2, "ERR_INVALID_PROBLEM"))
        self.assertIn("group 3: K=100 is not a multiple of 64", e.message)
        self.assertIn("group 3", str(e))
        with self.assertRaises(nvfp4jit.Error):
            nvfp4jit.check([(8, 60, 128)], ctx=self.ctx)
        with self.assertRaises(nvfp4jit.Error):
            nvfp4jit.check([], ctx=self.ctx)

    def test_choose_and_explain(self):
        shapes = [(80, 4096, 7168), (176, 4096, 7168)]
        name, how = nvfp4jit.choose(shapes, "sm_90a", ctx=self.ctx)
        self.assertIn(name, nvfp4jit.variants("sm_90a"))
        self.assertIn(how, ("heuristic", "tuned"))
        forced = nvfp4jit.variants("sm_90a")[0]
        self.assertEqual(nvfp4jit.choose(shapes, "sm_90a", variant=forced, ctx=self.ctx),
                         (forced, "forced"))
        if not nvfp4jit.tool_path():
            self.skipTest("skipped: the nvfp4jit command was not found")
        text = nvfp4jit.explain(shapes, "sm_90a", top=3, ctx=self.ctx)
        self.assertIn("winner:", text)
        with self.assertRaises(nvfp4jit.Error):
            nvfp4jit.explain([(8, 64, 100)], "sm_90a", ctx=self.ctx)

    def test_cache_dir(self):
        self.assertEqual(os.path.realpath(self.ctx.cache_dir), os.path.realpath(self.tmp))
        env = dict(os.environ, NVFP4JIT_CACHE_DIR=os.path.join(self.tmp, "env"))
        p = subprocess.run([sys.executable, "-c", "import nvfp4jit; print(nvfp4jit.cache_dir())"],
                           capture_output=True, text=True, env=env)
        self.assertEqual(p.stdout.strip(), env["NVFP4JIT_CACHE_DIR"], p.stderr)
        mem = nvfp4jit.Context(disk_cache=False)
        k = mem.compile("sm90a:64x8x64:s2")
        self.assertEqual(k.cache_path, "")
        mem.close()

    def test_error_type(self):
        e = nvfp4jit.Error(7, "log")
        self.assertIsInstance(e, RuntimeError)
        self.assertEqual((e.status, e.name, e.message), (7, "ERR_COMPILE", "log"))


if __name__ == "__main__":
    unittest.main()
