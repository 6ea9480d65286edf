# SPDX-License-Identifier: MIT
# tests/quant_gguf.py LIBRTCORE: rt's reference dequantisers (rt_dequantize,
# abi/rt_quant.h) against an independent decoder, the gguf Python package's
# gguf.quants.dequantize, called through ctypes. Run by tests/test-quant.c
# (quant-2.*); exit status 77 with a reason on stdout when python's gguf or
# numpy is missing. Every block type both implement is checked
#
#   quant-2.1  on random blocks (random bytes, finite random f16 scales),
#   quant-2.2  on real blocks: the first and last blocks of every quantised
#              tensor of the pip-installed models (.ci/deps), when present.
#
# The two must agree to 1 ulp of the result's scale: both compute
# d * scale * q in binary32, but not always in the same order.
import ctypes
import sys

try:
    import numpy as np
    import gguf
    from gguf import GGMLQuantizationType as Q
    from gguf.quants import dequantize
except ImportError as e:
    print(f"python3 has no gguf/numpy ({e}); pip install gguf numpy")
    sys.exit(77)

# type -> (block elements, block bytes, byte offsets of f16 scales)
TYPES = {
    Q.Q4_0: (32, 18, [0]),
    Q.Q4_1: (32, 20, [0, 2]),
    Q.Q5_0: (32, 22, [0]),
    Q.Q5_1: (32, 24, [0, 2]),
    Q.Q8_0: (32, 34, [0]),
    Q.Q2_K: (256, 84, [80, 82]),
    Q.Q3_K: (256, 110, [108]),
    Q.Q4_K: (256, 144, [0, 2]),
    Q.Q5_K: (256, 176, [0, 2]),
    Q.Q6_K: (256, 210, [208]),
    Q.IQ4_NL: (32, 18, [0]),
    Q.IQ4_XS: (256, 136, [0]),
}

lib = ctypes.CDLL(sys.argv[1])
lib.rt_dequantize.argtypes = [ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
lib.rt_dequantize.restype = None
failed = 0


def rt_decode(qtype, raw):
    blck, size, _ = TYPES[qtype]
    n = len(raw) // size * blck
    src = np.ascontiguousarray(raw, dtype=np.uint8)
    out = np.empty(n, dtype=np.float32)
    lib.rt_dequantize(int(qtype), src.ctypes.data, out.ctypes.data, n)
    return out


def compare(check, what, qtype, raw):
    global failed
    ref = dequantize(raw, qtype).reshape(-1).astype(np.float32)
    got = rt_decode(qtype, raw)
    scale = np.maximum(np.abs(ref), 1e-30)
    bad = np.abs(got - ref) > 2 * np.spacing(scale.astype(np.float32))
    if got.shape != ref.shape or bad.any():
        i = int(np.argmax(bad)) if got.shape == ref.shape else -1
        print(f"FAIL {check} {what} {qtype.name}: element {i}: rt {got[i]} gguf {ref[i]}")
        failed += 1
        return
    print(f"ok   {check} {what} {qtype.name}: {ref.size} elements")


def random_blocks(qtype, n_blocks, rng):
    _, size, scales = TYPES[qtype]
    raw = rng.integers(0, 256, size=(n_blocks, size), dtype=np.uint8)
    for off in scales:
        h = rng.uniform(-2.0, 2.0, size=n_blocks).astype(np.float16)
        raw[:, off:off + 2] = h.view(np.uint8).reshape(n_blocks, 2)
    return raw.reshape(-1)


rng = np.random.default_rng(13)
for qtype in TYPES:
    compare("quant-2.1", "random", qtype, random_blocks(qtype, 97, rng))

for path in sys.argv[2:]:
    reader = gguf.GGUFReader(path)
    seen = {}
    for t in reader.tensors:
        if t.tensor_type not in TYPES:
            continue
        _, size, _ = TYPES[t.tensor_type]
        raw = np.asarray(t.data).view(np.uint8).reshape(-1)
        n = raw.size // size
        take = min(n, 64)
        # the first and last blocks of the tensor
        sample = np.concatenate([raw[:take * size], raw[(n - take) * size:]])
        seen.setdefault(t.tensor_type, []).append(sample)
    for qtype, samples in seen.items():
        compare("quant-2.2", f"{path.rsplit('/', 1)[-1]} ({len(samples)} tensors)", qtype,
                np.concatenate(samples))
    if not seen:
        print(f"FAIL quant-2.2 {path}: no quantised tensor")
        failed += 1

sys.exit(1 if failed else 0)
