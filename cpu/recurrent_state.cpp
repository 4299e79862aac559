#include "cpu/recurrent_state.h"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <stdexcept>
#include <string>

namespace tf::cpu {

namespace {

// Rows of log a stream keeps room for between rounds: a verify round's rows.
// A prefill chunk grows the log past it; the next round gives the memory back.
constexpr size_t kKeptLogRows = 96;

void copy_floats(const float* from, size_t count, float* to) { std::memcpy(to, from, count * sizeof(float)); }

}  // namespace

RecurrentState::RecurrentState(const model::MambaConfig& config, int32_t layers)
    : config_(config),
      state_floats_(config.state_floats()),
      window_floats_(static_cast<size_t>(config.conv_kernel - 1) * config.conv_dim()),
      layers_(static_cast<size_t>(layers)) {
    for (Layer& l : layers_) {
        l.states.assign(2 * state_floats_, 0.0f);
        l.inputs.assign(window_floats_, 0.0f);
    }
}

void RecurrentState::begin_round(int32_t rows) {
    assert(rows >= 0);
    const size_t conv_dim = config_.conv_dim();
    for (Layer& l : layers_) {
        // The last K-1 inputs (the conv window at length()) move to the front.
        const size_t used = window_floats_ + static_cast<size_t>(rows_) * conv_dim;
        std::memmove(l.inputs.data(), l.inputs.data() + (used - window_floats_), window_floats_ * sizeof(float));
        const size_t need = window_floats_ + static_cast<size_t>(rows) * conv_dim;
        if (l.inputs.capacity() > 2 * (window_floats_ + kKeptLogRows * conv_dim) && need < l.inputs.capacity() / 4) {
            l.inputs.resize(window_floats_);
            l.inputs.shrink_to_fit();
        }
        l.inputs.resize(need);
        l.dt.resize(static_cast<size_t>(rows) * config_.num_heads);
    }
    if (rows_ > 0) start_ = 1 - start_;  // the live state becomes the round's start
    round_start_ += rows_;
    rows_ = rows;
}

float* RecurrentState::raw_xbc(int32_t layer, int32_t row) {
    assert(row >= 0 && row < rows_);
    return layers_[layer].inputs.data() + window_floats_ + static_cast<size_t>(row) * config_.conv_dim();
}

float* RecurrentState::raw_dt(int32_t layer, int32_t row) {
    assert(row >= 0 && row < rows_);
    return layers_[layer].dt.data() + static_cast<size_t>(row) * config_.num_heads;
}

const float* RecurrentState::conv_inputs(int32_t layer, int32_t row) const {
    assert(row >= 0 && row < rows_);
    return layers_[layer].inputs.data() + static_cast<size_t>(row) * config_.conv_dim();
}

void RecurrentState::keep_rows(int32_t rows) {
    assert(rows >= 0 && rows <= rows_);
    rows_ = rows;
    if (snapshot_ready_ && snapshot_length_ > length()) {
        snapshot_length_ = -1;
        snapshot_ready_ = false;
    }
}

void RecurrentState::request_snapshot(int32_t length) {
    snapshot_length_ = length;
    snapshot_ready_ = false;
    if (length < 0) return;
    for (Layer& l : layers_) l.snapshot.resize(state_floats_ + window_floats_);
}

float* RecurrentState::snapshot_state(int32_t layer) { return layers_[layer].snapshot.data(); }

void RecurrentState::finish_snapshot() {
    const int32_t row = snapshot_length_ - 1 - round_start_;
    assert(!snapshot_ready_ && row >= 0 && row < rows_);
    for (int32_t layer = 0; layer < this->layers(); ++layer) {
        // The window at the snapshot length: the K-1 raw inputs ending at its last row.
        copy_floats(conv_inputs(layer, row) + config_.conv_dim(), window_floats_,
                    layers_[layer].snapshot.data() + state_floats_);
    }
    snapshot_ready_ = true;
}

void RecurrentState::snapshot_now() {
    request_snapshot(length());
    const size_t conv_dim = config_.conv_dim();
    for (int32_t layer = 0; layer < this->layers(); ++layer) {
        Layer& l = layers_[layer];
        copy_floats(state(layer), state_floats_, l.snapshot.data());
        // The window at length(): the last K-1 raw inputs of the log.
        copy_floats(l.inputs.data() + static_cast<size_t>(rows_) * conv_dim, window_floats_,
                    l.snapshot.data() + state_floats_);
    }
    snapshot_ready_ = true;
}

bool RecurrentState::holds(int32_t length) const {
    return (length >= round_start_ && length <= this->length()) || (snapshot_ready_ && length == snapshot_length_);
}

void RecurrentState::restore_snapshot() {
    assert(snapshot_ready_);
    for (Layer& l : layers_) {
        copy_floats(l.snapshot.data(), state_floats_, l.states.data());
        l.inputs.resize(window_floats_);
        copy_floats(l.snapshot.data() + state_floats_, window_floats_, l.inputs.data());
        l.dt.clear();
    }
    start_ = 0;
    round_start_ = snapshot_length_;
    rows_ = 0;
}

int32_t RecurrentState::assign(const RecurrentState& from, int32_t length) {
    if (!from.holds(length) || from.layers() != layers() || from.config_.conv_dim() != config_.conv_dim()) {
        throw std::invalid_argument("the recurrent state holds no state at length " + std::to_string(length));
    }
    const bool snapshot = from.snapshot_ready_ && from.snapshot_length_ <= length;
    snapshot_length_ = snapshot ? from.snapshot_length_ : -1;
    snapshot_ready_ = snapshot;
    for (int32_t layer = 0; layer < layers(); ++layer) {
        Layer& l = layers_[layer];
        const Layer& f = from.layers_[layer];
        if (snapshot) {
            l.snapshot = f.snapshot;
        } else {
            l.snapshot.clear();
        }
    }
    if (from.snapshot_ready_ && length == from.snapshot_length_ &&
        !(length >= from.round_start_ && length <= from.length())) {
        restore_snapshot();
        return 0;
    }
    // From the source round's start state, with the rows up to `length` in
    // the log for the caller to replay.
    const int32_t rows = length - from.round_start_;
    const size_t conv_dim = config_.conv_dim();
    for (int32_t layer = 0; layer < layers(); ++layer) {
        Layer& l = layers_[layer];
        const Layer& f = from.layers_[layer];
        copy_floats(from.start_state(layer), state_floats_, l.states.data());
        l.inputs.assign(f.inputs.begin(), f.inputs.begin() + static_cast<ptrdiff_t>(window_floats_ + rows * conv_dim));
        l.dt.assign(f.dt.begin(), f.dt.begin() + static_cast<ptrdiff_t>(rows) * config_.num_heads);
    }
    start_ = 0;
    round_start_ = from.round_start_;
    rows_ = rows;
    return rows;
}

size_t RecurrentState::bytes() const {
    size_t total = 0;
    for (const Layer& l : layers_) {
        total += (l.states.capacity() + l.inputs.capacity() + l.dt.capacity() + l.snapshot.capacity()) * sizeof(float);
    }
    return total;
}

}  // namespace tf::cpu
