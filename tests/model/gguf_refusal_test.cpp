// The GGUF reader's refusals: each malformed file is a LoadError whose
// message names the file and the key or tensor at fault, never a crash and
// never an allocation sized by a count the file has not backed with bytes.
// Split sets are here too, with their own refusals.
#include <gtest/gtest.h>

#include <filesystem>

#include "gguf_writer.h"
#include "model/gguf.h"
#include "model/load_error.h"
#include "test_support.h"

namespace tf::model {
namespace {

using testing::GgufWriter;
using testing::gguf_str;
using testing::le;
using testing::TempDir;
using testing::type_tag;
namespace fs = std::filesystem;

constexpr uint64_t kAbsurd = uint64_t{1} << 60;

std::string write(const TempDir& dir, const GgufWriter& w, const std::string& name = "model.gguf") {
    const std::string path = (dir.path() / name).string();
    w.write(path);
    return path;
}

// Opening PATH is a LoadError whose message starts with the file it is
// about (FILE, or PATH) and holds every needle.
void expect_refused(const std::string& path, std::initializer_list<std::string> needles, std::string file = "") {
    if (file.empty()) file = path;
    try {
        (void)GgufFile::open(path);
        ADD_FAILURE() << "opened " << path;
    } catch (const LoadError& e) {
        const std::string message = e.what();
        EXPECT_EQ(message.rfind(file + ": ", 0), 0u) << message;
        for (const auto& needle : needles) EXPECT_NE(message.find(needle), std::string::npos) << message;
    }
}

void expect_refused(const GgufWriter& w, std::initializer_list<std::string> needles) {
    TempDir dir;
    expect_refused(write(dir, w), needles);
}

// A small file with a bit of everything: the base most refusals corrupt.
GgufWriter small_file() {
    GgufWriter w;
    w.string("general.architecture", "qwen3").u32("qwen3.block_count", 2).f32("eps", 1e-6f);
    w.strings("tokenizer.ggml.tokens", {"a", "bc"}).array<int32_t>("types", GgufType::i32, {1, 1});
    w.tensor("embd", {32, 2}, ggml_type::q8_0).tensor("norm", {4});
    return w;
}

TEST(GgufRefusal, TheSmallFileItselfOpens) {
    TempDir dir;
    const GgufFile gguf = GgufFile::open(write(dir, small_file()));
    EXPECT_EQ(gguf.tensors().size(), 2u);
}

TEST(GgufRefusal, AFileThatIsNotGguf) {
    GgufWriter w = small_file();
    w.magic = 0x46554746;  // "FGUF"
    expect_refused(w, {"not a GGUF file"});
    TempDir dir;
    GgufWriter::write_file(dir.path() / "empty.gguf", "");
    expect_refused((dir.path() / "empty.gguf").string(), {"not a GGUF file"});
}

TEST(GgufRefusal, Versions1And4) {
    for (uint32_t version : {1u, 4u}) {
        GgufWriter w = small_file();
        w.version = version;
        expect_refused(w, {"GGUF version " + std::to_string(version) + " is not supported"});
    }
}

// Every cut of a valid file, from 0 bytes to one short of whole, loses
// something the header or a tensor needs.
TEST(GgufRefusal, EveryPrefixOfAFileIsRefused) {
    TempDir dir;
    const std::string bytes = small_file().bytes();
    const std::string path = (dir.path() / "cut.gguf").string();
    for (size_t size = 0; size < bytes.size(); ++size) {
        SCOPED_TRACE("cut at " + std::to_string(size) + " of " + std::to_string(bytes.size()));
        GgufWriter::write_file(path, bytes.substr(0, size));
        expect_refused(path, {});
    }
}

TEST(GgufRefusal, ATensorPastTheEndOfTheFile) {
    TempDir dir;
    const std::string bytes = small_file().bytes();
    const std::string path = (dir.path() / "short.gguf").string();
    GgufWriter::write_file(path, bytes.substr(0, bytes.size() - 1));
    expect_refused(path, {"tensor norm", "outside the file", "truncated"});
}

TEST(GgufRefusal, AbsurdCountsAreRefusedBeforeAnythingIsAllocated) {
    {
        GgufWriter w = small_file();
        w.tensor_count = kAbsurd;
        expect_refused(w, {"the tensor count is " + std::to_string(kAbsurd)});
    }
    {
        GgufWriter w = small_file();
        w.kv_count = kAbsurd;
        expect_refused(w, {"the metadata count is " + std::to_string(kAbsurd)});
    }
    for (GgufType element : {GgufType::u32, GgufType::string, GgufType::array, GgufType::u8}) {
        GgufWriter w = small_file();
        w.raw("big", GgufType::array, type_tag(element) + le<uint64_t>(kAbsurd));
        expect_refused(w, {"key big's element count is " + std::to_string(kAbsurd)});
    }
}

TEST(GgufRefusal, AbsurdStringLengths) {
    {
        GgufWriter w = small_file();
        w.raw("name", GgufType::string, le<uint64_t>(kAbsurd));
        expect_refused(w, {"truncated", "key name"});
    }
    {
        GgufWriter w = small_file();
        w.raw("words", GgufType::array, type_tag(GgufType::string) + le<uint64_t>(1) + le<uint64_t>(kAbsurd));
        expect_refused(w, {"truncated", "key words[0]"});
    }
    {
        // A key whose length is absurd: the key has no name yet, so its index says which.
        GgufWriter w;
        w.u8("first", 1);
        w.kv_count = 2;
        std::string bytes = w.header() + le<uint64_t>(kAbsurd) + std::string(64, 'x');
        TempDir dir;
        GgufWriter::write_file(dir.path() / "m.gguf", bytes);
        expect_refused((dir.path() / "m.gguf").string(), {"metadata key 1"});
    }
    {
        GgufWriter w;
        w.tensor(GgufWriter::Tensor{std::string(70000, 'n'), {1}, ggml_type::f32, {}, {}, {}});
        expect_refused(w, {"tensor name 0 claims 70000 bytes"});
    }
}

TEST(GgufRefusal, ADuplicateKey) {
    GgufWriter w = small_file();
    w.u32("qwen3.block_count", 3);
    expect_refused(w, {"key qwen3.block_count appears twice"});
}

TEST(GgufRefusal, ADuplicateTensor) {
    GgufWriter w = small_file();
    w.tensor("norm", {4});
    expect_refused(w, {"tensor norm appears twice"});
}

TEST(GgufRefusal, AMisalignedTensorOffset) {
    GgufWriter w;
    w.tensor("a", {4}).tensor(GgufWriter::Tensor{"b", {4}, ggml_type::f32, 48, {}, {}});
    expect_refused(w, {"tensor b starts at data offset 48, not a multiple of the alignment 32"});
}

TEST(GgufRefusal, OverlappingTensors) {
    GgufWriter w;
    w.tensor("a", {16}).tensor(GgufWriter::Tensor{"b", {16}, ggml_type::f32, 32, {}, {}});  // a is 64 bytes
    expect_refused(w, {"tensors a and b overlap"});
}

TEST(GgufRefusal, ZeroOrMoreThanFourAxes) {
    {
        GgufWriter w;
        w.tensor(GgufWriter::Tensor{"scalar", {}, ggml_type::f32, {}, 4, {}});
        expect_refused(w, {"tensor scalar has 0 axes"});
    }
    {
        GgufWriter w;
        w.tensor("five", {1, 1, 1, 1, 1});
        expect_refused(w, {"tensor five has 5 axes"});
    }
}

TEST(GgufRefusal, AnAxisOfZero) {
    GgufWriter w;
    w.tensor("w", {4, 0});
    expect_refused(w, {"tensor w has an impossible shape (axis 1 of 0)"});
}

TEST(GgufRefusal, AShapeTooLargeForAnyFile) {
    GgufWriter w;
    w.tensor(GgufWriter::Tensor{"w", {uint64_t{1} << 32, uint64_t{1} << 32}, ggml_type::f32, {}, 0, {}});
    expect_refused(w, {"tensor w has an impossible shape"});
}

TEST(GgufRefusal, RowsNotAWholeNumberOfBlocks) {
    GgufWriter w;
    w.tensor(GgufWriter::Tensor{"w", {100, 2}, ggml_type::q4_k, {}, 512, {}});
    expect_refused(w, {"tensor w has rows of 100 elements, not a whole number of Q4_K blocks of 256"});
}

TEST(GgufRefusal, AnUnknownGgmlType) {
    GgufWriter w;
    w.tensor(GgufWriter::Tensor{"w", {32}, 200, {}, 64, {}});
    expect_refused(w, {"tensor w has ggml type 200"});
}

TEST(GgufRefusal, AnUndefinedValueType) {
    {
        GgufWriter w = small_file();
        w.raw("odd", 13, le<uint32_t>(0));
        expect_refused(w, {"key odd has value type 13"});
    }
    {
        GgufWriter w = small_file();
        w.raw("odd", GgufType::array, le<uint32_t>(99) + le<uint64_t>(0));
        expect_refused(w, {"key odd's elements has value type 99"});
    }
}

TEST(GgufRefusal, ABoolHolding2) {
    {
        GgufWriter w = small_file();
        w.scalar<uint8_t>("flag", GgufType::boolean, 2);
        expect_refused(w, {"key flag is a bool holding 2"});
    }
    {
        GgufWriter w = small_file();
        w.array<uint8_t>("flags", GgufType::boolean, {1, 2});
        expect_refused(w, {"key flags is a bool holding 2"});
    }
}

TEST(GgufRefusal, ArraysNestedTooDeep) {
    // An array of arrays of arrays of arrays: deeper than anything tensorfold reads.
    const std::string inner = type_tag(GgufType::array) + le<uint64_t>(1);
    GgufWriter w = small_file();
    w.raw("deep", GgufType::array, inner + inner + inner + type_tag(GgufType::u8) + le<uint64_t>(0));
    expect_refused(w, {"key deep", "nests arrays deeper"});
}

TEST(GgufRefusal, AnAlignmentThatIsNotAPowerOfTwo) {
    for (uint32_t alignment : {0u, 48u, 1u << 21}) {
        GgufWriter w;
        w.u32("general.alignment", alignment).tensor("w", {4});
        expect_refused(w, {"general.alignment " + std::to_string(alignment) + " is not a power of two"});
    }
}

TEST(GgufRefusal, AnAlignmentOfTheWrongType) {
    {
        GgufWriter w;
        w.string("general.alignment", "32");
        expect_refused(w, {"general.alignment is a string, expected an unsigned integer"});
    }
    {
        GgufWriter w;
        w.f32("general.alignment", 32);
        expect_refused(w, {"general.alignment is a f32, expected an unsigned integer"});
    }
}

// ---- split sets

// Two parts of one model as llama.cpp's gguf-split writes them: the split.*
// keys in each, the model's metadata in the first.
struct SplitSet {
    TempDir dir;
    std::string first, second;
    explicit SplitSet(int64_t tensors_count = 3, bool repeat_tensor = false) {
        GgufWriter a;
        a.string("general.architecture", "qwen3").u16("split.no", 0).u16("split.count", 2);
        a.i32("split.tensors.count", static_cast<int32_t>(tensors_count));
        a.tensor("token_embd.weight", {8, 4}).tensor("norm", {8});
        GgufWriter b;
        b.string("general.architecture", "other").u16("split.no", 1).u16("split.count", 2);
        b.i32("split.tensors.count", static_cast<int32_t>(tensors_count));
        b.tensor("output.weight", {8, 4}, ggml_type::f16);
        if (repeat_tensor) b.tensor("norm", {8});
        first = write(dir, a, "m-00001-of-00002.gguf");
        second = write(dir, b, "m-00002-of-00002.gguf");
    }
};

TEST(GgufSplit, OpensFromEitherFileWithMetadataFromTheFirstAndTensorsFromBoth) {
    SplitSet set;
    for (const std::string& path : {set.first, set.second}) {
        const GgufFile gguf = GgufFile::open(path);
        EXPECT_EQ(gguf.path(), set.first);
        EXPECT_EQ(gguf.string("general.architecture"), "qwen3");
        ASSERT_EQ(gguf.tensors().size(), 3u);
        EXPECT_EQ(gguf.find_tensor("norm")->file, set.first);
        const GgufTensor* output = gguf.find_tensor("output.weight");
        ASSERT_NE(output, nullptr);
        EXPECT_EQ(output->file, set.second);
        EXPECT_EQ(output->bytes, 64u);
        EXPECT_EQ(output->offset, 0u);  // offsets count from each file's own data section
        EXPECT_EQ(static_cast<uint8_t>(output->data[0]), 0x10);
        EXPECT_EQ(static_cast<uint8_t>(output->data[63]), 0x10);
    }
}

TEST(GgufSplit, ParseReadsOneFileAlone) {
    SplitSet set;
    const GgufFile gguf = GgufFile::parse(std::make_shared<MappedFile>(set.second));
    EXPECT_EQ(gguf.string("general.architecture"), "other");
    EXPECT_EQ(gguf.tensors().size(), 1u);
}

TEST(GgufSplit, AMissingPartIsNamed) {
    {
        SplitSet set;
        fs::remove(set.second);
        expect_refused(set.first, {"is split 1 of 2", set.second + " does not exist"});
    }
    {
        SplitSet set;
        fs::remove(set.first);
        expect_refused(set.second, {"is split 2 of 2", set.first + " does not exist"});
    }
}

// The message says which part was opened, whatever its number.
TEST(GgufSplit, AMissingPartNamesThePartOpened) {
    TempDir dir;
    for (int i = 1; i <= 2; ++i) {
        GgufWriter part;
        part.tensor("t" + std::to_string(i), {4});
        write(dir, part, "m-0000" + std::to_string(i) + "-of-00003.gguf");
    }
    const std::string second = (dir.path() / "m-00002-of-00003.gguf").string();
    expect_refused(second, {"is split 2 of 3", (dir.path() / "m-00003-of-00003.gguf").string() + " does not exist"});
}

TEST(GgufSplit, ANameNumberedPastItsCount) {
    TempDir dir;
    GgufWriter part;
    part.tensor("t", {4});
    for (const char* name : {"m-00001-of-00002.gguf", "m-00002-of-00002.gguf", "m-00003-of-00002.gguf"}) write(dir, part, name);
    expect_refused((dir.path() / "m-00003-of-00002.gguf").string(), {"its name says split 3 of 2"});
}

TEST(GgufSplit, ATensorCountThatDisagreesWithTheParts) {
    SplitSet set(4);
    expect_refused(set.second, {"split.tensors.count says 4 tensors", "hold 3"}, set.first);
}

TEST(GgufSplit, TheSameTensorInTwoParts) {
    SplitSet set(3, true);
    expect_refused(set.first, {"tensor norm is also in " + set.first}, set.second);
}

TEST(GgufSplit, AMalformedPartIsNamed) {
    SplitSet set;
    GgufWriter::write_file(set.second, "GGUF");
    expect_refused(set.first, {"truncated"}, set.second);
}

}  // namespace
}  // namespace tf::model
