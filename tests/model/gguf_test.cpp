// The GGUF reader on well-formed files: every value type read back exactly,
// arrays, alignment, each tensor type's data pointer and size, the typed
// accessors and their messages, and llama.cpp's own files when the fixtures
// are there. The refusals are in gguf_refusal_test.cpp.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <limits>
#include <map>

#include "gguf_writer.h"
#include "model/gguf.h"
#include "model/load_error.h"
#include "test_support.h"

namespace tf::model {
namespace {

using testing::GgufWriter;
using testing::TempDir;

std::string write(const TempDir& dir, const GgufWriter& w, const std::string& name = "model.gguf") {
    const std::string path = (dir.path() / name).string();
    w.write(path);
    return path;
}

// The LoadError's message, or a failure when there was none.
template <class F>
std::string load_error_of(F&& f) {
    try {
        f();
    } catch (const LoadError& e) {
        return e.what();
    }
    ADD_FAILURE() << "no LoadError";
    return "";
}

TEST(GgufRead, EveryScalarTypeComesBackExactly) {
    TempDir dir;
    GgufWriter w;
    w.u8("u8", 255).i8("i8", -128).u16("u16", 65535).i16("i16", -32768);
    w.u32("u32", 0xFFFFFFFFu).i32("i32", std::numeric_limits<int32_t>::min());
    w.u64("u64", std::numeric_limits<uint64_t>::max()).i64("i64", std::numeric_limits<int64_t>::min());
    w.f32("f32", 0.1f).f64("f64", 0.1).boolean("yes", true).boolean("no", false);
    w.string("text", std::string("caf\xc3\xa9\0tail", 10)).string("empty", "");
    const GgufFile gguf = GgufFile::open(write(dir, w));

    EXPECT_EQ(gguf.find("u8")->uint, 255u);
    EXPECT_EQ(gguf.find("i8")->sint, -128);
    EXPECT_EQ(gguf.find("u16")->uint, 65535u);
    EXPECT_EQ(gguf.find("i16")->sint, -32768);
    EXPECT_EQ(gguf.find("u32")->uint, 0xFFFFFFFFu);
    EXPECT_EQ(gguf.find("i32")->sint, std::numeric_limits<int32_t>::min());
    EXPECT_EQ(gguf.find("u64")->uint, std::numeric_limits<uint64_t>::max());
    EXPECT_EQ(gguf.find("i64")->sint, std::numeric_limits<int64_t>::min());
    EXPECT_EQ(gguf.find("f32")->real, static_cast<double>(0.1f));  // the float's value, not 0.1
    EXPECT_EQ(gguf.find("f64")->real, 0.1);
    EXPECT_EQ(gguf.find("yes")->uint, 1u);
    EXPECT_EQ(gguf.find("no")->uint, 0u);
    EXPECT_EQ(gguf.find("text")->text, std::string("caf\xc3\xa9\0tail", 10));  // bytes as they are, NUL included
    EXPECT_EQ(gguf.find("empty")->text, "");
    EXPECT_EQ(gguf.find("i8")->type, GgufType::i8);
    EXPECT_EQ(gguf.find("yes")->type, GgufType::boolean);
    EXPECT_EQ(gguf.metadata().size(), 14u);
    EXPECT_EQ(gguf.find("absent"), nullptr);
}

TEST(GgufRead, Version2ReadsLikeVersion3) {
    for (uint32_t version : {2u, 3u}) {
        TempDir dir;
        GgufWriter w;
        w.version = version;
        w.string("general.architecture", "qwen3").u32("n", 7).tensor("w", {8, 2});
        const GgufFile gguf = GgufFile::open(write(dir, w));
        EXPECT_EQ(gguf.version(), version);
        EXPECT_EQ(gguf.string("general.architecture"), "qwen3");
        EXPECT_EQ(gguf.unsigned_int("n"), 7u);
        ASSERT_NE(gguf.find_tensor("w"), nullptr);
        EXPECT_EQ(gguf.find_tensor("w")->bytes, 64u);
    }
}

TEST(GgufRead, ArraysOfStringsIntsAndFloatsAreKeptWhole) {
    TempDir dir;
    GgufWriter w;
    w.strings("words", {"a", "", "three"});
    w.array<int32_t>("i32s", GgufType::i32, {-1, 2, std::numeric_limits<int32_t>::max()});
    w.array<uint8_t>("u8s", GgufType::u8, {0, 200});
    w.array<int64_t>("i64s", GgufType::i64, {std::numeric_limits<int64_t>::min()});
    w.array<uint8_t>("bools", GgufType::boolean, {1, 0});
    w.array<float>("f32s", GgufType::f32, {0.5f, -2.25f});
    w.array<double>("f64s", GgufType::f64, {1e-300});
    w.strings("none", {});
    const GgufFile gguf = GgufFile::open(write(dir, w));

    EXPECT_EQ(gguf.strings("words"), (std::vector<std::string>{"a", "", "three"}));
    EXPECT_EQ(gguf.ints("i32s"), (std::vector<int64_t>{-1, 2, std::numeric_limits<int32_t>::max()}));
    EXPECT_EQ(gguf.ints("u8s"), (std::vector<int64_t>{0, 200}));
    EXPECT_EQ(gguf.ints("i64s"), (std::vector<int64_t>{std::numeric_limits<int64_t>::min()}));
    EXPECT_EQ(gguf.ints("bools"), (std::vector<int64_t>{1, 0}));
    EXPECT_EQ(gguf.reals("f32s"), (std::vector<double>{0.5, -2.25}));
    EXPECT_EQ(gguf.reals("f64s"), (std::vector<double>{1e-300}));
    EXPECT_TRUE(gguf.strings("none").empty());
    EXPECT_EQ(gguf.find("words")->count, 3u);
    EXPECT_EQ(gguf.find("words")->element, GgufType::string);
}

TEST(GgufRead, AnArrayOfArraysIsSkippedButCounted) {
    TempDir dir;
    // Two inner arrays of u16: {1, 2} and {}.
    const std::string inner = testing::type_tag(GgufType::u16) + testing::le<uint64_t>(2) + testing::le<uint16_t>(1) +
                              testing::le<uint16_t>(2) + testing::type_tag(GgufType::u16) + testing::le<uint64_t>(0);
    GgufWriter w;
    w.raw("nested", GgufType::array, testing::type_tag(GgufType::array) + testing::le<uint64_t>(2) + inner);
    w.u32("after", 5);  // read from the right place only when the nested array was skipped exactly
    const GgufFile gguf = GgufFile::open(write(dir, w));
    EXPECT_EQ(gguf.find("nested")->element, GgufType::array);
    EXPECT_EQ(gguf.find("nested")->count, 2u);
    EXPECT_EQ(gguf.unsigned_int("after"), 5u);
}

class GgufAlignment : public ::testing::TestWithParam<uint32_t> {};

TEST_P(GgufAlignment, TensorsStartOnItsMultiples) {
    TempDir dir;
    GgufWriter w;
    w.align(GetParam()).string("pad", "x");
    w.tensor("a", {3}).tensor("b", {5}).tensor("c", {1});  // 12 and 20 bytes: each next one needs padding
    const std::string path = write(dir, w);
    const GgufFile gguf = GgufFile::open(path);
    EXPECT_EQ(gguf.alignment(), GetParam());
    const std::vector<uint64_t> offsets = w.offsets();
    for (size_t i = 0; i < gguf.tensors().size(); ++i) {
        const GgufTensor& t = gguf.tensors()[i];
        EXPECT_EQ(t.offset % GetParam(), 0u) << t.name;
        EXPECT_EQ(t.offset, offsets[i]) << t.name;
        // The mapping starts on a page, so the address is aligned exactly when the file offset is.
        EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data) % GetParam(), 0u) << t.name;
        EXPECT_EQ(static_cast<uint8_t>(t.data[0]), 0x10 + i) << t.name;
    }
    EXPECT_EQ(gguf.tensors()[1].offset, GetParam());  // 12 bytes of "a", then padding to the next multiple
}

