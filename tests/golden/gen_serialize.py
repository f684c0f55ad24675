# Writes the safetensors files and serialize.txt that test_serialize.cpp loads, and checks xgrad's files in PyTorch.
#
# The safetensors package is not installed here, so this script reads and writes the format itself
# with struct and json, as the spec (github.com/huggingface/safetensors, README "Format") and the
# reference implementation's serialize() do: an 8-byte little-endian header length, a compact JSON
# header with "__metadata__" first and tensors ordered by dtype (widest first) then name, padded with
# spaces to a multiple of 8 bytes, then the tensors' little-endian bytes packed in header order.
#
# Run from the repository root with a Python that has torch (1.13):
#     /usr/bin/python3 tests/golden/gen_serialize.py             # regenerates the golden files
#     /usr/bin/python3 tests/golden/gen_serialize.py --check F   # checks a file xgrad wrote
#
# For the check, let the test keep the file that xgrad's seed-0 model was saved to:
#     XGRAD_SERIALIZE_KEEP=/tmp/xgrad_model.safetensors meson test -C build serialize
#     /usr/bin/python3 tests/golden/gen_serialize.py --check /tmp/xgrad_model.safetensors
# It validates the file byte by byte, loads it into the same architecture with load_state_dict
# (strict), and compares the values and a forward pass with torch.manual_seed(0)'s model.
import json
import os
import struct
import sys

import torch
from torch import nn

assert sys.byteorder == "little", "safetensors data is little-endian; this script writes native bytes"
HERE = os.path.dirname(os.path.abspath(__file__))
CODES = {torch.float32: "F32", torch.float64: "F64", torch.int64: "I64", torch.float16: "F16", torch.bool: "BOOL",
         torch.uint8: "U8", torch.int32: "I32"}
DTYPES = {code: dtype for dtype, code in CODES.items()}
# The reference orders tensors by its Dtype enum, descending: wider types first.
RANK = {"BOOL": 0, "U8": 1, "F16": 7, "I32": 9, "F32": 11, "F64": 12, "I64": 13}


def write_safetensors(path, tensors, metadata=None):
    """Writes a dict of tensors as the reference implementation does."""
    items = sorted(tensors.items(), key=lambda kv: (-RANK[CODES[kv[1].dtype]], kv[0]))
    header, blobs, offset = {}, [], 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, t in items:
        data = t.detach().contiguous().numpy().tobytes()  # little-endian: checked below
        header[name] = {"dtype": CODES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def read_safetensors(path):
    """Reads a safetensors file, checking every rule of the spec; returns (tensors, metadata)."""
    raw = open(path, "rb").read()
    assert len(raw) >= 8, "shorter than the header length"
    (n,) = struct.unpack("<Q", raw[:8])
    assert n <= 100_000_000 and 8 + n <= len(raw), f"bad header length {n}"
    text = raw[8 : 8 + n].decode("utf-8")
    assert text.startswith("{"), "the header must start with '{'"

    def no_duplicates(pairs):
        keys = [k for k, _ in pairs]
        assert len(keys) == len(set(keys)), f"duplicate keys {keys}"
        return dict(pairs)

    header = json.loads(text, object_pairs_hook=no_duplicates)
    metadata = header.pop("__metadata__", None)
    assert metadata is None or all(isinstance(v, str) for v in metadata.values()), "metadata values must be strings"
    data = raw[8 + n :]
    spans, tensors = [], {}
    for name, info in header.items():
        assert set(info) == {"dtype", "shape", "data_offsets"}, f"{name}: fields {sorted(info)}"
        dtype = DTYPES[info["dtype"]]
        shape = info["shape"]
        begin, end = info["data_offsets"]
        numel = 1
        for d in shape:
            assert isinstance(d, int) and d >= 0, f"{name}: bad size {d}"
            numel *= d
        size = torch.tensor([], dtype=dtype).element_size()
        assert end - begin == numel * size, f"{name}: offsets {begin, end} for {numel} elements of {info['dtype']}"
        spans.append((begin, end, name))
        chunk = bytearray(data[begin:end])
        t = torch.frombuffer(chunk, dtype=dtype) if chunk else torch.empty(0, dtype=dtype)
        tensors[name] = t.reshape(shape).clone()
    cursor = 0
    for begin, end, name in sorted(spans):
        assert begin == cursor, f"{name} starts at {begin}, expected {cursor}"
        cursor = end
    assert cursor == len(data), f"the tensors end at {cursor} but the data has {len(data)} bytes"
    return tensors, metadata


def make_model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(5, 6), nn.ReLU(), nn.Linear(6, 2))


