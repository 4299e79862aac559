#!/usr/bin/env python3
"""Writes the GGUF fuzz seeds in fuzz/corpus/gguf/.

Each seed is a tiny valid file (well under 4 KiB) that reaches a different
part of the reader: every scalar type, the arrays a tokenizer stores, a
nested array, version 2, a 64-byte alignment and the block-quantized tensor
types. The fuzzer mutates from these, so a seed that parses cleanly is worth
more than a large one. Run from anywhere; it rewrites the seeds in place:

    python3 fuzz/make_gguf_corpus.py
"""
import os
import struct

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "gguf")

U8, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64 = range(13)
SCALAR_FORMAT = {U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i", F32: "<f",
                 BOOL: "<B", U64: "<Q", I64: "<q", F64: "<d"}
# ggml type -> (elements per block, bytes per block)
F32_T, F16_T, Q4_0, Q8_0, Q4_K, Q6_K, BF16 = 0, 1, 2, 8, 12, 14, 30
BLOCKS = {F32_T: (1, 4), F16_T: (1, 2), Q4_0: (32, 18), Q8_0: (32, 34), Q4_K: (256, 144),
          Q6_K: (256, 210), BF16: (1, 2)}


def gguf_string(text):
    data = text.encode()
    return struct.pack("<Q", len(data)) + data


def value(kind, v):
    if kind == STRING:
        return gguf_string(v)
    if kind == ARRAY:
        element, items = v
        out = struct.pack("<IQ", element, len(items))
        return out + b"".join(value(element, item) for item in items)
    return struct.pack(SCALAR_FORMAT[kind], v)


def gguf(kvs, tensors, version=3, alignment=32):
    """kvs: [(key, type, value)]; tensors: [(name, dims, ggml_type)]."""
    header = struct.pack("<IIQQ", 0x46554747, version, len(tensors), len(kvs))
    for key, kind, v in kvs:
        header += gguf_string(key) + struct.pack("<I", kind) + value(kind, v)
    data = b""
    for i, (name, dims, ggml_type) in enumerate(tensors):
        elements = 1
        for d in dims:
            elements *= d
        per_block, block_bytes = BLOCKS[ggml_type]
        data += b"\0" * (-len(data) % alignment)
        header += gguf_string(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
        header += struct.pack("<IQ", ggml_type, len(data))
        data += bytes([0x10 + i]) * (elements // per_block * block_bytes)
    header += b"\0" * (-len(header) % alignment)
    return header + data


SEEDS = {
    "one_f32_tensor": gguf(
        [("general.architecture", STRING, "qwen3"), ("qwen3.block_count", U32, 1)],
        [("output_norm.weight", [4], F32_T)]),
    "every_scalar_v2": gguf(
        [("u8", U8, 255), ("i8", I8, -1), ("u16", U16, 65535), ("i16", I16, -2), ("u32", U32, 7),
         ("i32", I32, -3), ("f32", F32, 1.5), ("bool", BOOL, 1), ("s", STRING, "text"),
         ("u64", U64, 2**40), ("i64", I64, -4), ("f64", F64, 0.25)],
        [("w", [4, 2], BF16)], version=2),
    "tokenizer_arrays": gguf(
        [("tokenizer.ggml.model", STRING, "gpt2"),
         ("tokenizer.ggml.tokens", ARRAY, (STRING, ["a", "b", "ab", "<|im_end|>"])),
         ("tokenizer.ggml.token_type", ARRAY, (I32, [1, 1, 1, 3])),
         ("tokenizer.ggml.scores", ARRAY, (F32, [0.0, -1.0, -2.0, 0.5])),
         ("tokenizer.ggml.add_bos_token", BOOL, 0), ("tokenizer.ggml.eos_token_id", U32, 3)],
        [("token_embd.weight", [32, 1], Q4_0)]),
    "nested_array": gguf(
        [("nested", ARRAY, (ARRAY, [(U16, [1, 2]), (U8, [])])), ("after", U32, 5)], []),
    "aligned_64": gguf(
        [("general.alignment", U32, 64), ("general.name", STRING, "aligned")],
        [("a", [32, 1], Q8_0), ("b", [8], F16_T)], alignment=64),
    "k_quants": gguf(
        [("general.architecture", STRING, "qwen3"), ("general.file_type", U32, 15)],
        [("blk.0.attn_q.weight", [256, 1], Q4_K), ("output.weight", [256, 1], Q6_K)]),
}

if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    for name, data in SEEDS.items():
        assert len(data) < 4096, name
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
        print(f"{name}: {len(data)} bytes")
