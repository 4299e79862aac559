#include "gpu/forward_plan.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <unordered_map>

namespace tf::gpu {

int32_t graph_bucket(int32_t rows) {
    if (rows <= 0 || rows > kMaxGraphRows) return 0;
    int32_t bucket = 1;
    while (bucket < rows) bucket *= 2;
    return bucket;
}

int32_t split_workers(int32_t max_splits) {
    int32_t workers = 1;
    while (workers < max_splits && workers < kMaxSplitWorkers) workers *= 2;
    return workers;
}

std::vector<std::pair<int32_t, int32_t>> check_rows(std::span<const model::Row> rows, size_t samplers,
                                                    int32_t vocab, const KvBlocks& kv) {
    std::vector<std::pair<int32_t, int32_t>> next;  // (stream, length after its rows so far)
    std::unordered_map<int32_t, size_t> where;
    for (const model::Row& row : rows) {
        auto [it, first] = where.try_emplace(row.stream, next.size());
        if (first) next.emplace_back(row.stream, kv.length(row.stream));  // throws "stream N is not open"
        int32_t& expected = next[it->second].second;
        if (row.position != expected) {
            throw std::invalid_argument("row of stream " + std::to_string(row.stream) + " has position " +
                                        std::to_string(row.position) + ", expected " + std::to_string(expected));
        }
        if (row.position >= kv.capacity(row.stream)) {
            throw std::invalid_argument("stream " + std::to_string(row.stream) + " is full (capacity " +
                                        std::to_string(kv.capacity(row.stream)) + ")");
        }
        if (row.token < 0 || row.token >= vocab) {
            throw std::invalid_argument("token " + std::to_string(row.token) + " is outside the vocabulary");
        }
        if (row.sampler < -1 || row.sampler >= static_cast<int32_t>(samplers)) {
            throw std::invalid_argument("row of stream " + std::to_string(row.stream) + " names sampler " +
                                        std::to_string(row.sampler) + " of " + std::to_string(samplers));
        }
        expected = row.position + 1;
    }
    return next;
}

std::vector<std::pair<size_t, size_t>> plan_chunks(std::span<const model::Row> rows, int32_t max_rows,
                                                   int64_t split_budget, int32_t sliding_window) {
    if (max_rows <= 0) throw std::invalid_argument("plan_chunks: max_rows must be positive");
    std::vector<std::pair<size_t, size_t>> chunks;
    size_t begin = 0;
    int64_t splits = 0;
    for (size_t r = 0; r < rows.size(); ++r) {
        const int64_t own = row_splits(rows[r].position, sliding_window);
        const bool full = static_cast<int64_t>(r - begin) >= max_rows || splits + own > split_budget;
        if (r > begin && full) {
            chunks.emplace_back(begin, r);
            begin = r;
            splits = 0;
        }
        splits += own;
    }
    if (begin < rows.size()) chunks.emplace_back(begin, rows.size());
    return chunks;
}

ChunkInputs pack_chunk(std::span<const model::Row> rows, std::span<const model::SamplingParams> samplers,
                       const KvBlocks& kv, int32_t sliding_window, int32_t bucket) {
    if (bucket > 0 && static_cast<int32_t>(rows.size()) > bucket) {
        throw std::logic_error("pack_chunk: " + std::to_string(rows.size()) + " rows in a bucket of " +
                               std::to_string(bucket));
    }
    ChunkInputs in;
    std::unordered_map<int32_t, int32_t> table_of;  // stream -> offset in tables
    for (const model::Row& row : rows) {
        auto [it, first] = table_of.try_emplace(row.stream, static_cast<int32_t>(in.tables.size()));
        const std::vector<int32_t>& blocks = kv.blocks(row.stream);
        if (first) in.tables.insert(in.tables.end(), blocks.begin(), blocks.end());
        if (blocks_for(row.position + 1) > static_cast<int32_t>(blocks.size())) {
            throw std::logic_error("pack_chunk: stream " + std::to_string(row.stream) + " has no block for position " +
                                   std::to_string(row.position));
        }
        DeviceRow d;
        d.token = row.token;
        d.position = row.position;
        d.first = first_key(row.position, sliding_window);
        d.table_offset = it->second;
        d.split_begin = d.first / kAttentionSplit;
        d.split_count = row_splits(row.position, sliding_window);
        d.partial_base = in.total_splits;
        d.valid = 1;
        in.total_splits += d.split_count;
        in.max_splits = std::max(in.max_splits, d.split_count);
        in.rows.push_back(d);
    }
    const int32_t padded = bucket > 0 ? bucket : static_cast<int32_t>(rows.size());
    in.rows.resize(static_cast<size_t>(padded));  // padding rows: token 0, valid 0, no splits

    auto sampler_of = [&](const model::Row& row) {
        DeviceSampler s;
        if (row.sampler < 0) return s;
        const model::SamplingParams& p = samplers[static_cast<size_t>(row.sampler)];
        s.temperature = p.temperature;
        s.top_k = p.top_k;
        s.top_p = p.top_p;
        s.min_p = p.min_p;
        s.seed = p.seed;
        s.position = static_cast<int64_t>(row.position) + 1;
        s.active = 1;
        return s;
    };
    for (int32_t r = 0; r < padded; ++r) {
        const bool real = r < static_cast<int32_t>(rows.size());
        const bool output = bucket > 0 || (real && (rows[r].want_logits || rows[r].sampler >= 0));
        if (!output) continue;
        const auto o = static_cast<int32_t>(in.out_rows.size());
        in.out_rows.push_back(r);
        in.samplers.push_back(real ? sampler_of(rows[r]) : DeviceSampler{});
        if (real && rows[r].sampler >= 0) in.token_outputs.push_back(o);
        if (real && rows[r].want_logits) in.logits_outputs.push_back(o);
    }
    return in;
}

size_t ScratchPlan::total() const {
    size_t sum = 0;
    for (size_t bytes : {x, act, qkv, gate_up, logits, partial_ml, partial_acc, sample_keys, sample_weights, tokens,
                         device_rows, out_rows, samplers}) {
        sum += align_up(bytes);
    }
    return sum;
}

ScratchPlan plan_scratch(const model::ModelConfig& c, int32_t max_rows) {
    if (max_rows <= 0) throw std::invalid_argument("max_rows must be positive");
    ScratchPlan s;
    s.rows = std::max(max_rows, kMaxGraphRows);
    const int64_t last_row_splits = row_splits(std::max(c.max_position_embeddings, 1) - 1, 0);
    s.split_budget = std::max<int64_t>(int64_t{s.rows} * 8, last_row_splits);
    const auto rows = static_cast<size_t>(s.rows);
    const auto hidden = static_cast<size_t>(c.hidden_size), inter = static_cast<size_t>(c.intermediate_size);
    const auto vocab = static_cast<size_t>(c.vocab_size), heads = static_cast<size_t>(c.num_heads);
    const size_t q_dim = heads * static_cast<size_t>(c.head_dim);
    const size_t kv_dim = static_cast<size_t>(c.num_kv_heads) * static_cast<size_t>(c.head_dim);
    const auto budget = static_cast<size_t>(s.split_budget);
    s.x = rows * hidden * 4;
    s.act = rows * std::max({hidden, q_dim, inter}) * 2;
    s.qkv = rows * (q_dim + 2 * kv_dim) * 4;
    s.gate_up = rows * 2 * inter * 4;
    s.logits = rows * vocab * 4;
    s.partial_ml = budget * heads * 2 * 4;
    s.partial_acc = budget * heads * static_cast<size_t>(c.head_dim) * 4;
    s.sample_keys = static_cast<size_t>(kSamplerBlocks) * vocab * 8;
    s.sample_weights = s.sample_keys;
    s.tokens = rows * 4;
    s.device_rows = rows * sizeof(DeviceRow);
    s.out_rows = rows * 4;
    s.samplers = rows * sizeof(DeviceSampler);
    return s;
}

}  // namespace tf::gpu