INSTANTIATE_TEST_SUITE_P(Gguf, GgufAlignment, ::testing::Values(32u, 64u));

TEST(GgufRead, WithoutTheKeyTheAlignmentIs32) {
    TempDir dir;
    GgufWriter w;
    w.tensor("a", {1}).tensor("b", {1});
    const GgufFile gguf = GgufFile::open(write(dir, w));
    EXPECT_EQ(gguf.alignment(), 32u);
    EXPECT_EQ(gguf.find_tensor("b")->offset, 32u);
}

// Each type's size in bytes, worked out by hand from ggml's blocks: the
// reader must agree, and its data pointer must land on that tensor's bytes.
TEST(GgufRead, EachTensorTypeHasItsSizeAndDataPointer) {
    struct Case {
        const char* name;
        uint32_t type;
        std::vector<uint64_t> dims;
        size_t bytes;
    };
    const std::vector<Case> cases = {
        {"f32", ggml_type::f32, {4, 3}, 48},            // 12 x 4
        {"f16", ggml_type::f16, {8, 2}, 32},            // 16 x 2
        {"bf16", ggml_type::bf16, {8, 2}, 32},          // 16 x 2
        {"q8_0", ggml_type::q8_0, {64, 2}, 136},        // 4 blocks of 32, 34 bytes each
        {"q4_0", ggml_type::q4_0, {64, 2}, 72},         // 4 blocks of 32, 18 bytes each
        {"q4_k", ggml_type::q4_k, {256, 2}, 288},       // 2 blocks of 256, 144 bytes each
        {"q6_k", ggml_type::q6_k, {512, 1, 1}, 420},    // 2 blocks of 256, 210 bytes each; 3 axes
        {"rank4", ggml_type::f32, {1, 2, 3, 4}, 96},    // 24 x 4
    };
    TempDir dir;
    GgufWriter w;
    for (const Case& c : cases) w.tensor(c.name, c.dims, c.type);
    const std::string path = write(dir, w);
    const GgufFile gguf = GgufFile::open(path);
    ASSERT_EQ(gguf.tensors().size(), cases.size());
    const MappedFile raw(path);
    const size_t data_start = (w.header().size() + 31) / 32 * 32;
    for (size_t i = 0; i < cases.size(); ++i) {
        const GgufTensor* t = gguf.find_tensor(cases[i].name);
        ASSERT_NE(t, nullptr) << cases[i].name;
        EXPECT_EQ(t->type, cases[i].type) << cases[i].name;
        EXPECT_EQ(t->dims, cases[i].dims) << cases[i].name;
        EXPECT_EQ(t->bytes, cases[i].bytes) << cases[i].name;
        EXPECT_EQ(t->offset, w.offsets()[i]) << cases[i].name;
        EXPECT_EQ(t->file, path);
        // Same offset into the reader's mapping as into the bytes written.
        const std::byte* base = t->data - data_start - t->offset;
        EXPECT_EQ(std::memcmp(base, raw.data(), raw.size()), 0) << cases[i].name;
        EXPECT_EQ(static_cast<uint8_t>(t->data[0]), 0x10 + i) << cases[i].name;
        EXPECT_EQ(static_cast<uint8_t>(t->data[t->bytes - 1]), 0x10 + i) << cases[i].name;
    }
    EXPECT_EQ(gguf.find_tensor("absent"), nullptr);
}

