// The KV cache's conversions (cpu/kernels/kv_format.h): fp32 -> half rounds
// to nearest even as F16C does, saturating instead of overflowing; half ->
// fp32 and bf16 -> fp32 are exact; and --kv-type's names parse.
#include <gtest/gtest.h>
#include <immintrin.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "cpu/kernels/kv_format.h"
#include "cpu/kv_cache.h"
#include "tests/cpu/kernel_test_support.h"

namespace tf::cpu::kernels {
namespace {

__attribute__((target("f16c"))) uint16_t hardware_f16(float x) {
    return static_cast<uint16_t>(_mm_extract_epi16(_mm_cvtps_ph(_mm_set_ss(x), _MM_FROUND_TO_NEAREST_INT), 0));
}
__attribute__((target("f16c"))) float hardware_f32(uint16_t h) {
    return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(h)));
}

TEST(KvFormat, HalfRoundsToNearestEvenAsF16cDoesInsideItsRange) {
    if (!__builtin_cpu_supports("f16c")) GTEST_SKIP() << "this CPU has no F16C to compare with";
    int64_t compared = 0;
    // Every 97th float of either sign up to 65520 (where overflow starts),
    // plus the neighbours of every half and of every halfway point between
    // two halves (where the rounding decides).
    for (uint32_t bits = 0; bits < 0x477FF000u; bits += 97) {
        for (uint32_t sign : {0u, 0x80000000u}) {
            const float x = testing::float_from_bits(bits | sign);
            ASSERT_EQ(f32_to_f16_bits(x), hardware_f16(x)) << std::hexfloat << x;
            ++compared;
        }
    }
    for (uint32_t h = 0; h < 0x7BFF; ++h) {
        const float lo = hardware_f32(static_cast<uint16_t>(h)), hi = hardware_f32(static_cast<uint16_t>(h + 1));
        const float mid = static_cast<float>((static_cast<double>(lo) + hi) / 2);  // exact in fp32
        for (float x : {lo, mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e9f)}) {
            ASSERT_EQ(f32_to_f16_bits(x), hardware_f16(x)) << std::hexfloat << x;
            ASSERT_EQ(f32_to_f16_bits(-x), hardware_f16(-x)) << std::hexfloat << -x;
            compared += 2;
        }
    }
    EXPECT_GT(compared, 20'000'000);
}

TEST(KvFormat, HalfSaturatesBeyondItsRangeAndKeepsNan) {
    const float inf = std::numeric_limits<float>::infinity();
    EXPECT_EQ(f32_to_f16_bits(65504.0f), 0x7BFF);
    EXPECT_EQ(f32_to_f16_bits(65519.99f), 0x7BFF);
    EXPECT_EQ(f32_to_f16_bits(65520.0f), 0x7BFF);
    EXPECT_EQ(f32_to_f16_bits(1e30f), 0x7BFF);
    EXPECT_EQ(f32_to_f16_bits(inf), 0x7BFF);
    EXPECT_EQ(f32_to_f16_bits(-inf), 0xFBFF);
    EXPECT_TRUE(std::isnan(f16_bits_to_f32(f32_to_f16_bits(std::nanf("")))));
    EXPECT_EQ(f32_to_f16_bits(0x1p-24f), 0x0001);   // the smallest subnormal
    EXPECT_EQ(f32_to_f16_bits(0x1p-25f), 0x0000);   // half of it: a tie, to even
    EXPECT_EQ(f32_to_f16_bits(0x1.8p-24f), 0x0002); // 1.5 units: a tie, to even
    EXPECT_EQ(f32_to_f16_bits(-0x1p-26f), 0x8000);
}

TEST(KvFormat, WideningIsExactForEveryHalfAndBf16) {
    for (uint32_t h = 0; h <= 0xFFFF; ++h) {
        const auto bits = static_cast<uint16_t>(h);
        const float x = f16_bits_to_f32(bits);
        if ((h & 0x7C00) == 0x7C00 && (h & 0x3FF) != 0) {
            EXPECT_TRUE(std::isnan(x));
            continue;
        }
        if ((h & 0x7FFF) == 0x7C00) {
            EXPECT_EQ(x, (h & 0x8000) ? -INFINITY : INFINITY);
            continue;
        }
        // Exact: a half survives the round trip, and matches F16C.
        ASSERT_EQ(f32_to_f16_bits(x), bits) << h;
        if (__builtin_cpu_supports("f16c")) {
            const float hw = hardware_f32(bits);
            ASSERT_EQ(std::memcmp(&x, &hw, 4), 0) << h;
        }
        const float b = bf16_bits_to_f32(bits);
        if (!std::isnan(b)) {
            ASSERT_EQ(f32_to_bf16_bits(b), bits) << h;
        }
    }
    EXPECT_EQ(f32_to_bf16_bits(1.0f + 0x1p-8f), 0x3F80);  // a tie, to even
    EXPECT_EQ(f32_to_bf16_bits(1.0f + 0x1.8p-7f), 0x3F82);  // 1.5 units: a tie, to even
}

