// The attention kernel and its exp: every SIMD path gives the same bits as
// the scalar one, exp16 is within a few ulp of the exact exponential, and
// the kernel is close to a double-precision softmax over any key range,
// whatever the cache holds outside that range.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>

#include "cpu/kernels/attention.h"
#include "cpu/kv_cache.h"
#include "tests/cpu/kernel_test_support.h"
#include "tests/model/test_support.h"

namespace tf::cpu::kernels {
namespace {

using testing::random_floats;

std::vector<Isa> available_isas() { return testing::runnable_isas(); }

std::vector<float> exp16_of(Isa isa, std::vector<float> x) {
    x.resize((x.size() + 15) / 16 * 16, 0.0f);
    std::vector<float> out(x.size());
    exp16_values(isa, x.data(), x.size(), out.data());
    return out;
}

// Error in units of the last place of the float nearest e^x (subnormal
// results: in units of the smallest subnormal).
double ulp_error(float got, float x) {
    const double exact = std::exp(static_cast<double>(x));
    const float nearest = static_cast<float>(exact);
    const double ulp = std::max(static_cast<double>(std::nextafter(nearest, INFINITY)) - nearest, 0x1p-149);
    return std::fabs(got - exact) / ulp;
}

TEST(Exp16, IsWithinTwoUlpOfTheExactExponentialAndTheSameBitsOnEveryPath) {
    // Every 193rd float from -104 to 88.72 (results from subnormal to near
    // the largest float); the step is odd, so every last bit comes up.
    std::vector<float> x;
    for (uint32_t bits = 0x80000000u; bits <= 0xC2D00000u; bits += 193) x.push_back(testing::float_from_bits(bits));
    for (uint32_t bits = 0; bits <= 0x42B17200u; bits += 193) x.push_back(testing::float_from_bits(bits));
    const std::vector<float> scalar = exp16_of(Isa::scalar, x);
    double worst = 0, worst_normal = 0;
    for (size_t i = 0; i < x.size(); ++i) {
        const double e = ulp_error(scalar[i], x[i]);
        worst = std::max(worst, e);
        if (x[i] > -87.3f) worst_normal = std::max(worst_normal, e);
    }
    EXPECT_LT(worst_normal, 2.0);
    EXPECT_LT(worst, 2.0);
    for (Isa isa : available_isas()) EXPECT_TRUE(testing::bitwise_equal(exp16_of(isa, x), scalar)) << isa_name(isa);
    std::printf("exp16: %zu arguments, max error %.3f ulp (%.3f ulp where the result is normal)\n", x.size(), worst,
                worst_normal);
}

TEST(Exp16, HandlesTheEndsOfTheRangeExactly) {
    const float inf = std::numeric_limits<float>::infinity();
    const std::vector<float> x = {-inf,  -1e30f, -1000.0f, -104.0f, -103.9f, 0.0f,
                                  -0.0f, 1.0f,   88.5f,    88.8f,   89.0f,   inf};
    for (Isa isa : available_isas()) {
        const std::vector<float> e = exp16_of(isa, x);
        for (int i = 0; i < 4; ++i)
            EXPECT_EQ(std::memcmp(&e[i], "\0\0\0\0", 4), 0) << isa_name(isa) << " exp(" << x[i] << ") = " << e[i];
        EXPECT_EQ(e[4], std::exp(-103.9f)) << isa_name(isa);  // a subnormal, rounded once
        EXPECT_EQ(e[5], 1.0f);
        EXPECT_EQ(e[6], 1.0f);
        EXPECT_NEAR(e[7], 2.7182817f, 3e-7f);
        EXPECT_NEAR(e[8], std::exp(88.5f), 2e-7 * std::exp(88.5f));
        for (int i = 9; i < 12; ++i) EXPECT_EQ(e[i], inf) << isa_name(isa) << " exp(" << x[i] << ")";
        EXPECT_TRUE(std::isnan(exp16_of(isa, {std::nanf("")})[0])) << isa_name(isa);
    }
}

// One head's keys and values, `count` positions, as the cache lays them out
// (kv_cache.h), with `fill` outside [first, last]: the kernel must neither
// use those lanes nor let their bits through (NaN included).
struct Head {
    std::vector<float> q, keys, values, plain_keys;
    Head(int32_t head_dim, int32_t count, int32_t first, int32_t last, float fill, uint32_t seed)
        : q(random_floats(head_dim, seed)),
          keys(static_cast<size_t>((count + 15) / 16) * 16 * head_dim),
          values(random_floats(static_cast<size_t>(count) * head_dim, seed + 2)),
          plain_keys(random_floats(static_cast<size_t>(count) * head_dim, seed + 1, 2.0f)) {
        for (int32_t j = 0; j < (count + 15) / 16 * 16; ++j) {
            const bool used = j >= first && j <= last;
            for (int32_t d = 0; d < head_dim; ++d) {
                keys[KvCache::key_index(j, d, head_dim)] = used ? plain_keys[j * head_dim + d] : fill;
                if (!used && j < count) values[j * head_dim + d] = fill;
            }
        }
    }
    std::vector<float> run(Isa isa, int32_t first, int32_t last) const {
        const auto head_dim = static_cast<int32_t>(q.size());
        std::vector<float> out(head_dim);
        attention_heads(isa, q.data(), 1, keys.data(), values.data(), first, last, head_dim,
                        1.0f / std::sqrt(static_cast<float>(head_dim)), out.data());
        return out;
    }
};

struct Range {
    int32_t first, last;
};
const Range kRanges[] = {{0, 0},   {0, 14},  {0, 15},   {0, 16},   {0, 32},     {5, 20}, {16, 31},
                         {17, 17}, {3, 100}, {0, 1023}, {1, 1023}, {300, 1023}, {31, 47}};

TEST(Attention, EverySimdPathIsBitIdenticalAndCloseToTheDoubleReference) {
    for (int32_t head_dim : {16, 48, 64, 80, 128}) {
        for (const Range& r : kRanges) {
            const int32_t count = r.last + 1 + 5;
            const Head head(head_dim, count, r.first, r.last, std::nanf(""), static_cast<uint32_t>(head_dim + r.last));
            const std::vector<float> scalar = head.run(Isa::scalar, r.first, r.last);
            for (Isa isa : available_isas()) {
                EXPECT_TRUE(testing::bitwise_equal(head.run(isa, r.first, r.last), scalar))
                    << isa_name(isa) << " head_dim " << head_dim << " keys " << r.first << ".." << r.last;
            }
            std::vector<double> exact(head_dim);
            attention_head_reference(head.q.data(), head.plain_keys.data(), head.values.data(), r.first, r.last,
                                     head_dim, 1.0 / std::sqrt(static_cast<double>(head_dim)), exact.data());
            for (int32_t d = 0; d < head_dim; ++d) {
                ASSERT_NEAR(scalar[d], exact[d], 2e-6)
                    << "head_dim " << head_dim << " keys " << r.first << ".." << r.last << " d " << d;
            }
        }
    }
}

TEST(Attention, WhatTheCacheHoldsOutsideTheRangeChangesNoBit) {
    const float fills[] = {0.0f, std::nanf(""), 1e30f, -std::numeric_limits<float>::infinity()};
    for (const Range& r : kRanges) {
        const std::vector<float> expected =
            Head(64, r.last + 20, r.first, r.last, fills[0], 9).run(best_isa(), r.first, r.last);
        for (float fill : fills) {
            EXPECT_TRUE(testing::bitwise_equal(
                Head(64, r.last + 20, r.first, r.last, fill, 9).run(best_isa(), r.first, r.last), expected))
                << "fill " << fill << " keys " << r.first << ".." << r.last;
        }
    }
}

TEST(Attention, AHeadGetsTheSameBitsAloneOrWithOtherHeadsOfItsKvHead) {
    // Up to 7 query heads on one kv head: one call runs them 4 at a time.
    const int32_t head_dim = 64, heads = 7;
    for (const Range& r : kRanges) {
        const Head head(head_dim, r.last + 3, r.first, r.last, std::nanf(""), 11);
        const std::vector<float> q = random_floats(static_cast<size_t>(heads) * head_dim, 12);
        const float scale = 0.125f;
        for (Isa isa : available_isas()) {
            std::vector<float> together(q.size());
            attention_heads(isa, q.data(), heads, head.keys.data(), head.values.data(), r.first, r.last, head_dim,
                            scale, together.data());
            for (int32_t start = 0; start < heads; ++start) {
                for (int32_t count = 1; start + count <= heads; ++count) {
                    std::vector<float> out(static_cast<size_t>(count) * head_dim);
                    attention_heads(isa, q.data() + start * head_dim, count, head.keys.data(), head.values.data(),
                                    r.first, r.last, head_dim, scale, out.data());
                    const std::vector<float> expected(together.begin() + start * head_dim,
                                                      together.begin() + (start + count) * head_dim);
                    ASSERT_TRUE(testing::bitwise_equal(out, expected))
                        << isa_name(isa) << " heads " << start << "+" << count << " keys " << r.first << ".." << r.last;
                }
            }
            std::vector<float> alone(head_dim);
            attention_heads(isa, q.data() + 5 * head_dim, 1, head.keys.data(), head.values.data(), r.first, r.last,
                            head_dim, scale, alone.data());
            EXPECT_TRUE(testing::bitwise_equal(
                alone, std::vector<float>(together.begin() + 5 * head_dim, together.begin() + 6 * head_dim)));
        }
    }
}

TEST(Attention, AVectorGetsTheSameBitsAloneOrWithTheOtherRowsOfItsStream) {
    // A verify round or a prefill chunk: rows at consecutive positions, each
    // with the query heads of one kv head, in one call that reads the keys
    // and values once; long ranges go through them chunk by chunk.
    const Range ranges[] = {{0, 0}, {0, 37}, {5, 300}, {5, 386}, {17, 700}, {0, 1023}};
    for (int32_t head_dim : {64, 128}) {
        for (const Range& r : ranges) {
            const int32_t rows = 9, heads = 3, count = rows * heads;
            const int32_t max_last = r.last + rows - 1;
            const Head head(head_dim, max_last + 5, r.first, max_last, std::nanf(""), 21);
            const std::vector<float> q = random_floats(static_cast<size_t>(count) * head_dim, 22);
            const float scale = 0.088f;
            std::vector<float> scalar_out;
            for (Isa isa : available_isas()) {
                std::vector<float> together(q.size());
                std::vector<AttentionQuery> queries;
                for (int32_t v = 0; v < count; ++v)
                    queries.push_back({q.data() + v * head_dim, together.data() + v * head_dim, r.last + v / heads});
                attention_queries(isa, queries.data(), count, head.keys.data(), head.values.data(), r.first, head_dim,
                                  scale);
                for (int32_t v = 0; v < count; ++v) {
                    std::vector<float> alone(head_dim);
                    attention_heads(isa, q.data() + v * head_dim, 1, head.keys.data(), head.values.data(), r.first,
                                    queries[v].last, head_dim, scale, alone.data());
                    ASSERT_TRUE(testing::bitwise_equal(
                        alone,
                        std::vector<float>(together.begin() + v * head_dim, together.begin() + (v + 1) * head_dim)))
                        << isa_name(isa) << " head_dim " << head_dim << " keys " << r.first << ".." << queries[v].last;
                }
                if (isa == Isa::scalar) scalar_out = together;
                EXPECT_TRUE(testing::bitwise_equal(together, scalar_out)) << isa_name(isa);
            }
        }
    }
}

// A 16-bit or q8_0 cache holds rounded numbers, and the kernel reads them
// back as fp32 exactly as KvCache::key / value do: its bits must be those
// of the same kernel over an fp32 cache holding those numbers, on every
// path, one vector or many, rows that end mid-block included.
TEST(Attention, ANarrowCacheGivesTheBitsOfAnFp32CacheHoldingTheSameNumbers) {
    const Range ranges[] = {{0, 0}, {0, 15}, {5, 20}, {17, 700}, {0, 1023}};
    for (KvType type : {KvType::f16, KvType::bf16, KvType::q8_0}) {
        for (const Range& r : ranges) {
            // 12 heads: more register groups than it takes to widen a q8_0 block first.
            const int32_t head_dim = 128, heads = 12, count = r.last + 9;
            KvCache narrow(1, 1, head_dim, count, type), wide(1, 1, head_dim, count, KvType::f32);
            const std::vector<float> k = random_floats(static_cast<size_t>(count) * head_dim, 31, 2.0f);
            const std::vector<float> v = random_floats(static_cast<size_t>(count) * head_dim, 33);
            std::vector<float> k_read(head_dim), v_read(head_dim);
            for (int32_t j = 0; j < count; ++j) {
                narrow.write(0, j, k.data() + j * head_dim, v.data() + j * head_dim);
                for (int32_t d = 0; d < head_dim; ++d) {
                    k_read[d] = narrow.key(0, 0, j, d);
                    v_read[d] = narrow.value(0, 0, j, d);
                }
                wide.write(0, j, k_read.data(), v_read.data());
            }
            const std::vector<float> q = random_floats(static_cast<size_t>(heads) * head_dim, 32);
            for (Isa isa : available_isas()) {
                for (int32_t last : {r.last, r.last + 4}) {
                    for (int32_t n : {2, heads}) {
                        std::vector<float> narrow_out(n * head_dim), wide_out(n * head_dim);
                        attention_heads(isa, q.data(), n, narrow.keys(0), narrow.values(0), r.first, last, head_dim,
                                        0.09f, narrow_out.data(), type);
                        attention_heads(isa, q.data(), n, wide.keys(0), wide.values(0), r.first, last, head_dim, 0.09f,
                                        wide_out.data(), KvType::f32);
                        ASSERT_TRUE(testing::bitwise_equal(narrow_out, wide_out))
                            << isa_name(isa) << " " << kv_type_name(type) << " " << n << " heads, keys " << r.first
                            << ".." << last;
                    }
                }
            }
        }
    }
}

// The launcher over a real cache: a long decode row, a window that starts
// mid-block and a verify round, at 1 to 8 threads. With one kv head the
// units are fewer than the threads from 3 threads on, so their key blocks
// go to different threads and are folded afterwards: every row must still
// get the bits of the kernel run alone, on one thread, over every block.
TEST(Attention, KeyBlocksSpreadOverThreadsGiveTheBitsOfOneThread) {
    const int32_t head_dim = 64, num_heads = 2, length = 1700;
    KvCache cache(1, 1, head_dim, length, KvType::f16);
    const std::vector<float> k = random_floats(static_cast<size_t>(length) * head_dim, 41, 2.0f);
    const std::vector<float> v = random_floats(static_cast<size_t>(length) * head_dim, 43);
    for (int32_t j = 0; j < length; ++j) cache.write(0, j, k.data() + j * head_dim, v.data() + j * head_dim);
    struct Round {
        int32_t first, last, rows;  // rows at last - rows + 1 .. last
    };
    const Round rounds[] = {{0, 1650, 1}, {300, 1650, 1}, {0, 1699, 4}, {700, 1300, 5}, {0, 200, 2}};
    for (const Round& round : rounds) {
        const std::vector<float> q = random_floats(static_cast<size_t>(round.rows) * num_heads * head_dim, 44);
        std::vector<AttentionRow> rows(static_cast<size_t>(round.rows));
        for (int32_t m = 0; m < round.rows; ++m) {
            AttentionRow& row = rows[static_cast<size_t>(m)];
            row.keys = cache.keys(0);
            row.values = cache.values(0);
            row.head_stride = cache.head_stride();
            row.first = round.first;
            row.last = round.last - round.rows + 1 + m;
        }
        for (Isa isa : available_isas()) {
            std::vector<float> alone(q.size());
            for (int32_t m = 0; m < round.rows; ++m) {
                const size_t at = static_cast<size_t>(m) * num_heads * head_dim;
                attention_heads(isa, q.data() + at, num_heads, cache.keys(0), cache.values(0), round.first,
                                rows[static_cast<size_t>(m)].last, head_dim, 0.125f, alone.data() + at, KvType::f16);
            }
            for (int threads : {1, 2, 3, 5, 8}) {
                ThreadPool pool(threads);
                AttentionScratch scratch;
                std::vector<float> out(q.size());
                attention(kernel_table(isa), KvType::f16, pool, q.data(), round.rows, rows.data(), num_heads, 1,
                          head_dim, 0.125f, out.data(), scratch);
                ASSERT_TRUE(testing::bitwise_equal(out, alone))
                    << isa_name(isa) << " " << threads << " threads, keys " << round.first << ".." << round.last;
            }
        }
    }
}

// A row of head_dim floats as a cache of `type` gives it back.
std::vector<float> stored(KvType type, std::vector<float> row) {
    if (type == KvType::q8_0) {
        std::vector<int8_t> q(row.size());
        std::vector<float> scales(row.size() / kKvQuantBlock);
        quantize_q8_0(row.data(), static_cast<int32_t>(row.size()), q.data(), scales.data());
        for (size_t i = 0; i < row.size(); ++i) row[i] = static_cast<float>(q[i]) * scales[i / kKvQuantBlock];
        return row;
    }
    for (float& x : row) {
        if (type == KvType::f16) x = f16_bits_to_f32(f32_to_f16_bits(x));
        if (type == KvType::bf16) x = bf16_bits_to_f32(f32_to_bf16_bits(x));
    }
    return row;
}

class KvCacheOfType : public ::testing::TestWithParam<KvType> {};

TEST_P(KvCacheOfType, KeysLieInBlocksOf16AndCopyPrefixKeepsEveryPosition) {
    const KvType type = GetParam();
    const int32_t layers = 2, heads = 2, head_dim = 64;
    KvCache a(layers, heads, head_dim, 40, type), b(layers, heads, head_dim, 30, type);
    EXPECT_EQ(a.type(), type);
    EXPECT_EQ(KvCache::bytes_per_token(layers, heads, head_dim, type),
              static_cast<size_t>(layers * 2 * heads) * kv_value_row_bytes(type, head_dim));
    // Distinct values, most not representable in 16 bits: what comes back
    // is the value rounded as the type rounds it, at its own place.
    auto value_of = [](int32_t layer, int32_t h, int32_t j, int32_t d, int kind) {
        return static_cast<float>(kind * 1000 + layer * 400 + h * 200 + j * 4) + static_cast<float>(d) / 7.0f;
    };
    std::vector<float> k(heads * head_dim), v(heads * head_dim);
    for (int32_t j = 0; j < 40; ++j) {
        for (int32_t layer = 0; layer < layers; ++layer) {
            for (int32_t h = 0; h < heads; ++h) {
                for (int32_t d = 0; d < head_dim; ++d) {
                    k[h * head_dim + d] = value_of(layer, h, j, d, 1);
                    v[h * head_dim + d] = value_of(layer, h, j, d, 2);
                }
            }
            a.write(layer, j, k.data(), v.data());
        }
    }
    a.set_length(40);
    b.copy_prefix(a, 25);
    EXPECT_EQ(b.length(), 25);
    for (const KvCache* c : {&a, &b}) {
        for (int32_t layer = 0; layer < layers; ++layer) {
            for (int32_t h = 0; h < heads; ++h) {
                for (int32_t j = 0; j < c->length(); ++j) {
                    std::vector<float> key(head_dim), value(head_dim);
                    for (int32_t d = 0; d < head_dim; ++d) {
                        key[d] = value_of(layer, h, j, d, 1);
                        value[d] = value_of(layer, h, j, d, 2);
                    }
                    key = stored(type, key);
                    value = stored(type, value);
                    for (int32_t d = 0; d < head_dim; ++d) {
                        ASSERT_EQ(c->key(layer, h, j, d), key[d]) << layer << " " << h << " " << j << " " << d;
                        ASSERT_EQ(c->value(layer, h, j, d), value[d]) << layer << " " << h << " " << j << " " << d;
                    }
                }
            }
        }
    }
    EXPECT_EQ(KvCache::key_index(17, 3, 64), 16u * 64 + 3 * 16 + 1);
    if (type == KvType::f32) {  // the raw layout, read as the kernel reads it
        const float* keys = reinterpret_cast<const float*>(a.keys(1) + a.head_stride());
        EXPECT_EQ(keys[KvCache::key_index(33, 5, head_dim)], value_of(1, 1, 33, 5, 1));
    }
}

INSTANTIATE_TEST_SUITE_P(Types, KvCacheOfType, ::testing::Values(KvType::f32, KvType::f16, KvType::bf16, KvType::q8_0),
                         [](const ::testing::TestParamInfo<KvType>& info) { return kv_type_name(info.param); });

}  // namespace
}  // namespace tf::cpu::kernels