TEST(GgufRead, TypeNamesAndBlocks) {
    EXPECT_EQ(ggml_type_name(ggml_type::q4_k), "Q4_K");
    EXPECT_EQ(ggml_type_name(ggml_type::bf16), "BF16");
    EXPECT_EQ(ggml_type_name(200), "type 200");
    EXPECT_EQ(ggml_block(ggml_type::q6_k).elements, 256u);
    EXPECT_EQ(ggml_block(ggml_type::q6_k).bytes, 210u);
    EXPECT_EQ(ggml_block(200).elements, 0u);
    EXPECT_STREQ(gguf_type_name(GgufType::f32), "f32");
    EXPECT_TRUE(is_gguf_path("a/b.GGUF"));
    EXPECT_TRUE(is_gguf_path("m.gguf"));
    EXPECT_FALSE(is_gguf_path("model.safetensors"));
    EXPECT_FALSE(is_gguf_path("gguf"));
}

// ---- typed accessors

class GgufAccessors : public ::testing::Test {
protected:
    void SetUp() override {
        GgufWriter w;
        w.string("s", "text").u8("u8", 9).u32("u32", 40000).u64("u64", uint64_t{1} << 40).i32("i32", 12);
        w.i32("negative", -5).f32("f32", 1.5f).f64("f64", -0.25).i64("i64", -3).boolean("flag", true);
        w.strings("words", {"x"}).array<int32_t>("ints", GgufType::i32, {1}).array<float>("reals", GgufType::f32, {2});
        path_ = write(dir_, w);
        gguf_ = std::make_unique<GgufFile>(GgufFile::open(path_));
    }
    const GgufFile& gguf() const { return *gguf_; }
    // The message of the LoadError `f` throws; it must start with the file.
    template <class F>
    std::string error(F&& f) const {
        const std::string message = load_error_of(std::forward<F>(f));
        EXPECT_EQ(message.rfind(path_ + ": ", 0), 0u) << message;
        return message;
    }

