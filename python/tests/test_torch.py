"""The torch layer: validation (torch, no GPU), the custom op's fake implementation, and on a
GPU of compute capability 9.0 grouped_gemm, Plan, CUDA graphs, torch.compile, tune and the
public problem's entry point against a float64 reference. Skips visibly without torch or
without a GPU ("skipped: no CUDA device")."""
import os
import shutil
import tempfile
import unittest
import zlib

try:
    import torch
except ImportError:  # CI: torch is not installed there
    torch = None

import nvfp4jit

SRC = os.environ.get("NVFP4JIT_SOURCE_DIR",
                     os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def _gpu_reason():
    if torch is None:
        return "skipped: torch is not installed"
    if not torch.cuda.is_available():
        return "skipped: no CUDA device"
    if torch.cuda.get_device_capability() != (9, 0):
        return "skipped: no CUDA device of compute capability 9.0"
    return None


def _sets(names=None):
    """problems/gpumode.txt: [(name, [(M, N, K), ...])]."""
    out = []
    with open(os.path.join(SRC, "problems", "gpumode.txt")) as f:
        for line in f:
            tok = line.split("#", 1)[0].split()
            if tok and (names is None or tok[0] in names):
                out.append((tok[0], [tuple(int(x) for x in t.split("x")) for t in tok[1:]]))
    return out


def _u8(t):
    """The same memory as uint8 (copies without relying on fp4/fp8 kernels)."""
    return t.view(torch.uint8)


def _close(test, out, ref, k, what):
    """|out-ref| <= 1e-3 + 1e-3|ref| (DESIGN.md) plus the fp32 accumulation allowance, which
    for the public data (|a*b| <= 9) is at most (K/16+4) * 2^-24 * 9K."""
    o, r = out.float(), ref.float()
    test.assertEqual(tuple(o.shape), tuple(r.shape), f"{what}: shape")
    if o.numel() == 0:  # an M = 0 group: nothing to compare (and max() of nothing raises)
        return
    test.assertFalse(torch.isnan(o).any().item(), f"{what}: NaN in the output")
    tol = 1e-3 + 1e-3 * r.abs() + (k / 16 + 4) * 2.0 ** -24 * 9 * k
    bad = ((o - r).abs() > tol)
    test.assertFalse(bad.any().item(), f"{what}: {int(bad.sum())} elements off, max "
                                       f"|diff| {float((o - r).abs().max())}")


@unittest.skipIf(torch is None, "skipped: torch is not installed")
class TorchNoGpuTest(unittest.TestCase):
    def test_validation_on_cpu_tensors(self):
        a = torch.zeros((8, 64), dtype=torch.uint8)
        with self.assertRaises(nvfp4jit.Error) as cm:
            nvfp4jit.grouped_gemm([a], [a], [a], [a])
        self.assertEqual(cm.exception.name, "ERR_INVALID_PROBLEM")
        self.assertIn("group 0: a is not a CUDA tensor", cm.exception.message)
        with self.assertRaises(nvfp4jit.Error) as cm:
            nvfp4jit.grouped_gemm([a, a], [a], [a], [a])
        self.assertEqual(cm.exception.name, "ERR_INVALID_ARG")

    def test_fake_impl(self):
        self.assertTrue(callable(nvfp4jit.grouped_gemm))  # imports the torch layer: the ops
        # meta tensors dispatch to the fake implementation (what torch.compile traces with)
        a = [torch.empty((m, 64), dtype=torch.uint8, device="meta") for m in (5, 0, 300)]
        b = [torch.empty((n, 64), dtype=torch.uint8, device="meta") for n in (128, 64, 8)]
        s = [torch.empty((1024,), dtype=torch.uint8, device="meta") for _ in range(3)]
        out = torch.ops.nvfp4jit.grouped_gemm(a, b, s, s)
        self.assertEqual([tuple(o.shape) for o in out], [(5, 128), (0, 64), (300, 8)])
        self.assertTrue(all(o.dtype == torch.float16 for o in out))

    def test_traced_by_torch_compile(self):
        self.assertTrue(callable(nvfp4jit.grouped_gemm))
        from torch.fx.experimental.proxy_tensor import make_fx

        def f(a, b, sfa, sfb):
            return [o * 2 for o in torch.ops.nvfp4jit.grouped_gemm(a, b, sfa, sfb)]

        a = [torch.zeros((m, 64), dtype=torch.uint8) for m in (5, 300)]
        b = [torch.zeros((n, 64), dtype=torch.uint8) for n in (128, 8)]
        s = [torch.zeros((2048,), dtype=torch.uint8) for _ in range(2)]
        g = make_fx(f, tracing_mode="fake")(a, b, s, s)
        self.assertIn("torch.ops.nvfp4jit.grouped_gemm.default", g.code)
        # fullgraph: a graph break would fail here; the traced graph then runs the real op,
        # which refuses CPU tensors with the library's kind of error
        cf = torch.compile(f, fullgraph=True, backend="aot_eager")
        with self.assertRaises(nvfp4jit.Error) as cm:
            cf(a, b, s, s)
        self.assertIn("group 0: a is not a CUDA tensor", cm.exception.message)


def _fake_plan_run(plan, groups, n, stream):
    """nvfp4jit_plan_run on the CPU: read every group BY ITS POINTERS (A, B and the blocked
    scales as nvfp4jit.h lays them out), compute C in float64 and write it to C's pointer."""
    import ctypes
    from nvfp4jit import testing
    v = (ctypes.c_int64 * (8 * n)).from_address(groups)
    for g in range(n):
        m, nn, k, pa, pb, psa, psb, pc = v[8 * g:8 * g + 8]
        if m == 0:
            continue

        def mat(p, rows):
            raw = bytearray(ctypes.string_at(p, rows * k // 2))
            return torch.frombuffer(raw, dtype=torch.uint8).view(rows, k // 2)

        def scales(p, rows):
            rb, cb = -(-rows // 128), -(-k // 64)
            raw = bytearray(ctypes.string_at(p, rb * 128 * cb * 4))
            flat = torch.frombuffer(raw, dtype=torch.uint8)
            rm = flat.view(rb, cb, 32, 4, 4).permute(0, 3, 2, 1, 4).reshape(rb * 128, cb * 4)
            return rm[:rows, :k // 16].contiguous().view(torch.float8_e4m3fn)

        A = testing._decode(mat(pa, m), scales(psa, m))
        B = testing._decode(mat(pb, nn), scales(psb, nn))
        C = (A @ B.T).to(torch.float16).contiguous()
        ctypes.memmove(pc, C.data_ptr(), m * nn * 2)
    return 0


@unittest.skipIf(torch is None, "skipped: torch is not installed")
class TorchCpuSimulationTest(unittest.TestCase):
    """The whole torch path on CPU tensors (no GPU): tensors are validated and packed as for a
    launch, plans are made by the library, and only nvfp4jit_plan_run is replaced by
    _fake_plan_run, which reads the data through the pointers it is given. So the pointers,
    the shapes and the blocked scale layout (the public problem's reordered view included) are
    checked against the reference, which reads the row-major scales instead."""

    def setUp(self):
        import types
        import nvfp4jit._torch as nt
        import nvfp4jit.gpumode as gm
        from nvfp4jit import _lib, testing
        self.t = testing
        stream = types.SimpleNamespace(cuda_stream=0)
        self.saved = [(nt, "_REQUIRE_CUDA", False), (_lib, "nvfp4jit_plan_run", _fake_plan_run),
                      (torch.cuda, "get_device_capability", lambda *a: (9, 0)),
                      (torch.cuda, "current_stream", lambda *a: stream),
                      (torch.cuda, "current_device", lambda: 0),
                      (torch.cuda, "is_current_stream_capturing", lambda: False),
                      (torch.cuda, "synchronize", lambda *a: None),
                      (nvfp4jit._tls, "ctx", nvfp4jit.Context()),
                      (gm, "_last", None)]
        self.saved = [(o, n, getattr(o, n, None), v) for o, n, v in self.saved]
        for o, n, _, v in self.saved:
            setattr(o, n, v)

    def tearDown(self):
        nvfp4jit._tls.ctx.close()
        for o, n, old, _ in self.saved:
            setattr(o, n, old)

    def _data(self, shapes, seed):
        m, n, k = zip(*shapes)
        return self.t.generate_input(m, n, k, len(shapes), seed, device="cpu")

    def test_custom_kernel(self):
        from nvfp4jit.gpumode import custom_kernel
        for name, shapes in _sets([f"test{i}" for i in range(1, 11)]):
            data = self._data(shapes, zlib.crc32(name.encode()))
            for abc in data[0]:
                abc[2].fill_(float("nan"))
            out = custom_kernel(data)
            self.assertIs(custom_kernel(data), out)
            for g, (o, r) in enumerate(zip(out, self.t.reference(data))):
                self.assertTrue(torch.equal(o[:, :, 0], r), f"{name} group {g}")

    def test_grouped_gemm_op_bind(self):
        shapes = [(96, 128, 128), (0, 256, 512), (1, 384, 256), (200, 64, 1024)]
        data = self._data(shapes, 7)
        ref = self.t.reference(data)
        a8 = [_u8(x[0][:, :, 0]) for x in data[0]]
        b8 = [_u8(x[1][:, :, 0]) for x in data[0]]
        fa = [self.t.to_blocked(s[0][:, :, 0]) for s in data[1]]
        fb = [self.t.to_blocked(s[1][:, :, 0]) for s in data[1]]
        re_a, re_b = [s[0] for s in data[2]], [s[1] for s in data[2]]
        results = [nvfp4jit.grouped_gemm(a8, b8, fa, fb),
                   nvfp4jit.grouped_gemm([x[0] for x in data[0]], [x[1] for x in data[0]],
                                         re_a, re_b),
                   torch.ops.nvfp4jit.grouped_gemm(a8, b8, fa, fb)]
        outs = [torch.empty((m, n), dtype=torch.float16) for m, n, _ in shapes]
        torch.ops.nvfp4jit.grouped_gemm_out(a8, b8, re_a, re_b, outs)
        launch = nvfp4jit.Plan(shapes).bind(a8, b8, fa, fb)
        results += [outs, launch()]
        for i, out in enumerate(results):
            for g in range(len(shapes)):
                self.assertTrue(torch.equal(out[g], ref[g]), f"call {i} group {g}")

    def test_moe_weights(self):
        E, n, k = 3, 256, 512
        sb = nvfp4jit.scale_bytes(n, k)
        self.assertEqual(sb, 256 * k // 16)
        self.assertEqual(nvfp4jit.moe_scale_rows(1000, 8), 2048)
        b = torch.zeros((E, n, k // 2), dtype=torch.uint8)
        sfb = torch.zeros((E, sb), dtype=torch.uint8)
        w = nvfp4jit.Weights(b, sfb)
        self.assertEqual((w.num_experts, w.n, w.k), (E, n, k))
        w2 = nvfp4jit.Weights(list(b), list(sfb))
        self.assertEqual((w2.num_experts, w2.n, w2.k), (E, n, k))
        with self.assertRaises(nvfp4jit.Error) as cm:
            nvfp4jit.Weights(b, sfb[:, :100])
        self.assertIn("E * scale_bytes(N, K)", cm.exception.message)
        with self.assertRaises(nvfp4jit.Error) as cm:  # the library's own check: K
            nvfp4jit.Weights(torch.zeros((E, n, 50), dtype=torch.uint8), sfb)
        self.assertEqual(cm.exception.name, "ERR_INVALID_PROBLEM")
        # sm_100a weights register too (the kernel is compiled, linted and emulated only)
        w3 = nvfp4jit.Weights(b, sfb, arch="sm_100a")
        self.assertEqual((w3.num_experts, w3.n, w3.k), (E, n, k))
        w3.close()
        w.close()
        w2.close()

    def test_errors(self):
        a = [torch.zeros((96, 64), dtype=torch.uint8)]
        s = [torch.zeros((1024,), dtype=torch.uint8)]
        cases = [((a, [torch.zeros((8, 32), dtype=torch.uint8)], s, s), "b has 32"),
                 ((a, [torch.zeros((8, 128), dtype=torch.uint8)[:, :64]], s, s),
                  "b is not row-major contiguous"),
                 ((a, a, [s[0][:100]], s), "sfa has 100 bytes"),
                 (([a[0].t()], a, s, s), "a is not row-major contiguous"),
                 ((a, a, s, [s[0].view(32, 32).t()]), "sfb is not contiguous"),
                 (([a[0].float()], a, s, s), "a has dtype torch.float32"),
                 (([torch.zeros((96, 50), dtype=torch.uint8)], [torch.zeros((8, 50),
                   dtype=torch.uint8)], s, s), "K=100 is not a multiple of 64")]
        for args, msg in cases:
            with self.assertRaises(nvfp4jit.Error, msg=msg) as cm:
                nvfp4jit.grouped_gemm(*args)
            self.assertEqual(cm.exception.name, "ERR_INVALID_PROBLEM")
            self.assertIn(msg, cm.exception.message)


@unittest.skipIf(_gpu_reason(), _gpu_reason() or "")
class TorchGpuTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        from nvfp4jit import testing
        cls.t = testing
        cls.tmp = tempfile.mkdtemp()
        os.environ.setdefault("NVFP4JIT_CACHE_DIR", cls.tmp)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def _data(self, shapes, seed=1):
        m, n, k = zip(*shapes)
        return self.t.generate_input(m, n, k, len(shapes), seed)

    @staticmethod
    def _lists(data):
        abc, _, re, _ = data
        return ([x[0] for x in abc], [x[1] for x in abc], [s[0] for s in re],
                [s[1] for s in re])

    def test_gpumode_custom_kernel_all_sets(self):
        from nvfp4jit.gpumode import custom_kernel
        for name, shapes in _sets():
            data = self._data(shapes, seed=zlib.crc32(name.encode()))
            ref = self.t.reference(data)
            out = custom_kernel(data)
            out2 = custom_kernel(data)  # the same data again: the fast path
            torch.cuda.synchronize()
            self.assertEqual(len(out), len(shapes))
            for g, (o, r, (m, n, k)) in enumerate(zip(out, ref, shapes)):
                self.assertIs(o, data[0][g][2])  # written in place, c returned
                _close(self, o[:, :, 0], r, k, f"{name} group {g}")
            self.assertIs(out2, out)

    def test_grouped_gemm_layouts_and_dtypes(self):
        shapes = [(96, 128, 128), (0, 256, 512), (1, 384, 256), (200, 64, 1024)]
        data = self._data(shapes, seed=7)
        ref = self.t.reference(data)
        a, b, sfa, sfb = self._lists(data)
        out = nvfp4jit.grouped_gemm(a, b, sfa, sfb)  # fp4 views, 3-D, reordered scales
        # uint8 2-D operands and flat blocked scales
        a8 = [x[:, :, 0].view(torch.uint8) for x in a]
        b8 = [x[:, :, 0].view(torch.uint8) for x in b]
        fa = [self.t.to_blocked(s[0][:, :, 0]).cuda() for s in data[1]]
        fb = [self.t.to_blocked(s[1][:, :, 0]).cuda() for s in data[1]]
        out8 = [torch.full((m, n), float("nan"), dtype=torch.float16, device="cuda")
                for m, n, _ in shapes]
        self.assertIs(nvfp4jit.grouped_gemm(a8, b8, fa, fb, out=out8)[0], out8[0])
        torch.cuda.synchronize()
        for g, (m, n, k) in enumerate(shapes):
            self.assertEqual(tuple(out[g].shape), (m, n))
            _close(self, out[g], ref[g], k, f"group {g}")
            self.assertTrue(torch.equal(out[g], out8[g]))

    def test_errors(self):
        data = self._data([(64, 128, 256)])
        a, b, sfa, sfb = self._lists(data)
        with self.assertRaises(nvfp4jit.Error) as cm:
            nvfp4jit.grouped_gemm(a, [_u8(b[0])[:, :64].contiguous()], sfa, sfb)
        self.assertIn("group 0: a has K/2=128 bytes per row, b has 64", cm.exception.message)
        with self.assertRaises(nvfp4jit.Error) as cm:  # K = 100: the library's own check
            x = torch.zeros((64, 50), dtype=torch.uint8, device="cuda")
            s = torch.zeros((128 * 8,), dtype=torch.uint8, device="cuda")
            nvfp4jit.grouped_gemm([x], [x[:8]], [s], [s])
        self.assertEqual(cm.exception.name, "ERR_INVALID_PROBLEM")
        self.assertIn("K=100 is not a multiple of 64", cm.exception.message)
        with self.assertRaises(nvfp4jit.Error):  # scales too small
            nvfp4jit.grouped_gemm(a, b, [sfa[0].reshape(-1)[:10]], sfb)

    def test_plan_repeated_and_changing_m(self):
        shapes = [(80, 256, 512), (40, 256, 512)]
        plan = nvfp4jit.Plan(shapes)
        self.assertIn(plan.variant, nvfp4jit.variants("sm_90a"))
        for ms, seed in (((80, 40), 1), ((100, 0), 2), ((1, 128), 3)):
            sh = [(ms[0], 256, 512), (ms[1], 256, 512)]
            data = self._data(sh, seed)
            a, b, sfa, sfb = self._lists(data)
            out = plan.run(a, b, sfa, sfb)
            torch.cuda.synchronize()
            for g, r in enumerate(self.t.reference(data)):
                _close(self, out[g], r, 512, f"M={ms} group {g}")
        launch = plan.bind(*self._lists(data))  # static buffers: validated once
        data2 = self._data(sh, 4)
        for g in range(2):
            _u8(launch._keep[0][g]).copy_(_u8(data2[0][g][0]))
            _u8(launch._keep[1][g]).copy_(_u8(data2[0][g][1]))
        outs = launch()
        torch.cuda.synchronize()
        # a and b from data2 with the scales of data (what the launcher's buffers now hold)
        mixed = ([(data2[0][g][0], data2[0][g][1], None) for g in range(2)], data[1], None, None)
        for g, r in enumerate(self.t.reference(mixed)):
            _close(self, outs[g], r, 512, f"bound group {g}")
        with self.assertRaises(nvfp4jit.Error):  # another N than planned
            data = self._data([(8, 128, 512), (8, 256, 512)])
            plan.run(*self._lists(data))
        plan.close()

    def test_current_stream(self):
        data = self._data([(128, 512, 1024)] * 4, seed=11)
        a, b, sfa, sfb = self._lists(data)
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())  # the data was made on the default stream
        with torch.cuda.stream(s):
            out = nvfp4jit.grouped_gemm(a, b, sfa, sfb)
        s.synchronize()
        for g, r in enumerate(self.t.reference(data)):
            _close(self, out[g], r, 1024, f"group {g}")

    def test_cuda_graph(self):
        shapes = [(64, 256, 512), (128, 128, 512)]
        data = self._data(shapes, seed=5)
        a, b, sfa, sfb = self._lists(data)
        out = [torch.empty((m, n), dtype=torch.float16, device="cuda") for m, n, _ in shapes]
        # plans are per stream: warm up (plan, upload) on the stream that captures
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            nvfp4jit.grouped_gemm(a, b, sfa, sfb, out=out)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=s):
            nvfp4jit.grouped_gemm(a, b, sfa, sfb, out=out)
        data2 = self._data(shapes, seed=6)  # new values, same buffers
        for g in range(2):
            _u8(a[g]).copy_(_u8(data2[0][g][0]))
            _u8(b[g]).copy_(_u8(data2[0][g][1]))
            _u8(sfa[g]).copy_(_u8(data2[2][g][0]))
            _u8(sfb[g]).copy_(_u8(data2[2][g][1]))
            out[g].fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        for g, r in enumerate(self.t.reference(data2)):
            _close(self, out[g], r, 512, f"replay group {g}")
        # a second graph of the same (cached) plan on other buffers: each replay computes the
        # problem of its own capture
        data3 = self._data(shapes, seed=8)
        a3, b3, sfa3, sfb3 = self._lists(data3)
        out3 = [torch.empty_like(o) for o in out]
        graph3 = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph3, stream=s):
            nvfp4jit.grouped_gemm(a3, b3, sfa3, sfb3, out=out3)
        for o in out + out3:
            o.fill_(float("nan"))
        graph3.replay()
        graph.replay()
        torch.cuda.synchronize()
        for g, (r2, r3) in enumerate(zip(self.t.reference(data2), self.t.reference(data3))):
            _close(self, out[g], r2, 512, f"graph 1 after graph 2, group {g}")
            _close(self, out3[g], r3, 512, f"graph 2, group {g}")

    def test_custom_op_and_compile(self):
        data = self._data([(48, 256, 256), (200, 256, 256)], seed=9)
        a, b, sfa, sfb = self._lists(data)
        a = [x[:, :, 0].view(torch.uint8) for x in a]  # keep fp4 dtypes out of inductor
        b = [x[:, :, 0].view(torch.uint8) for x in b]
        eager = torch.ops.nvfp4jit.grouped_gemm(a, b, sfa, sfb)

        @torch.compile(fullgraph=True)
        def f(a, b, sfa, sfb):
            return [o * 2 for o in torch.ops.nvfp4jit.grouped_gemm(a, b, sfa, sfb)]

        compiled = f(a, b, sfa, sfb)
        outs = [torch.empty_like(x) for x in eager]
        torch.ops.nvfp4jit.grouped_gemm_out(a, b, sfa, sfb, outs)
        torch.cuda.synchronize()
        for e, c, o in zip(eager, compiled, outs):
            self.assertTrue(torch.equal(e * 2, c))
            self.assertTrue(torch.equal(e, o))

    def test_moe(self):
        from nvfp4jit import testing
        counts, n, k = [5, 0, 130, 40], 256, 512
        E, max_rows = len(counts), 200
        data = self._data([(c, n, k) for c in counts], seed=21)
        b = torch.stack([_u8(x[1][:, :, 0]) for x in data[0]])
        sfb = torch.stack([testing.to_blocked(s[1][:, :, 0]) for s in data[1]]).cuda()
        off, sfo, r, srow = [], [], 0, 0
        for c in counts:
            off.append(r)
            sfo.append(srow)
            r += c
            srow += -(-c // 128) * 128
        off.append(r)
        a = torch.zeros((max_rows, k // 2), dtype=torch.uint8, device="cuda")
        sfa = torch.zeros((nvfp4jit.moe_scale_rows(max_rows, E) * (k // 16),), dtype=torch.uint8,
                          device="cuda")
        for e, c in enumerate(counts):
            if c:
                a[off[e]:off[e] + c] = _u8(data[0][e][0][:, :, 0])
                blk = testing.to_blocked(data[1][e][0][:, :, 0]).view(torch.uint8).cuda()
                sfa[sfo[e] * (k // 16):sfo[e] * (k // 16) + blk.numel()] = blk
        offsets = torch.tensor(off, dtype=torch.int32, device="cuda")
        sf_offsets = torch.tensor(sfo, dtype=torch.int32, device="cuda")
        ref = self.t.reference(data)
        for w in (nvfp4jit.Weights(b, sfb), nvfp4jit.Weights(list(b), list(sfb))):
            plan = nvfp4jit.MoEPlan(w, max_rows)
            self.assertIn(plan.variant, nvfp4jit.variants("sm_90a"))
            out = torch.full((max_rows, n), float("nan"), dtype=torch.float16, device="cuda")
            self.assertIs(plan.run(a, sfa, offsets, sf_offsets, out), out)
            torch.cuda.synchronize()
            plan.check()
            for e, c in enumerate(counts):
                _close(self, out[off[e]:off[e] + c], ref[e], k, f"{plan} expert {e}")
            self.assertTrue(torch.isnan(out[off[-1]:]).all().item())  # rows no expert owns
            bad = offsets.clone()
            bad[E] = max_rows + 10  # the last expert runs past max_rows: skipped, reported
            plan.run(a, sfa, bad, sf_offsets, out)
            torch.cuda.synchronize()
            with self.assertRaises(nvfp4jit.Error) as cm:
                plan.check()
            self.assertEqual(cm.exception.expert, E - 1)
            self.assertIn(f"expert {E - 1}", cm.exception.message)
            w.close()

    def test_tune(self):
        data = self._data([(64, 512, 1024), (96, 512, 1024)], seed=3)
        a, b, sfa, sfb = self._lists(data)
        out = [torch.empty((m, 512), dtype=torch.float16, device="cuda") for m in (64, 96)]
        ctx = nvfp4jit.Context(cache_dir=self.tmp)
        r = nvfp4jit.tune(a, b, sfa, sfb, out, candidates=3, iters=10, store=False, ctx=ctx)
        self.assertIn(r.best, nvfp4jit.variants("sm_90a"))
        self.assertGreater(r.best_us, 0)
        self.assertEqual(sum(x["winner"] for x in r.results), 1)


if __name__ == "__main__":
    unittest.main()
