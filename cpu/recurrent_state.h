// RecurrentState: one stream's Mamba2 state in every Mamba layer, kept so
// that a round's rejected rows can be taken back exactly.
//
// A KV cache forgets a rejected draft by shortening its length; a recurrent
// state has folded every row into the same numbers, so it must be rebuilt.
// Per layer this keeps two state buffers: the state at the start of the
// current round (never written during it) and the live one the round's rows
// update. The round's raw inputs -- each row's xBC before the conv, and its
// dt before softplus -- are logged behind the K-1 inputs that preceded the
// round (the conv window). Rolling back to an earlier length of the round
// replays that many logged rows from the start state through the same
// functions the forward ran (cpu/mamba.h), so the state is bit for bit the
// one a forward of only the accepted rows would have left.
//
// A round begins when a forward brings rows to the stream: what the last
// round kept is then final. Besides lengths inside the current round, the
// state at one chosen length (the end of a prompt: the prompt cache resumes
// there) can be kept as a snapshot when a forward passes it.
//
// Thread-safety: none; owned by the backend. During a forward, distinct
// heads and distinct rows write disjoint parts.
#pragma once

#include <cstdint>
#include <vector>

#include "model/model_config.h"

namespace tf::cpu {

class RecurrentState {
public:
    // `layers`: the model's Mamba layers. Starts at length 0: zero state,
    // zero conv window (transformers pads the conv's input with zeros).
    RecurrentState(const model::MambaConfig& config, int32_t layers);

    int32_t length() const { return round_start_ + rows_; }
    int32_t round_start() const { return round_start_; }
    int32_t round_rows() const { return rows_; }
    int32_t layers() const { return static_cast<int32_t>(layers_.size()); }

    // A forward brings `rows` rows at length(): what earlier rounds kept is
    // final, and the new rows' log gets room (round_rows() == rows after).
    void begin_round(int32_t rows);

    // Layer `layer`, round row r (0 <= r < round_rows()): where its raw xBC
    // goes (the K-1 rows before it in memory are the inputs before it), and
    // its raw dt (before softplus).
    float* raw_xbc(int32_t layer, int32_t row);
    float* raw_dt(int32_t layer, int32_t row);
    // The K raw xBC rows the conv of round row r reads, oldest first.
    const float* conv_inputs(int32_t layer, int32_t row) const;

    // The state the round's first row reads, and the one its rows write.
    const float* start_state(int32_t layer) const { return buffer(layer, start_); }
    float* live_state(int32_t layer) { return buffer(layer, 1 - start_); }
    // The state at length().
    const float* state(int32_t layer) const { return rows_ > 0 ? buffer(layer, 1 - start_) : buffer(layer, start_); }

    // Drops round rows past `rows` (0 <= rows <= round_rows()), and a
    // snapshot past the new length. The caller then replays rows [0, rows)
    // from start_state() into live_state().
    void keep_rows(int32_t rows);

    // Keep a copy of the state at `length` when a forward passes it (a
    // later call replaces the request). -1: none.
    void request_snapshot(int32_t length);
    int32_t snapshot_length() const { return snapshot_ready_ ? snapshot_length_ : -1; }
    int32_t pending_snapshot() const { return snapshot_ready_ ? -1 : snapshot_length_; }
    // Where the snapshot's state of `layer` goes; the caller fills it when
    // the forward's row at snapshot length - 1 has updated that layer.
    float* snapshot_state(int32_t layer);
    // After the forward: takes the conv window at the snapshot length from
    // the round's inputs and marks the snapshot ready.
    void finish_snapshot();
    // The snapshot := the state at length(), now.
    void snapshot_now();

    // Whether this stream can return to `length` (truncate) or hand it to
    // another stream (copy): any length of the current round, or the
    // snapshot's.
    bool holds(int32_t length) const;
    // This state := `from`'s at `length`, as a new stream of that length
    // with no round rows; a length inside `from`'s round also needs those
    // rows replayed: returns how many (taken from `from`'s log, which this
    // copies), else 0. A snapshot at or before `length` comes along.
    int32_t assign(const RecurrentState& from, int32_t length);
    // Returns to the snapshot (length == snapshot_length()).
    void restore_snapshot();

    size_t bytes() const;

private:
    struct Layer {
        std::vector<float> states;    // two buffers of state_floats
        std::vector<float> inputs;    // (K-1 + round rows) raw xBC rows
        std::vector<float> dt;        // round rows * H raw dt
        std::vector<float> snapshot;  // state_floats + (K-1) * conv_dim, when requested
    };

    float* buffer(int32_t layer, int32_t which) {
        return layers_[layer].states.data() + static_cast<size_t>(which) * state_floats_;
    }
    const float* buffer(int32_t layer, int32_t which) const {
        return layers_[layer].states.data() + static_cast<size_t>(which) * state_floats_;
    }

    model::MambaConfig config_;
    size_t state_floats_, window_floats_;
    std::vector<Layer> layers_;
    int32_t round_start_ = 0, rows_ = 0;
    int32_t start_ = 0;  // which buffer holds the state at round_start_
    int32_t snapshot_length_ = -1;
    bool snapshot_ready_ = false;
};

}  // namespace tf::cpu