    TempDir dir_;
    std::string path_;
    std::unique_ptr<GgufFile> gguf_;
};

TEST_F(GgufAccessors, ReadTheValueOfTheirKind) {
    EXPECT_EQ(gguf().string("s"), "text");
    EXPECT_EQ(gguf().unsigned_int("u8"), 9u);
    EXPECT_EQ(gguf().unsigned_int("u32"), 40000u);
    EXPECT_EQ(gguf().unsigned_int("u64"), uint64_t{1} << 40);
    EXPECT_EQ(gguf().unsigned_int("i32"), 12u);  // a signed type holding a count is fine
    EXPECT_EQ(gguf().number("f32"), 1.5);
    EXPECT_EQ(gguf().number("f64"), -0.25);
    EXPECT_EQ(gguf().number("i64"), -3.0);
    EXPECT_EQ(gguf().number("u32"), 40000.0);
    EXPECT_TRUE(gguf().boolean("flag"));
    EXPECT_EQ(gguf().strings("words"), std::vector<std::string>{"x"});
    EXPECT_EQ(gguf().ints("ints"), std::vector<int64_t>{1});
    EXPECT_EQ(gguf().reals("reals"), std::vector<double>{2.0});
}

TEST_F(GgufAccessors, OptionalsAreEmptyOnlyWhenTheKeyIsAbsent) {
    EXPECT_EQ(gguf().optional_string("absent"), std::nullopt);
    EXPECT_EQ(gguf().optional_unsigned_int("absent"), std::nullopt);
    EXPECT_EQ(gguf().optional_number("absent"), std::nullopt);
    EXPECT_EQ(gguf().optional_boolean("absent"), std::nullopt);
    EXPECT_EQ(gguf().optional_string("s"), "text");
    EXPECT_EQ(gguf().optional_unsigned_int("u8"), 9u);
    EXPECT_EQ(gguf().optional_number("f32"), 1.5);
    EXPECT_EQ(gguf().optional_boolean("flag"), true);
    EXPECT_TRUE(gguf().strings("absent").empty());
    EXPECT_TRUE(gguf().ints("absent").empty());
    EXPECT_TRUE(gguf().reals("absent").empty());
}

TEST_F(GgufAccessors, AMissingKeyIsNamed) {
    EXPECT_EQ(error([&] { gguf().string("general.name"); }), path_ + ": general.name is missing");
    EXPECT_EQ(error([&] { gguf().unsigned_int("n"); }), path_ + ": n is missing");
    EXPECT_EQ(error([&] { gguf().number("x"); }), path_ + ": x is missing");
    EXPECT_EQ(error([&] { gguf().boolean("b"); }), path_ + ": b is missing");
}