def model_input():
    return torch.randn(3, 5, generator=torch.Generator().manual_seed(1))


def put(lines, name, t):
    t = t.detach().contiguous()
    dtype = str(t.dtype).replace("torch.", "")
    vals = t.flatten().tolist()
    text = [str(v) for v in vals] if dtype == "int64" else [float(v).hex() for v in vals]
    lines.append(" ".join([name, dtype, str(t.dim())] + [str(s) for s in t.shape] + text))


def generate():
    lines = [f"# Generated by gen_serialize.py with torch {torch.__version__}; do not edit."]
    model = make_model()
    state = model.state_dict()
    write_safetensors(os.path.join(HERE, "serialize_sequential.safetensors"), state, {"format": "pt"})
    for name, t in state.items():
        put(lines, "sequential." + name, t)
    x = model_input()
    put(lines, "sequential.input", x)
    put(lines, "sequential.output", model(x))

    # Every dtype xgrad has, a 0-d and an empty tensor, and a name that is not ASCII.
    g = torch.Generator().manual_seed(2)
    mixed = {
        "table": torch.randn(2, 3, generator=g, dtype=torch.float64),
        "index": torch.tensor([0, -1, 7, 2**40 + 1], dtype=torch.int64),
        "naïve.scale": torch.tensor(0.25, dtype=torch.float32),
        "empty": torch.zeros(0, 3, dtype=torch.float32),
        "vector": torch.randn(3, generator=g),
    }
    write_safetensors(os.path.join(HERE, "serialize_mixed.safetensors"), mixed)
    for name, t in mixed.items():
        put(lines, "mixed." + name, t)

    # bool, uint8 and int32 (test_serialize.cpp repeats these values).
    narrow = {
        "mask": torch.tensor([[True, False], [False, True]]),
        "bytes": torch.tensor([0, 7, 255], dtype=torch.uint8),
        "ints": torch.tensor([-5, 2**31 - 1], dtype=torch.int32),
    }
    write_safetensors(os.path.join(HERE, "serialize_narrow.safetensors"), narrow)

    # A dtype xgrad cannot hold.
    write_safetensors(os.path.join(HERE, "serialize_f16.safetensors"), {"half": torch.tensor([1.5, -2.0], dtype=torch.float16)})

    with open(os.path.join(HERE, "serialize.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    # The writer and the reader agree.
    for file, expected in [("serialize_sequential.safetensors", state), ("serialize_mixed.safetensors", mixed)]:
        back, _ = read_safetensors(os.path.join(HERE, file))
        assert list(back) == sorted(expected, key=lambda k: (-RANK[CODES[expected[k].dtype]], k))
        assert all(torch.equal(back[k], expected[k]) for k in expected), file


def check(path):
    """Validates a file xgrad wrote and loads it into PyTorch's same architecture."""
    tensors, metadata = read_safetensors(path)
    print(f"{path}: valid safetensors; metadata {metadata}")
    for name, t in tensors.items():
        print(f"  {name}: {t.dtype} {list(t.shape)}")
        assert t.dtype == torch.float32, f"{name} is {t.dtype}"
    model = make_model()
    reference = {k: v.clone() for k, v in model.state_dict().items()}
    with torch.no_grad():
        for p in model.parameters():
            p.fill_(float("nan"))
    model.load_state_dict(tensors, strict=True)
    print("  load_state_dict(strict=True) into Sequential(Linear(5, 6), ReLU(), Linear(6, 2)): ok")
    same = all(torch.equal(model.state_dict()[k], reference[k]) for k in reference)
    print(f"  parameters bit-identical to torch.manual_seed(0)'s model: {same}")
    x = model_input()
    out = model(x)
    print(f"  forward on the golden input matches PyTorch's seed-0 model: {torch.equal(out, make_model()(x))}")
    assert same, "the values differ from torch.manual_seed(0)'s model"


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--check":
        check(sys.argv[2])
    elif len(sys.argv) == 1:
        generate()
    else:
        sys.exit("usage: gen_serialize.py [--check FILE]")