// KvCache::write converts 8 at a time where the CPU has F16C: every stored
// key and value must be the half f32_to_f16_bits gives, edge values included
// (ties, subnormals, overflow, infinities, NaN), at every lane of a block.
TEST(KvFormat, AnF16CacheStoresTheScalarRoundingOfEveryElement) {
    constexpr int32_t kHeads = 2, kHeadDim = 64, kPositions = 19;
    const float inf = std::numeric_limits<float>::infinity();
    const std::vector<float> edges = {0.0f, -0.0f, 1.0f + 0x1p-11f, 1.0f + 0x1.8p-10f, 0x1p-24f, 0x1p-25f,
                                      0x1.8p-24f, -0x1p-26f, 65504.0f, 65519.99f, 65520.0f, -1e30f, inf, -inf,
                                      std::nanf(""), -std::nanf("0x3ff"), 1e-40f, 3.14159f};
    KvCache cache(1, kHeads, kHeadDim, kPositions, KvType::f16);
    std::vector<std::vector<float>> keys, values;
    uint32_t state = 12345;
    for (int32_t p = 0; p < kPositions; ++p) {
        std::vector<float> k(kHeads * kHeadDim), v(kHeads * kHeadDim);
        for (size_t i = 0; i < k.size(); ++i) {
            state = state * 1664525u + 1013904223u;
            const float random = static_cast<float>(static_cast<int32_t>(state >> 8) - (1 << 23)) * 0x1p-12f;
            k[i] = (i + p) % 3 == 0 ? edges[(i + p) % edges.size()] : random;
            v[i] = (i + p) % 2 == 0 ? edges[(i * 7 + p) % edges.size()] : -random;
        }
        cache.write(0, p, k.data(), v.data());
        keys.push_back(k);
        values.push_back(v);
    }
    auto bits = [](float x) {
        uint32_t b;
        std::memcpy(&b, &x, 4);
        return b;
    };
    for (int32_t p = 0; p < kPositions; ++p) {
        for (int32_t h = 0; h < kHeads; ++h) {
            for (int32_t d = 0; d < kHeadDim; ++d) {
                const size_t i = static_cast<size_t>(h) * kHeadDim + d;
                ASSERT_EQ(bits(cache.key(0, h, p, d)), bits(f16_bits_to_f32(f32_to_f16_bits(keys[p][i]))))
                    << "key at position " << p << ", head " << h << ", d " << d << ": " << keys[p][i];
                ASSERT_EQ(bits(cache.value(0, h, p, d)), bits(f16_bits_to_f32(f32_to_f16_bits(values[p][i]))))
                    << "value at position " << p << ", head " << h << ", d " << d << ": " << values[p][i];
            }
        }
    }
}

TEST(KvFormat, TypeNamesParseAndUnknownOnesAreRefused) {
    for (KvType type : {KvType::f32, KvType::f16, KvType::bf16, KvType::q8_0})
        EXPECT_EQ(parse_kv_type(kv_type_name(type)), type);
    EXPECT_EQ(kv_value_row_bytes(KvType::f32, 128), 512u);
    EXPECT_EQ(kv_value_row_bytes(KvType::f16, 128), 256u);
    EXPECT_EQ(kv_value_row_bytes(KvType::q8_0, 128), 128u + 16u);  // 4 blocks: 128 int8 and 4 scales
    EXPECT_EQ(kv_key_block_bytes(KvType::q8_0, 128), 16 * (128u + 16u));
    try {
        parse_kv_type("fp8");
        FAIL() << "fp8 parsed";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("fp8"), std::string::npos);
        EXPECT_NE(std::string(e.what()).find("f16"), std::string::npos);
    }
}

TEST(KvFormat, Q8_0ScalesEachBlockByItsLargestMagnitudeAndRoundsToNearestEven) {
    std::vector<float> x(64);
    for (int i = 0; i < 32; ++i) x[i] = static_cast<float>(i - 16) * 0.25f;  // largest |x| 4 at i = 0
    for (int i = 32; i < 64; ++i) x[i] = 0.0f;                                // an all-zero block
    std::vector<int8_t> q(64);
    float scales[2];
    quantize_q8_0(x.data(), 64, q.data(), scales);
    EXPECT_EQ(scales[0], 4.0f / 127);
    EXPECT_EQ(q[0], -127);
    EXPECT_EQ(q[16], 0);
    EXPECT_EQ(scales[1], 0.0f);
    for (int i = 32; i < 64; ++i) EXPECT_EQ(q[i], 0);
    for (int i = 0; i < 32; ++i) {
        EXPECT_EQ(q[i], std::nearbyint(x[i] / scales[0])) << i;
        EXPECT_LE(std::fabs(q[i] * scales[0] - x[i]), scales[0] / 2 * 1.0001f) << i;
    }
    x[3] = std::nanf("");
    quantize_q8_0(x.data(), 32, q.data(), scales);
    EXPECT_TRUE(std::isnan(scales[0])) << "a NaN in a block reaches attention as NaN";
}

}  // namespace
}  // namespace tf::cpu::kernels