TEST_F(GgufAccessors, AKeyOfAnotherTypeSaysWhatItIsAndWhatWasExpected) {
    EXPECT_EQ(error([&] { gguf().unsigned_int("f32"); }), path_ + ": f32 is a f32, expected an integer");
    EXPECT_EQ(error([&] { gguf().string("u32"); }), path_ + ": u32 is a u32, expected a string");
    EXPECT_EQ(error([&] { gguf().boolean("u8"); }), path_ + ": u8 is a u8, expected a bool");
    EXPECT_EQ(error([&] { gguf().number("s"); }), path_ + ": s is a string, expected a number");
    EXPECT_EQ(error([&] { gguf().optional_string("flag"); }), path_ + ": flag is a bool, expected a string");
    EXPECT_NE(error([&] { gguf().strings("ints"); }).find("ints is a array of i32, expected an array of strings"), std::string::npos);
    EXPECT_NE(error([&] { gguf().ints("words"); }).find("words is a array of string, expected an array of integers"), std::string::npos);
    EXPECT_NE(error([&] { gguf().reals("ints"); }).find("ints is a array of i32, expected an array of numbers"), std::string::npos);
    EXPECT_NE(error([&] { gguf().ints("u32"); }).find("u32 is a u32, expected an array of integers"), std::string::npos);
}

TEST_F(GgufAccessors, ANegativeSignedValueIsNotACount) {
    EXPECT_EQ(error([&] { gguf().unsigned_int("negative"); }), path_ + ": negative is -5, expected a count");
    EXPECT_EQ(error([&] { gguf().optional_unsigned_int("i64"); }), path_ + ": i64 is -3, expected a count");
}

// ---- llama.cpp's own files (tests/fixtures/gguf/README.md)

std::map<std::string, int> count_types(const GgufFile& gguf) {
    std::map<std::string, int> counts;
    for (const GgufTensor& t : gguf.tensors()) ++counts[ggml_type_name(t.type)];
    return counts;
}

GgufFile open_fixture(const std::string& name) {
    return GgufFile::open(testing::fixture_path("gguf/" + name));
}

#define SKIP_WITHOUT_FIXTURE(name)                                                     \
    if (!std::filesystem::exists(testing::fixture_path("gguf/" name))) {               \
        GTEST_SKIP() << "tests/fixtures/gguf/" name " is not in this checkout";        \
    }

TEST(GgufLlamaCpp, TinycodeQ4_0) {
    SKIP_WITHOUT_FIXTURE("tinycode-q4_0.gguf");
    const GgufFile gguf = open_fixture("tinycode-q4_0.gguf");
    EXPECT_EQ(gguf.version(), 3u);
    EXPECT_EQ(gguf.string("general.architecture"), "qwen3");
    EXPECT_EQ(gguf.tensors().size(), 90u);
    EXPECT_EQ(count_types(gguf), (std::map<std::string, int>{{"Q4_0", 56}, {"Q8_0", 1}, {"F32", 33}}));
    ASSERT_NE(gguf.find_tensor("token_embd.weight"), nullptr);
    EXPECT_EQ(gguf.find_tensor("token_embd.weight")->type, ggml_type::q8_0);
    EXPECT_EQ(gguf.find_tensor("token_embd.weight")->dims, (std::vector<uint64_t>{384, 8192}));
    EXPECT_EQ(gguf.strings("tokenizer.ggml.tokens").size(), 8192u);
    EXPECT_EQ(gguf.unsigned_int("tokenizer.ggml.eos_token_id"), 8191u);
}

TEST(GgufLlamaCpp, Kq512Q4_K_M) {
    SKIP_WITHOUT_FIXTURE("kq512-q4_k_m.gguf");
    const GgufFile gguf = open_fixture("kq512-q4_k_m.gguf");
    EXPECT_EQ(gguf.version(), 3u);
    EXPECT_EQ(gguf.string("general.architecture"), "qwen3");
    EXPECT_EQ(count_types(gguf), (std::map<std::string, int>{{"Q4_K", 25}, {"Q6_K", 5}, {"F32", 17}}));
    ASSERT_NE(gguf.find_tensor("output.weight"), nullptr);
    EXPECT_EQ(gguf.find_tensor("output.weight")->type, ggml_type::q6_k);
    EXPECT_EQ(gguf.find_tensor("output.weight")->dims, (std::vector<uint64_t>{512, 8192}));
    EXPECT_EQ(gguf.strings("tokenizer.ggml.tokens").size(), 8192u);
    EXPECT_EQ(gguf.unsigned_int("qwen3.block_count"), 4u);
}

}  // namespace
}  // namespace tf::model
